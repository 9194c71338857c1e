package cache_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/cache"
	"github.com/collie-io/collie/recipe/internal/recipetest"
)

// TestCache runs every scenario against Collie, and against the real
// ZooKeeper 3.8 to show that the expectations are ZooKeeper's.
func TestCache(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T, addr string)
	}{
		{"tree", testTree},
		{"children", testChildren},
		{"single", testSingle},
		{"reconnect", testReconnect},
		{"expiry", testExpiry},
		{"close", testClose},
		{"concurrent-readers", testConcurrentReaders},
	}
	for _, srv := range recipetest.Servers {
		t.Run("server="+srv.Name, func(t *testing.T) {
			addr := srv.Start(t)
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) { sc.run(t, addr) })
			}
		})
	}
}

// ev is an event as the tests compare them: type, path, new data.
type ev struct {
	typ  cache.EventType
	path string
	data string
}

func (e ev) String() string { return fmt.Sprintf("%v %s %q", e.typ, e.path, e.data) }

func short(e cache.Event) ev {
	out := ev{typ: e.Type, path: e.Path}
	if e.Node != nil {
		out.data = string(e.Node.Data)
	}
	return out
}

// next returns the cache's next event, failing the test after the
// timeout.
func next(t *testing.T, c *cache.Cache) ev {
	t.Helper()
	return short(recipetest.Receive(t, c.Events()))
}

// expect reads events and checks they are want, in order.
func expect(t *testing.T, c *cache.Cache, want ...ev) {
	t.Helper()
	for _, w := range want {
		if got := next(t, c); got != w {
			t.Fatalf("event %v, want %v", got, w)
		}
	}
}

// until reads events until one equal to marker, and returns those before.
func until(t *testing.T, c *cache.Cache, marker ev) []ev {
	t.Helper()
	var got []ev
	for {
		e := next(t, c)
		if e == marker {
			return got
		}
		got = append(got, e)
	}
}

