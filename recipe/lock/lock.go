package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/collie-io/collie/client"
)

// ErrLost says that a lease no longer guarantees the lock: its node is gone
// (the session expired, or someone deleted it), so a write guarded by the
// lease was refused. Lock again to hold the lock.
var ErrLost = errors.New("lock: lease lost")

// ErrNotHeld is returned by Unlock on a lease already released.
var ErrNotHeld = errors.New("lock: not held")

// ErrReleasePending is wrapped by the error of an Unlock whose context
// ended before the server confirmed the delete of the lease's node. The
// lease has ended all the same, and the delete goes on in the background
// until it succeeds or the session ends: there is nothing to call again.
var ErrReleasePending = errors.New("lock: release pending")

// Locker is a lock that Multi can take together with others: a Mutex, a
// SemaphoreMutex, an RWLock (its write lock) and an RWLock's RLocker.
type Locker interface {
	// Lock waits until it holds the lock, or ctx ends.
	Lock(ctx context.Context) (*Lease, error)
}

// Option changes a lock's or semaphore's settings.
type Option func(*options)

type options struct {
	data []byte
}

// WithData puts data into every node the lock creates, as Curator's lock
// node bytes (InterProcessReadWriteLock's lockData, InterProcessSemaphoreV2's
// setNodeData): typically the participant's id, for Participants and for
// anyone looking at the tree. Without it nodes are empty; Curator's
// default is the host's IP address.
func WithData(data []byte) Option {
	return func(o *options) { o.data = data }
}

func buildOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Mutex is a distributed, reentrant lock on one path, laid out as Curator's
// InterProcessMutex, or as Kazoo's Lock (NewKazooMutex). It is safe for
// concurrent use; concurrent Lock calls on one Mutex share one hold (see
// Reentrancy in the package doc).
type Mutex struct {
	line line

	// acquiring admits one Lock at a time to the server-side acquisition,
	// so that a second Lock on the same Mutex reenters rather than queues
	// a second node behind the first.
	acquiring chan struct{}

	mu   sync.Mutex // guards hold
	hold hold
}

// NewMutex returns a mutex on path (the parent of the lock nodes) using c's
// session.
func NewMutex(c *client.Client, path string, opts ...Option) *Mutex {
	o := buildOptions(opts)
	return newMutex(line{c: c, path: path, name: mutexName, data: o.data, key: after(mutexName), blocker: predecessor})
}

// newMutex returns a mutex whose contenders queue in l.
func newMutex(l line) *Mutex {
	return &Mutex{line: l, acquiring: make(chan struct{}, 1)}
}

// Path returns the lock path.
func (m *Mutex) Path() string { return m.line.path }

// Lock waits until it holds the lock, or ctx ends, or the session expires or
// the client closes. On failure it returns at once and leaves no node of its
// own behind: a goroutine deletes the node, or waits for a create still in
// flight to delete what it made, across connection losses until the session
// ends, so that nothing holds a place in line, or the lock, that nobody will
// release.
//
// On a Mutex that already holds the lock, Lock returns the held lease at
// once, lost or not, and counts one more hold.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	if err := acquireSlot(ctx, m.acquiring); err != nil {
		return nil, err
	}
	defer func() { <-m.acquiring }()

	m.mu.Lock()
	lease := m.hold.reenter()
	m.mu.Unlock()
	if lease != nil {
		return lease, nil
	}
	node, stat, err := m.line.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", m.line.path, err)
	}
	lease = newLease(m.line.c, node, stat, m)
	m.mu.Lock()
	m.hold.set(lease)
	m.mu.Unlock()
	return lease, nil
}

// Participants lists the contenders in line order, the holder first, with
// their data (see WithData).
func (m *Mutex) Participants(ctx context.Context) ([]Participant, error) {
	return m.line.participants(ctx)
}

func (m *Mutex) unlock(ctx context.Context, l *Lease) (bool, error) {
	return unlockHold(ctx, &m.mu, &m.hold, l)
}

// unlockHold releases one hold of l, counted by h under mu, and deletes
// its node when it was the last one.
func unlockHold(ctx context.Context, mu *sync.Mutex, h *hold, l *Lease) (bool, error) {
	mu.Lock()
	last, err := h.leave(l)
	mu.Unlock()
	if !last {
		return false, err
	}
	err = release(ctx, l.c, l.node)
	if refused(err) {
		mu.Lock()
		h.refused(l)
		mu.Unlock()
		return false, err
	}
	return true, err
}

// acquireSlot takes slot, a channel of capacity one, or returns when ctx
// ends.
func acquireSlot(ctx context.Context, slot chan struct{}) error {
	select {
	case slot <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
