package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/client"
)

// worker is one stream of requests: a session (shared with the session's
// other workers when Inflight > 1) and what it measured.
type worker struct {
	id   int
	c    *client.Client // nil for the sessions workload
	peer *client.Client // the next session, which triggers watch's watches
	clk  Clock

	// Used only by the worker's own goroutine.
	rng      *rand.Rand
	seq      int64     // create's next node number
	start    time.Time // when the measured part of the current op began
	end      time.Time // when it ended; zero until an op sets it
	opItems  int64     // znodes made by the current op (fill), else 1
	opChecks int64     // reads the current op checked (pipeline)
	opBehind int64     // of those, sent behind a write of the session

	mu       sync.Mutex // guards the fields below against the progress line
	hist     Histogram
	ops      int64 // ops that succeeded, each with its latency in hist
	items    int64 // the sum of their opItems
	errs     int64 // ops that failed
	firstErr error
	// checks counts the reads checked against the session's writes,
	// behind those sent while a write of the session was in progress,
	// violations those that failed the check (each also in errs).
	checks, behind, violations int64
	firstViolation             error
}

// markStart starts the measurement of the current op now instead of when
// the op began, for an op whose first part is preparation.
func (w *worker) markStart() { w.start = w.clk.Now() }

// markEnd ends the measurement of the current op now instead of when it
// returns, for an op that has cleaning up to do after the measured part.
func (w *worker) markEnd() { w.end = w.clk.Now() }

// do runs one op and records it. due is when the open loop wanted it to
// start (zero in a closed loop): the time it spent waiting for this worker
// counts into its latency. An op that fails because ctx ended is not
// counted at all; one that fails because opCtx ended has timed out and
// counts as an error.
func (w *worker) do(ctx, opCtx context.Context, op func(context.Context, *worker) error, due time.Time) error {
	began := w.clk.Now()
	w.start, w.end, w.opItems, w.opChecks, w.opBehind = began, time.Time{}, 1, 0, 0
	err := op(opCtx, w)
	if errors.Is(err, errDone) {
		return err
	}
	if w.end.IsZero() {
		w.end = w.clk.Now()
	}
	latency := w.end.Sub(w.start)
	if !due.IsZero() {
		latency += began.Sub(due)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checks += w.opChecks
	w.behind += w.opBehind
	switch {
	case err == nil:
		w.hist.Record(latency)
		w.ops++
		w.items += w.opItems
	case errors.Is(err, errInconsistent):
		// Counted whether or not ctx has ended: the reply came.
		w.violations++
		if w.firstViolation == nil {
			w.firstViolation = err
		}
		w.failed(err)
	case ctx.Err() != nil:
	default:
		w.failed(err)
	}
	return nil
}

// failed counts an op that failed; w.mu must be held.
func (w *worker) failed(err error) {
	w.errs++
	if w.firstErr == nil {
		w.firstErr = err
	}
}

// phaseSpec is one stretch of load on one target.
type phaseSpec struct {
	workers []*worker
	op      func(context.Context, *worker) error
	clk     Clock
	d       time.Duration // 0: until an op says the workload is done
	rate    float64       // requests per second of an open loop; 0: closed
	done    *atomic.Bool  // set once an op returns errDone
}

// runPhase runs p's workers, each in a goroutine of its own, and returns
// the time from its start until the last op ended. In a closed loop a
// worker starts no op after p.d has passed; in an open loop no op is due
// after p.d, and the ops already due are all still sent.
func runPhase(ctx context.Context, p phaseSpec) time.Duration {
	start := p.clk.Now()
	var deadline time.Time
	opCtx := ctx
	if p.d > 0 {
		deadline = start.Add(p.d)
		var cancel context.CancelFunc
		// Real time, not p.clk's: this only bounds an op that hangs.
		opCtx, cancel = context.WithTimeout(ctx, p.d+opGrace)
		defer cancel()
	}
	var wg sync.WaitGroup
	if p.rate > 0 {
		pctx, stopPacing := context.WithCancel(ctx)
		defer stopPacing()
		dues := make(chan time.Time, len(p.workers))
		wg.Go(func() { pace(pctx, p.clk, schedule{start: start, rate: p.rate, end: deadline}, dues) })
		for _, w := range p.workers {
			wg.Go(func() {
				for due := range dues {
					if w.do(ctx, opCtx, p.op, due) == errDone {
						p.done.Store(true)
						stopPacing()
					}
				}
			})
		}
	} else {
		over := func() bool {
			return ctx.Err() != nil || p.done.Load() || (!deadline.IsZero() && !p.clk.Now().Before(deadline))
		}
		for _, w := range p.workers {
			wg.Go(func() {
				for !over() {
					if w.do(ctx, opCtx, p.op, time.Time{}) == errDone {
						p.done.Store(true)
					}
				}
			})
		}
	}
	wg.Wait()
	return p.clk.Now().Sub(start)
}

// progressInterval is how often the progress line is written.
const progressInterval = time.Second

// progress writes a line about once a second with, for each target loaded
// so far, its measured time, its ops/s over the measured time since the
// last line (so that alternating rounds do not halve it), p99 so far and
// errors.
type progress struct {
	out   io.Writer
	stopc chan struct{}
	wg    sync.WaitGroup
	once  sync.Once

	mu      sync.Mutex // guards the fields below
	targets []*progressTarget
	scratch Histogram
}

// progressTarget is the progress of one target.
type progressTarget struct {
	t        *target
	what     string        // "warm-up", or "" when measuring
	base     time.Duration // measured time before the current phase
	since    time.Time     // when the current phase began; zero between phases
	lastOps  int64
	lastTime time.Duration // measured time at the last line
	lastRate float64
}

// newProgress starts writing progress to out; nil out writes nothing.
func newProgress(out io.Writer) *progress {
	p := &progress{out: out, stopc: make(chan struct{})}
	if out != nil {
		p.wg.Go(p.loop)
	}
	return p
}

// begin says a phase of t starts now, what being "warm-up" or "" for a
// measured one; base is t's measured time so far.
func (p *progress) begin(t *target, what string, base time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.IndexFunc(p.targets, func(pt *progressTarget) bool { return pt.t == t })
	if i < 0 {
		i = len(p.targets)
		p.targets = append(p.targets, &progressTarget{t: t})
	}
	pt := p.targets[i]
	pt.what, pt.base, pt.since = what, base, time.Now()
}

// end says t's current phase is over.
func (p *progress) end(t *target) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pt := range p.targets {
		if pt.t == t && !pt.since.IsZero() {
			pt.base += time.Since(pt.since)
			pt.since = time.Time{}
		}
	}
}

