package loadgen

import (
	"context"
	"time"
)

// Clock is the time a run measures with and paces by. Tests inject a fake
// one to check the open loop's schedule deterministically.
type Clock interface {
	Now() time.Time
	// SleepUntil returns when the clock reaches t (at once if it has), or
	// ctx's error when ctx ends first.
	SleepUntil(ctx context.Context, t time.Time) error
}

// SystemClock is the real time.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// SleepUntil implements Clock.
func (SystemClock) SleepUntil(ctx context.Context, t time.Time) error {
	if d := time.Until(t); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	return ctx.Err()
}

// schedule is the open loop's timetable: request n is due at
// start + n/rate, whatever became of the requests before it. The times are
// computed from n, not by adding intervals, so they never drift.
type schedule struct {
	start time.Time
	rate  float64   // requests per second
	end   time.Time // zero: none
}

// at returns when request n is due, and false when that is not before end.
func (s schedule) at(n int64) (time.Time, bool) {
	t := s.start.Add(time.Duration(float64(n) * float64(time.Second) / s.rate))
	return t, s.end.IsZero() || t.Before(s.end)
}

// pace sends the due time of every request of s to out, each once the
// clock has reached it, and closes out when the schedule ends or ctx does.
// When the consumers fall behind, sends block and the requests queue here,
// but each still carries the time it was due: latency is then measured
// from when a request should have been sent, not from when a free client
// got to it, so the queueing shows in the results instead of being left
// out (coordinated omission).
func pace(ctx context.Context, clk Clock, s schedule, out chan<- time.Time) {
	defer close(out)
	for n := int64(0); ; n++ {
		due, ok := s.at(n)
		if !ok {
			return
		}
		if err := clk.SleepUntil(ctx, due); err != nil {
			return
		}
		select {
		case out <- due:
		case <-ctx.Done():
			return
		}
	}
}
