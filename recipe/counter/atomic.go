package counter

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/internal/znode"
)

// DefaultRetry is the retry policy of an AtomicLong made with a nil one:
// up to 29 retries (Curator's bound for exponential backoff), from 1ms
// doubling to 200ms, with jitter.
var DefaultRetry = client.ExponentialBackoff(time.Millisecond, 200*time.Millisecond, 29)

// ErrContention says that an AtomicLong update kept meeting other writers
// until its retry policy gave up. Nothing was written.
var ErrContention = errors.New("counter: too much contention")

// ErrUncertain says that the reply to an AtomicLong's write was lost and
// that the node, read again, does not tell whether the write happened, or
// could not be read again (the session ended). The write is not made again.
var ErrUncertain = errors.New("counter: write may or may not have happened")

// errConflict says that another writer changed the node between a read and
// the write that depended on it.
var errConflict = errors.New("another writer got in first")

// beforeWrite, when set by a test, runs between an update's read and its
// write.
var beforeWrite func(*AtomicLong)

// AtomicLong is a shared int64, Curator's DistributedAtomicLong. It is safe
// for concurrent use.
type AtomicLong struct {
	c     *client.Client
	path  string
	retry client.RetryPolicy
}

// NewAtomicLong returns the counter at path, using c's session, whose
// updates retry on conflicts as retry allows (DefaultRetry when nil).
func NewAtomicLong(c *client.Client, path string, retry client.RetryPolicy) *AtomicLong {
	if retry == nil {
		retry = DefaultRetry
	}
	return &AtomicLong{c: c, path: path, retry: retry}
}

// Path returns the counter's node.
func (a *AtomicLong) Path() string { return a.path }

// Get returns the value; 0 when the node does not exist.
func (a *AtomicLong) Get(ctx context.Context) (int64, error) {
	v, _, _, err := a.read(ctx)
	if err != nil {
		return 0, fmt.Errorf("atomic long %s: %w", a.path, err)
	}
	return v, nil
}

// Initialize creates the counter holding value, and reports false, without
// changing anything, when it exists already.
func (a *AtomicLong) Initialize(ctx context.Context, value int64) (bool, error) {
	err := znode.Create(ctx, a.c, a.path, encode64(value), client.ModePersistent)
	if errors.Is(err, client.ErrNodeExists) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("initialize atomic long %s: %w", a.path, err)
	}
	return true, nil
}

// Set writes value whatever the counter holds, as Curator's forceSet.
func (a *AtomicLong) Set(ctx context.Context, value int64) error {
	if _, err := forceWrite(ctx, a.c, a.path, encode64(value)); err != nil {
		return fmt.Errorf("set atomic long %s: %w", a.path, err)
	}
	return nil
}

// Add adds delta (wrapping around on overflow, as Java does) and returns
// the new value.
func (a *AtomicLong) Add(ctx context.Context, delta int64) (int64, error) {
	_, post, _, err := a.update(ctx, func(v int64) (int64, bool) { return v + delta, true })
	if err != nil {
		return 0, fmt.Errorf("add to atomic long %s: %w", a.path, err)
	}
	return post, nil
}

// Increment adds 1 and returns the new value.
func (a *AtomicLong) Increment(ctx context.Context) (int64, error) { return a.Add(ctx, 1) }

// Decrement subtracts 1 and returns the new value.
func (a *AtomicLong) Decrement(ctx context.Context) (int64, error) { return a.Add(ctx, -1) }

// CompareAndSet writes new if the counter holds old, and reports whether it
// did. A missing counter holds 0, as for Get. A conflict with another
// writer is retried, as the policy allows, for as long as the counter
// still holds old.
func (a *AtomicLong) CompareAndSet(ctx context.Context, old, new int64) (bool, error) {
	_, _, ok, err := a.update(ctx, func(v int64) (int64, bool) { return new, v == old })
	if err != nil {
		return false, fmt.Errorf("compare and set atomic long %s: %w", a.path, err)
	}
	return ok, nil
}

