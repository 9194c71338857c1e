package ensembletest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/recipe/barrier"
	"github.com/collie-io/collie/recipe/cache"
	"github.com/collie-io/collie/recipe/counter"
	"github.com/collie-io/collie/recipe/discovery"
	"github.com/collie-io/collie/recipe/election"
	"github.com/collie-io/collie/recipe/internal/recipetest"
	"github.com/collie-io/collie/recipe/queue"
)

// peak raises v to n if n is larger.
func peak(v *atomic.Int64, n int64) {
	for old := v.Load(); n > old && !v.CompareAndSwap(old, n); old = v.Load() {
	}
}

// watchers counts the sessions that hold a data watch on path, over every
// server of e.
func watchers(t *testing.T, e *collietest.Ensemble, path string) int {
	t.Helper()
	n := 0
	for _, s := range e.Servers() {
		n += len(recipetest.DataWatches(t, s.Addr())[path])
	}
	return n
}

// A barrier holds three waiters, each with a session of its own, while the
// leader is stopped twice: none is released before the barrier is
// removed, and every one is once it is.
func TestBarrierAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	const path = "/gate"
	b := barrier.New(dial(t, e), path)
	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	var removed atomic.Bool
	released := make(chan error, 3)
	for i := range 3 {
		c := dial(t, e)
		go func() {
			for {
				err := barrier.New(c, path).Wait(ctx)
				switch {
				case err == nil && !removed.Load():
					released <- fmt.Errorf("waiter %d released before the barrier was removed", i)
					return
				case err == nil, ctx.Err() != nil:
					released <- err
					return
				}
				// The session went, and the watch with it: wait again.
			}
		}()
	}
	recipetest.WaitFor(t, "three waiters watching the barrier", func() bool { return watchers(t, e, path) == 3 })
	bounce(t, e)
	bounce(t, e)
	recipetest.Pending(t, "a waiter after the leader changes", released)
	removed.Store(true)
	if err := client.Retry(ctx, client.RetryForever(50*time.Millisecond), b.Remove); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := recipetest.Receive(t, released); err != nil {
			t.Error(err)
		}
	}
}

// Three selectors take turns leading while the leader is stopped twice:
// never two functions leading at once, each turn's token larger than the
// last, and leadership goes on passing from one to another after the
// changes.
func TestSelectorAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	cctx, stop := context.WithCancel(ctx)
	var leading, maxLeading atomic.Int64
	var mu sync.Mutex
	var tokens []int64
	var leaders []string
	turns := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(leaders)
	}
	var wg sync.WaitGroup
	for i := range 3 {
		s := election.NewSelector(dial(t, e), "/selector", fmt.Sprint("p", i))
		wg.Go(func() {
			for cctx.Err() == nil {
				err := s.Run(cctx, func(ctx context.Context, term *election.Term) error {
					peak(&maxLeading, leading.Add(1))
					defer leading.Add(-1)
					mu.Lock()
					tokens = append(tokens, term.Token())
					leaders = append(leaders, s.ID())
					mu.Unlock()
					// Hold the turn a moment, so that an overlap would
					// be seen.
					select {
					case <-ctx.Done():
					case <-time.After(5 * time.Millisecond):
					}
					return nil
				})
				if cctx.Err() == nil {
					t.Logf("selector %d: %v", i, err)
				}
			}
		})
	}
	recipetest.WaitFor(t, "turns", func() bool { return turns() >= 6 })
	bounce(t, e)
	bounce(t, e)
	at := turns()
	recipetest.WaitFor(t, "turns after the changes", func() bool { return turns() >= at+6 })
	stop()
	wg.Wait()
	if n := maxLeading.Load(); n > 1 {
		t.Errorf("%d selectors leading at once", n)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Errorf("turn %d's token %d not larger than the turn before's %d", i, tokens[i], tokens[i-1])
		}
	}
	after := map[string]bool{}
	for _, id := range leaders[at:] {
		after[id] = true
	}
	if len(after) < 2 {
		t.Errorf("after the changes only %v led", slices.Collect(maps.Keys(after)))
	}
}

