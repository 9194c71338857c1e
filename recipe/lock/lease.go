package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/collie-io/collie/client"
)

// sessionRetryDelay paces the deletes of a release sent again after a
// connection loss.
const sessionRetryDelay = 50 * time.Millisecond

// Lease is one hold of a Mutex: proof, while Lost is open, that the lock is
// held through this lease's node.
//
// A lease runs one goroutine that watches the session's state and the node,
// from Lock until Unlock.
type Lease struct {
	m     *Mutex
	node  string
	token int64

	lost     chan struct{}
	loseOnce sync.Once
	stop     context.CancelFunc
	watching sync.WaitGroup
}

func newLease(m *Mutex, node string, stat client.Stat) *Lease {
	ctx, stop := context.WithCancel(context.Background())
	l := &Lease{m: m, node: node, token: stat.Czxid, lost: make(chan struct{}), stop: stop}
	// Subscribed before Lock returns, so that a connection that breaks
	// right after acquisition is seen: the stream starts with the state at
	// the time of subscribing.
	states := m.c.StateChanges()
	l.watching.Go(func() { l.watch(ctx, states) })
	return l
}

// Node returns the path of the lease's lock node.
func (l *Lease) Node() string { return l.node }

// Token returns the lease's fencing token, the zxid that created its node:
// each holder of the lock has a larger one than every holder before it.
func (l *Lease) Token() int64 { return l.token }

// Lost returns a channel closed when the lease can no longer be trusted: the
// connection broke, the session expired, the client closed, or the node was
// deleted. It stays closed.
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
	results, err := l.m.c.Multi(ctx, l.Guard(ops...)...)
	if err != nil && len(results) > 0 && errors.Is(results[0].Err, client.ErrNoNode) {
		return results[1:], fmt.Errorf("%w: %w", ErrLost, err)
	}
	if len(results) > 0 {
		results = results[1:]
	}
	return results, err
}

// Unlock releases one hold of the lease; the last one deletes the node,
// sending the delete again across connection losses until ctx ends. A node
// already gone with its session counts as released. When ctx ends first the
// node remains until its session ends, and Unlock may be called again.
func (l *Lease) Unlock(ctx context.Context) error {
	m := l.m
	m.mu.Lock()
	if m.lease != l {
		m.mu.Unlock()
		return ErrNotHeld
	}
	if m.holds > 1 {
		m.holds--
		m.mu.Unlock()
		return nil
	}
	// A Lock from now on starts a new hold rather than reentering this one.
	m.lease, m.holds = nil, 0
	m.mu.Unlock()

	if err := deleteNode(ctx, m.c, l.node); err != nil {
		m.mu.Lock()
		if m.lease == nil {
			m.lease, m.holds = l, 1
		}
		m.mu.Unlock()
		return fmt.Errorf("unlock %s: %w", l.node, err)
	}
	l.lose()
	l.stop()
	l.watching.Wait()
	return nil
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
	ok, _, changed, err := l.m.c.ExistsW(ctx, l.node)
	if err != nil || !ok {
		gone := make(chan client.Event, 1)
		gone <- client.Event{Type: client.EventNodeDeleted, Path: l.node}
		return gone
	}
	return changed
}
