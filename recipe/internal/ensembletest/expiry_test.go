package ensembletest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/recipe/election"
	"github.com/collie-io/collie/recipe/internal/recipetest"
	"github.com/collie-io/collie/recipe/lock"
	"github.com/collie-io/collie/recipe/queue"
)

// expiringSession is the session timeout of a client whose session a test
// expires on an ensemble: short, yet long enough that a loaded machine
// does not expire it before the test cuts it off.
const expiringSession = time.Second

// dialDoomed connects a client to every server of e through a partition
// of its own: once the test cuts it, the client reaches no server and its
// session expires. Once healed, the client starts a new session.
func dialDoomed(t *testing.T, e *collietest.Ensemble) (*client.Client, *recipetest.Partition) {
	t.Helper()
	return recipetest.Partitioned(t, e.ConnectString(), expiringSession)
}

// open reports whether ch is still open and empty.
func open(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// A mutex holder is cut off the ensemble until its session expires, with
// another client waiting, and the leader is stopped meanwhile: the
// holder's lease is lost before the waiter gets the lock, the waiter's
// token is larger, and the former holder's guarded write, sent once it is
// back with a new session, is refused.
func TestMutexExpiryOnEnsemble(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	old, network := dialDoomed(t, e)
	oldLease, err := lock.NewMutex(old, "/mutex").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := dial(t, e)
	if _, _, err := next.Create(ctx, "/fenced", []byte("0"), client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	acquired := make(chan *lock.Lease, 1)
	go func() {
		for {
			lease, err := lock.NewMutex(next, "/mutex").Lock(ctx)
			if err == nil || ctx.Err() != nil {
				acquired <- lease
				return
			}
			// A request failed with the connection, the leader being
			// stopped: queue again.
		}
	}()
	recipetest.WaitFor(t, "the waiter's node", func() bool { return len(recipetest.Children(t, next, "/mutex")) == 2 })
	recipetest.Pending(t, "the waiter", acquired)

	network.Cut()
	bounce(t, e)
	newLease := recipetest.Receive(t, acquired)
	if open(oldLease.Lost()) {
		t.Error("the waiter got the lock while the expired holder's lease was not lost")
	}
	if newLease.Token() <= oldLease.Token() {
		t.Errorf("new holder's token %d not larger than the old one's %d", newLease.Token(), oldLease.Token())
	}

	network.Heal()
	if err := old.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := oldLease.Do(ctx, client.SetOp("/fenced", []byte("old"), client.AnyVersion)); !errors.Is(err, lock.ErrLost) {
		t.Errorf("expired holder's guarded write = %v, want ErrLost", err)
	}
	if _, err := newLease.Do(ctx, client.SetOp("/fenced", []byte("new"), client.AnyVersion)); err != nil {
		t.Fatalf("holder's guarded write: %v", err)
	}
	if data, _, err := next.Get(ctx, "/fenced"); err != nil || string(data) != "new" {
		t.Errorf("/fenced = %q, %v; want the holder's write", data, err)
	}
	if err := oldLease.Unlock(ctx); err != nil {
		t.Errorf("Unlock of the lost lease: %v", err)
	}
	if err := newLease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// The leading latch is cut off the ensemble until its session expires,
// and the leader is stopped meanwhile: it no longer leads by the time the
// other latch does, with a larger token. Once back with a new session it
// joins the line again behind the new leader: one latch leads.
func TestLatchExpiryOnEnsemble(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	doomedClient, network := dialDoomed(t, e)
	doomed := startLatch(ctx, t, doomedClient, "/latch", "doomed")
	first, err := doomed.Await(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := startLatch(ctx, t, dial(t, e), "/latch", "other")
	if other.IsLeader() {
		t.Fatal("two leaders")
	}

	network.Cut()
	bounce(t, e)
	term, err := other.Await(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if doomed.IsLeader() || open(first.Lost()) {
		t.Error("the other latch leads while the expired one still does")
	}
	if term.Token() <= first.Token() {
		t.Errorf("new leader's token %d not larger than the expired one's %d", term.Token(), first.Token())
	}

	network.Heal()
	recipetest.WaitFor(t, "the expired latch back in line", func() bool {
		node := doomed.Node()
		return node != "" && node != first.Node()
	})
	if doomed.IsLeader() || !other.IsLeader() {
		t.Errorf("after the expired latch came back: it leads %t, the other leads %t; want the other alone", doomed.IsLeader(), other.IsLeader())
	}
	if p, err := other.Leader(ctx); err != nil || p.ID != "other" {
		t.Errorf("Leader = %+v, %v; want the other latch", p, err)
	}
}

// A selector leads on a client cut off the ensemble until its session
// expires, and the leader is stopped meanwhile: its function's context
// ends with ErrLost, Lead says leadership was lost, and the other
// selector's function starts only once the first has returned.
func TestSelectorExpiryOnEnsemble(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	doomedClient, network := dialDoomed(t, e)
	doomed := election.NewSelector(doomedClient, "/selector", "doomed")
	other := election.NewSelector(dial(t, e), "/selector", "other")
	var running atomic.Int32
	var cause atomic.Value
	leading := make(chan string, 4)
	doomedDone := make(chan error, 1)
	go func() {
		doomedDone <- doomed.Lead(ctx, func(ctx context.Context, _ *election.Term) error {
			running.Add(1)
			defer running.Add(-1)
			leading <- "doomed"
			<-ctx.Done()
			cause.Store(context.Cause(ctx))
			return nil
		})
	}()
	if who := recipetest.Receive(t, leading); who != "doomed" {
		t.Fatalf("%s leads first", who)
	}
	overlap := make(chan int32, 4)
	otherDone := make(chan error, 1)
	go func() {
		for {
			err := other.Lead(ctx, func(context.Context, *election.Term) error {
				overlap <- running.Add(1) - 1
				running.Add(-1)
				leading <- "other"
				return nil
			})
			if err == nil || ctx.Err() != nil {
				otherDone <- err
				return
			}
			// A request failed with the connection, the leader being
			// stopped: queue again.
		}
	}()
	recipetest.WaitFor(t, "the other selector in line", func() bool {
		ps, err := other.Participants(ctx)
		return err == nil && len(ps) == 2
	})
	recipetest.Pending(t, "the other selector", leading)

	network.Cut()
	bounce(t, e)
	if who := recipetest.Receive(t, leading); who != "other" {
		t.Fatalf("%s leads after the expiry", who)
	}
	if n := recipetest.Receive(t, overlap); n != 0 {
		t.Errorf("the other selector's function started beside %d still running", n)
	}
	if err, _ := cause.Load().(error); !errors.Is(err, election.ErrLost) {
		t.Errorf("the expired leader's context ended with %v, want ErrLost", err)
	}
	if err := recipetest.Receive(t, otherDone); err != nil {
		t.Errorf("the other selector's Lead: %v", err)
	}
	network.Heal()
	if err := recipetest.Receive(t, doomedDone); !errors.Is(err, election.ErrLost) {
		t.Errorf("the expired selector's Lead = %v, want ErrLost", err)
	}
}

// A consumer of a lock-safe queue is cut off the ensemble while its
// handler holds an item, until its session expires, and the leader is
// stopped meanwhile: its handler's context ends, Consume returns ErrLost,
// another consumer gets the same item, and nothing is left behind.
func TestLockSafeQueueExpiryOnEnsemble(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	const path, locks = "/jobs", "/jobs-locks"
	doomedClient, network := dialDoomed(t, e)
	doomed := queue.New(doomedClient, path, queue.LockSafe(locks))
	processing := make(chan queue.Item, 1)
	doomedDone := make(chan error, 1)
	go func() {
		doomedDone <- doomed.Consume(ctx, func(ctx context.Context, item queue.Item) error {
			processing <- item
			<-ctx.Done()
			return ctx.Err()
		})
	}()
	c := dial(t, e)
	if _, err := queue.New(c, path, queue.LockSafe(locks)).Put(ctx, []byte("job")); err != nil {
		t.Fatal(err)
	}
	first := recipetest.Receive(t, processing)

	survivor := queue.New(dial(t, e), path, queue.LockSafe(locks))
	redelivered := make(chan queue.Item, 2)
	survivorDone := make(chan error, 1)
	go func() {
		for {
			err := survivor.Consume(ctx, func(_ context.Context, item queue.Item) error {
				redelivered <- item
				return nil
			})
			if err == nil || ctx.Err() != nil {
				survivorDone <- err
				return
			}
			// A request failed with the connection, the leader being
			// stopped: consume again.
		}
	}()
	recipetest.Pending(t, "the survivor, while the item is locked", redelivered)

	network.Cut()
	bounce(t, e)
	if err := recipetest.Receive(t, doomedDone); !errors.Is(err, queue.ErrLost) {
		t.Errorf("Consume of the consumer cut off = %v, want ErrLost", err)
	}
	again := recipetest.Receive(t, redelivered)
	if again.Node != first.Node || string(again.Data) != "job" {
		t.Errorf("redelivered %s %q, want %s %q", again.Node, again.Data, first.Node, "job")
	}
	if err := recipetest.Receive(t, survivorDone); err != nil {
		t.Errorf("Consume: %v", err)
	}
	network.Heal()
	if err := c.Sync(ctx, path); err != nil {
		t.Fatal(err)
	}
	if n := len(recipetest.Children(t, c, path)) + len(recipetest.Children(t, c, locks)); n != 0 {
		t.Errorf("%d nodes left in the queue and its locks", n)
	}
}
