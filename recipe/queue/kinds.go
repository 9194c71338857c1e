package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/collie-io/collie/client"
)

// Queue is a first-in, first-out distributed queue, Curator's
// DistributedQueue. It is safe for concurrent use.
type Queue struct{ q *base }

// New returns the queue at path, using c's session.
func New(c *client.Client, path string, opts ...Option) *Queue {
	return &Queue{newBase(c, path, fifo, opts)}
}

// Path returns the queue path.
func (q *Queue) Path() string { return q.q.path }

// Put adds an item holding data at the end of the queue and returns its
// node's path.
func (q *Queue) Put(ctx context.Context, data []byte) (string, error) {
	return q.q.put(ctx, "", [][]byte{data})
}

// PutMulti adds one item holding all of values, delivered together, as
// Curator's putMulti.
func (q *Queue) PutMulti(ctx context.Context, values [][]byte) (string, error) {
	return q.q.put(ctx, "", values)
}

// Take removes the first item and returns it, waiting while there is none,
// until ctx ends or the session expires or the client closes. In a
// lock-safe queue it passes over items locked by other consumers.
//
// When the reply to the delete that takes an item is lost and the item is
// gone, the error is an *UncertainError holding the item.
func (q *Queue) Take(ctx context.Context) (Item, error) { return q.q.take(ctx) }

// Consume takes the first item, waiting as Take does, and calls fn with it.
// Without LockSafe the item is removed before fn runs, and fn's error is
// returned. In a lock-safe queue the item is removed only once fn returns
// nil; see the package doc for what happens otherwise. Consume returns
// fn's error, joined with any from removing or requeueing the item.
func (q *Queue) Consume(ctx context.Context, fn Handler) error { return q.q.consume(ctx, fn) }

// Len returns the number of items in the queue.
func (q *Queue) Len(ctx context.Context) (int, error) { return q.q.size(ctx) }

// PriorityQueue hands out items by priority, lowest first, and in the order
// they were put among equal priorities: Curator's
// DistributedPriorityQueue. It is safe for concurrent use.
type PriorityQueue struct{ q *base }

// NewPriority returns the priority queue at path, using c's session.
func NewPriority(c *client.Client, path string, opts ...Option) *PriorityQueue {
	return &PriorityQueue{newBase(c, path, byPriority, opts)}
}

// Path returns the queue path.
func (q *PriorityQueue) Path() string { return q.q.path }

// Put adds an item holding data with priority; items of lower priority come
// out first.
func (q *PriorityQueue) Put(ctx context.Context, data []byte, priority int32) (string, error) {
	return q.q.put(ctx, priorityName(priority), [][]byte{data})
}

// PutMulti adds one item holding all of values with priority.
func (q *PriorityQueue) PutMulti(ctx context.Context, values [][]byte, priority int32) (string, error) {
	return q.q.put(ctx, priorityName(priority), values)
}

// Take removes the most urgent item and returns it; see Queue.Take.
func (q *PriorityQueue) Take(ctx context.Context) (Item, error) { return q.q.take(ctx) }

// Consume takes the most urgent item and calls fn with it; see
// Queue.Consume.
func (q *PriorityQueue) Consume(ctx context.Context, fn Handler) error {
	return q.q.consume(ctx, fn)
}

// Len returns the number of items in the queue.
func (q *PriorityQueue) Len(ctx context.Context) (int, error) { return q.q.size(ctx) }

// DelayQueue hands out each item once it is due, earliest first: Curator's
// DistributedDelayQueue. It is safe for concurrent use.
type DelayQueue struct{ q *base }

// NewDelay returns the delay queue at path, using c's session.
func NewDelay(c *client.Client, path string, opts ...Option) *DelayQueue {
	return &DelayQueue{newBase(c, path, byDueTime, opts)}
}

// Path returns the queue path.
func (q *DelayQueue) Path() string { return q.q.path }

// Put adds an item holding data, due at at (to the millisecond, by the
// consumers' clocks).
func (q *DelayQueue) Put(ctx context.Context, data []byte, at time.Time) (string, error) {
	return q.PutMulti(ctx, [][]byte{data}, at)
}

// PutMulti adds one item holding all of values, due at at.
func (q *DelayQueue) PutMulti(ctx context.Context, values [][]byte, at time.Time) (string, error) {
	if at.UnixMilli() <= 0 {
		return "", fmt.Errorf("put in queue %s: %w: due time %v before 1970", q.q.path, client.ErrBadArguments, at)
	}
	return q.q.put(ctx, delayName(at), values)
}

// Take removes the earliest item that is due and returns it, waiting until
// one is; see Queue.Take.
func (q *DelayQueue) Take(ctx context.Context) (Item, error) { return q.q.take(ctx) }

// Consume takes the earliest item that is due and calls fn with it; see
// Queue.Consume.
func (q *DelayQueue) Consume(ctx context.Context, fn Handler) error { return q.q.consume(ctx, fn) }

// Len returns the number of items in the queue, due or not.
func (q *DelayQueue) Len(ctx context.Context) (int, error) { return q.q.size(ctx) }
