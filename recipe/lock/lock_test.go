package lock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/recipe/lock"
)

// testTimeout bounds every wait of a test, so that a lost wakeup fails
// rather than hangs.
const testTimeout = 15 * time.Second

// shortSession is the session timeout of clients whose session a test
// expires: the shortest both servers grant with a 100ms tick.
const shortSession = 200 * time.Millisecond

// servers are the servers every scenario runs against: Collie, and the real
// ZooKeeper 3.8 to show that the scenario's expectations are ZooKeeper's.
var servers = []struct {
	name  string
	start func(t *testing.T) string
}{
	{"collie", func(t *testing.T) string { return collietest.Start(t).Addr() }},
	{"zookeeper", func(t *testing.T) string {
		zkref.Require(t, zkref.Available())
		return zkref.Start(t, zkref.WithTickTime(100*time.Millisecond)).Addr()
	}},
}

func TestMutex(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T, addr string)
	}{
		{"contention", testContention},
		{"predecessor-only-watches", testPredecessorWatches},
		{"cancel-while-waiting", testCancelWhileWaiting},
		{"reentrant", testReentrant},
		{"node-deleted", testNodeDeleted},
		{"fencing-after-expiry", testFencingAfterExpiry},
	}
	for _, srv := range servers {
		t.Run("server="+srv.name, func(t *testing.T) {
			addr := srv.start(t)
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) { sc.run(t, addr) })
			}
		})
	}
}

