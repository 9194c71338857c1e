package discovery_test

import (
	"context"
	"fmt"
	"log"
	"strconv"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/recipe/discovery"
)

// Two instances of a service register themselves; a client of the service
// follows them and calls them in turn.
func Example() {
	// Any ZooKeeper-protocol ensemble will do: "zk1:2181,zk2:2181,zk3:2181".
	addr, stop := exampleServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	for i, address := range []string{"10.0.0.7", "10.0.0.8"} {
		c, err := client.Dial(ctx, addr, client.Config{RenewSession: true})
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		d := discovery.New(c, "/services")
		defer d.Close(ctx)
		inst := discovery.NewInstance("orders")
		inst.ID = "orders-" + strconv.Itoa(i+1)
		inst.Address, inst.Port = address, new(8080)
		inst.URISpec = discovery.MustParseURISpec("{scheme}://{address}:{port}/v1")
		if err := d.Register(ctx, inst); err != nil {
			log.Fatal(err)
		}
	}

	c, err := client.Dial(ctx, addr, client.Config{RenewSession: true})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	orders, err := discovery.New(c, "/services").Cache(ctx, "orders")
	if err != nil {
		log.Fatal(err)
	}
	defer orders.Close()
	p := discovery.NewProvider(orders, discovery.RoundRobin())
	for range 3 {
		inst, err := p.Instance()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("calling", inst.ID, "at", inst.URI(nil))
	}
	// Output:
	// calling orders-1 at http://10.0.0.7:8080/v1
	// calling orders-2 at http://10.0.0.8:8080/v1
	// calling orders-1 at http://10.0.0.7:8080/v1
}

// Workers join a group; a coordinator follows who is there.
func ExampleWatchGroup() {
	addr, stop := exampleServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	c, err := client.Dial(ctx, addr, client.Config{RenewSession: true})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	workers, err := discovery.WatchGroup(ctx, c, "/app/workers")
	if err != nil {
		log.Fatal(err)
	}
	defer workers.Close()

	var members []*discovery.Membership
	for _, id := range []string{"worker-1", "worker-2"} {
		m, err := discovery.Join(ctx, c, "/app/workers", id, []byte("ready"))
		if err != nil {
			log.Fatal(err)
		}
		members = append(members, m)
	}
	// Updates offers the latest list each time it changes; wait for both.
	for list := range workers.Updates() {
		if len(list) == 2 {
			fmt.Println("workers:", list[0].ID, list[1].ID)
			break
		}
	}
	if err := members[0].Leave(ctx); err != nil {
		log.Fatal(err)
	}
	for list := range workers.Updates() {
		if len(list) == 1 {
			fmt.Println("still there:", list[0].ID, string(list[0].Data))
			break
		}
	}
	// Output:
	// workers: worker-1 worker-2
	// still there: worker-2 ready
}

// exampleServer runs a Collie server on 127.0.0.1 until stop is called.
func exampleServer() (addr string, stop func()) {
	addr, stop, err := collietest.Serve()
	if err != nil {
		log.Fatal(err)
	}
	return addr, stop
}
