package queue_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/internal/recipetest"
	"github.com/collie-io/collie/recipe/queue"
)

// shortSession is the session timeout of a consumer whose session a test
// ends: the shortest both servers grant with a 100ms tick.
const shortSession = recipetest.ShortSession

func TestQueue(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T, addr string)
	}{
		{"fifo", testFIFO},
		{"exactly-once", func(t *testing.T, addr string) { testExactlyOnce(t, addr, false) }},
		{"exactly-once-lock-safe", func(t *testing.T, addr string) { testExactlyOnce(t, addr, true) }},
		{"take-waits-for-put", testTakeWaits},
		{"lock-safe-redelivers-after-session-loss", testRedelivery},
		{"lock-safe-handler-failures", testHandlerFailures},
		{"priority-order", testPriority},
		{"delay-not-early", testDelay},
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

// testFIFO puts items and takes them back with one consumer, in the order
// they were put, from nodes named and framed as Curator's.
func testFIFO(t *testing.T, addr string) {
	const items = 20
	ctx := recipetest.Context(t)
	c := recipetest.Dial(t, addr, client.Config{})
	q := queue.New(c, "/fifo/deeper")
	curatorName := regexp.MustCompile(`^/fifo/deeper/queue-[0-9]{10}$`)
	for i := range items {
		node, err := q.Put(ctx, []byte("item-"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if !curatorName.MatchString(node) {
			t.Fatalf("node %s is not named as Curator names it", node)
		}
		if i == 0 {
			data, _, err := c.Get(ctx, node)
			if want := "\x00\x01\x00\x01\x01\x00\x00\x00\x06item-0\x02"; err != nil || string(data) != want {
				t.Fatalf("node data %q (%v), want Curator's framing %q", data, err, want)
			}
		}
	}
	if n, err := q.Len(ctx); err != nil || n != items {
		t.Fatalf("Len = %d, %v; want %d", n, err, items)
	}
	for i := range items {
		item, err := q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := "item-" + strconv.Itoa(i); string(item.Data) != want || len(item.Values) != 1 {
			t.Fatalf("took %q (%d values), want %q", item.Data, len(item.Values), want)
		}
	}
	if n, err := q.Len(ctx); err != nil || n != 0 {
		t.Errorf("Len = %d, %v after taking everything", n, err)
	}

	if _, err := q.PutMulti(ctx, [][]byte{[]byte("a"), []byte("b")}); err != nil {
		t.Fatal(err)
	}
	item, err := q.Take(ctx)
	if err != nil || len(item.Values) != 2 || string(item.Values[1]) != "b" {
		t.Fatalf("took %q, %v; want the two values of PutMulti", item.Values, err)
	}
}

// testExactlyOnce runs producers and consumers, each with its own session,
// at the same time, and counts every item: each is taken exactly once.
func testExactlyOnce(t *testing.T, addr string, lockSafe bool) {
	const producers, consumers, perProducer = 3, 3, 30
	const total = producers * perProducer
	ctx := recipetest.Context(t)
	path := "/exactly-once"
	var opts []queue.Option
	if lockSafe {
		path += "-lock-safe"
		opts = append(opts, queue.LockSafe(path+"-locks"))
	}
	var (
		mu    sync.Mutex
		taken = map[string]int{}
		wg    sync.WaitGroup
	)
	all := make(chan struct{})
	consumeCtx, stop := context.WithCancel(ctx)
	defer stop()
	record := func(item queue.Item) {
		mu.Lock()
		defer mu.Unlock()
		taken[string(item.Data)]++
		if taken[string(item.Data)] == 1 && len(taken) == total {
			close(all)
		}
	}
	errs := make(chan error, producers+consumers)
	for p := range producers {
		q := queue.New(recipetest.Dial(t, addr, client.Config{}), path, opts...)
		wg.Go(func() {
			for i := range perProducer {
				if _, err := q.Put(ctx, fmt.Appendf(nil, "p%d-%d", p, i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for range consumers {
		q := queue.New(recipetest.Dial(t, addr, client.Config{}), path, opts...)
		wg.Go(func() {
			for {
				var err error
				if lockSafe {
					err = q.Consume(consumeCtx, func(_ context.Context, item queue.Item) error {
						record(item)
						return nil
					})
				} else {
					var item queue.Item
					if item, err = q.Take(consumeCtx); err == nil {
						record(item)
					}
				}
				if consumeCtx.Err() != nil {
					return
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	select {
	case <-all:
	case <-ctx.Done():
	case err := <-errs:
		t.Error(err)
	}
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(taken) != total {
		t.Errorf("%d distinct items taken, want %d", len(taken), total)
	}
	for data, n := range taken {
		if n != 1 {
			t.Errorf("%s taken %d times", data, n)
		}
	}
	if n, err := queue.New(recipetest.Dial(t, addr, client.Config{}), path).Len(ctx); err != nil || n != 0 {
		t.Errorf("Len = %d, %v after every item was taken", n, err)
	}
}

// testTakeWaits has a consumer wait on an empty queue until an item comes.
func testTakeWaits(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	path := "/waits"
	took := make(chan queue.Item, 1)
	consumer := queue.New(recipetest.Dial(t, addr, client.Config{}), path)
	go func() {
		item, err := consumer.Take(ctx)
		if err != nil {
			t.Error(err)
		}
		took <- item
	}()
	if _, err := queue.New(recipetest.Dial(t, addr, client.Config{}), path).Put(ctx, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if item := recipetest.Receive(t, took); string(item.Data) != "late" {
		t.Errorf("took %q", item.Data)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := consumer.Take(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Take with a cancelled context = %v, want context.Canceled", err)
	}
}

// testRedelivery cuts a lock-safe consumer off the network while it
// processes an item: once its session expires its handler's context ends,
// Consume returns ErrLost, and another consumer gets the item.
func testRedelivery(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	path, locks := "/redelivery", "/redelivery-locks"
	// The partition, once cut, refuses new connections: the consumer's
	// process is as good as dead.
	var link recipetest.Partition
	doomed := queue.New(recipetest.Dial(t, addr, client.Config{SessionTimeout: shortSession, Dial: link.Dial}), path, queue.LockSafe(locks))
	processing := make(chan queue.Item, 1)
	doomedDone := make(chan error, 1)
	go func() {
		doomedDone <- doomed.Consume(ctx, func(ctx context.Context, item queue.Item) error {
			processing <- item
			<-ctx.Done()
			return ctx.Err()
		})
	}()
	c := recipetest.Dial(t, addr, client.Config{})
	if _, err := queue.New(c, path, queue.LockSafe(locks)).Put(ctx, []byte("job")); err != nil {
		t.Fatal(err)
	}
	first := recipetest.Receive(t, processing)

	survivor := queue.New(recipetest.Dial(t, addr, client.Config{}), path, queue.LockSafe(locks))
	redelivered := make(chan queue.Item, 1)
	survivorDone := make(chan error, 1)
	go func() {
		survivorDone <- survivor.Consume(ctx, func(_ context.Context, item queue.Item) error {
			redelivered <- item
			return nil
		})
	}()
	select {
	case item := <-redelivered:
		t.Fatalf("%s delivered twice while its first consumer held it", item.Node)
	default:
	}

	link.Cut()
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
	if n := len(children(t, c, path)) + len(children(t, c, locks)); n != 0 {
		t.Errorf("%d nodes left in the queue and its locks", n)
	}
}

// testHandlerFailures checks what a lock-safe queue does with an item whose
// handler fails (put back at the end, or dropped with OnError(Delete)) or
// whose Consume is cancelled (left first in line, unlocked).
func testHandlerFailures(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	path, locks := "/failures", "/failures-locks"
	c := recipetest.Dial(t, addr, client.Config{})
	q := queue.New(c, path, queue.LockSafe(locks))
	for _, data := range []string{"a", "b"} {
		if _, err := q.Put(ctx, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	failure := errors.New("handler failed")
	if err := q.Consume(ctx, func(context.Context, queue.Item) error { return failure }); !errors.Is(err, failure) {
		t.Fatalf("Consume = %v, want the handler's error", err)
	}
	var order []string
	for range 2 {
		item, err := q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, string(item.Data))
	}
	if want := []string{"b", "a"}; !slices.Equal(order, want) {
		t.Errorf("took %v after the first item failed, want %v", order, want)
	}

	node, err := q.Put(ctx, []byte("c"))
	if err != nil {
		t.Fatal(err)
	}
	consumeCtx, cancel := context.WithCancel(ctx)
	err = q.Consume(consumeCtx, func(ctx context.Context, _ queue.Item) error {
		cancel()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Consume = %v, want context.Canceled", err)
	}
	if got := children(t, c, path); len(got) != 1 || path+"/"+got[0] != node {
		t.Errorf("queue holds %v after a cancelled Consume, want %s where it was", got, node)
	}
	if got := children(t, c, locks); len(got) != 0 {
		t.Errorf("locks left: %v", got)
	}

	dropping := queue.New(c, path, queue.LockSafe(locks), queue.OnError(queue.Delete))
	if err := dropping.Consume(ctx, func(context.Context, queue.Item) error { return failure }); !errors.Is(err, failure) {
		t.Fatalf("Consume = %v, want the handler's error", err)
	}
	if n, err := q.Len(ctx); err != nil || n != 0 {
		t.Errorf("Len = %d, %v after the failed item was dropped", n, err)
	}
}

// testPriority puts items of mixed priorities and takes them lowest
// priority first, in the order put among equals.
func testPriority(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	q := queue.NewPriority(recipetest.Dial(t, addr, client.Config{}), "/priority")
	priorities := []int32{5, -3, 0, 100, -3, 7, math.MinInt32, math.MaxInt32, 0, -1}
	type put struct {
		priority int32
		data     string
	}
	var want []put
	for i, p := range priorities {
		data := fmt.Sprintf("%d:%d", i, p)
		if _, err := q.Put(ctx, []byte(data), p); err != nil {
			t.Fatal(err)
		}
		want = append(want, put{p, data})
	}
	slices.SortStableFunc(want, func(a, b put) int { return cmp.Compare(a.priority, b.priority) })
	for i := range priorities {
		item, err := q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(item.Data) != want[i].data {
			t.Fatalf("take %d gave %s, want %s", i, item.Data, want[i].data)
		}
	}
}

// testDelay puts items due at different times, one of them while the
// consumer waits for a later one, and checks by the clock that none is
// taken before it is due, and that they come out in the order of their due
// times.
func testDelay(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	c := recipetest.Dial(t, addr, client.Config{})
	q := queue.NewDelay(c, "/delay")
	now := time.Now()
	due := map[string]time.Time{
		"past":  now.Add(-time.Second),
		"soon":  now.Add(150 * time.Millisecond),
		"later": now.Add(400 * time.Millisecond),
	}
	for _, data := range []string{"later", "soon", "past"} {
		if _, err := q.Put(ctx, []byte(data), due[data]); err != nil {
			t.Fatal(err)
		}
	}
	check := func(item queue.Item, err error) string {
		t.Helper()
		took := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		data := string(item.Data)
		// Due times travel in milliseconds.
		if at := due[data].Truncate(time.Millisecond); took.Before(at) {
			t.Errorf("%s taken at %v, %v before it was due", data, took.Format(time.StampMicro), at.Sub(took))
		}
		return data
	}
	var order []string
	for range 2 {
		order = append(order, check(q.Take(ctx)))
	}
	// While the consumer waits for "later", an item due at once comes.
	taken := make(chan string, 2)
	go func() {
		for range 2 {
			item, err := q.Take(ctx)
			taken <- check(item, err)
		}
	}()
	due["now"] = time.Now()
	if _, err := queue.NewDelay(recipetest.Dial(t, addr, client.Config{}), "/delay").Put(ctx, []byte("now"), due["now"]); err != nil {
		t.Fatal(err)
	}
	order = append(order, recipetest.Receive(t, taken), recipetest.Receive(t, taken))
	if !slices.IsSortedFunc(order, func(a, b string) int { return due[a].Compare(due[b]) }) || len(order) != 4 {
		t.Errorf("taken in the order %v, not the order of their due times", order)
	}
}

// testCurator shares queues with Curator's DistributedQueue,
// DistributedPriorityQueue and DistributedDelayQueue, in a Java process:
// Curator consumes in order what Go put, plainly and lock-safe, and Go
// consumes in order what Curator put, a multi-item, priorities and a due
// time included.
func testCurator(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	c := recipetest.Dial(t, addr, client.Config{})
	const base, n = "/curator", 5
	plain := queue.New(c, base+"/to-curator")
	safe := queue.New(c, base+"/to-curator-safe", queue.LockSafe(base+"/to-curator-locks"))
	var want []string
	for _, q := range []*queue.Queue{plain, safe} {
		for i := range n {
			data := fmt.Sprintf("%s-%d", q.Path(), i)
			if _, err := q.Put(ctx, []byte(data)); err != nil {
				t.Fatal(err)
			}
			want = append(want, "took "+q.Path()+" "+data)
		}
	}
	lines := recipetest.Java{Program: "CuratorQueue.java", Args: []string{addr, base, strconv.Itoa(n)}}.Run(t)()
	if len(lines) != len(want)+2 || !slices.Equal(lines[:len(want)], want) || lines[len(lines)-1] != "done" {
		t.Fatalf("Curator printed:\n%s\nwant first:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	dueMs, err := strconv.ParseInt(strings.TrimPrefix(lines[len(want)], "due "), 10, 64)
	if err != nil {
		t.Fatalf("no due time in %q", lines[len(want)])
	}
	for _, q := range []*queue.Queue{plain, safe} {
		if n, err := q.Len(ctx); err != nil || n != 0 {
			t.Errorf("%s holds %d items (%v) after Curator consumed them", q.Path(), n, err)
		}
	}

	fromCurator := queue.New(c, base+"/to-go")
	for i := range n {
		item, err := fromCurator.Take(ctx)
		if want := "c" + strconv.Itoa(i); err != nil || string(item.Data) != want {
			t.Fatalf("took %q, %v; want %q", item.Data, err, want)
		}
	}
	if item, err := fromCurator.Take(ctx); err != nil || len(item.Values) != 2 || string(item.Values[0]) != "m1" || string(item.Values[1]) != "m2" {
		t.Fatalf("took %q, %v; want Curator's multi-item [m1 m2]", item.Values, err)
	}
	priorities := queue.NewPriority(c, base+"/priority")
	for _, want := range []string{"p4:-2147483648", "p1:-3", "p5:-3", "p2:0", "p0:5", "p3:2147483647"} {
		if item, err := priorities.Take(ctx); err != nil || string(item.Data) != want {
			t.Fatalf("took %q, %v; want %q", item.Data, err, want)
		}
	}
	item, err := queue.NewDelay(c, base+"/delay").Take(ctx)
	if took := time.Now(); err != nil || string(item.Data) != "later" || took.Before(time.UnixMilli(dueMs)) {
		t.Errorf("took %q, %v at %v; want \"later\", not before %v", item.Data, err, took, time.UnixMilli(dueMs))
	}
}

// children returns the sorted children of path; none when it is gone.
func children(t *testing.T, c *client.Client, path string) []string {
	t.Helper()
	return slices.Sorted(slices.Values(recipetest.Children(t, c, path)))
}
