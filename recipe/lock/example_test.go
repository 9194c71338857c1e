package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/recipe/lock"
)

func ExampleMutex() {
	// Any ZooKeeper-protocol ensemble will do: "zk1:2181,zk2:2181,zk3:2181".
	addr, stop := runServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialExample(ctx, addr)
	defer c.Close()

	m := lock.NewMutex(c, "/app/locks/orders")
	lease, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// Work under the lock; stop when the lease is lost (its session ended
	// or the connection broke): someone else may hold the lock by then.
	select {
	case <-lease.Lost():
		log.Fatal("lost the lock")
	default:
		fmt.Println("holding", lease.Token() > 0)
	}
	if err := lease.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	// Output:
	// holding true
}

// A holder that stalls past the loss of its lock (a long GC pause, a
// stopped virtual machine) must not write over its successor. Writes made
// with Do check, in the same transaction, that the holder's lock node is
// still there: the server refuses the late write.
func ExampleLease_Do() {
	addr, stop := runServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin := dialExample(ctx, addr)
	defer admin.Close()
	if _, _, err := admin.Create(ctx, "/orders", []byte("none"), client.ModePersistent, nil); err != nil && !errors.Is(err, client.ErrNodeExists) {
		log.Fatal(err)
	}

	first, second := dialExample(ctx, addr), dialExample(ctx, addr)
	defer first.Close()
	defer second.Close()
	old, err := lock.NewMutex(first, "/app/locks/orders").Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}

	// The first holder stalls, and its lock node goes: here it is deleted
	// by hand, as the server does when the stalled holder's session
	// expires. The second holder takes the lock and writes.
	if err := admin.Delete(ctx, old.Node(), client.AnyVersion); err != nil {
		log.Fatal(err)
	}
	current, err := lock.NewMutex(second, "/app/locks/orders").Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := current.Do(ctx, client.SetOp("/orders", []byte("second"), client.AnyVersion)); err != nil {
		log.Fatal(err)
	}
	fmt.Println("the new holder's token is larger:", current.Token() > old.Token())

	// The first holder wakes up and writes: refused.
	_, err = old.Do(ctx, client.SetOp("/orders", []byte("first"), client.AnyVersion))
	fmt.Println("late write refused:", errors.Is(err, lock.ErrLost))
	data, _, err := admin.Get(ctx, "/orders")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("orders:", string(data))
	if err := current.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	// Output:
	// the new holder's token is larger: true
	// late write refused: true
	// orders: second
}

func runServer() (addr string, stop func()) {
	addr, stop, err := collietest.Serve()
	if err != nil {
		log.Fatal(err)
	}
	return addr, stop
}

func dialExample(ctx context.Context, addr string) *client.Client {
	c, err := client.Dial(ctx, addr, client.Config{})
	if err != nil {
		log.Fatal(err)
	}
	return c
}
