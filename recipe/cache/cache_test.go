package cache_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/cache"
	"github.com/collie-io/collie/recipe/internal/recipetest"
)

// TestCache runs every scenario against Collie, and against the real
// ZooKeeper 3.8 to show that the expectations are ZooKeeper's. At the
// end, no goroutine of a cache is left.
func TestCache(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(e *env)
	}{
		{"tree", testTree},
		{"children", testChildren},
		{"single", testSingle},
		{"unreadable", testUnreadable},
		{"reconnect", testReconnect},
		{"expiry", testExpiry},
		{"close", testClose},
		{"client-close", testClientClose},
		{"churn", testChurn},
	}
	for _, srv := range recipetest.Servers {
		t.Run("server="+srv.Name, func(t *testing.T) {
			addr := srv.Start(t)
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					e := &env{T: t, addr: addr}
					e.w = recipetest.Dial(t, addr, client.Config{})
					sc.run(e)
				})
			}
		})
	}
	recipetest.WaitFor(t, "the caches' goroutines to end", func() bool { return cacheGoroutines() == "" })
}

// env is what a scenario works with: its test, the server, and a client
// of its own that writes the nodes the caches follow.
type env struct {
	*testing.T
	addr string
	w    *client.Client
}

// start starts a cache of root on cl, closed when the test ends.
func (e *env) start(cl *client.Client, root string, scope cache.Scope) *cache.Cache {
	e.Helper()
	c := cache.New(cl, root, scope)
	if err := c.Start(recipetest.Context(e)); err != nil {
		e.Fatalf("start a cache of %s: %v", root, err)
	}
	e.Cleanup(c.Close)
	return c
}

// create creates nodes, "path=data", in order.
func (e *env) create(nodes ...string) {
	e.Helper()
	for _, n := range nodes {
		p, data, _ := strings.Cut(n, "=")
		if _, _, err := e.w.Create(recipetest.Context(e), p, []byte(data), client.ModePersistent, nil); err != nil {
			e.Fatalf("create %s: %v", p, err)
		}
	}
}

func (e *env) set(p, data string) {
	e.Helper()
	if _, err := e.w.Set(recipetest.Context(e), p, []byte(data), client.AnyVersion); err != nil {
		e.Fatalf("set %s: %v", p, err)
	}
}

// del deletes nodes, in order.
func (e *env) del(paths ...string) {
	e.Helper()
	for _, p := range paths {
		if err := e.w.Delete(recipetest.Context(e), p, client.AnyVersion); err != nil {
			e.Fatalf("delete %s: %v", p, err)
		}
	}
}

// describe says what an event reports, as the tests expect it: type,
// path, new data and version, and the old ones.
func describe(ev cache.Event) string {
	s := ev.String()
	if ev.Node != nil {
		s += fmt.Sprintf(" %q v%d", ev.Node.Data, ev.Node.Stat.Version)
	}
	if ev.Old != nil {
		s += fmt.Sprintf(" (was %q v%d)", ev.Old.Data, ev.Old.Stat.Version)
	}
	return s
}

// expect receives events and checks that they are want, in order.
func expect(e *env, c *cache.Cache, want ...string) {
	e.Helper()
	for _, w := range want {
		if got := describe(recipetest.Receive(e, c.Events())); got != w {
			e.Fatalf("event %s, want %s", got, w)
		}
	}
}

// until receives events up to one that is marker, and returns those
// before it.
func until(e *env, c *cache.Cache, marker string) []string {
	e.Helper()
	var got []string
	for {
		ev := recipetest.Receive(e, c.Events())
		if ev.Type == 0 {
			e.Fatalf("the events ended before %s, after %q", marker, got)
		}
		if d := describe(ev); d == marker {
			return got
		} else {
			got = append(got, d)
		}
	}
}

// drain receives events until the channel closes, and returns them.
func drain(e *env, c *cache.Cache) []string {
	e.Helper()
	var got []string
	for {
		ev := recipetest.Receive(e, c.Events())
		if ev.Type == 0 {
			return got
		}
		got = append(got, describe(ev))
	}
}