// update reads the value, computes the new one with f (which may decline),
// and writes it over the version read, starting again on a conflict or a
// retryable failure as the retry policy allows. A write that may have
// happened is never made again: its error wraps ErrUncertain, and the
// connection loss inside it must not count as retryable.
func (a *AtomicLong) update(ctx context.Context, f func(int64) (int64, bool)) (pre, post int64, ok bool, err error) {
	for n := 1; ; n++ {
		pre, post, ok, err = a.tryOnce(ctx, f)
		if err == nil || errors.Is(err, ErrUncertain) || !errors.Is(err, errConflict) && !client.Retryable(err) {
			return pre, post, ok, err
		}
		delay, again := a.retry.Delay(n)
		if !again {
			return 0, 0, false, fmt.Errorf("%w: gave up after %d attempts: %w", ErrContention, n, err)
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return 0, 0, false, ctx.Err()
		}
	}
}

// tryOnce makes one read and, if f accepts, one write of an update.
func (a *AtomicLong) tryOnce(ctx context.Context, f func(int64) (int64, bool)) (pre, post int64, ok bool, err error) {
	pre, version, exists, err := a.read(ctx)
	if err != nil {
		return 0, 0, false, err
	}
	post, ok = f(pre)
	if !ok {
		return pre, pre, false, nil
	}
	if beforeWrite != nil {
		beforeWrite(a)
	}
	data := encode64(post)
	if exists {
		_, err = a.c.Set(ctx, a.path, data, version)
	} else {
		err = znode.Create(ctx, a.c, a.path, data, client.ModePersistent)
	}
	switch {
	case err == nil:
		return pre, post, true, nil
	case errors.Is(err, client.ErrBadVersion), errors.Is(err, client.ErrNodeExists), errors.Is(err, client.ErrNoNode):
		return 0, 0, false, fmt.Errorf("%w: %w", errConflict, err)
	case !client.Retryable(err) && ctx.Err() == nil:
		return 0, 0, false, err
	}
	// The reply is lost. The write did not happen if the node is as it was,
	// or holds another value at the version the write would have given it.
	nowV, nowVersion, nowExists, rerr := a.readAgain(ctx)
	if rerr != nil {
		return 0, 0, false, fmt.Errorf("%w: %w", ErrUncertain, errors.Join(err, rerr))
	}
	wouldBe := version + 1
	if !exists {
		wouldBe = 0
	}
	notApplied := nowExists == exists && nowVersion == version ||
		nowExists && nowVersion == wouldBe && nowV != post
	if !notApplied {
		return 0, 0, false, fmt.Errorf("%w: %w", ErrUncertain, err)
	}
	if ctx.Err() != nil {
		return 0, 0, false, ctx.Err()
	}
	return 0, 0, false, fmt.Errorf("%w: %w", errConflict, err)
}

// read returns the value, the node's version, and whether it exists.
func (a *AtomicLong) read(ctx context.Context) (int64, int32, bool, error) {
	data, stat, err := a.c.Get(ctx, a.path)
	if errors.Is(err, client.ErrNoNode) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	// Curator reads an empty node as 0, and the first 8 bytes of a longer
	// one.
	if len(data) == 0 {
		return 0, stat.Version, true, nil
	}
	if len(data) < 8 {
		return 0, 0, false, fmt.Errorf("%w: %d bytes, want 8", ErrCorrupt, len(data))
	}
	return int64(binary.BigEndian.Uint64(data)), stat.Version, true, nil
}

// readAgain reads after a lost reply: it runs to its end even when ctx has
// ended, across connection losses, until the session ends. The session's
// requests are applied in order, so it sees the write if it was applied.
func (a *AtomicLong) readAgain(ctx context.Context) (v int64, version int32, exists bool, err error) {
	err = client.Retry(context.WithoutCancel(ctx), client.RetryForever(retryDelay), func(ctx context.Context) error {
		v, version, exists, err = a.read(ctx)
		return err
	})
	return v, version, exists, err
}

func encode64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