// Three contenders campaign for master in turns while the leader is
// stopped twice: never two masters at once, the master node always names
// the one that holds a term, and terms go on being won after the changes.
func TestMasterAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	cctx, stop := context.WithCancel(ctx)
	var masters, maxMasters, terms atomic.Int64
	var errs recipetest.Errs
	var wg sync.WaitGroup
	for i := range 3 {
		c := dial(t, e)
		m := election.NewMaster(c, "/master", []byte(fmt.Sprint("m", i)))
		wg.Go(func() {
			for cctx.Err() == nil {
				term, err := m.Campaign(cctx)
				if err != nil {
					continue // the session went: campaign again
				}
				peak(&maxMasters, masters.Add(1))
				info, ok, err := m.Current(cctx)
				if err == nil && (!ok || info.Token != term.Token() || string(info.Data) != fmt.Sprint("m", i)) {
					select {
					case <-term.Lost():
					default:
						errs.Add("master node", fmt.Errorf("contender m%d, token %d, holds a term; the node is %q, token %d (exists %t)", i, term.Token(), info.Data, info.Token, ok))
					}
				}
				select {
				case <-term.Lost():
				case <-cctx.Done():
				case <-time.After(5 * time.Millisecond):
				}
				masters.Add(-1)
				terms.Add(1)
				m.Resign(cctx)
			}
		})
	}
	recipetest.WaitFor(t, "terms", func() bool { return terms.Load() >= 6 })
	bounce(t, e)
	bounce(t, e)
	at := terms.Load()
	recipetest.WaitFor(t, "terms after the changes", func() bool { return terms.Load() >= at+6 })
	stop()
	wg.Wait()
	errs.Report(t)
	if n := maxMasters.Load(); n > 1 {
		t.Errorf("%d masters at once", n)
	}
}

