// Package ensembletest runs the recipes against an ensemble of three
// servers while the leader is stopped and started again: the guarantees
// the recipes give on one server must hold across a change of leader.
package ensembletest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/recipe/barrier"
	"github.com/collie-io/collie/recipe/counter"
	"github.com/collie-io/collie/recipe/discovery"
	"github.com/collie-io/collie/recipe/election"
	"github.com/collie-io/collie/recipe/internal/recipetest"
	"github.com/collie-io/collie/recipe/lock"
	"github.com/collie-io/collie/recipe/queue"
)

// dial connects a client to every server of e, renewing its session when
// it expires.
func dial(t *testing.T, e *collietest.Ensemble) *client.Client {
	t.Helper()
	return recipetest.Dial(t, e.ConnectString(), client.Config{SessionTimeout: 2 * time.Second, RenewSession: true})
}

// startLatch starts a latch on path for participant id, closed when the
// test ends.
func startLatch(ctx context.Context, t *testing.T, c *client.Client, path, id string) *election.Latch {
	t.Helper()
	l := election.NewLatch(c, path, id)
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), recipetest.Timeout)
		defer cancel()
		if err := l.Close(ctx); err != nil {
			t.Errorf("latch %s: %v", id, err)
		}
	})
	return l
}

// bounce stops the leader of e and starts it again once another leads.
func bounce(t *testing.T, e *collietest.Ensemble) {
	t.Helper()
	old := e.Leader()
	old.Stop()
	recipetest.WaitFor(t, "another leader", func() bool { l := e.Leader(); return l != nil && l != old })
	old.Restart()
}

// Four clients take a mutex in turn and increment a counter under it
// with a guarded write, while the leader is stopped twice: no two hold
// it at once, and every increment a client saw succeed is counted.
func TestMutexAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	setup := dial(t, e)
	if _, _, err := setup.Create(ctx, "/count", []byte("0"), client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	var holders, maxHolders, done, unsure atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		c := dial(t, e)
		m := lock.NewMutex(c, "/mutex")
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				lease, err := m.Lock(ctx)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					continue // the session or connection went: try again
				}
				n := holders.Add(1)
				for old := maxHolders.Load(); n > old && !maxHolders.CompareAndSwap(old, n); old = maxHolders.Load() {
				}
				switch increment(ctx, c, lease) {
				case applied:
					done.Add(1)
				case unknown:
					unsure.Add(1)
				}
				holders.Add(-1)
				if err := lease.Unlock(ctx); err != nil && ctx.Err() == nil {
					t.Logf("worker %d: unlock: %v", w, err)
				}
			}
		})
	}
	recipetest.WaitFor(t, "increments before the first stop", func() bool { return done.Load() >= 10 })
	bounce(t, e)
	at := done.Load()
	recipetest.WaitFor(t, "increments after the first stop", func() bool { return done.Load() >= at+10 })
	bounce(t, e)
	at = done.Load()
	recipetest.WaitFor(t, "increments after the second stop", func() bool { return done.Load() >= at+10 })
	close(stop)
	wg.Wait()
	if n := maxHolders.Load(); n > 1 {
		t.Errorf("%d holders of the mutex at once", n)
	}
	data, _, err := setup.Get(ctx, "/count")
	if err != nil {
		t.Fatal(err)
	}
	count, _ := strconv.ParseInt(string(data), 10, 64)
	if lo, hi := done.Load(), done.Load()+unsure.Load(); count < lo || count > hi {
		t.Errorf("counter %d; increments seen to succeed %d, of unknown outcome %d", count, lo, hi-lo)
	}
}

// outcome is what became of an increment.
type outcome int

const (
	notApplied outcome = iota
	applied
	unknown
)

// increment adds one to /count under lease, and says whether it did.
func increment(ctx context.Context, c *client.Client, lease *lock.Lease) outcome {
	for {
		data, st, err := c.Get(ctx, "/count")
		if err != nil {
			if ctx.Err() != nil {
				return notApplied
			}
			continue
		}
		v, _ := strconv.Atoi(string(data))
		_, err = lease.Do(ctx, client.SetOp("/count", []byte(strconv.Itoa(v+1)), st.Version))
		switch {
		case err == nil:
			return applied
		case errors.Is(err, client.ErrConnectionLoss), errors.Is(err, client.ErrSessionExpired):
			// The write may be applied later still: a leader elected
			// meanwhile commits what its predecessor had replicated.
			return unknown
		default:
			return notApplied // lost the lock or the session first
		}
	}
}

