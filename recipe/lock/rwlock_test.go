package lock_test

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/collie-io/collie/client"
	rt "github.com/collie-io/collie/recipe/internal/recipetest"
	"github.com/collie-io/collie/recipe/lock"
)

var rwlockScenarios = []scenario{
	{"exclusion", testRWExclusion},
	{"fair-line", testRWFairLine},
	{"writer-reads", testRWWriterReads},
	{"downgrade", testRWDowngrade},
	{"no-upgrade", testRWNoUpgrade},
	{"cancel-while-waiting", testRWCancel},
	{"writer-expiry", testRWExpiry},
}

// curatorRWNode is how Curator's InterProcessReadWriteLock names its nodes.
var curatorRWNode = regexp.MustCompile(`/_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-__(READ|WRIT)__[0-9]{10}$`)

// testRWExclusion runs readers and writers, each with a session of its
// own, that take the lock in turns, counting holders with atomics: a
// writer always holds it alone, readers never beside a writer; writers'
// tokens grow.
func testRWExclusion(t *testing.T, addr string) {
	const each, rounds = 3, 4
	ctx := rt.Context(t)
	var (
		readers, writers atomic.Int32
		mu               sync.Mutex
		tokens           []int64
		errs             rt.Errs
		wg               sync.WaitGroup
	)
	for i := range 2 * each {
		rw := lock.NewRWLock(rt.Dial(t, addr, client.Config{}), "/rw-exclusion")
		write := i%2 == 0
		wg.Go(func() {
			for range rounds {
				take := rw.RLock
				if write {
					take = rw.Lock
				}
				lease, err := take(ctx)
				if err != nil {
					errs.Add("lock", err)
					return
				}
				if !curatorRWNode.MatchString(lease.Node()) {
					errs.Add("lock", fmt.Errorf("node %s is not named as Curator names it", lease.Node()))
				}
				if write {
					if n := writers.Add(1); n != 1 || readers.Load() != 0 {
						errs.Add("Lock", fmt.Errorf("%d writers and %d readers at once", n, readers.Load()))
					}
					mu.Lock()
					tokens = append(tokens, lease.Token())
					mu.Unlock()
					writers.Add(-1)
				} else {
					readers.Add(1)
					if n := writers.Load(); n != 0 {
						errs.Add("RLock", fmt.Errorf("a reader beside %d writers", n))
					}
					readers.Add(-1)
				}
				if err := lease.Unlock(ctx); err != nil {
					errs.Add("Unlock", err)
					return
				}
			}
		})
	}
	wg.Wait()
	errs.Report(t)
	if len(tokens) != each*rounds || !increasing(tokens) {
		t.Errorf("writers' tokens %v: want %d, growing", tokens, each*rounds)
	}
}

// contender takes a lock in a goroutine of its own; acquired receives its
// lease.
type contender struct {
	rw       *lock.RWLock
	session  string
	acquired chan *lock.Lease
}

// queue starts a contender for the read or write lock of path, with a
// session of its own, and waits until its node is in line.
func queue(t *testing.T, addr, path string, write bool, opts ...lock.Option) *contender {
	t.Helper()
	c := rt.Dial(t, addr, client.Config{})
	k := &contender{rw: lock.NewRWLock(c, path, opts...), session: rt.SessionHex(c.SessionID()), acquired: make(chan *lock.Lease, 1)}
	before := len(rt.Children(t, c, path))
	take := k.rw.RLock
	if write {
		take = k.rw.Lock
	}
	go func() {
		lease, err := take(rt.Context(t))
		if err != nil {
			t.Error(err)
		}
		k.acquired <- lease
	}()
	rt.WaitFor(t, "a node in line", func() bool { return len(rt.Children(t, c, path)) == before+1 })
	return k
}

