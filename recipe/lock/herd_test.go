package lock_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
	rt "github.com/collie-io/collie/recipe/internal/recipetest"
	"github.com/collie-io/collie/recipe/lock"
)

// herdSize is how many contenders, each with a session of its own, queue
// on one mutex in testHerd.
const herdSize = 200

// testHerd queues herdSize contenders on one mutex and lets the lock pass
// down the whole line, one release at a time. Before each release the
// server's watch tables show that each waiter holds exactly one watch, a
// data watch on its predecessor, that nobody watches children anywhere
// (mntr's watch count equals wchp's), and that the holder's node is
// watched by the holder itself (its lease's watch) and the next waiter
// only. The deletion of that node therefore notifies one waiter; and the
// contenders report exactly one wakeup per release, the next holder's.
func testHerd(t *testing.T, addr string) {
	ctx := rt.Context(t)
	path := "/herd"
	var woken atomic.Int32
	lock.OnWoken(t, func() { woken.Add(1) })

	clients := dialAll(t, addr, herdSize)
	acquired := make(chan int, herdSize)
	release := make([]chan struct{}, herdSize)
	var errs rt.Errs
	var wg sync.WaitGroup
	for i, c := range clients {
		release[i] = make(chan struct{})
		m := lock.NewMutex(c, path)
		wg.Go(func() {
			lease, err := m.Lock(ctx)
			if err != nil {
				errs.Add("Lock", err)
				return
			}
			acquired <- i
			<-release[i]
			errs.Add("Unlock", lease.Unlock(ctx))
		})
	}
	defer func() {
		for _, r := range release {
			select {
			case <-r:
			default:
				close(r)
			}
		}
		wg.Wait()
		errs.Report(t)
	}()

	observer := rt.Dial(t, addr, client.Config{})
	rt.WaitFor(t, "every contender's node", func() bool { return len(rt.Children(t, observer, path)) == herdSize })
	owners := lineOwners(t, observer, path)
	sessions := make(map[string]int, herdSize) // session -> contender
	for i, c := range clients {
		sessions[rt.SessionHex(c.SessionID())] = i
	}

	for k := range owners {
		holder := rt.Receive(t, acquired)
		if owner := owners[k].session; sessions[owner] != holder {
			t.Fatalf("release %d: contender %d holds the lock, but node %s (%s) is first in line", k, holder, owners[k].node, owner)
		}
		rt.AwaitWatches(t, addr, path, herdWatches(owners[k:]))
		if all, data := rt.WatchCount(t, addr), rt.DataWatches(t, addr).Count(); all != data {
			t.Fatalf("release %d: the server holds %d watches, %d of them data watches: someone watches children", k, all, data)
		}
		if n := woken.Load(); n != int32(k) {
			t.Fatalf("after %d releases, %d contenders woken", k, n)
		}
		rt.Pending(t, "another holder", acquired)
		close(release[holder])
	}
	rt.WaitFor(t, "the last node to go", func() bool { return len(rt.Children(t, observer, path)) == 0 })
	if n := woken.Load(); n != herdSize-1 {
		t.Errorf("%d wakeups for %d releases", n, herdSize-1)
	}
}

// lineNode is a node in line and its owner's session.
type lineNode struct{ node, session string }

// lineOwners returns the nodes under path in line order with their owners.
func lineOwners(t *testing.T, c *client.Client, path string) []lineNode {
	t.Helper()
	names := rt.Children(t, c, path)
	slices.SortFunc(names, func(a, b string) int { return rt.Sequence(t, a) - rt.Sequence(t, b) })
	reads := make([]client.Op, len(names))
	for i, name := range names {
		reads[i] = client.GetOp(proto.Join(path, name))
	}
	results, err := c.MultiRead(rt.Context(t), reads...)
	if err != nil {
		t.Fatal(err)
	}
	line := make([]lineNode, len(names))
	for i, r := range results {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		line[i] = lineNode{reads[i].Path(), rt.SessionHex(r.Stat.EphemeralOwner)}
	}
	return line
}

// herdWatches returns the watches expected on a line whose first node holds
// the lock: the holder watches its own node, every other contender the node
// just before its own.
func herdWatches(line []lineNode) rt.Watches {
	want := rt.Watches{}
	for i, n := range line {
		var watchers []string
		if i == 0 {
			watchers = append(watchers, n.session)
		}
		if i+1 < len(line) {
			watchers = append(watchers, line[i+1].session)
		}
		if len(watchers) > 0 {
			slices.Sort(watchers)
			want[n.node] = watchers
		}
	}
	return want
}

// dialAll connects n clients at once, each with a session of its own.
func dialAll(t testing.TB, addr string, n int) []*client.Client {
	t.Helper()
	ctx := rt.Context(t)
	clients := make([]*client.Client, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { clients[i], errs[i] = client.Dial(ctx, addr, client.Config{}) })
	}
	wg.Wait()
	for _, c := range clients {
		if c != nil {
			t.Cleanup(func() { c.Close() })
		}
	}
	for i, err := range errs {
		if err != nil {
			t.Fatal(fmt.Errorf("client %d: %w", i, err))
		}
	}
	return clients
}