// converged checks that the copy holds what the server holds in the
// cache's scope, as a reader of the copy would compare it: the same
// nodes, data and versions.
func converged(e *env, c *cache.Cache, root string, scope cache.Scope) {
	e.Helper()
	want := serverNodes(e, root, scope)
	if got := summarize(c.Nodes()); !slices.Equal(got, want) {
		e.Fatalf("the copy holds\n%s\nthe server\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func summarize(nodes []cache.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, fmt.Sprintf("%s %q v%d czxid %#x mzxid %#x", n.Path, n.Data, n.Stat.Version, n.Stat.Czxid, n.Stat.Mzxid))
	}
	return out
}

// serverNodes reads the nodes of scope at root from the server.
func serverNodes(e *env, root string, scope cache.Scope) []string {
	e.Helper()
	var nodes []cache.Node
	var read func(p string, depth int)
	read = func(p string, depth int) {
		data, stat, err := e.w.Get(recipetest.Context(e), p)
		if errors.Is(err, client.ErrNoNode) {
			return
		}
		if err != nil {
			e.Fatal(err)
		}
		nodes = append(nodes, cache.Node{Path: p, Data: data, Stat: stat})
		if scope == cache.Single || scope == cache.Children && depth == 1 {
			return
		}
		for _, name := range recipetest.Children(e, e.w, p) {
			read(p+"/"+name, depth+1)
		}
	}
	read(root, 0)
	slices.SortFunc(nodes, func(a, b cache.Node) int { return strings.Compare(a.Path, b.Path) })
	return summarize(nodes)
}

// cacheGoroutines returns the stacks of the goroutines running the
// package's code.
func cacheGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "collie/recipe/cache.(") {
			found = append(found, g)
		}
	}
	return strings.Join(found, "\n\n")
}

// testTree follows a subtree: the first reading, then changes, nested
// creations and deletions, down to the root and back.
func testTree(e *env) {
	e.create("/tree=root", "/tree/a=a", "/tree/a/x=x", "/tree/b=b")
	c := e.start(recipetest.Dial(e.T, e.addr, client.Config{}), "/tree", cache.Tree)
	expect(e, c,
		`Created /tree "root" v0`,
		`Created /tree/a "a" v0`,
		`Created /tree/a/x "x" v0`,
		`Created /tree/b "b" v0`,
		`Initialized`,
	)
	e.set("/tree/a", "a2")
	expect(e, c, `Changed /tree/a "a2" v1 (was "a" v0)`)
	e.set("/tree/a", "a3")
	expect(e, c, `Changed /tree/a "a3" v2 (was "a2" v1)`)
	e.create("/tree/c=c", "/tree/c/d=d", "/tree/c/d/e=e")
	e.del("/tree/a/x")
	expect(e, c,
		`Created /tree/c "c" v0`,
		`Created /tree/c/d "d" v0`,
		`Created /tree/c/d/e "e" v0`,
		`Deleted /tree/a/x (was "x" v0)`,
	)
	if n, ok := c.Get("/tree/a"); !ok || string(n.Data) != "a3" || n.Stat.Version != 2 {
		e.Errorf("Get(/tree/a) = %q v%d, %v; want \"a3\" v2", n.Data, n.Stat.Version, ok)
	}
	if _, ok := c.Get("/tree/a/x"); ok {
		e.Error("Get found a deleted node")
	}
	if got := c.Children("/tree"); !slices.Equal(got, []string{"a", "b", "c"}) {
		e.Errorf("Children(/tree) = %q", got)
	}
	if got := c.Children("/tree/a"); len(got) != 0 {
		e.Errorf("Children(/tree/a) = %q, want none", got)
	}
	converged(e, c, "/tree", cache.Tree)

	e.del("/tree/c/d/e", "/tree/c/d", "/tree/c", "/tree/b", "/tree/a", "/tree")
	e.create("/tree=again")
	expect(e, c,
		`Deleted /tree/c/d/e (was "e" v0)`,
		`Deleted /tree/c/d (was "d" v0)`,
		`Deleted /tree/c (was "c" v0)`,
		`Deleted /tree/b (was "b" v0)`,
		`Deleted /tree/a (was "a3" v2)`,
		`Deleted /tree (was "root" v0)`,
		`Created /tree "again" v0`,
	)
	converged(e, c, "/tree", cache.Tree)
}