// testContention runs contenders, each with its own session, that take the
// lock in turns: never two holders at once, every token larger than the
// last, and the lock granted in the order of the nodes' sequence numbers.
func testContention(t *testing.T, addr string) {
	const contenders, rounds = 6, 4
	ctx := testContext(t)
	var (
		holders   atomic.Int32
		mu        sync.Mutex
		sequences []int
		tokens    []int64
		wg        sync.WaitGroup
	)
	errs := make(chan error, contenders)
	for range contenders {
		c := dial(t, addr, client.Config{})
		m := lock.NewMutex(c, "/contention")
		wg.Go(func() {
			for range rounds {
				lease, err := m.Lock(ctx)
				if err != nil {
					errs <- err
					return
				}
				if n := holders.Add(1); n != 1 {
					errs <- fmt.Errorf("%d holders at once", n)
				}
				mu.Lock()
				sequences = append(sequences, sequenceOf(t, lease.Node()))
				tokens = append(tokens, lease.Token())
				mu.Unlock()
				holders.Add(-1)
				if err := lease.Unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(sequences) != contenders*rounds {
		t.Fatalf("%d acquisitions, want %d", len(sequences), contenders*rounds)
	}
	if !slices.IsSorted(sequences) || !slices.IsSorted(tokens) {
		t.Errorf("acquired out of line: sequences %v, tokens %v", sequences, tokens)
	}
}

// testPredecessorWatches queues waiters behind a holder and checks, with the
// server's list of watches, that each waiter watches only the node just
// before its own, and nobody the lock path: a release wakes one waiter.
func testPredecessorWatches(t *testing.T, addr string) {
	const waiters = 4
	ctx := testContext(t)
	path := "/predecessor"
	holderClient := dial(t, addr, client.Config{})
	holder, err := lock.NewMutex(holderClient, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sessions := []int64{holderClient.SessionID()}
	acquired := make(chan *lock.Lease, waiters)
	for range waiters {
		c := dial(t, addr, client.Config{})
		sessions = append(sessions, c.SessionID())
		m := lock.NewMutex(c, path)
		go func() {
			lease, err := m.Lock(ctx)
			if err != nil {
				t.Error(err)
			}
			acquired <- lease
		}()
		// One at a time, so that the line is in the order of sessions.
		waitFor(t, "the waiter's node", func() bool { return len(children(t, holderClient, path)) == len(sessions) })
	}
	nodes := children(t, holderClient, path)
	slices.SortFunc(nodes, func(a, b string) int { return sequenceOf(t, a) - sequenceOf(t, b) })
	want := map[string][]string{}
	for i, node := range nodes {
		var watchers []string
		if i == 0 {
			watchers = append(watchers, sessionHex(sessions[0])) // the lease's own watch
		}
		if i+1 < len(nodes) {
			watchers = append(watchers, sessionHex(sessions[i+1]))
		}
		if len(watchers) > 0 {
			slices.Sort(watchers)
			want[path+"/"+node] = watchers
		}
	}
	var got map[string][]string
	waitFor(t, "every waiter's watch", func() bool {
		got = watchesByPath(t, addr, path)
		return fmt.Sprint(got) == fmt.Sprint(want)
	})

	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for range waiters {
		lease := receive(t, acquired)
		if err := lease.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// testCancelWhileWaiting cancels a Lock waiting behind a holder: it returns
// the context's error and its node goes.
func testCancelWhileWaiting(t *testing.T, addr string) {
	ctx := testContext(t)
	path := "/cancel"
	c := dial(t, addr, client.Config{})
	holder, err := lock.NewMutex(c, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithCancel(ctx)
	failed := make(chan error, 1)
	waiter := lock.NewMutex(dial(t, addr, client.Config{}), path)
	go func() {
		_, err := waiter.Lock(waitCtx)
		failed <- err
	}()
	waitFor(t, "the waiter's node", func() bool { return len(children(t, c, path)) == 2 })
	cancel()
	if err := receive(t, failed); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock = %v, want context.Canceled", err)
	}
	waitFor(t, "the waiter's node to go", func() bool { return len(children(t, c, path)) == 1 })
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := children(t, c, path); len(got) != 0 {
		t.Errorf("nodes left: %v", got)
	}
}

// testReentrant locks one Mutex twice: one lease, one node, released by the
// second Unlock; the node's name is Curator's.
func testReentrant(t *testing.T, addr string) {
	ctx := testContext(t)
	c := dial(t, addr, client.Config{})
	m := lock.NewMutex(c, "/reentrant/deeper")
	first, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	curatorName := regexp.MustCompile(`^/reentrant/deeper/_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-[0-9]{10}$`)
	if !curatorName.MatchString(first.Node()) {
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
	select {
	case <-first.Lost():
		t.Fatal("lease lost while still held once")
	default:
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

// testNodeDeleted deletes a holder's node from another session: the lease
// is lost and its guarded writes are refused.
func testNodeDeleted(t *testing.T, addr string) {
	ctx := testContext(t)
	c := dial(t, addr, client.Config{})
	lease, err := lock.NewMutex(c, "/deleted").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := dial(t, addr, client.Config{}).Delete(ctx, lease.Node(), client.AnyVersion); err != nil {
		t.Fatal(err)
	}
	receive(t, lease.Lost())
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
	ctx := testContext(t)
	path := "/fencing"
	network := &cuttableDialer{}
	old := dial(t, addr, client.Config{SessionTimeout: shortSession, RenewSession: true, Dial: network.dial})
	oldLease, err := lock.NewMutex(old, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := dial(t, addr, client.Config{})
	if _, _, err := next.Create(ctx, "/fenced", []byte("0"), client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	acquired := make(chan *lock.Lease, 1)
	go func() {
		lease, err := lock.NewMutex(next, path).Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		acquired <- lease
	}()
	waitFor(t, "the next holder's node", func() bool { return len(children(t, next, path)) == 2 })

	network.cut()
	receive(t, oldLease.Lost())
	newLease := receive(t, acquired)
	if newLease.Token() <= oldLease.Token() {
		t.Errorf("new holder's token %d not larger than the old one's %d", newLease.Token(), oldLease.Token())
	}

	network.restore()
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

// cuttableDialer dials real connections until cut, which closes them and
// refuses new ones until restore, as a network partition would.
type cuttableDialer struct {
	mu    sync.Mutex
	conns []net.Conn
	down  bool
}

func (d *cuttableDialer) dial(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down {
		return nil, errors.New("network cut")
	}
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, network, address)
	if err == nil {
		d.conns = append(d.conns, conn)
	}
	return conn, err
}

func (d *cuttableDialer) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = true
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

func (d *cuttableDialer) restore() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = false
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func dial(t *testing.T, addr string, cfg client.Config) *client.Client {
	t.Helper()
	c, err := client.Dial(testContext(t), addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func children(t *testing.T, c *client.Client, path string) []string {
	t.Helper()
	names, _, err := c.Children(testContext(t), path)
	if err != nil && !errors.Is(err, client.ErrNoNode) {
		t.Fatal(err)
	}
	return names
}

// waitFor polls cond until it holds, failing the test after testTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatal("timed out waiting on a channel")
		panic("unreachable")
	}
}

func sequenceOf(t *testing.T, node string) int {
	t.Helper()
	n, err := strconv.Atoi(node[strings.LastIndex(node, "-")+1:])
	if err != nil {
		t.Fatalf("node %s has no sequence number: %v", node, err)
	}
	return n
}

func sessionHex(id int64) string { return "0x" + strconv.FormatUint(uint64(id), 16) }

// watchesByPath returns the server's data and child watches of under and
// its descendants by path, as the four-letter word wchp reports them, with
// the sessions of each path sorted.
func watchesByPath(t *testing.T, addr, under string) map[string][]string {
	t.Helper()
	out, err := zkref.FourLetter(addr, "wchp")
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string][]string{}
	var path string
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "\t"):
			byPath[path] = append(byPath[path], strings.TrimSpace(line))
		case line != "":
			path = line
		}
	}
	for p, sessions := range byPath {
		if p != under && !strings.HasPrefix(p, under+"/") {
			delete(byPath, p)
		}
		slices.Sort(sessions)
	}
	return byPath
}
