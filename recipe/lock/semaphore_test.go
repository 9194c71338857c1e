package lock_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/collie-io/collie/client"
	rt "github.com/collie-io/collie/recipe/internal/recipetest"
	"github.com/collie-io/collie/recipe/lock"
)

var semaphoreScenarios = []scenario{
	{"never-over-limit", testSemaphoreLimit},
	{"acquire-several", testSemaphoreSeveral},
	{"lease-lost-with-session", testSemaphoreExpiry},
	{"cancel-while-waiting", testSemaphoreCancel},
	{"semaphore-mutex", testSemaphoreMutex},
}

// curatorLeaseNode is how Curator's InterProcessSemaphoreV2 names its
// leases.
var curatorLeaseNode = regexp.MustCompile(`/leases/_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lease-[0-9]{10}$`)

// testSemaphoreLimit runs contenders, each with a session of its own, that
// take one or two leases of three at a time, counting the leases held with
// an atomic: never more than three.
func testSemaphoreLimit(t *testing.T, addr string) {
	const max, contenders, rounds = 3, 6, 4
	ctx := rt.Context(t)
	var (
		held, peak atomic.Int32
		errs       rt.Errs
		wg         sync.WaitGroup
	)
	for i := range contenders {
		s := lock.NewSemaphore(rt.Dial(t, addr, client.Config{}), "/sem-limit", max)
		n := 1 + i%2
		wg.Go(func() {
			for range rounds {
				leases, err := s.Acquire(ctx, n)
				if err != nil {
					errs.Add("Acquire", err)
					return
				}
				now := held.Add(int32(n))
				if now > max {
					errs.Add("Acquire", fmt.Errorf("%d leases held at once", now))
				}
				for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
				}
				held.Add(-int32(n))
				for _, l := range leases {
					if !curatorLeaseNode.MatchString(l.Node()) {
						errs.Add("Acquire", fmt.Errorf("lease %s is not named as Curator names it", l.Node()))
					}
					errs.Add("Unlock", l.Unlock(ctx))
				}
			}
		})
	}
	wg.Wait()
	errs.Report(t)
	t.Logf("at most %d of %d leases held at once", peak.Load(), max)
}