// testChildren follows a node and its children: what happens deeper is
// not seen.
func testChildren(e *env) {
	e.create("/kids=k", "/kids/a=a", "/kids/a/deep=deep")
	c := e.start(recipetest.Dial(e.T, e.addr, client.Config{}), "/kids", cache.Children)
	expect(e, c, `Created /kids "k" v0`, `Created /kids/a "a" v0`, `Initialized`)
	e.set("/kids/a/deep", "ignored")
	e.create("/kids/a/deeper=ignored")
	e.set("/kids/a", "a2")
	e.create("/kids/b=b")
	expect(e, c, `Changed /kids/a "a2" v1 (was "a" v0)`, `Created /kids/b "b" v0`)
	e.del("/kids/a/deeper", "/kids/a/deep", "/kids/b")
	e.set("/kids", "k2")
	expect(e, c, `Deleted /kids/b (was "b" v0)`, `Changed /kids "k2" v1 (was "k" v0)`)
	if got := c.Children("/kids/a"); len(got) != 0 {
		e.Errorf("Children(/kids/a) = %q: grandchildren are cached", got)
	}
	converged(e, c, "/kids", cache.Children)
}

// testSingle follows one node, from before it exists: its children are
// not seen.
func testSingle(e *env) {
	c := e.start(recipetest.Dial(e.T, e.addr, client.Config{}), "/single", cache.Single)
	expect(e, c, `Initialized`)
	e.create("/single=1", "/single/child=ignored")
	expect(e, c, `Created /single "1" v0`)
	e.set("/single/child", "ignored")
	e.set("/single", "2")
	expect(e, c, `Changed /single "2" v1 (was "1" v0)`)
	e.del("/single/child", "/single")
	e.create("/single=3")
	expect(e, c, `Deleted /single (was "2" v1)`, `Created /single "3" v0`)
	if got := summarize(c.Nodes()); len(got) != 1 || !strings.HasPrefix(got[0], `/single "3" v0`) {
		e.Errorf("Nodes() = %q, want /single alone", got)
	}
}

// testUnreadable follows a tree with a node the cache's session may not
// read: it is left out, with what is below it, and the rest is followed.
func testUnreadable(e *env) {
	e.create("/acl=open")
	ctx := recipetest.Context(e)
	if err := e.w.AddAuth(ctx, "digest", []byte("admin:secret")); err != nil {
		e.Fatal(err)
	}
	if _, _, err := e.w.Create(ctx, "/acl/secret", []byte("s"), client.ModePersistent, client.DigestACL(client.PermAll, "admin", "secret")); err != nil {
		e.Fatal(err)
	}
	e.create("/acl/secret/below=b")
	c := e.start(recipetest.Dial(e.T, e.addr, client.Config{}), "/acl", cache.Tree)
	expect(e, c, `Created /acl "open" v0`, `Initialized`)
	if _, _, err := e.w.Create(ctx, "/acl/secret2", nil, client.ModePersistent, client.DigestACL(client.PermAll, "admin", "secret")); err != nil {
		e.Fatal(err)
	}
	e.create("/acl/public=p")
	expect(e, c, `Created /acl/public "p" v0`)
	if got := c.Children("/acl"); !slices.Equal(got, []string{"public"}) {
		e.Errorf("Children(/acl) = %q, want the readable one", got)
	}
}

// testReconnect cuts the cache's connection while the tree changes, and
// heals it within the session timeout: the cache reports each missed
// change once, and its copy converges.
func testReconnect(e *env) {
	e.create("/reconnect=r", "/reconnect/changed=c0", "/reconnect/deleted=d",
		"/reconnect/kept=k", "/reconnect/sub=s", "/reconnect/sub/gone=g")
	cl, part := recipetest.Partitioned(e.T, e.addr, recipetest.LongSession)
	session := cl.SessionID()
	c := e.start(cl, "/reconnect", cache.Tree)
	until(e, c, `Initialized`)

	part.Cut()
	recipetest.WaitFor(e.T, "the cache to see the disconnection", func() bool { return !c.Connected() })
	e.set("/reconnect/changed", "c1")
	e.set("/reconnect/changed", "c2")
	e.create("/reconnect/created=n", "/reconnect/created/inner=i")
	e.del("/reconnect/sub/gone", "/reconnect/deleted")
	part.Heal()
	caughtUp(e, c, "/reconnect",
		`Changed /reconnect/changed "c2" v2 (was "c0" v0)`,
		`Created /reconnect/created "n" v0`,
		`Created /reconnect/created/inner "i" v0`,
		`Deleted /reconnect/sub/gone (was "g" v0)`,
		`Deleted /reconnect/deleted (was "d" v0)`,
	)
	if cl.SessionID() != session {
		e.Error("the session expired: the test needs it to survive")
	}
}

