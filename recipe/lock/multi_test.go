package lock_test

import (
	"context"
	"errors"
	"path"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	rt "github.com/collie-io/collie/recipe/internal/recipetest"
	"github.com/collie-io/collie/recipe/lock"
)

var multiScenarios = []scenario{
	{"all-or-none", testMultiAllOrNone},
	{"mixed-locks", testMultiMixed},
	{"holder-expiry", testMultiExpiry},
}

// testMultiAllOrNone takes two mutexes as one. While another holder has
// the second, a Multi that gives up holds neither: its node on the first
// goes. Once the second is free it takes both, excluding a contender on
// either, and releases them in reverse order, as a watch on their parent
// sees.
func testMultiAllOrNone(t *testing.T, addr string) {
	ctx := rt.Context(t)
	a, b := "/multi/a", "/multi/b"
	c := rt.Dial(t, addr, client.Config{})
	other := rt.Dial(t, addr, client.Config{})
	blocker, err := lock.NewMutex(other, b).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	both := lock.NewMulti(lock.NewMutex(c, a), lock.NewMutex(c, b))
	shortCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = both.Lock(shortCtx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with the second lock taken = %v, want DeadlineExceeded", err)
	}
	rt.WaitFor(t, "no node on either lock but the other holder's", func() bool {
		return len(rt.Children(t, c, a)) == 0 && slices.Equal(rt.Children(t, c, b), []string{path.Base(blocker.Node())})
	})

	acquired := make(chan *lock.MultiLease, 1)
	go func() {
		held, err := both.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		acquired <- held
	}()
	rt.WaitFor(t, "the multi-lock's node on the second lock", func() bool { return len(rt.Children(t, c, b)) == 2 })
	if err := blocker.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	held := rt.Receive(t, acquired)
	leases := held.Leases()
	if len(leases) != 2 || !open(held.Lost()) {
		t.Fatalf("held %d leases, lost %v", len(leases), !open(held.Lost()))
	}
	shortCtx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = lock.NewMutex(other, a).Lock(shortCtx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("another contender's Lock on the first lock = %v, want DeadlineExceeded", err)
	}
	rt.WaitFor(t, "the contender's node to go", func() bool { return len(rt.Children(t, c, a)) == 1 })

	events, err := other.AddWatch(ctx, "/multi", client.WatchPersistentRecursive)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for len(deleted) < 2 {
		ev := rt.Receive(t, events.Events())
		if ev.Type == client.EventNodeDeleted {
			deleted = append(deleted, ev.Path)
		}
	}
	if want := []string{leases[1].Node(), leases[0].Node()}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want the reverse of the locking order %v", deleted, want)
	}
	if err := held.Unlock(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("second Unlock = %v, want ErrNotHeld", err)
	}
}

// testMultiMixed takes a write lock, a semaphore mutex and another lock's
// read lock as one. Its guarded writes go through while all three hold;
// once one lease's node is deleted, the whole is lost and they are
// refused.
func testMultiMixed(t *testing.T, addr string) {
	ctx := rt.Context(t)
	c := rt.Dial(t, addr, client.Config{})
	held, err := lock.NewMulti(
		lock.NewRWLock(c, "/mixed/rw"),
		lock.NewSemaphoreMutex(c, "/mixed/sem"),
		lock.NewRWLock(c, "/mixed/shared").RLocker(),
	).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leases := held.Leases()
	for i, re := range []string{`/mixed/rw/.*__WRIT__`, `/mixed/sem/leases/.*-lease-`, `/mixed/shared/.*__READ__`} {
		if !regexp.MustCompile(re).MatchString(leases[i].Node()) {
			t.Errorf("lease %d is %s, want a node like %s", i, leases[i].Node(), re)
		}
	}
	if _, err := held.Do(ctx, client.CreateOp("/mixed-write", nil, client.ModePersistent, nil)); err != nil {
		t.Fatalf("guarded write while holding every lock: %v", err)
	}
	if err := rt.Dial(t, addr, client.Config{}).Delete(ctx, leases[1].Node(), client.AnyVersion); err != nil {
		t.Fatal(err)
	}
	rt.Receive(t, held.Lost())
	if _, err := held.Do(ctx, client.SetOp("/mixed-write", []byte("late"), client.AnyVersion)); !errors.Is(err, lock.ErrLost) {
		t.Fatalf("guarded write after a lock passed on = %v, want ErrLost", err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/mixed/rw", "/mixed/sem/leases", "/mixed/sem/locks", "/mixed/shared"} {
		if got := rt.Children(t, c, path); len(got) != 0 {
			t.Errorf("nodes left under %s: %v", path, got)
		}
	}
}

// testMultiExpiry cuts the holder of two mutexes taken as one off the
// network until its session expires, with a contender waiting on each:
// the multi-lease is lost, both its nodes go, both contenders get their
// lock, and the former holder's guarded write is refused once it is back.
func testMultiExpiry(t *testing.T, addr string) {
	ctx := rt.Context(t)
	a, b := "/multi-expiry/a", "/multi-expiry/b"
	c, network := rt.Partitioned(t, addr, rt.ShortSession)
	held, err := lock.NewMulti(lock.NewMutex(c, a), lock.NewMutex(c, b)).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	observer := rt.Dial(t, addr, client.Config{})
	var waiting []<-chan *lock.Lease
	for _, p := range []string{a, b} {
		waiting = append(waiting, lockAsync(ctx, t, lock.NewMutex(rt.Dial(t, addr, client.Config{}), p)))
	}
	rt.WaitFor(t, "a contender in line on each lock", func() bool {
		return len(rt.Children(t, observer, a)) == 2 && len(rt.Children(t, observer, b)) == 2
	})
	for _, acquired := range waiting {
		rt.Pending(t, "a contender behind the multi-lock", acquired)
	}

	network.Cut()
	var next []*lock.Lease
	for _, acquired := range waiting {
		next = append(next, rt.Receive(t, acquired))
		if open(held.Lost()) {
			t.Error("a contender got a lock while the expired multi-lease was not lost")
		}
	}
	for _, l := range held.Leases() {
		if ok, _, err := observer.Exists(ctx, l.Node()); err != nil || ok {
			t.Errorf("expired holder's node %s still there (%v)", l.Node(), err)
		}
	}

	network.Heal()
	if err := c.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	refusedWrite(ctx, t, held, observer, "/multi-expiry-write")
	if err := held.Unlock(ctx); err != nil {
		t.Errorf("Unlock of the lost multi-lease: %v", err)
	}
	for _, l := range next {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
