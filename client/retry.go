package client

import (
	"context"
	"time"

	"github.com/collie-io/collie/proto"
)

// RetryPolicy says whether, and after how long, to try again after a
// failure that Retryable accepts.
type RetryPolicy interface {
	// Delay returns the wait before retry n (1 for the first retry after
	// the first attempt failed), and false to give up.
	Delay(n int) (time.Duration, bool)
}

// Forever, as Backoff.Retries, retries without limit: until the request
// succeeds, fails in a way that is not retryable (the session expires, the
// client closes), or its context ends.
const Forever = -1

// Backoff is a RetryPolicy of exponential backoff with jitter, after
// Curator's ExponentialBackoffRetry and BoundedExponentialBackoffRetry:
// the delay before retry n is Base doubled n-1 times, at most Max, then
// drawn uniformly from its upper half so that clients that failed together
// do not retry together.
type Backoff struct {
	Base    time.Duration // delay before the first retry
	Max     time.Duration // bound on any delay; 0 means Base
	Retries int           // retries after the first attempt; Forever for no limit
}

// Delay implements RetryPolicy.
func (b Backoff) Delay(n int) (time.Duration, bool) {
	if b.Retries >= 0 && n > b.Retries {
		return 0, false
	}
	return backoffDelay(n, b.Base, max(b.Max, b.Base)), true
}

// ExponentialBackoff retries up to retries times (Forever for no limit),
// waiting base, then twice as long each time, up to max.
func ExponentialBackoff(base, max time.Duration, retries int) Backoff {
	return Backoff{Base: base, Max: max, Retries: retries}
}

// RetryNTimes retries up to n times, about delay apart.
func RetryNTimes(n int, delay time.Duration) Backoff {
	return Backoff{Base: delay, Max: delay, Retries: n}
}

// RetryForever retries without limit, about delay apart.
func RetryForever(delay time.Duration) Backoff {
	return Backoff{Base: delay, Max: delay, Retries: Forever}
}

// defaultRetry paces CreateProtected when Config.Retry is not set: its
// retries are always safe, and it stops when the session expires.
var defaultRetry = ExponentialBackoff(10*time.Millisecond, time.Second, Forever)

// Retryable reports whether err says that a request did not complete for a
// reason another attempt may not meet: the connection broke
// (ErrConnectionLoss), or the server timed out, shed or redirected the
// request (ErrOperationTimeout, ErrRequestTimeout, ErrThrottledOp,
// ErrSessionMoved). Whether retrying is safe depends on the request: see
// ErrConnectionLoss.
func Retryable(err error) bool {
	return err != nil && retryableCode(proto.CodeOf(err))
}

func retryableCode(code proto.Code) bool {
	switch code {
	case ErrConnectionLoss, ErrOperationTimeout, ErrSessionMoved, ErrThrottledOp, ErrRequestTimeout:
		return true
	}
	return false
}

// Retry calls fn until it returns nil or an error that is not Retryable,
// the policy gives up, or ctx ends; it returns fn's last error (ctx's error
// when ctx ended first). fn must be safe to run twice: reads, or writes
// that detect their own earlier success (a versioned Set, a Delete that
// accepts ErrNoNode on a later attempt, CreateProtected).
func Retry(ctx context.Context, policy RetryPolicy, fn func(ctx context.Context) error) error {
	for n := 1; ; n++ {
		err := fn(ctx)
		if err == nil || !Retryable(err) {
			return err
		}
		delay, ok := policy.Delay(n)
		if !ok {
			return err
		}
		if err := sleepCtx(ctx, delay); err != nil {
			return err
		}
	}
}

// sleepCtx waits for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