// Three latches on one path elect one leader; after the ensemble's leader
// is stopped twice, there is again exactly one leader, whose token is not
// older.
func TestLatchAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	var latches []*election.Latch
	for i := range 3 {
		latches = append(latches, startLatch(ctx, t, dial(t, e), "/latch", fmt.Sprint("p", i)))
	}
	leaders := func() (n int, token int64) {
		for _, l := range latches {
			if l.IsLeader() {
				n++
				if term := l.Term(); term != nil {
					token = term.Token()
				}
			}
		}
		return n, token
	}
	recipetest.WaitFor(t, "one leader", func() bool { n, _ := leaders(); return n == 1 })
	_, first := leaders()
	bounce(t, e)
	bounce(t, e)
	recipetest.WaitFor(t, "one leader after the leader changes", func() bool { n, _ := leaders(); return n == 1 })
	if _, token := leaders(); token < first {
		t.Errorf("token %d after the changes, %d before", token, first)
	}
}

// An instance registered through one server stays found while the
// leader changes, and a live list of it follows its unregistration.
func TestDiscoveryAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	d := discovery.New(dial(t, e), "/svc")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), recipetest.Timeout)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	port := 80
	if err := d.Register(ctx, discovery.Instance{Name: "api", ID: "1", Address: "10.0.0.1", Port: &port}); err != nil {
		t.Fatal(err)
	}
	live, err := discovery.New(dial(t, e), "/svc").Cache(ctx, "api")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(live.Close)
	recipetest.WaitFor(t, "the instance in the live list", func() bool { return len(live.Instances()) == 1 })
	bounce(t, e)
	bounce(t, e)
	recipetest.WaitFor(t, "the instance still there", func() bool { return len(live.Instances()) == 1 })
	if err := d.Unregister(ctx, "api", "1"); err != nil {
		t.Fatal(err)
	}
	recipetest.WaitFor(t, "the live list to follow the unregistration", func() bool { return len(live.Instances()) == 0 })
}

// A producer puts items and three consumers take them while the leader is
// stopped twice: every item put is taken, and none is taken twice. An item
// whose put or take lost its reply is counted apart: it may or may not be
// in the queue, or may have been taken by this consumer or another.
func TestQueueAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	const items = 60
	var mu sync.Mutex
	taken := map[string]int{}
	uncertain := map[string]bool{}
	var wg sync.WaitGroup
	cctx, stop := context.WithCancel(ctx)
	for range 3 {
		q := queue.New(dial(t, e), "/queue")
		wg.Go(func() {
			for cctx.Err() == nil {
				item, err := q.Take(cctx)
				var ue *queue.UncertainError
				mu.Lock()
				switch {
				case err == nil:
					taken[string(item.Data)]++
				case errors.As(err, &ue):
					uncertain[string(ue.Item.Data)] = true
				}
				mu.Unlock()
			}
		})
	}
	producer := queue.New(dial(t, e), "/queue")
	put := map[string]bool{}
	for i := range items {
		if i == items/3 || i == 2*items/3 {
			bounce(t, e)
		}
		v := strconv.Itoa(i)
		if _, err := producer.Put(ctx, []byte(v)); err != nil {
			mu.Lock()
			uncertain[v] = true
			mu.Unlock()
			continue
		}
		put[v] = true
	}
	missing := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for v := range put {
			if taken[v] == 0 && !uncertain[v] {
				out = append(out, v)
			}
		}
		return out
	}
	defer func() {
		if t.Failed() {
			left, _ := producer.Len(context.Background())
			t.Logf("items not taken: %v; %d left in the queue", missing(), left)
		}
	}()
	recipetest.WaitFor(t, "every item put to be taken", func() bool { return len(missing()) == 0 })
	stop()
	wg.Wait()
	for v, n := range taken {
		if n > 1 {
			t.Errorf("item %s taken %d times", v, n)
		}
	}
}

