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
	"github.com/collie-io/collie/recipe/discovery"
	"github.com/collie-io/collie/recipe/election"
	"github.com/collie-io/collie/recipe/internal/recipetest"
	"github.com/collie-io/collie/recipe/lock"
)

// dial connects a client to every server of e, renewing its session when
// it expires.
func dial(t *testing.T, e *collietest.Ensemble) *client.Client {
	t.Helper()
	return recipetest.Dial(t, e.ConnectString(), client.Config{SessionTimeout: 2 * time.Second, RenewSession: true})
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
		l := election.NewLatch(dial(t, e), "/latch", fmt.Sprint("p", i))
		if err := l.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), recipetest.Timeout)
			defer cancel()
			if err := l.Close(ctx); err != nil {
				t.Errorf("latch %d: %v", i, err)
			}
		})
		latches = append(latches, l)
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
