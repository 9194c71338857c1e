package loadgen

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a Clock that moves only when told to.
type fakeClock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers []fakeSleeper
}

type fakeSleeper struct {
	until time.Time
	wake  chan struct{}
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	if !c.now.Before(t) {
		c.mu.Unlock()
		return ctx.Err()
	}
	wake := make(chan struct{})
	c.sleepers = append(c.sleepers, fakeSleeper{t, wake})
	c.mu.Unlock()
	select {
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Advance moves the clock on by d and wakes whoever slept until then.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.sleepers[:0]
	for _, s := range c.sleepers {
		if c.now.Before(s.until) {
			kept = append(kept, s)
		} else {
			close(s.wake)
		}
	}
	c.sleepers = kept
}

// awaitSleeper waits until someone sleeps on the clock.
func (c *fakeClock) awaitSleeper(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		n := len(c.sleepers)
		c.mu.Unlock()
		if n > 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("nobody waits on the clock")
}

func TestScheduleDoesNotDrift(t *testing.T) {
	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	s := schedule{start: start, rate: 3, end: start.Add(time.Hour)}
	// A third of a second is no whole number of nanoseconds: adding it up
	// would drift, computing each time from n does not.
	for n, want := range map[int64]time.Duration{0: 0, 1: 333333333, 2: 666666666, 3: time.Second, 3000: 1000 * time.Second} {
		if got, ok := s.at(n); !ok || got.Sub(start) != want {
			t.Errorf("request %d due at +%v (%v), want +%v", n, got.Sub(start), ok, want)
		}
	}
	if _, ok := s.at(3 * 3600); ok {
		t.Error("a request is due at the end of the schedule")
	}
	if _, ok := (schedule{start: start, rate: 1}).at(1 << 40); !ok {
		t.Error("a schedule without an end ended")
	}
}

func TestPaceSendsEachRequestWhenDueWithItsDueTime(t *testing.T) {
	clk := newFakeClock()
	start := clk.Now()
	out := make(chan time.Time)
	go pace(context.Background(), clk, schedule{start: start, rate: 100, end: start.Add(100 * time.Millisecond)}, out)

	if got := <-out; !got.Equal(start) {
		t.Fatalf("first request due at %v, want the start", got.Sub(start))
	}
	// Nothing is sent before it is due.
	clk.awaitSleeper(t)
	select {
	case got := <-out:
		t.Fatalf("request due at +%v sent at +0", got.Sub(start))
	default:
	}
	// The consumer falls behind: when it comes back, the overdue requests
	// come at once, each with the time it was due, not the time it is sent.
	clk.Advance(35 * time.Millisecond)
	for _, want := range []time.Duration{10, 20, 30} {
		if got := <-out; got.Sub(start) != want*time.Millisecond {
			t.Fatalf("overdue request carries +%v, want +%v", got.Sub(start), want*time.Millisecond)
		}
	}
	clk.awaitSleeper(t)
	clk.Advance(time.Hour)
	n := 4
	for range out {
		n++
	}
	if n != 10 {
		t.Fatalf("%d requests in 100ms at 100/s, want 10", n)
	}
}

func TestPaceStopsWithContext(t *testing.T) {
	clk := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan time.Time)
	go pace(ctx, clk, schedule{start: clk.Now().Add(time.Second), rate: 1}, out)
	clk.awaitSleeper(t)
	cancel()
	if _, ok := <-out; ok {
		t.Fatal("pace sent a request after its context ended")
	}
}

// slowOp is an op that takes 30ms of the fake clock and records nothing
// else.
func slowOp(clk *fakeClock) func(context.Context, *worker) error {
	return func(context.Context, *worker) error {
		clk.Advance(30 * time.Millisecond)
		return nil
	}
}

// TestOpenLoopCountsQueueing runs a server that needs 30ms per request at
// 100 requests/s with one worker: request k is due at 10k ms but starts at
// 30k ms, so its latency is 20k+30 ms. A closed loop would report 30ms for
// every request, and send fewer of them: coordinated omission.
func TestOpenLoopCountsQueueing(t *testing.T) {
	clk := newFakeClock()
	w := &worker{clk: clk}
	var done atomic.Bool
	elapsed := runPhase(context.Background(), phaseSpec{
		workers: []*worker{w}, op: slowOp(clk), clk: clk, d: 100 * time.Millisecond, rate: 100, done: &done,
	})
	if w.ops != 10 || w.hist.Count() != 10 {
		t.Fatalf("%d ops recorded (%d latencies), want the 10 due", w.ops, w.hist.Count())
	}
	if w.hist.Min() != 30*time.Millisecond || w.hist.Max() != 210*time.Millisecond || w.hist.Mean() != 120*time.Millisecond {
		t.Errorf("latencies min %v max %v mean %v, want 30ms, 210ms, 120ms", w.hist.Min(), w.hist.Max(), w.hist.Mean())
	}
	if elapsed != 300*time.Millisecond {
		t.Errorf("phase took %v, want 300ms (10 ops of 30ms)", elapsed)
	}
}

func TestClosedLoopStartsNoOpAfterItsTime(t *testing.T) {
	clk := newFakeClock()
	w := &worker{clk: clk}
	var done atomic.Bool
	elapsed := runPhase(context.Background(), phaseSpec{
		workers: []*worker{w}, op: slowOp(clk), clk: clk, d: 100 * time.Millisecond, done: &done,
	})
	// Ops start at 0, 30, 60 and 90ms.
	if w.ops != 4 || w.hist.Min() != 30*time.Millisecond || w.hist.Max() != 30*time.Millisecond {
		t.Errorf("%d ops, latencies %v to %v; want 4 of 30ms", w.ops, w.hist.Min(), w.hist.Max())
	}
	if elapsed != 120*time.Millisecond {
		t.Errorf("phase took %v, want 120ms", elapsed)
	}
}

func TestPhaseEndsWhenWorkloadIsDone(t *testing.T) {
	for _, rate := range []float64{0, 1000} {
		clk := newFakeClock()
		var left atomic.Int64
		left.Store(7)
		op := func(context.Context, *worker) error {
			if left.Add(-1) < 0 {
				return errDone
			}
			clk.Advance(time.Millisecond)
			return nil
		}
		workers := []*worker{{clk: clk}, {clk: clk}, {clk: clk}}
		var done atomic.Bool
		runPhase(context.Background(), phaseSpec{workers: workers, op: op, clk: clk, rate: rate, done: &done})
		var ops int64
		for _, w := range workers {
			ops += w.ops
		}
		if ops != 7 || !done.Load() {
			t.Errorf("rate %v: %d ops, done %v; want 7 ops and done", rate, ops, done.Load())
		}
	}
}