// caughtUp waits for a Tree cache of root to follow changes again, and
// checks that the events it sent meanwhile are want, in order, and that
// its copy has converged. A marker node, created below root, closes the
// events compared.
func caughtUp(e *env, c *cache.Cache, root string, want ...string) {
	e.Helper()
	recipetest.WaitFor(e.T, "the cache to catch up", c.Connected)
	e.create(root + "/zz=marker")
	got := until(e, c, fmt.Sprintf(`Created %s/zz "marker" v0`, root))
	if !slices.Equal(got, want) {
		e.Errorf("events while catching up:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	converged(e, c, root, cache.Tree)
}

// testExpiry keeps the cache's client cut off until its session expires
// while the tree changes; the client renews it, and the cache catches up
// and goes on following changes.
func testExpiry(e *env) {
	e.create("/expiry=r", "/expiry/a=a0", "/expiry/gone=g")
	cl, part := recipetest.Partitioned(e.T, e.addr, recipetest.ShortSession)
	states := cl.StateChanges()
	defer states.Close()
	session := cl.SessionID()
	c := e.start(cl, "/expiry", cache.Tree)
	until(e, c, `Initialized`)

	part.Cut()
	for recipetest.Receive(e, states.Events()) != client.StateExpired {
	}
	e.set("/expiry/a", "a1")
	e.create("/expiry/b=b")
	e.del("/expiry/gone")
	part.Heal()
	caughtUp(e, c, "/expiry",
		`Changed /expiry/a "a1" v1 (was "a0" v0)`,
		`Created /expiry/b "b" v0`,
		`Deleted /expiry/gone (was "g" v0)`,
	)
	if cl.SessionID() == session {
		e.Error("the session survived: the test needs it to expire")
	}
	e.set("/expiry/b", "b1")
	e.del("/expiry/zz")
	expect(e, c, `Changed /expiry/b "b1" v1 (was "b" v0)`, `Deleted /expiry/zz (was "marker" v0)`)
	converged(e, c, "/expiry", cache.Tree)
}

// testClose closes a cache: its channel closes, the server no longer
// holds its watch, and it cannot be started again.
func testClose(e *env) {
	e.create("/close=x")
	cl := recipetest.Dial(e.T, e.addr, client.Config{})
	c := cache.New(cl, "/close", cache.Tree)
	if err := c.Start(recipetest.Context(e)); err != nil {
		e.Fatal(err)
	}
	recipetest.AwaitWatches(e, e.addr, "/close", recipetest.Watches{"/close": {recipetest.SessionHex(cl.SessionID())}})
	if err := c.Start(recipetest.Context(e)); err == nil || errors.Is(err, cache.ErrClosed) {
		e.Errorf("Start of a started cache: %v, want an error other than ErrClosed", err)
	}
	c.Close()
	if got := drain(e, c); len(got) != 0 {
		e.Errorf("a closed cache delivered %q", got)
	}
	recipetest.AwaitWatches(e, e.addr, "/close", recipetest.Watches{})
	if c.Connected() {
		e.Error("a closed cache says it is connected")
	}
	if n, ok := c.Get("/close"); !ok || string(n.Data) != "x" {
		e.Errorf("the copy of a closed cache holds %q, %v; want what it last read", n.Data, ok)
	}
	c.Close()
	if err := c.Start(recipetest.Context(e)); !errors.Is(err, cache.ErrClosed) {
		e.Errorf("Start after Close: %v, want ErrClosed", err)
	}

	never := cache.New(cl, "/close", cache.Tree)
	never.Close()
	if got := drain(e, never); len(got) != 0 {
		e.Errorf("a cache closed before it started delivered %q", got)
	}

	// A cache that fails to start is closed.
	bad := cache.New(cl, "/close/", cache.Tree)
	if err := bad.Start(recipetest.Context(e)); !errors.Is(err, client.ErrInvalidPath) {
		e.Errorf("Start of a cache of an invalid path: %v, want ErrInvalidPath", err)
	}
	if got := drain(e, bad); len(got) != 0 {
		e.Errorf("a cache that failed to start delivered %q", got)
	}
}

// testClientClose closes the cache's client: the cache ends, its channel
// closing after the events already queued.
func testClientClose(e *env) {
	e.create("/client-close=x", "/client-close/a=a")
	cl := recipetest.Dial(e.T, e.addr, client.Config{})
	c := e.start(cl, "/client-close", cache.Tree)
	cl.Close()
	got := drain(e, c)
	if want := []string{`Created /client-close "x" v0`, `Created /client-close/a "a" v0`, `Initialized`}; !slices.Equal(got, want) {
		e.Errorf("events before the end: %q, want %q", got, want)
	}
}

// testChurn writes a tree from several clients at once while a cache
// starts and follows it, and while readers read the copy: every event
// follows from the one before for its path, replaying them gives the
// copy, and the copy converges to the server's tree.
func testChurn(e *env) {
	const writers, ops = 3, 60
	e.create("/churn=")
	var errs recipetest.Errs
	var wg sync.WaitGroup
	for i := range writers {
		w := recipetest.Dial(e.T, e.addr, client.Config{})
		wg.Go(func() {
			ctx := recipetest.Context(e)
			r := rand.New(rand.NewPCG(uint64(i), 1))
			for n := range ops {
				p := fmt.Sprintf("/churn/n%d", r.IntN(3))
				if r.IntN(2) == 0 {
					p += fmt.Sprintf("/m%d", r.IntN(3))
				}
				var err error
				switch r.IntN(3) {
				case 0:
					_, _, err = w.Create(ctx, p, []byte(fmt.Sprint(i, n)), client.ModePersistent, nil)
				case 1:
					_, err = w.Set(ctx, p, []byte(fmt.Sprint(i, n)), client.AnyVersion)
				case 2:
					err = w.Delete(ctx, p, client.AnyVersion)
				}
				if !errors.Is(err, client.ErrNodeExists) && !errors.Is(err, client.ErrNoNode) && !errors.Is(err, client.ErrNotEmpty) {
					errs.Add(p, err)
				}
			}
		})
	}
	c := e.start(recipetest.Dial(e.T, e.addr, client.Config{}), "/churn", cache.Tree)
	done := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				c.Get("/churn/n1")
				c.Children("/churn")
				c.Nodes()
				c.Connected()
			}
		})
	}
	wg.Wait()
	errs.Report(e)
	e.create("/churn/zz=marker")
	replayed := map[string]cache.Node{}
	for {
		ev := recipetest.Receive(e, c.Events())
		if ev.Type == cache.Initialized {
			continue
		}
		was, had := replayed[ev.Path]
		switch {
		case ev.Type == cache.Created && had,
			ev.Type != cache.Created && (!had || ev.Old == nil || summarize([]cache.Node{*ev.Old})[0] != summarize([]cache.Node{was})[0]):
			e.Fatalf("%s does not follow from what the events said before (%v)", describe(ev), had)
		case ev.Type == cache.Deleted:
			delete(replayed, ev.Path)
		default:
			replayed[ev.Path] = *ev.Node
		}
		if ev.Path == "/churn/zz" {
			break
		}
	}
	close(done)
	readers.Wait()
	var fromEvents []cache.Node
	for _, n := range replayed {
		fromEvents = append(fromEvents, n)
	}
	slices.SortFunc(fromEvents, func(a, b cache.Node) int { return strings.Compare(a.Path, b.Path) })
	if got, want := summarize(fromEvents), summarize(c.Nodes()); !slices.Equal(got, want) {
		e.Errorf("the events replayed give\n%s\nthe copy holds\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	converged(e, c, "/churn", cache.Tree)
}