// forget starts t's figures afresh, after t.forget.
func (p *progress) forget(t *target) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pt := range p.targets {
		if pt.t == t {
			*pt = progressTarget{t: t}
		}
	}
}

func (p *progress) loop() {
	tick := time.NewTicker(progressInterval)
	defer tick.Stop()
	for {
		select {
		case <-p.stopc:
			return
		case now := <-tick.C:
			p.write(now)
		}
	}
}

func (p *progress) write(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var parts []string
	for _, pt := range p.targets {
		if pt.since.IsZero() && pt.base == 0 {
			continue // between its warm-up and its first round
		}
		var ops, errs int64
		p.scratch.Reset()
		for _, w := range pt.t.workers {
			w.mu.Lock()
			p.scratch.Merge(&w.hist)
			ops += w.ops
			errs += w.errs
			w.mu.Unlock()
		}
		measured := pt.base
		if !pt.since.IsZero() {
			measured += now.Sub(pt.since)
		}
		if d := measured - pt.lastTime; d > 0 {
			pt.lastRate = float64(ops-pt.lastOps) / d.Seconds()
		}
		pt.lastOps, pt.lastTime = ops, measured
		part := fmt.Sprintf("%5.1fs %8.0f ops/s  p99 %-7s errors %d", measured.Seconds(), pt.lastRate, formatLatency(p.scratch.Quantile(0.99)), errs)
		if pt.what != "" {
			part = pt.what + " " + part
		}
		if pt.t.label != "" {
			part = pt.t.label + " " + part
		}
		parts = append(parts, part)
	}
	if len(parts) > 0 {
		// A progress line that cannot be written is not worth stopping for.
		_, _ = fmt.Fprintln(p.out, strings.Join(parts, "  |  "))
	}
}

// stop ends the progress lines; it may be called more than once.
func (p *progress) stop() {
	p.once.Do(func() { close(p.stopc) })
	p.wg.Wait()
}