// Three clients add to an atomic long while the leader is stopped twice:
// no increment seen to succeed is lost, and none is counted twice.
func TestAtomicLongAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	var done, unsure atomic.Int64
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 3 {
		a := counter.NewAtomicLong(dial(t, e), "/long", client.ExponentialBackoff(10*time.Millisecond, 100*time.Millisecond, 20))
		wg.Go(func() {
			for cctx.Err() == nil {
				// A failed Add may still apply, also one cut short by
				// the end of the test.
				if _, err := a.Add(cctx, 1); err == nil {
					done.Add(1)
				} else {
					unsure.Add(1)
				}
			}
		})
	}
	recipetest.WaitFor(t, "increments", func() bool { return done.Load() >= 20 })
	bounce(t, e)
	bounce(t, e)
	at := done.Load()
	recipetest.WaitFor(t, "increments after the changes", func() bool { return done.Load() >= at+20 })
	stop()
	wg.Wait()
	got, err := counter.NewAtomicLong(dial(t, e), "/long", nil).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := done.Load(), done.Load()+unsure.Load(); got < lo || got > hi {
		t.Errorf("value %d; increments seen to succeed %d, of unknown outcome %d", got, lo, hi-lo)
	}
}

// Three participants enter a double barrier, the leader stopped after the
// second arrives: none gets through before the third has arrived, and all
// leave.
func TestDoubleBarrierAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	var arrived atomic.Int32
	errs := make(chan error, 3)
	enter := func(i int) {
		b := barrier.NewDouble(dial(t, e), "/double", 3, fmt.Sprint("p", i))
		arrived.Add(1)
		if err := b.Enter(ctx); err != nil {
			errs <- fmt.Errorf("enter %d: %w", i, err)
			return
		}
		if n := arrived.Load(); n != 3 {
			errs <- fmt.Errorf("participant %d entered with %d arrived", i, n)
			return
		}
		errs <- b.Leave(ctx)
	}
	go enter(0)
	go enter(1)
	recipetest.WaitFor(t, "two arrivals", func() bool { return arrived.Load() == 2 })
	bounce(t, e)
	go enter(2)
	for range 3 {
		if err := recipetest.Receive(t, errs); err != nil {
			t.Error(err)
		}
	}
}

// Five clients share a semaphore of two leases, and a read/write lock,
// while the leader is stopped twice: never more than two lease holders at
// once, never a writer beside anyone else, and both go on being taken.
func TestSemaphoreAndRWLockAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	cctx, stop := context.WithCancel(ctx)
	var leases, maxLeases, readers, writers, rounds atomic.Int64
	var bad atomic.Value
	peak := func(v *atomic.Int64, n int64) {
		for old := v.Load(); n > old && !v.CompareAndSwap(old, n); old = v.Load() {
		}
	}
	var wg sync.WaitGroup
	for w := range 5 {
		c := dial(t, e)
		sem := lock.NewSemaphore(c, "/semaphore", 2)
		rw := lock.NewRWLock(c, "/rwlock")
		wg.Go(func() {
			for cctx.Err() == nil {
				got, err := sem.Acquire(cctx, 1)
				if err == nil {
					peak(&maxLeases, leases.Add(1))
					leases.Add(-1)
					for _, l := range got {
						l.Unlock(cctx)
					}
				}
				var l *lock.Lease
				if w%2 == 0 {
					if l, err = rw.Lock(cctx); err == nil {
						if writers.Add(1) != 1 || readers.Load() != 0 {
							bad.Store("a writer beside another holder")
						}
						writers.Add(-1)
					}
				} else if l, err = rw.RLock(cctx); err == nil {
					readers.Add(1)
					if writers.Load() != 0 {
						bad.Store("a reader beside a writer")
					}
					readers.Add(-1)
				}
				if err == nil {
					l.Unlock(cctx)
					rounds.Add(1)
				}
			}
		})
	}
	recipetest.WaitFor(t, "rounds", func() bool { return rounds.Load() >= 10 })
	bounce(t, e)
	bounce(t, e)
	at := rounds.Load()
	recipetest.WaitFor(t, "rounds after the changes", func() bool { return rounds.Load() >= at+10 })
	stop()
	wg.Wait()
	if n := maxLeases.Load(); n > 2 {
		t.Errorf("%d leases of two held at once", n)
	}
	if v := bad.Load(); v != nil {
		t.Error(v)
	}
}
