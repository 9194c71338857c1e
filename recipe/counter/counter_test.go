package counter_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/counter"
	"github.com/collie-io/collie/recipe/internal/recipetest"
)

func TestCounter(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T, addr string)
	}{
		{"shared-count-try-set", testSharedTrySet},
		{"shared-count-no-lost-increment", testSharedIncrements},
		{"shared-count-watch", testSharedWatch},
		{"atomic-long-no-lost-increment", testAtomicIncrements},
		{"atomic-long-operations", testAtomicOperations},
		{"atomic-long-bounded-retries", testAtomicRetries},
		{"ids-unique", testIDs},
		{"lost-increment", testLostIncrement},
		{"shared-with-curator", testCurator},
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

// testSharedTrySet checks Curator's layout (4 big-endian bytes, created
// with the seed) and that of two writers over one version, one wins and
// the other is handed the winner's count.
func testSharedTrySet(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	c1, c2 := recipetest.Dial(t, addr, client.Config{}), recipetest.Dial(t, addr, client.Config{})
	path := "/shared/try-set"
	a, b := counter.NewSharedCount(c1, path, 7), counter.NewSharedCount(c2, path, 99)
	start, err := a.Get(ctx)
	if err != nil || start != (counter.Count{Value: 7, Version: 0}) {
		t.Fatalf("Get = %+v, %v; want the seed 7 at version 0", start, err)
	}
	if data, _, err := c1.Get(ctx, path); err != nil || string(data) != "\x00\x00\x00\x07" {
		t.Fatalf("node data %q, %v; want 4 big-endian bytes", data, err)
	}
	if got, err := b.Get(ctx); err != nil || got != start {
		t.Fatalf("other client's Get = %+v, %v; want %+v (its seed unused)", got, err, start)
	}

	won, ok, err := a.TrySet(ctx, start, 8)
	if err != nil || !ok || won != (counter.Count{Value: 8, Version: 1}) {
		t.Fatalf("first TrySet = %+v, %t, %v", won, ok, err)
	}
	lost, ok, err := b.TrySet(ctx, start, -8)
	if err != nil || ok || lost != won {
		t.Fatalf("TrySet over a stale version = %+v, %t, %v; want false and %+v", lost, ok, err, won)
	}
	if got, ok, err := b.TrySet(ctx, lost, -1); err != nil || !ok || got.Value != -1 {
		t.Fatalf("TrySet over the current version = %+v, %t, %v", got, ok, err)
	}
	if _, _, err := a.TrySet(ctx, counter.Count{Version: -1}, 0); !errors.Is(err, client.ErrBadArguments) {
		t.Errorf("TrySet at version -1 = %v, want ErrBadArguments", err)
	}
	if got, err := a.Set(ctx, 42); err != nil || got.Value != 42 {
		t.Errorf("Set = %+v, %v", got, err)
	}
	if got, err := a.Get(ctx); err != nil || got.Value != 42 {
		t.Errorf("Get after Set = %+v, %v", got, err)
	}
}

// testSharedIncrements has clients increment a shared count at once with
// TrySet loops: no increment is lost.
func testSharedIncrements(t *testing.T, addr string) {
	const clients, each, seed = 4, 15, 100
	ctx := recipetest.Context(t)
	path := "/shared/increments"
	concurrently(t, clients, func(c *client.Client) error {
		sc := counter.NewSharedCount(c, path, seed)
		cur, err := sc.Get(ctx)
		for i := 0; i < each && err == nil; {
			var ok bool
			if cur, ok, err = sc.TrySet(ctx, cur, cur.Value+1); ok {
				i++
			}
		}
		return err
	}, addr)
	got, err := counter.NewSharedCount(recipetest.Dial(t, addr, client.Config{}), path, 0).Get(ctx)
	if err != nil || got.Value != seed+clients*each {
		t.Errorf("count = %+v, %v; want %d", got, err, seed+clients*each)
	}
}

// testSharedWatch watches a count that other clients change: the watcher
// starts with the current value, sees each change, sees the last of a
// burst, survives the node's deletion, and ends with its context.
func testSharedWatch(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	path := "/shared/watch"
	writerClient := recipetest.Dial(t, addr, client.Config{})
	writer := counter.NewSharedCount(writerClient, path, 1)
	if _, err := writer.Get(ctx); err != nil {
		t.Fatal(err)
	}
	watchCtx, stop := context.WithCancel(ctx)
	w := counter.NewSharedCount(recipetest.Dial(t, addr, client.Config{}), path, -1).Watch(watchCtx)
	awaitValue := func(want int32) {
		t.Helper()
		for {
			cnt, ok := receiveOK(t, w.Values())
			if !ok {
				t.Fatalf("watch ended waiting for %d: %v", want, w.Err())
			}
			if cnt.Value == want {
				return
			}
		}
	}
	awaitValue(1)
	for v := int32(2); v <= 5; v++ {
		if _, err := writer.Set(ctx, v); err != nil {
			t.Fatal(err)
		}
		if cnt := receive(t, w.Values()); cnt.Value != v {
			t.Fatalf("watcher saw %+v, want %d", cnt, v)
		}
	}
	for v := int32(100); v < 120; v++ {
		if _, err := writer.Set(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	awaitValue(119)
	// A deleted count is created again with the watcher's seed.
	if err := writerClient.Delete(ctx, path, client.AnyVersion); err != nil {
		t.Fatal(err)
	}
	awaitValue(-1)
	if w.Err() != nil {
		t.Errorf("Err = %v while the watch runs", w.Err())
	}
	stop()
	for range w.Values() {
	}
	if err := w.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err = %v after the watch's context ended, want context.Canceled", err)
	}
}

// testAtomicIncrements has clients increment one counter at once: every
// increment returns a different value, and the final value is their
// number.
func testAtomicIncrements(t *testing.T, addr string) {
	const clients, each = 4, 25
	ctx := recipetest.Context(t)
	path := "/atomic/increments"
	var (
		mu     sync.Mutex
		values []int64
	)
	concurrently(t, clients, func(c *client.Client) error {
		n := counter.NewAtomicLong(c, path, client.ExponentialBackoff(time.Millisecond, 50*time.Millisecond, client.Forever))
		for range each {
			v, err := n.Increment(ctx)
			if err != nil {
				return err
			}
			mu.Lock()
			values = append(values, v)
			mu.Unlock()
		}
		return nil
	}, addr)
	slices.Sort(values)
	for i, v := range values {
		if v != int64(i+1) {
			t.Fatalf("increments returned %v, want 1 to %d once each", values, clients*each)
		}
	}
	c := recipetest.Dial(t, addr, client.Config{})
	if got, err := counter.NewAtomicLong(c, path, nil).Get(ctx); err != nil || got != clients*each {
		t.Errorf("value = %d, %v; want %d", got, err, clients*each)
	}
	if data, _, err := c.Get(ctx, path); err != nil || string(data) != "\x00\x00\x00\x00\x00\x00\x00\x64" {
		t.Errorf("node data %q, %v; want 8 big-endian bytes", data, err)
	}
}

// testAtomicOperations checks each operation's result, on a missing node
// and on corrupt data.
func testAtomicOperations(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	c := recipetest.Dial(t, addr, client.Config{})
	n := counter.NewAtomicLong(c, "/atomic/ops/deeper", nil)
	steps := []struct {
		name string
		do   func() (int64, error)
		want int64
	}{
		{"Get missing", func() (int64, error) { return n.Get(ctx) }, 0},
		{"Initialize", func() (int64, error) { ok, err := n.Initialize(ctx, 5); return boolInt(ok), err }, 1},
		{"Initialize again", func() (int64, error) { ok, err := n.Initialize(ctx, 6); return boolInt(ok), err }, 0},
		{"Add", func() (int64, error) { return n.Add(ctx, 10) }, 15},
		{"Decrement", func() (int64, error) { return n.Decrement(ctx) }, 14},
		{"CompareAndSet hit", func() (int64, error) { ok, err := n.CompareAndSet(ctx, 14, 1<<40); return boolInt(ok), err }, 1},
		{"CompareAndSet miss", func() (int64, error) { ok, err := n.CompareAndSet(ctx, 14, 0); return boolInt(ok), err }, 0},
		{"Get", func() (int64, error) { return n.Get(ctx) }, 1 << 40},
		{"Set", func() (int64, error) { return 0, n.Set(ctx, -3) }, 0},
		{"Get after Set", func() (int64, error) { return n.Get(ctx) }, -3},
		{"Increment", func() (int64, error) { return n.Increment(ctx) }, -2},
	}
	for _, s := range steps {
		if got, err := s.do(); err != nil || got != s.want {
			t.Fatalf("%s = %d, %v; want %d", s.name, got, err, s.want)
		}
	}
	missing := counter.NewAtomicLong(c, "/atomic/ops/missing", nil)
	if ok, err := missing.CompareAndSet(ctx, 0, 9); err != nil || !ok {
		t.Errorf("CompareAndSet(0, 9) on a missing counter = %t, %v; want it created", ok, err)
	}
	if _, err := c.Set(ctx, n.Path(), []byte{1, 2, 3}, client.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Increment(ctx); !errors.Is(err, counter.ErrCorrupt) {
		t.Errorf("Increment of 3 bytes = %v, want ErrCorrupt", err)
	}
}

// testAtomicRetries makes another client write between every read and
// write of an update: it gives up when its policy says so, having written
// nothing, and stops waiting when its context ends.
func testAtomicRetries(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	path := "/atomic/retries"
	rival := counter.NewAtomicLong(recipetest.Dial(t, addr, client.Config{}), path, nil)
	n := counter.NewAtomicLong(recipetest.Dial(t, addr, client.Config{}), path, client.RetryNTimes(2, time.Millisecond))
	if err := rival.Set(ctx, 0); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	counter.SetBeforeWrite(t, func(a *counter.AtomicLong) {
		if a != n {
			return
		}
		attempts++
		if _, err := rival.Add(ctx, 1000); err != nil {
			t.Error(err)
		}
	})
	if _, err := n.Increment(ctx); !errors.Is(err, counter.ErrContention) {
		t.Fatalf("Increment against a rival = %v, want ErrContention", err)
	}
	if attempts != 3 {
		t.Errorf("%d attempts, want 3 (the first and 2 retries)", attempts)
	}
	counter.SetBeforeWrite(t, nil)
	if got, err := rival.Get(ctx); err != nil || got != 3000 {
		t.Errorf("value = %d, %v; want the rival's 3000 alone", got, err)
	}

	patient := counter.NewAtomicLong(recipetest.Dial(t, addr, client.Config{}), path, client.RetryForever(time.Hour))
	cancelCtx, cancel := context.WithCancel(ctx)
	counter.SetBeforeWrite(t, func(a *counter.AtomicLong) {
		if a != patient {
			return
		}
		if _, err := rival.Add(ctx, 1); err != nil {
			t.Error(err)
		}
		cancel()
	})
	if _, err := patient.Increment(cancelCtx); !errors.Is(err, context.Canceled) {
		t.Errorf("Increment with its context ended during backoff = %v, want context.Canceled", err)
	}
}

// testIDs draws ids of two prefixes from clients at once: all are unique,
// each client's increase, and no node stays behind.
func testIDs(t *testing.T, addr string) {
	const clients, each = 4, 25
	ctx := recipetest.Context(t)
	path := "/ids/orders"
	var (
		mu  sync.Mutex
		all = map[int64]bool{}
	)
	prefixes := []string{"order", "invoice"}
	i := 0
	concurrently(t, clients, func(c *client.Client) error {
		mu.Lock()
		ids := counter.NewIDs(c, path, prefixes[i%len(prefixes)])
		i++
		mu.Unlock()
		var mine []int64
		for range each {
			id, err := ids.Next(ctx)
			if err != nil {
				return err
			}
			mine = append(mine, id)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.IsSorted(mine) {
			t.Errorf("ids of one client not increasing: %v", mine)
		}
		for _, id := range mine {
			if all[id] {
				t.Errorf("id %d handed out twice", id)
			}
			all[id] = true
		}
		return nil
	}, addr)
	if len(all) != clients*each {
		t.Errorf("%d distinct ids, want %d", len(all), clients*each)
	}
	c := recipetest.Dial(t, addr, client.Config{})
	if names, _, err := c.Children(ctx, path); err != nil || len(names) != 0 {
		t.Errorf("children %v, %v; want none", names, err)
	}
	// The server's counter advances with each create, not with deletes.
	fresh := counter.NewIDs(c, "/ids/fresh", "x")
	for _, want := range []int64{0, 1, 2} {
		if id, err := fresh.Next(ctx); err != nil || id != want {
			t.Errorf("id %d, %v on a fresh path; want %d", id, err, want)
		}
	}
	if _, err := counter.NewIDs(c, path, "a/b").Next(ctx); !errors.Is(err, client.ErrInvalidPath) {
		t.Errorf("Next with a / in the prefix = %v, want ErrInvalidPath", err)
	}
}

// testLostIncrement loses a client's connection in the middle of an
// increment, in both ways a write is lost: never sent on (its request
// swallowed) and applied with its reply lost; and keeps it away until the
// session has expired, or only until the client has noticed. Then the
// network heals and the client has a session again. A SharedCount's TrySet
// does not report success, and trying again over the version it had counts
// the increment once in all. An AtomicLong's Add either succeeds having
// counted once, or fails having counted nothing, or says ErrUncertain:
// never counted and reported failed, nor counted twice.
func testLostIncrement(t *testing.T, addr string) {
	for _, mode := range []struct {
		name    string
		applied bool // the lost write reaches the server
		expire  bool // the session expires before the network heals
		lose    func(*recipetest.Partition)
	}{
		{"request-lost-session-expired", false, true, (*recipetest.Partition).Stall},
		{"reply-lost-session-expired", true, true, (*recipetest.Partition).Deafen},
		{"reply-lost-session-kept", true, false, (*recipetest.Partition).Deafen},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := recipetest.Context(t)
			observer := recipetest.Dial(t, addr, client.Config{})
			// Long enough, when the session is to be kept, for the client
			// to reconnect once it has noticed the loss.
			timeout, until := 1500*time.Millisecond, client.StateDisconnected
			if mode.expire {
				timeout, until = recipetest.ShortSession, client.StateExpired
			}
			c, network := recipetest.Partitioned(t, addr, timeout)
			states := c.StateChanges()
			defer states.Close()
			shared := "/lost/shared-" + mode.name
			sc := counter.NewSharedCount(c, shared, 10)
			cur, err := sc.Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			mode.lose(network)
			if got, ok, err := sc.TrySet(ctx, cur, cur.Value+1); ok || err == nil {
				t.Errorf("TrySet with its connection lost = %+v, %t, %v; want an error", got, ok, err)
			}
			recipetest.AwaitState(t, states, until)
			network.Heal()
			if err := c.Renew(ctx); err != nil {
				t.Fatal(err)
			}
			got, ok, err := sc.TrySet(ctx, cur, cur.Value+1)
			if err != nil || ok == mode.applied || got.Value != cur.Value+1 {
				t.Errorf("TrySet again over version %d = %+v, %t, %v; want %d, written %t", cur.Version, got, ok, err, cur.Value+1, !mode.applied)
			}
			if now, err := counter.NewSharedCount(observer, shared, 0).Get(ctx); err != nil || now.Value != cur.Value+1 {
				t.Errorf("shared count %+v, %v; want %d: the increment counted once", now, err, cur.Value+1)
			}

			long := "/lost/long-" + mode.name
			a := counter.NewAtomicLong(c, long, nil)
			if err := a.Set(ctx, 10); err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			counter.SetBeforeWrite(t, func(x *counter.AtomicLong) {
				if x == a {
					once.Do(func() { mode.lose(network) })
				}
			})
			type result struct {
				v   int64
				err error
			}
			added := make(chan result, 1)
			go func() {
				v, err := a.Add(ctx, 1)
				added <- result{v, err}
			}()
			recipetest.AwaitState(t, states, until)
			network.Heal()
			r := recipetest.Receive(t, added)
			counter.SetBeforeWrite(t, nil)
			now, err := counter.NewAtomicLong(observer, long, nil).Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case r.err == nil:
				if r.v != 11 || now != 11 {
					t.Errorf("Add succeeded with %d; the counter holds %d, want 11", r.v, now)
				}
			case errors.Is(r.err, counter.ErrUncertain):
				if now != 10 && now != 11 {
					t.Errorf("Add uncertain (%v); the counter holds %d, want 10 or 11", r.err, now)
				}
			default:
				if now != 10 {
					t.Errorf("Add failed (%v); the counter holds %d, want 10", r.err, now)
				}
			}
		})
	}
}

// testCurator shares counters with Curator's SharedCount and
// DistributedAtomicLong, in a Java process: each side reads what the other
// wrote, a Go watcher sees Curator's write, and increments made by both at
// once are all counted.
func testCurator(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	c := recipetest.Dial(t, addr, client.Config{})
	const countPath, longPath, increments = "/curator/count", "/curator/long", 50
	if _, err := counter.NewSharedCount(c, countPath, 0).Set(ctx, 41); err != nil {
		t.Fatal(err)
	}
	w := counter.NewSharedCount(recipetest.Dial(t, addr, client.Config{}), countPath, 0).Watch(ctx)
	if cnt := receive(t, w.Values()); cnt.Value != 41 {
		t.Fatalf("watcher starts with %+v, want 41", cnt)
	}
	wait := recipetest.Java{Program: "CuratorCounter.java", Args: []string{addr, countPath, longPath, strconv.Itoa(increments)}}.Run(t)
	if cnt := receive(t, w.Values()); cnt.Value != 42 {
		t.Errorf("watcher saw %+v after Curator's trySetCount, want 42", cnt)
	}
	// Curator increments from now on: so does Go.
	n := counter.NewAtomicLong(c, longPath, client.RetryForever(time.Millisecond))
	for range increments {
		if _, err := n.Increment(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"count 41", "set 42", fmt.Sprintf("incremented %d", increments), "done"}
	if lines := wait(); !slices.Equal(lines, want) {
		t.Fatalf("Curator printed %q, want %q", lines, want)
	}
	if got, err := n.Get(ctx); err != nil || got != 2*increments {
		t.Errorf("value = %d, %v; want %d from Go and as many from Curator", got, err, 2*increments)
	}
}

// concurrently runs fn in n goroutines at once, each with a client of its
// own, and fails the test with their errors.
func concurrently(t *testing.T, n int, fn func(c *client.Client) error, addr string) {
	t.Helper()
	clients := make([]*client.Client, n)
	for i := range clients {
		clients[i] = recipetest.Dial(t, addr, client.Config{})
	}
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() { errs <- fn(c) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// receive returns the next value of ch, failing the test if ch closes
// instead: a watch stream that ends has lost its counter.
func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	v, ok := receiveOK(t, ch)
	if !ok {
		t.Fatal("channel closed")
	}
	return v
}

// receiveOK receives from ch, reporting false when it is closed.
func receiveOK[T any](t *testing.T, ch <-chan T) (T, bool) {
	t.Helper()
	select {
	case v, ok := <-ch:
		return v, ok
	case <-time.After(recipetest.Timeout):
		t.Fatal("timed out waiting on a channel")
		panic("unreachable")
	}
}
