package lock_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	rt "github.com/collie-io/collie/recipe/internal/recipetest"
	"github.com/collie-io/collie/recipe/lock"
)

// scenario is one test of a recipe against one server.
type scenario struct {
	name string
	run  func(t *testing.T, addr string)
}

// TestLock runs every scenario of every recipe against Collie, and against
// the real ZooKeeper 3.8 to show that the scenarios' expectations are
// ZooKeeper's. The herd scenario goes first, while the server holds no
// watch of anyone else's.
func TestLock(t *testing.T) {
	recipes := []struct {
		name      string
		scenarios []scenario
	}{
		{"herd", []scenario{{"mutex", testHerd}}},
		{"mutex", mutexScenarios},
		{"rwlock", rwlockScenarios},
		{"semaphore", semaphoreScenarios},
		{"multi", multiScenarios},
	}
	for _, srv := range rt.Servers {
		t.Run("server="+srv.Name, func(t *testing.T) {
			addr := srv.Start(t)
			for _, r := range recipes {
				t.Run(r.name, func(t *testing.T) {
					for _, sc := range r.scenarios {
						t.Run(sc.name, func(t *testing.T) { sc.run(t, addr) })
					}
				})
			}
		})
	}
}

var mutexScenarios = []scenario{
	{"contention", testContention},
	{"cancel-while-waiting", testCancelWhileWaiting},
	{"reentrant", testReentrant},
	{"node-data", testNodeData},
	{"node-deleted", testNodeDeleted},
	{"fencing-after-expiry", testFencingAfterExpiry},
	{"release-across-lost-connection", testGuaranteedRelease},
	{"lost-create-reply", testLostCreateReply},
}

// curatorLockNode is how Curator's InterProcessMutex names its nodes.
var curatorLockNode = regexp.MustCompile(`/_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-[0-9]{10}$`)

// testContention runs contenders, each with its own session, that take the
// lock in turns: never two holders at once, every token larger than the
// last, and the lock granted in the order of the nodes' sequence numbers.
func testContention(t *testing.T, addr string) {
	const contenders, rounds = 6, 4
	ctx := rt.Context(t)
	var (
		holders   atomic.Int32
		mu        sync.Mutex
		sequences []int
		tokens    []int64
		errs      rt.Errs
		wg        sync.WaitGroup
	)
	for range contenders {
		m := lock.NewMutex(rt.Dial(t, addr, client.Config{}), "/contention")
		wg.Go(func() {
			for range rounds {
				lease, err := m.Lock(ctx)
				if err != nil {
					errs.Add("Lock", err)
					return
				}
				if n := holders.Add(1); n != 1 {
					errs.Add("Lock", fmt.Errorf("%d holders at once", n))
				}
				mu.Lock()
				sequences = append(sequences, rt.Sequence(t, lease.Node()))
				tokens = append(tokens, lease.Token())
				mu.Unlock()
				holders.Add(-1)
				if err := lease.Unlock(ctx); err != nil {
					errs.Add("Unlock", err)
					return
				}
			}
		})
	}
	wg.Wait()
	errs.Report(t)
	if len(sequences) != contenders*rounds {
		t.Fatalf("%d acquisitions, want %d", len(sequences), contenders*rounds)
	}
	if !slices.IsSorted(sequences) || !slices.IsSorted(tokens) {
		t.Errorf("acquired out of line: sequences %v, tokens %v", sequences, tokens)
	}
}

