package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/collie-io/collie/client"
)

// Lease is one hold of a lock, or one lease of a semaphore: proof, while
// Lost is open, that it is held through the lease's node.
//
// A lease runs one goroutine that watches the session's state and the node,
// from the acquisition until Unlock.
type Lease struct {
	c     *client.Client
	node  string
	token int64
	owner owner

	lost     chan struct{}
	loseOnce sync.Once
	stop     context.CancelFunc
	watching sync.WaitGroup
}

// owner is what a lease is released through: the recipe value that holds
// it, which knows how many holds it counts and which nodes go with it.
type owner interface {
	// unlock releases one hold of l. It reports whether the lease has
	// ended: its last hold is released, its node deleted or to be
	// deleted in the background.
	unlock(ctx context.Context, l *Lease) (ended bool, err error)
}

func newLease(c *client.Client, node string, stat client.Stat, o owner) *Lease {
	ctx, stop := context.WithCancel(context.Background())
	l := &Lease{c: c, node: node, token: stat.Czxid, owner: o, lost: make(chan struct{}), stop: stop}
	// Subscribed before the lease is handed out, so that a connection that
	// breaks right after acquisition is seen: the stream starts with the
	// state at the time of subscribing.
	states := c.StateChanges()
	l.watching.Go(func() { l.watch(ctx, states) })
	return l
}

// Node returns the path of the lease's node.
func (l *Lease) Node() string { return l.node }

// Token returns the lease's fencing token, the zxid that created its node:
// each holder of an exclusive lock has a larger one than every holder
// before it.
func (l *Lease) Token() int64 { return l.token }

// Lost returns a channel closed when the lease can no longer be trusted: the
// connection broke, the session expired, the client closed, the node was
// deleted, or the lease was unlocked. It stays closed.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Guard returns ops preceded by a check that the lease's node still exists,
// for Multi: the transaction fails, and none of ops is applied, once the
// lease's session has lost the lock.
func (l *Lease) Guard(ops ...client.Op) []client.Op {
	return append([]client.Op{client.CheckOp(l.node, client.AnyVersion)}, ops...)
}

// Do applies ops as one transaction, on the condition that the lease still
// holds the lock, and returns the results of ops. When the lock has passed
// on, the error wraps ErrLost.
func (l *Lease) Do(ctx context.Context, ops ...client.Op) ([]client.OpResult, error) {
	return guardedMulti(ctx, l.c, 1, l.Guard(ops...))
}

// guardedMulti applies ops, whose first checks are guards, and returns the
// results of the rest; a failed guard makes the error wrap ErrLost.
func guardedMulti(ctx context.Context, c *client.Client, checks int, ops []client.Op) ([]client.OpResult, error) {
	results, err := c.Multi(ctx, ops...)
	if len(results) < checks {
		return nil, err
	}
	for _, r := range results[:checks] {
		if errors.Is(r.Err, client.ErrNoNode) {
			return results[checks:], fmt.Errorf("%w: %w", ErrLost, err)
		}
	}
	return results[checks:], err
}

// Unlock releases one hold of the lease; the last one deletes the node.
// The delete is guaranteed, as Curator's guaranteed delete: it is sent
// again across connection losses until ctx ends, and if ctx ends first it
// goes on in the background until it succeeds or the session ends, and
// Unlock returns an error wrapping ErrReleasePending. Either way the lease
// has ended, and the lock will be free without another call: nothing else
// can stop the delete but the session's end, which deletes the node too.
// A node already gone counts as released.
//
// Unlock of an ended lease returns ErrNotHeld. When the server refuses the
// delete (an ACL forbids it), the lease stays held, and Unlock may be
// called again.
func (l *Lease) Unlock(ctx context.Context) error {
	ended, err := l.owner.unlock(ctx, l)
	if ended {
		l.end()
	}
	if err != nil && !errors.Is(err, ErrNotHeld) {
		return fmt.Errorf("unlock %s: %w", l.node, err)
	}
	return err
}

// end closes Lost and stops the lease's goroutine.
func (l *Lease) end() {
	l.lose()
	l.stop()
	l.watching.Wait()
}

func (l *Lease) lose() { l.loseOnce.Do(func() { close(l.lost) }) }

// watch closes lost at the first sign that the lock may have passed on: a
// broken connection, an expired or closed session, or the node's deletion.
func (l *Lease) watch(ctx context.Context, states *client.Stream[client.State]) {
	defer states.Close()
	defer l.lose()
	nodeChanged := l.watchNode(ctx)
	for {
		select {
		case s, ok := <-states.Events():
			if !ok || !s.Connected() {
				return
			}
		case ev := <-nodeChanged:
			if ev.Type == client.EventNodeDeleted || ev.Type == client.EventNotWatching {
				return
			}
			nodeChanged = l.watchNode(ctx)
		case <-ctx.Done():
			return
		}
	}
}

// watchNode sets a watch on the lease's node. A node that cannot be watched,
// because it is gone or the connection broke, is reported as deleted.
func (l *Lease) watchNode(ctx context.Context) <-chan client.Event {
	ok, _, changed, err := l.c.ExistsW(ctx, l.node)
	if err != nil || !ok {
		gone := make(chan client.Event, 1)
		gone <- client.Event{Type: client.EventNodeDeleted, Path: l.node}
		return gone
	}
	return changed
}

// hold counts one holder's holds of one lock, Curator's reentrancy (per
// thread there, per value here). It is guarded by its owner's mutex.
type hold struct {
	lease *Lease // nil when not held
	count int    // acquisitions not yet matched by Unlock
}

// reenter counts one more hold and returns the lease, or nil when not held.
func (h *hold) reenter() *Lease {
	if h.lease != nil {
		h.count++
	}
	return h.lease
}

func (h *hold) set(l *Lease) { h.lease, h.count = l, 1 }

// leave drops one hold of l and reports whether it was the last one; then
// the hold is empty, so that an acquisition from now on starts a new one.
func (h *hold) leave(l *Lease) (last bool, err error) {
	if h.lease != l {
		return false, ErrNotHeld
	}
	if h.count > 1 {
		h.count--
		return false, nil
	}
	h.lease, h.count = nil, 0
	return true, nil
}

// refused puts back the hold of l after the server refused to delete its
// node, unless a new one has begun meanwhile.
func (h *hold) refused(l *Lease) {
	if h.lease == nil {
		h.set(l)
	}
}

// single is the owner of a lease that is not reentrant: a semaphore's.
type single struct {
	mu   sync.Mutex
	hold hold
}

func (s *single) unlock(ctx context.Context, l *Lease) (bool, error) {
	return unlockHold(ctx, &s.mu, &s.hold, l)
}