// testSemaphoreSeveral takes two leases of three, then asks for two more
// from another session: they wait together, their nodes made, while the
// waiter holds the semaphore's mutex, until a lease is returned; then both
// are granted.
func testSemaphoreSeveral(t *testing.T, addr string) {
	ctx := rt.Context(t)
	path := "/sem-several"
	c := rt.Dial(t, addr, client.Config{})
	s := lock.NewSemaphore(c, path, 3, lock.WithData([]byte("first")))
	first, err := s.Acquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || first[1].Token() <= first[0].Token() {
		t.Fatalf("leases %v: want two, in order", first)
	}
	if _, err := s.Acquire(ctx, 4); err == nil {
		t.Fatal("Acquire of more leases than the semaphore has succeeded")
	}
	other := rt.Dial(t, addr, client.Config{})
	acquired := make(chan []*lock.Lease, 1)
	go func() {
		leases, err := lock.NewSemaphore(other, path, 3, lock.WithData([]byte("second"))).Acquire(ctx, 2)
		if err != nil {
			t.Error(err)
		}
		acquired <- leases
	}()
	rt.WaitFor(t, "four lease nodes", func() bool { return len(rt.Children(t, c, path+"/leases")) == 4 })
	all, err := s.Participants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 || string(all[0].Data) != "first" || string(all[1].Data) != "first" || string(all[2].Data) != "second" || string(all[3].Data) != "second" {
		t.Errorf("participants %+v: want first's two leases, then second's", all)
	}
	rt.Pending(t, "the fourth lease", acquired)
	// The waiter holds the semaphore's mutex, whose node is alone in line.
	if got := rt.Children(t, c, path+"/locks"); len(got) != 1 {
		t.Errorf("semaphore mutex line %v, want the waiter alone", got)
	}

	if err := first[0].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	second := rt.Receive(t, acquired)
	for _, l := range append(second, first[1]) {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := first[1].Unlock(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("second Unlock of a lease = %v, want ErrNotHeld", err)
	}
	rt.WaitFor(t, "every node to go", func() bool {
		return len(rt.Children(t, c, path+"/leases"))+len(rt.Children(t, c, path+"/locks")) == 0
	})
}

// testSemaphoreExpiry cuts the holder of a semaphore's only lease off
// until its session expires: the lease is lost at once, and the waiter
// gets it, with a larger token.
func testSemaphoreExpiry(t *testing.T, addr string) {
	ctx := rt.Context(t)
	path := "/sem-expiry"
	holder, network := rt.Partitioned(t, addr, rt.ShortSession)
	leases, err := lock.NewSemaphore(holder, path, 1).Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	observer := rt.Dial(t, addr, client.Config{})
	acquired := make(chan []*lock.Lease, 1)
	go func() {
		got, err := lock.NewSemaphore(observer, path, 1).Acquire(ctx, 1)
		if err != nil {
			t.Error(err)
		}
		acquired <- got
	}()
	rt.WaitFor(t, "the waiter's lease node", func() bool { return len(rt.Children(t, observer, path+"/leases")) == 2 })
	rt.Pending(t, "the waiter", acquired)

	network.Cut()
	rt.Receive(t, leases[0].Lost())
	next := rt.Receive(t, acquired)
	if next[0].Token() <= leases[0].Token() {
		t.Errorf("next lease's token %d not larger than the lost one's %d", next[0].Token(), leases[0].Token())
	}
	network.Heal()
	if err := leases[0].Unlock(ctx); err != nil {
		t.Errorf("Unlock of the lost lease: %v", err)
	}
	if err := next[0].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testSemaphoreCancel cancels two waiters of a full semaphore: the one
// that holds the semaphore's mutex and waits for a lease, and the one in
// the mutex's line behind it. Both return the context's error and leave no
// node behind.
func testSemaphoreCancel(t *testing.T, addr string) {
	ctx := rt.Context(t)
	path := "/sem-cancel"
	c := rt.Dial(t, addr, client.Config{})
	s := lock.NewSemaphore(c, path, 1)
	held, err := s.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithCancel(ctx)
	failed := make(chan error, 2)
	for i := range 2 {
		waiter := lock.NewSemaphore(rt.Dial(t, addr, client.Config{}), path, 1)
		go func() {
			_, err := waiter.Acquire(waitCtx, 1)
			failed <- err
		}()
		rt.WaitFor(t, "the waiter's mutex node", func() bool { return len(rt.Children(t, c, path+"/locks")) == i+1 })
	}
	rt.WaitFor(t, "the waiting lease node", func() bool { return len(rt.Children(t, c, path+"/leases")) == 2 })
	cancel()
	for range 2 {
		if err := rt.Receive(t, failed); !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire = %v, want context.Canceled", err)
		}
	}
	rt.WaitFor(t, "the waiters' nodes to go", func() bool {
		return len(rt.Children(t, c, path+"/locks")) == 0 && len(rt.Children(t, c, path+"/leases")) == 1
	})
	if err := held[0].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testSemaphoreMutex takes a SemaphoreMutex, which is not reentrant: a
// second Lock on the same value waits like anyone else's, and gets the
// lock, with a larger token, once the first lease is released.
func testSemaphoreMutex(t *testing.T, addr string) {
	ctx := rt.Context(t)
	m := lock.NewSemaphoreMutex(rt.Dial(t, addr, client.Config{}), "/sem-mutex")
	first, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	acquired := lockAsync(ctx, t, m)
	rt.WaitFor(t, "the second lease node", func() bool {
		all, err := m.Participants(ctx)
		return err == nil && len(all) == 2
	})
	rt.Pending(t, "a second Lock on the same SemaphoreMutex", acquired)
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	second := rt.Receive(t, acquired)
	if second == first || second.Token() <= first.Token() {
		t.Errorf("second lease %s (token %d) after %s (token %d): want a new one with a larger token", second.Node(), second.Token(), first.Node(), first.Token())
	}
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