// testCancelWhileWaiting cancels a Lock waiting behind a holder: it returns
// the context's error and its node goes.
func testCancelWhileWaiting(t *testing.T, addr string) {
	ctx := rt.Context(t)
	path := "/cancel"
	c := rt.Dial(t, addr, client.Config{})
	holder, err := lock.NewMutex(c, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiter := lock.NewMutex(rt.Dial(t, addr, client.Config{}), path)
	cancelWaiting(t, waiter.Lock, func() bool { return len(rt.Children(t, c, path)) == 2 })
	rt.WaitFor(t, "the waiter's node to go", func() bool { return len(rt.Children(t, c, path)) == 1 })
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rt.Children(t, c, path); len(got) != 0 {
		t.Errorf("nodes left: %v", got)
	}
}

// testReentrant locks one Mutex twice: one lease, one node, released by the
// second Unlock; the node's name is Curator's.
func testReentrant(t *testing.T, addr string) {
	ctx := rt.Context(t)
	c := rt.Dial(t, addr, client.Config{})
	m := lock.NewMutex(c, "/reentrant/deeper")
	first, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !curatorLockNode.MatchString(first.Node()) || !regexp.MustCompile(`^/reentrant/deeper/[^/]+$`).MatchString(first.Node()) {
		t.Errorf("node %s is not named as Curator names it", first.Node())
	}
	second, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second != first {
		t.Fatal("second Lock returned another lease")
	}
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c.Exists(ctx, first.Node()); err != nil || !ok {
		t.Fatalf("node gone after the first of two Unlocks: %v", err)
	}
	if !open(first.Lost()) {
		t.Fatal("lease lost while still held once")
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c.Exists(ctx, first.Node()); err != nil || ok {
		t.Fatalf("node still there after the last Unlock: %v", err)
	}
	if err := first.Unlock(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("extra Unlock = %v, want ErrNotHeld", err)
	}
}

// testNodeData gives two contenders data of their own: each node holds its
// contender's data, and Participants lists both in line order, holder
// first, with their tokens.
func testNodeData(t *testing.T, addr string) {
	ctx := rt.Context(t)
	path := "/data"
	c := rt.Dial(t, addr, client.Config{})
	holder := lock.NewMutex(c, path, lock.WithData([]byte("host-a")))
	lease, err := holder.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiter := lock.NewMutex(rt.Dial(t, addr, client.Config{}), path, lock.WithData([]byte("host-b")))
	acquired := lockAsync(ctx, t, waiter)
	rt.WaitFor(t, "the waiter's node", func() bool { return len(rt.Children(t, c, path)) == 2 })
	all, err := waiter.Participants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Node != lease.Node() || string(all[0].Data) != "host-a" || all[0].Token != lease.Token() ||
		string(all[1].Data) != "host-b" || all[1].Token <= lease.Token() || all[1].Read {
		t.Errorf("participants %+v; want host-a holding %s, then host-b", all, lease.Node())
	}
	if data, _, err := c.Get(ctx, all[1].Node); err != nil || string(data) != "host-b" {
		t.Errorf("waiter's node holds %q, %v", data, err)
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Receive(t, acquired).Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if all, err := holder.Participants(ctx); err != nil || len(all) != 0 {
		t.Errorf("participants after release: %+v, %v", all, err)
	}
}

// testNodeDeleted deletes a holder's node from another session: the lease
// is lost and its guarded writes are refused.
func testNodeDeleted(t *testing.T, addr string) {
	ctx := rt.Context(t)
	c := rt.Dial(t, addr, client.Config{})
	lease, err := lock.NewMutex(c, "/deleted").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Dial(t, addr, client.Config{}).Delete(ctx, lease.Node(), client.AnyVersion); err != nil {
		t.Fatal(err)
	}
	rt.Receive(t, lease.Lost())
	if _, err := lease.Do(ctx, client.CreateOp("/deleted-write", nil, client.ModePersistent, nil)); !errors.Is(err, lock.ErrLost) {
		t.Fatalf("guarded write = %v, want ErrLost", err)
	}
	if ok, _, _ := c.Exists(ctx, "/deleted-write"); ok {
		t.Error("guarded write applied")
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testFencingAfterExpiry cuts a holder off the network until its session
// expires: its lease is lost at once, the next holder gets a larger token,
// and the former holder's guarded write, sent once it is back with a new
// session, is refused by the server.
func testFencingAfterExpiry(t *testing.T, addr string) {
	ctx := rt.Context(t)
	path := "/fencing"
	old, network := rt.Partitioned(t, addr, rt.ShortSession)
	oldLease, err := lock.NewMutex(old, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := rt.Dial(t, addr, client.Config{})
	if _, _, err := next.Create(ctx, "/fenced", []byte("0"), client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	acquired := lockAsync(ctx, t, lock.NewMutex(next, path))
	rt.WaitFor(t, "the next holder's node", func() bool { return len(rt.Children(t, next, path)) == 2 })

	network.Cut()
	rt.Receive(t, oldLease.Lost())
	newLease := rt.Receive(t, acquired)
	if newLease.Token() <= oldLease.Token() {
		t.Errorf("new holder's token %d not larger than the old one's %d", newLease.Token(), oldLease.Token())
	}

	network.Heal()
	if err := old.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := oldLease.Do(ctx, client.SetOp("/fenced", []byte("old"), client.AnyVersion)); !errors.Is(err, lock.ErrLost) {
		t.Fatalf("former holder's guarded write = %v, want ErrLost", err)
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

// testGuaranteedRelease unlocks while the holder's connection is down, in
// the two ways a delete is lost: never sent (the connection is cut), or
// sent and never answered (the connection stalls, then breaks). Unlock's
// context ends first and it says the release is pending; the node stays
// while the connection is down, and once it is back the delete goes
// through, within the same session, and the waiter gets the lock.
func testGuaranteedRelease(t *testing.T, addr string) {
	losses := []struct {
		name string
		lose func(*rt.Partition)
		back func(*rt.Partition)
	}{
		{"never-sent", (*rt.Partition).Cut, (*rt.Partition).Heal},
		{"never-answered", (*rt.Partition).Stall, func(p *rt.Partition) { p.Cut(); p.Heal() }},
	}
	for _, loss := range losses {
		t.Run(loss.name, func(t *testing.T) {
			ctx := rt.Context(t)
			path := "/guaranteed-" + loss.name
			c, network := rt.Partitioned(t, addr, rt.LongSession)
			session := c.SessionID()
			holder, err := lock.NewMutex(c, path).Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			observer := rt.Dial(t, addr, client.Config{})
			acquired := lockAsync(ctx, t, lock.NewMutex(observer, path))
			rt.WaitFor(t, "the waiter's node", func() bool { return len(rt.Children(t, observer, path)) == 2 })

			loss.lose(network)
			unlockCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			err = holder.Unlock(unlockCtx)
			cancel()
			if !errors.Is(err, lock.ErrReleasePending) {
				t.Fatalf("Unlock without a connection = %v, want ErrReleasePending", err)
			}
			if ok, _, err := observer.Exists(ctx, holder.Node()); err != nil || !ok {
				t.Fatalf("holder's node gone while its connection is down (%v)", err)
			}
			rt.Pending(t, "the waiter", acquired)
			if err := holder.Unlock(ctx); !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("second Unlock = %v, want ErrNotHeld", err)
			}

			loss.back(network)
			lease := rt.Receive(t, acquired)
			// A request answered in the old session shows it never expired:
			// the node went by the delete, not with the session.
			if _, _, err := c.Exists(ctx, "/"); err != nil || c.SessionID() != session {
				t.Fatalf("the holder's session ended (%v): the node went with it", err)
			}
			if err := lease.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// cancelWaiting takes a lock with take, waits until inLine says its node
// is in line, cancels it, and checks that take returns the context's
// error.
func cancelWaiting(t *testing.T, take func(context.Context) (*lock.Lease, error), inLine func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(rt.Context(t))
	defer cancel()
	failed := make(chan error, 1)
	go func() {
		_, err := take(ctx)
		failed <- err
	}()
	rt.WaitFor(t, "the waiter's node", inLine)
	cancel()
	if err := rt.Receive(t, failed); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting = %v, want context.Canceled", err)
	}
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

// lockAsync takes m in a goroutine and sends the lease on the channel
// returned.
func lockAsync(ctx context.Context, t *testing.T, m lock.Locker) <-chan *lock.Lease {
	acquired := make(chan *lock.Lease, 1)
	go func() {
		lease, err := m.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		acquired <- lease
	}()
	return acquired
}

// refusedWrite creates path through lease's guard, and fails the test
// unless the server refused it for the lost lock and path is not there.
func refusedWrite(ctx context.Context, t *testing.T, lease interface {
	Do(context.Context, ...client.Op) ([]client.OpResult, error)
}, observer *client.Client, path string) {
	t.Helper()
	if _, err := lease.Do(ctx, client.CreateOp(path, nil, client.ModePersistent, nil)); !errors.Is(err, lock.ErrLost) {
		t.Errorf("guarded write of a lost lease = %v, want ErrLost", err)
	}
	if ok, _, err := observer.Exists(ctx, path); err != nil || ok {
		t.Errorf("guarded write of a lost lease applied (%v)", err)
	}
}

// testLostCreateReply loses the reply to the create of a contender's node:
// the server makes the node, the client never hears of it and reconnects
// with its session. Lock finds the node it made by its protection prefix
// and holds the lock through it, rather than make a second node that
// nobody would release, which would hold the lock for the session's life.
func testLostCreateReply(t *testing.T, addr string) {
	ctx := rt.Context(t)
	path := "/lost-create"
	observer := rt.Dial(t, addr, client.Config{})
	if _, _, err := observer.Create(ctx, path, nil, client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	// Long enough for the client to reconnect within it once it has
	// noticed the loss.
	c, network := rt.Partitioned(t, addr, 1500*time.Millisecond)
	states := c.StateChanges()
	defer states.Close()
	network.Deafen()
	acquired := lockAsync(ctx, t, lock.NewMutex(c, path))
	rt.WaitFor(t, "the node created", func() bool { return len(rt.Children(t, observer, path)) == 1 })
	rt.AwaitState(t, states, client.StateDisconnected)
	network.Heal()
	lease := rt.Receive(t, acquired)
	if got := rt.Children(t, observer, path); len(got) != 1 || path+"/"+got[0] != lease.Node() {
		t.Errorf("nodes %v, want the holder's %s alone", got, lease.Node())
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rt.Children(t, observer, path); len(got) != 0 {
		t.Errorf("nodes %v left after Unlock", got)
	}
}