// snapshot reads the nodes at root and below through c, as a cache holds
// them: path to node.
func snapshot(ctx context.Context, c *client.Client, root string) (map[string]cache.Node, error) {
	out := map[string]cache.Node{}
	var walk func(p string) error
	walk = func(p string) error {
		data, stat, err := c.Get(ctx, p)
		if errors.Is(err, client.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		out[p] = cache.Node{Path: p, Data: data, Stat: stat}
		names, _, err := c.Children(ctx, p)
		if errors.Is(err, client.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, name := range names {
			if err := walk(p + "/" + name); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(root)
}

// A tree cache, its client connected to the leader alone, follows a tree
// that a writer keeps changing while the leader is stopped twice, the
// first time for long enough that the cache misses changes while its
// server is down: once the writer is done, the cache holds exactly the
// nodes the ensemble holds, with their data and versions.
func TestCacheAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	w := dial(t, e)
	if _, _, err := w.Create(ctx, "/tree", nil, client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	follower := recipetest.Dial(t, e.Leader().Addr(), client.Config{SessionTimeout: 2 * time.Second, RenewSession: true})
	tc := cache.New(follower, "/tree", cache.Tree)
	if err := tc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	wctx, stopWriting := context.WithCancel(ctx)
	var writes atomic.Int64 // the writes that succeeded
	// Each stage writes nodes of its own, which later ones leave alone: a
	// change the cache misses is not made good by a later one.
	var stage atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; wctx.Err() == nil; i++ {
			// Failures are only counted out: whatever happened, the cache
			// must end as the ensemble is.
			p := fmt.Sprintf("/tree/s%d-n%d", stage.Load(), i%5)
			data := []byte(strconv.Itoa(i))
			var err error
			switch i % 4 {
			case 0:
				_, _, err = w.Create(wctx, p, data, client.ModePersistent, nil)
			case 1:
				_, _, err = w.Create(wctx, p+"/leaf", data, client.ModePersistent, nil)
			case 2:
				_, err = w.Set(wctx, p, data, client.AnyVersion)
			case 3:
				if i%8 == 7 {
					err = w.Delete(wctx, p+"/leaf", client.AnyVersion)
				} else {
					_, err = w.Set(wctx, p+"/leaf", data, client.AnyVersion)
				}
			}
			if err == nil {
				writes.Add(1)
			}
		}
	})
	next := func(what string) {
		t.Helper()
		stage.Add(1)
		at := writes.Load()
		recipetest.WaitFor(t, what, func() bool { return writes.Load() >= at+20 })
	}
	next("writes")
	// The leader, the cache's server, stays down while the writer goes on
	// with the next one.
	old := e.Leader()
	old.Stop()
	recipetest.WaitFor(t, "another leader", func() bool { l := e.Leader(); return l != nil && l != old })
	next("writes while the cache's server is down")
	old.Restart()
	next("writes")
	bounce(t, e)
	next("writes after the changes")
	stopWriting()
	wg.Wait()
	want, err := snapshot(ctx, w, "/tree")
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 2 {
		t.Fatalf("the writer left %d nodes", len(want))
	}
	same := func() bool {
		got := map[string]cache.Node{}
		for _, n := range tc.Nodes() {
			got[n.Path] = n
		}
		return maps.EqualFunc(got, want, func(a, b cache.Node) bool {
			return string(a.Data) == string(b.Data) && a.Stat.Version == b.Stat.Version && a.Stat.Czxid == b.Stat.Czxid
		})
	}
	defer func() {
		if t.Failed() {
			var got, have []string
			for _, n := range tc.Nodes() {
				got = append(got, fmt.Sprintf("%s=%s@%d", n.Path, n.Data, n.Stat.Version))
			}
			for _, p := range slices.Sorted(maps.Keys(want)) {
				have = append(have, fmt.Sprintf("%s=%s@%d", p, want[p].Data, want[p].Stat.Version))
			}
			t.Logf("cache: %v\nensemble: %v", got, have)
		}
	}()
	recipetest.WaitFor(t, "the cache to hold what the ensemble holds", same)
	if !tc.Connected() {
		t.Error("cache not following once converged")
	}
}

// memberIDs returns the ids of a group's members.
func memberIDs(g *discovery.Group) string {
	var ids []string
	for _, m := range g.Members() {
		ids = append(ids, m.ID)
	}
	return strings.Join(ids, ",")
}

// Members join and leave a group, each with a session of its own, while
// the leader is stopped twice: a live list of the group follows them, and
// ends as the ensemble's list of members.
func TestGroupAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	join := func(id string) *discovery.Membership {
		m, err := discovery.Join(ctx, dial(t, e), "/group", id, []byte(id))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	members := []*discovery.Membership{join("m0"), join("m1"), join("m2")}
	reader := dial(t, e)
	g, err := discovery.WatchGroup(ctx, reader, "/group")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	recipetest.WaitFor(t, "three members listed", func() bool { return memberIDs(g) == "m0,m1,m2" })
	bounce(t, e)
	if err := members[1].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	join("m3")
	bounce(t, e)
	recipetest.WaitFor(t, "the list to follow a departure and an arrival", func() bool { return memberIDs(g) == "m0,m2,m3" })
	names := recipetest.Children(t, reader, "/group")
	if slices.Sort(names); strings.Join(names, ",") != "m0,m2,m3" {
		t.Errorf("the ensemble lists %v", names)
	}
}

// Three clients increment a shared count with TrySet loops while the
// leader is stopped twice: every increment seen to succeed is counted, and
// none twice.
func TestSharedCountAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	const seed = 100
	var done, unsure atomic.Int64
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 3 {
		sc := counter.NewSharedCount(dial(t, e), "/shared", seed)
		wg.Go(func() {
			for cctx.Err() == nil {
				cur, err := sc.Get(cctx)
				for err == nil {
					var ok bool
					cur, ok, err = sc.TrySet(cctx, cur, cur.Value+1)
					switch {
					case ok:
						done.Add(1)
					case err != nil:
						// The reply was lost: applied or not, as a read
						// of the count cannot tell.
						unsure.Add(1)
					}
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
	got, err := counter.NewSharedCount(dial(t, e), "/shared", 0).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := seed+done.Load(), seed+done.Load()+unsure.Load(); int64(got.Value) < lo || int64(got.Value) > hi {
		t.Errorf("count %d; from %d, increments seen to succeed %d, of unknown outcome %d", got.Value, seed, lo-seed, hi-lo)
	}
}

// Three clients draw ids while the leader is stopped twice: no id is
// handed out twice, and each client's ids increase.
func TestIDsAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	cctx, stop := context.WithCancel(ctx)
	var mu sync.Mutex
	drawn := map[int64]int{}
	var total atomic.Int64
	var errs recipetest.Errs
	var wg sync.WaitGroup
	for i := range 3 {
		ids := counter.NewIDs(dial(t, e), "/ids", fmt.Sprint("c", i))
		wg.Go(func() {
			last := int64(-1)
			for cctx.Err() == nil {
				id, err := ids.Next(cctx)
				if err != nil {
					continue
				}
				if id <= last {
					errs.Add("ids", fmt.Errorf("client %d drew %d after %d", i, id, last))
				}
				last = id
				mu.Lock()
				drawn[id]++
				mu.Unlock()
				total.Add(1)
			}
		})
	}
	recipetest.WaitFor(t, "ids", func() bool { return total.Load() >= 20 })
	bounce(t, e)
	bounce(t, e)
	at := total.Load()
	recipetest.WaitFor(t, "ids after the changes", func() bool { return total.Load() >= at+20 })
	stop()
	wg.Wait()
	errs.Report(t)
	for id, n := range drawn {
		if n > 1 {
			t.Errorf("id %d handed out %d times", id, n)
		}
	}
}

// takes records what consumers took from a queue: each item's data, how
// many times it was taken, and the items whose take or put lost its
// reply, which may or may not have happened.
type takes struct {
	mu        sync.Mutex
	taken     map[string]int
	order     []string // the items taken, in the order taken (one consumer)
	uncertain map[string]bool
}

func newTakes() *takes { return &takes{taken: map[string]int{}, uncertain: map[string]bool{}} }

// record takes in the outcome of a Take.
func (tk *takes) record(item queue.Item, err error) {
	var ue *queue.UncertainError
	tk.mu.Lock()
	defer tk.mu.Unlock()
	switch {
	case err == nil:
		tk.taken[string(item.Data)]++
		tk.order = append(tk.order, string(item.Data))
	case errors.As(err, &ue):
		tk.uncertain[string(ue.Item.Data)] = true
	}
}

func (tk *takes) unsure(v string) {
	tk.mu.Lock()
	tk.uncertain[v] = true
	tk.mu.Unlock()
}

func (tk *takes) count() int {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	return len(tk.order)
}

// missing returns the items put that were neither taken nor uncertain.
func (tk *takes) missing(put []string) []string {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	var out []string
	for _, v := range put {
		if tk.taken[v] == 0 && !tk.uncertain[v] {
			out = append(out, v)
		}
	}
	return out
}

// check fails the test for every item taken more than once.
func (tk *takes) check(t *testing.T) {
	t.Helper()
	tk.mu.Lock()
	defer tk.mu.Unlock()
	for v, n := range tk.taken {
		if n > 1 {
			t.Errorf("item %s taken %d times", v, n)
		}
	}
}

// Items are put in a priority queue while the leader is stopped, then
// taken by one consumer while it is stopped again: every item is taken
// once, lower priorities first, and in the order of Put among equal
// priorities.
func TestPriorityQueueAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	const items = 40
	producer := queue.NewPriority(dial(t, e), "/priority")
	tk := newTakes()
	var put []string
	for i := range items {
		if i == items/2 {
			bounce(t, e)
		}
		// Data "priority:index".
		v := fmt.Sprintf("%d:%02d", (i*7)%3, i)
		if _, err := producer.Put(ctx, []byte(v), int32((i*7)%3)); err != nil {
			tk.unsure(v)
			continue
		}
		put = append(put, v)
	}
	consumer := queue.NewPriority(dial(t, e), "/priority")
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for cctx.Err() == nil {
			tk.record(consumer.Take(cctx))
		}
	})
	recipetest.WaitFor(t, "takes", func() bool { return tk.count() >= items/3 })
	bounce(t, e)
	recipetest.WaitFor(t, "every item put to be taken", func() bool { return len(tk.missing(put)) == 0 })
	stop()
	wg.Wait()
	tk.check(t)
	// The "priority:index" data sorts as the items must come out.
	if !slices.IsSorted(tk.order) {
		t.Errorf("taken in the order %v", tk.order)
	}
}

// Items fall due over a short while in a delay queue that two consumers
// take from while the leader is stopped twice: every item is taken once,
// and none before it is due.
func TestDelayQueueAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	const items = 30
	tk := newTakes()
	var early atomic.Value
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 {
		consumer := queue.NewDelay(dial(t, e), "/delay")
		wg.Go(func() {
			for cctx.Err() == nil {
				item, err := consumer.Take(cctx)
				if err == nil {
					// Data "due-in-unix-ms:index".
					due, _, _ := strings.Cut(string(item.Data), ":")
					if ms, _ := strconv.ParseInt(due, 10, 64); time.Now().UnixMilli() < ms {
						early.Store(fmt.Sprintf("item %s taken at %d", item.Data, time.Now().UnixMilli()))
					}
				}
				tk.record(item, err)
			}
		})
	}
	producer := queue.NewDelay(dial(t, e), "/delay")
	var put []string
	start := time.Now()
	for i := range items {
		if i == items/3 || i == 2*items/3 {
			bounce(t, e)
		}
		// Due times spread over 300ms from the start, some already past
		// when put, out of order.
		at := start.Add(time.Duration((i*7)%items) * 10 * time.Millisecond)
		v := fmt.Sprintf("%d:%02d", at.UnixMilli(), i)
		if _, err := producer.Put(ctx, []byte(v), at); err != nil {
			tk.unsure(v)
			continue
		}
		put = append(put, v)
	}
	recipetest.WaitFor(t, "every item put to be taken", func() bool { return len(tk.missing(put)) == 0 })
	stop()
	wg.Wait()
	tk.check(t)
	if v := early.Load(); v != nil {
		t.Errorf("%s, before it was due", v)
	}
}

// Three consumers of a lock-safe queue process items while the leader is
// stopped twice: every item put is processed, none to completion twice,
// and the queue empties. Then each consumer holds an item in a handler
// that waits, and is cancelled, after another stop: no lock is left behind
// and the three items are still in the queue.
func TestLockSafeQueueAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	const path, locks, items = "/jobs", "/jobs-locks", 45
	tk := newTakes()
	var holding atomic.Int64
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 3 {
		consumer := queue.New(dial(t, e), path, queue.LockSafe(locks))
		wg.Go(func() {
			for cctx.Err() == nil {
				var got queue.Item
				err := consumer.Consume(cctx, func(ctx context.Context, item queue.Item) error {
					got = item
					if strings.HasPrefix(string(item.Data), "hold") {
						holding.Add(1)
						<-ctx.Done()
						return ctx.Err()
					}
					return nil
				})
				switch {
				case got.Node == "":
				case err == nil:
					tk.record(got, nil)
				case !strings.HasPrefix(string(got.Data), "hold"):
					// Lost with the session, or its removal's outcome
					// unknown: it may be processed again.
					tk.unsure(string(got.Data))
				}
			}
		})
	}
	producer := queue.New(dial(t, e), path, queue.LockSafe(locks))
	var put []string
	for i := range items {
		if i == items/3 || i == 2*items/3 {
			bounce(t, e)
		}
		v := strconv.Itoa(i)
		if _, err := producer.Put(ctx, []byte(v)); err != nil {
			tk.unsure(v)
			continue
		}
		put = append(put, v)
	}
	observer := dial(t, e)
	recipetest.WaitFor(t, "every item put to be processed, and the queue empty", func() bool {
		return len(tk.missing(put)) == 0 && len(recipetest.Children(t, observer, path)) == 0
	})
	tk.check(t)

	for i := range 3 {
		if _, err := producer.Put(ctx, []byte(fmt.Sprint("hold", i))); err != nil {
			t.Fatal(err)
		}
	}
	recipetest.WaitFor(t, "each consumer to hold an item", func() bool { return holding.Load() == 3 })
	bounce(t, e)
	stop()
	wg.Wait()
	// Every consumer has unlocked by now: the observer's server has it
	// once synced.
	if err := observer.Sync(ctx, locks); err != nil {
		t.Fatal(err)
	}
	if got := recipetest.Children(t, observer, locks); len(got) != 0 {
		t.Errorf("locks left behind by cancelled consumers: %v", got)
	}
	if got := recipetest.Children(t, observer, path); len(got) != 3 {
		t.Errorf("queue holds %v, want the three items whose handlers were cancelled", got)
	}
}