// tree makes root with the nodes given, path to data, parents first.
func tree(t *testing.T, c *client.Client, root string, nodes ...string) {
	t.Helper()
	ctx := recipetest.Context(t)
	for _, p := range append([]string{root}, nodes...) {
		if _, _, err := c.Create(ctx, p, []byte("v:"+p), client.ModePersistent, nil); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
}

func start(t *testing.T, cl *client.Client, root string, scope cache.Scope) *cache.Cache {
	t.Helper()
	c := cache.New(cl, root, scope)
	if err := c.Start(recipetest.Context(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func set(t *testing.T, c *client.Client, p, data string) {
	t.Helper()
	if _, err := c.Set(recipetest.Context(t), p, []byte(data), client.AnyVersion); err != nil {
		t.Fatalf("set %s: %v", p, err)
	}
}

func create(t *testing.T, c *client.Client, p, data string) {
	t.Helper()
	if _, _, err := c.Create(recipetest.Context(t), p, []byte(data), client.ModePersistent, nil); err != nil {
		t.Fatalf("create %s: %v", p, err)
	}
}

func del(t *testing.T, c *client.Client, p string) {
	t.Helper()
	if err := c.Delete(recipetest.Context(t), p, client.AnyVersion); err != nil {
		t.Fatalf("delete %s: %v", p, err)
	}
}

func testTree(t *testing.T, addr string) {
	w := recipetest.Dial(t, addr, client.Config{})
	tree(t, w, "/tree", "/tree/a", "/tree/a/x", "/tree/b")
	c := start(t, recipetest.Dial(t, addr, client.Config{}), "/tree", cache.Tree)
	expect(t, c,
		ev{cache.Created, "/tree", "v:/tree"},
		ev{cache.Created, "/tree/a", "v:/tree/a"},
		ev{cache.Created, "/tree/a/x", "v:/tree/a/x"},
		ev{cache.Created, "/tree/b", "v:/tree/b"},
		ev{typ: cache.Initialized},
	)
	set(t, w, "/tree/a", "a2")
	e := recipetest.Receive(t, c.Events())
	if e.Type != cache.Changed || e.Path != "/tree/a" || string(e.Node.Data) != "a2" || string(e.Old.Data) != "v:/tree/a" {
		t.Fatalf("change of /tree/a: %v %s new %v old %v", e.Type, e.Path, e.Node, e.Old)
	}
	create(t, w, "/tree/c", "c")
	create(t, w, "/tree/c/d", "d")
	del(t, w, "/tree/a/x")
	expect(t, c,
		ev{cache.Created, "/tree/c", "c"},
		ev{cache.Created, "/tree/c/d", "d"},
		ev{cache.Deleted, "/tree/a/x", ""},
	)
	if n, ok := c.Get("/tree/a"); !ok || string(n.Data) != "a2" || n.Stat.Version != 1 {
		t.Errorf("Get(/tree/a) = %q version %d, %v", n.Data, n.Stat.Version, ok)
	}
	if _, ok := c.Get("/tree/a/x"); ok {
		t.Error("Get of a deleted node found it")
	}
	if got := c.Children("/tree"); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("Children(/tree) = %v", got)
	}
	if n := len(c.Nodes()); n != 5 {
		t.Errorf("%d nodes cached, want 5", n)
	}
	// The root itself goes, and comes back.
	for _, p := range []string{"/tree/c/d", "/tree/c", "/tree/b", "/tree/a"} {
		del(t, w, p)
	}
	del(t, w, "/tree")
	got := until(t, c, ev{cache.Deleted, "/tree", ""})
	slices.SortFunc(got, func(a, b ev) int { return cmp.Compare(a.path, b.path) })
	if want := []ev{{cache.Deleted, "/tree/a", ""}, {cache.Deleted, "/tree/b", ""}, {cache.Deleted, "/tree/c", ""}, {cache.Deleted, "/tree/c/d", ""}}; !slices.Equal(got, want) {
		t.Errorf("deletions before the root's: %v, want %v", got, want)
	}
	create(t, w, "/tree", "again")
	expect(t, c, ev{cache.Created, "/tree", "again"})
}

func testChildren(t *testing.T, addr string) {
	w := recipetest.Dial(t, addr, client.Config{})
	tree(t, w, "/kids", "/kids/a", "/kids/a/deep")
	c := start(t, recipetest.Dial(t, addr, client.Config{}), "/kids", cache.Children)
	expect(t, c,
		ev{cache.Created, "/kids", "v:/kids"},
		ev{cache.Created, "/kids/a", "v:/kids/a"},
		ev{typ: cache.Initialized},
	)
	set(t, w, "/kids/a/deep", "ignored")
	create(t, w, "/kids/a/deeper", "ignored")
	create(t, w, "/kids/b", "b")
	expect(t, c, ev{cache.Created, "/kids/b", "b"})
	if _, ok := c.Get("/kids/a/deep"); ok {
		t.Error("a grandchild is cached")
	}
}

func testSingle(t *testing.T, addr string) {
	w := recipetest.Dial(t, addr, client.Config{})
	c := start(t, recipetest.Dial(t, addr, client.Config{}), "/single", cache.Single)
	expect(t, c, ev{typ: cache.Initialized})
	create(t, w, "/single", "1")
	create(t, w, "/single/child", "ignored")
	set(t, w, "/single", "2")
	del(t, w, "/single/child")
	del(t, w, "/single")
	expect(t, c,
		ev{cache.Created, "/single", "1"},
		ev{cache.Changed, "/single", "2"},
		ev{cache.Deleted, "/single", ""},
	)
}

// testReconnect cuts the cache's connection while the tree changes, and
// heals it within the session timeout: the cache reports each missed
// change once.
func testReconnect(t *testing.T, addr string) {
	w := recipetest.Dial(t, addr, client.Config{})
	tree(t, w, "/reconnect", "/reconnect/changed", "/reconnect/deleted")
	cl, part := recipetest.Partitioned(t, addr, recipetest.LongSession)
	c := start(t, cl, "/reconnect", cache.Tree)
	until(t, c, ev{typ: cache.Initialized})
	part.Cut()
	recipetest.WaitFor(t, "the cache to see the disconnection", func() bool { return !c.Connected() })
	set(t, w, "/reconnect/changed", "new")
	create(t, w, "/reconnect/created", "c")
	del(t, w, "/reconnect/deleted")
	part.Heal()
	got := until(t, c, ev{cache.Created, "/reconnect/created", "c"})
	create(t, w, "/reconnect/marker", "m")
	got = append(got, until(t, c, ev{cache.Created, "/reconnect/marker", "m"})...)
	slices.SortFunc(got, func(a, b ev) int { return cmp.Compare(a.path, b.path) })
	if want := []ev{{cache.Changed, "/reconnect/changed", "new"}, {cache.Deleted, "/reconnect/deleted", ""}}; !slices.Equal(got, want) {
		t.Errorf("events of the time disconnected, but the creation: %v, want %v", got, want)
	}
	if !c.Connected() {
		t.Error("not connected after catching up")
	}
}

// testExpiry keeps the cache's client cut off until its session expires;
// the client renews it, and the cache catches up and goes on.
func testExpiry(t *testing.T, addr string) {
	w := recipetest.Dial(t, addr, client.Config{})
	tree(t, w, "/expiry", "/expiry/a")
	cl, part := recipetest.Partitioned(t, addr, recipetest.ShortSession)
	states := cl.StateChanges()
	defer states.Close()
	c := start(t, cl, "/expiry", cache.Tree)
	until(t, c, ev{typ: cache.Initialized})
	part.Cut()
	for recipetest.Receive(t, states.Events()) != client.StateExpired {
	}
	set(t, w, "/expiry/a", "during")
	create(t, w, "/expiry/b", "b")
	part.Heal()
	got := until(t, c, ev{cache.Created, "/expiry/b", "b"})
	create(t, w, "/expiry/after", "x")
	got = append(got, until(t, c, ev{cache.Created, "/expiry/after", "x"})...)
	if !slices.Equal(got, []ev{{cache.Changed, "/expiry/a", "during"}}) {
		t.Errorf("events besides the creations: %v", got)
	}
	set(t, w, "/expiry/after", "y")
	expect(t, c, ev{cache.Changed, "/expiry/after", "y"})
}

// testClose closes a cache: its channel closes, and the server no longer
// holds its watch.
func testClose(t *testing.T, addr string) {
	w := recipetest.Dial(t, addr, client.Config{})
	tree(t, w, "/close")
	before := recipetest.WatchCount(t, addr)
	c := cache.New(recipetest.Dial(t, addr, client.Config{}), "/close", cache.Tree)
	if err := c.Start(recipetest.Context(t)); err != nil {
		t.Fatal(err)
	}
	recipetest.WaitFor(t, "the cache's watch on the server", func() bool { return recipetest.WatchCount(t, addr) > before })
	c.Close()
	for range c.Events() {
	}
	recipetest.WaitFor(t, "the cache's watch to be removed", func() bool { return recipetest.WatchCount(t, addr) == before })
	if err := c.Start(recipetest.Context(t)); err == nil {
		t.Error("Start after Close succeeded")
	}
}

// testConcurrentReaders reads the copy from several goroutines while
// changes apply (for the race detector), and checks the copy converges.
func testConcurrentReaders(t *testing.T, addr string) {
	w := recipetest.Dial(t, addr, client.Config{})
	tree(t, w, "/readers")
	c := start(t, recipetest.Dial(t, addr, client.Config{}), "/readers", cache.Tree)
	ctx, cancel := context.WithCancel(recipetest.Context(t))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				c.Get("/readers/n5")
				c.Children("/readers")
				c.Nodes()
			}
		})
	}
	for i := range 10 {
		create(t, w, fmt.Sprintf("/readers/n%d", i), "x")
	}
	recipetest.WaitFor(t, "the copy to hold every node", func() bool { return len(c.Children("/readers")) == 10 })
	cancel()
	wg.Wait()
}