// testRWFairLine queues, behind a writer, two readers, a writer and a
// reader, and checks whom each watches: readers the last writer before
// them, writers their predecessor. Releases then grant the lock in line
// order: both readers at once, and the last reader only after the writer
// before it, though only readers held the lock when it asked.
func testRWFairLine(t *testing.T, addr string) {
	ctx := rt.Context(t)
	path := "/rw-fair"
	w1 := queue(t, addr, path, true)
	first := rt.Receive(t, w1.acquired)
	r1, r2 := queue(t, addr, path, false), queue(t, addr, path, false)
	w2 := queue(t, addr, path, true)
	r3 := queue(t, addr, path, false)
	line := lineOwners(t, rt.Dial(t, addr, client.Config{}), path)
	rt.AwaitWatches(t, addr, path, rt.Watches{
		line[0].node: sorted(w1.session, r1.session, r2.session),
		line[2].node: {w2.session},
		line[3].node: {r3.session},
	})

	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	read1, read2 := rt.Receive(t, r1.acquired), rt.Receive(t, r2.acquired)
	rt.Pending(t, "the writer behind two readers", w2.acquired)
	rt.Pending(t, "the reader behind a writer", r3.acquired)
	if err := read1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	rt.Pending(t, "the writer behind a reader", w2.acquired)
	if err := read2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	write2 := rt.Receive(t, w2.acquired)
	rt.Pending(t, "the reader behind a writer", r3.acquired)
	if err := write2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Receive(t, r3.acquired).Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testRWWriterReads takes the read lock while holding the write lock,
// with a writer queued in between: the read lock is granted at once, and
// releasing the write lock first does not let that writer in beside the
// reader (Curator's would); it gets the lock once the read lock goes too.
func testRWWriterReads(t *testing.T, addr string) {
	ctx := rt.Context(t)
	path := "/rw-writer-reads"
	c := rt.Dial(t, addr, client.Config{})
	rw := lock.NewRWLock(c, path)
	write, err := rw.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	between := queue(t, addr, path, true)
	read, err := rw.RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := rw.RLock(ctx); err != nil || again != read {
		t.Fatalf("second RLock = %v, %v; want the same lease", again, err)
	}
	if err := read.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := write.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !open(read.Lost()) {
		t.Error("read lease lost with the write lock")
	}
	if ok, _, err := c.Exists(ctx, write.Node()); err != nil || !ok {
		t.Fatalf("write node gone while a writer waits behind it and the read lock is held (%v)", err)
	}
	rt.Pending(t, "the writer queued between", between.acquired)
	if err := read.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	lease := rt.Receive(t, between.acquired)
	if got := rt.Children(t, c, path); len(got) != 1 {
		t.Errorf("nodes left: %v", got)
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testRWDowngrade takes the read lock under the write lock with only a
// reader queued in between, then releases the write lock: the write node
// goes at once, the queued reader shares the lock, and a writer queued
// behind waits for both readers.
func testRWDowngrade(t *testing.T, addr string) {
	ctx := rt.Context(t)
	path := "/rw-downgrade"
	c := rt.Dial(t, addr, client.Config{})
	rw := lock.NewRWLock(c, path)
	write, err := rw.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reader := queue(t, addr, path, false)
	read, err := rw.RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	writer := queue(t, addr, path, true)
	if err := write.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	shared := rt.Receive(t, reader.acquired)
	rt.WaitFor(t, "the write node to go", func() bool { return len(rt.Children(t, c, path)) == 3 })
	rt.Pending(t, "the writer behind two readers", writer.acquired)
	if err := read.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	rt.Pending(t, "the writer behind a reader", writer.acquired)
	if err := shared.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Receive(t, writer.acquired).Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testRWNoUpgrade asks for the write lock while holding the read lock:
// refused at once, with no node left in line.
func testRWNoUpgrade(t *testing.T, addr string) {
	ctx := rt.Context(t)
	path := "/rw-upgrade"
	c := rt.Dial(t, addr, client.Config{})
	rw := lock.NewRWLock(c, path)
	read, err := rw.RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Lock(ctx); !errors.Is(err, lock.ErrUpgrade) {
		t.Fatalf("Lock while reading = %v, want ErrUpgrade", err)
	}
	if got := rt.Children(t, c, path); len(got) != 1 {
		t.Errorf("nodes %v, want the read node alone", got)
	}
	if err := read.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testRWCancel cancels a reader waiting behind a writer and a writer
// waiting behind a reader: each returns the context's error, and its node
// goes.
func testRWCancel(t *testing.T, addr string) {
	ctx := rt.Context(t)
	path := "/rw-cancel"
	c := rt.Dial(t, addr, client.Config{})
	for _, hold := range []bool{true, false} {
		rw := lock.NewRWLock(c, path)
		take := rw.RLock
		if hold {
			take = rw.Lock
		}
		holder, err := take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		waiter := lock.NewRWLock(rt.Dial(t, addr, client.Config{}), path)
		wait := waiter.Lock
		if hold {
			wait = waiter.RLock
		}
		cancelWaiting(t, wait, func() bool { return len(rt.Children(t, c, path)) == 2 })
		rt.WaitFor(t, "the waiter's node to go", func() bool { return len(rt.Children(t, c, path)) == 1 })
		if err := holder.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := rt.Children(t, c, path); len(got) != 0 {
		t.Errorf("nodes left: %v", got)
	}
}

// testRWExpiry cuts a writer holding the lock off the network until its
// session expires, with a reader waiting behind it: the writer's lease is
// lost before the reader gets the lock, its node is gone, and once it is
// back with a new session its guarded write is refused.
func testRWExpiry(t *testing.T, addr string) {
	ctx := rt.Context(t)
	path := "/rw-expiry"
	c, network := rt.Partitioned(t, addr, rt.ShortSession)
	write, err := lock.NewRWLock(c, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reader := queue(t, addr, path, false)
	rt.Pending(t, "the reader behind a writer", reader.acquired)

	network.Cut()
	read := rt.Receive(t, reader.acquired)
	if open(write.Lost()) {
		t.Error("a reader got the lock while the expired writer's lease was not lost")
	}
	observer := rt.Dial(t, addr, client.Config{})
	if ok, _, err := observer.Exists(ctx, write.Node()); err != nil || ok {
		t.Errorf("expired writer's node still there (%v)", err)
	}
	if got := rt.Children(t, observer, path); len(got) != 1 || path+"/"+got[0] != read.Node() {
		t.Errorf("nodes %v, want the reader's %s alone", got, read.Node())
	}

	network.Heal()
	if err := c.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	refusedWrite(ctx, t, write, observer, "/rw-expiry-write")
	if err := write.Unlock(ctx); err != nil {
		t.Errorf("Unlock of the lost lease: %v", err)
	}
	if err := read.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// increasing reports whether every value is larger than the one before.
func increasing(values []int64) bool {
	for i := 1; i < len(values); i++ {
		if values[i] <= values[i-1] {
			return false
		}
	}
	return true
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}
