// Package lock is a distributed, reentrant, fair mutex with fencing tokens,
// built on the client package and laid out as Apache Curator's
// InterProcessMutex, so that a Curator mutex and this one on the same path
// exclude each other.
//
// # Layout
//
// Every contender creates, under the lock path, an ephemeral sequential node
// named "_c_<uuid>-lock-<10-digit sequence>" (a protected create, so a create
// whose reply was lost is found again rather than left behind holding a
// place in line). Parents that do not exist are created as containers, which
// the server removes once they are empty. The holder is the child with the
// smallest sequence, comparing names by what follows their last "lock-" (the
// protection prefix is ignored). Every other contender watches only its
// immediate predecessor, never the parent, so a release wakes exactly one
// waiter, and the lock is granted in the order the nodes were created.
//
// # Holding a lock
//
//	m := lock.NewMutex(c, "/app/locks/orders")
//	lease, err := m.Lock(ctx)
//	if err != nil { ... }
//	defer lease.Unlock(context.Background())
//	// Write only while holding the lock, refused by the server otherwise:
//	_, err = lease.Do(ctx, client.SetOp("/app/orders/42", data, client.AnyVersion))
//
// A lease is trustworthy only while its Lost channel is open. It closes as
// soon as the client's connection breaks (the session may be expiring, and
// another contender may hold the lock by the time it is back), when the
// session expires, when the client closes, and when the lock node is deleted
// by anyone else. A lost lease stays lost: Unlock it and Lock again.
//
// Even a holder that watches Lost can be paused (a long garbage collection, a
// stopped virtual machine) past the moment it lost the lock. Two fences stop
// its late writes: Token, which grows with every new holder, for resources
// outside ZooKeeper that can remember the largest token they have seen; and
// Guard and Do, which make a transaction check that the lease's node still
// exists, so that the server refuses the write once the lock has passed on.
//
// # Reentrancy
//
// As with Curator, where reentrancy is per thread, a Mutex value is one
// holder: Lock on a Mutex that already holds the lock returns the same Lease
// and counts one more hold, and the lock is released once every Lock has been
// matched by an Unlock. Goroutines that must exclude each other use
// separate Mutex values, which may share a client.
package lock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
)

// lockName is what Curator's InterProcessMutex names its nodes, before the
// protection prefix and after it the sequence number.
const lockName = "lock-"

// ErrLost says that a lease no longer guarantees the lock: its node is gone
// (the session expired, or someone deleted it), so a write guarded by the
// lease was refused. Lock again to hold the lock.
var ErrLost = errors.New("lock: lease lost")

// ErrNotHeld is returned by Unlock on a lease already released.
var ErrNotHeld = errors.New("lock: not held")

// Mutex is a distributed lock on one path. It is safe for concurrent use;
// concurrent Lock calls on one Mutex share one hold (see Reentrancy in the
// package doc).
type Mutex struct {
	c    *client.Client
	path string

	// acquiring admits one Lock at a time to the server-side acquisition,
	// so that a second Lock on the same Mutex reenters rather than queues
	// a second node behind the first.
	acquiring chan struct{}

	mu    sync.Mutex // guards the fields below
	lease *Lease     // the current hold, nil when not held
	holds int        // Lock calls not yet matched by Unlock
}

// NewMutex returns a mutex on path (the parent of the lock nodes) using c's
// session.
func NewMutex(c *client.Client, path string) *Mutex {
	return &Mutex{c: c, path: path, acquiring: make(chan struct{}, 1)}
}

// Path returns the lock path.
func (m *Mutex) Path() string { return m.path }

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
	select {
	case m.acquiring <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-m.acquiring }()

	m.mu.Lock()
	if m.lease != nil {
		m.holds++
		lease := m.lease
		m.mu.Unlock()
		return lease, nil
	}
	m.mu.Unlock()

	node, stat, err := m.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", m.path, err)
	}
	lease := newLease(m, node, stat)
	m.mu.Lock()
	m.lease, m.holds = lease, 1
	m.mu.Unlock()
	return lease, nil
}

// acquire creates a node and waits until it is first in line. A node that
// vanishes while waiting (the session expired and the client renewed it)
// is replaced by a new one at the end of the line, as Curator does.
func (m *Mutex) acquire(ctx context.Context) (string, client.Stat, error) {
	for {
		node, stat, err := m.create(ctx)
		if err != nil {
			return "", client.Stat{}, err
		}
		held, err := m.waitFirst(ctx, node)
		if held {
			return node, stat, nil
		}
		m.abandon(node)
		if err != nil {
			return "", client.Stat{}, err
		}
	}
}

// create makes this contender's node, creating missing parents as
// containers. The create runs to its end even when ctx ends meanwhile: a
// protected create whose name Lock never learns could otherwise stay behind,
// so a late result is handed to abandon instead.
func (m *Mutex) create(ctx context.Context) (string, client.Stat, error) {
	type result struct {
		node string
		stat client.Stat
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.node, r.stat, r.err = m.createNode(context.WithoutCancel(ctx))
		done <- r
	}()
	select {
	case r := <-done:
		return r.node, r.stat, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil {
				m.abandon(r.node)
			}
		}()
		return "", client.Stat{}, ctx.Err()
	}
}

func (m *Mutex) createNode(ctx context.Context) (string, client.Stat, error) {
	prefix := proto.Join(m.path, lockName)
	for {
		node, stat, err := m.c.CreateProtected(ctx, prefix, nil, client.ModeEphemeralSequential, nil)
		if !errors.Is(err, client.ErrNoNode) {
			return node, stat, err
		}
		if err := m.createParents(ctx); err != nil {
			return "", client.Stat{}, err
		}
	}
}

// createParents creates the lock path and its missing ancestors as
// containers, as Curator's creatingParentContainersIfNeeded does.
func (m *Mutex) createParents(ctx context.Context) error {
	for i := 1; i <= len(m.path); i++ {
		if i < len(m.path) && m.path[i] != '/' {
			continue
		}
		_, _, err := m.c.Create(ctx, m.path[:i], nil, client.ModeContainer, nil)
		if err != nil && !errors.Is(err, client.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// waitFirst waits until node is the first in line. It reports false with a
// nil error when node has vanished, so that the caller makes another.
func (m *Mutex) waitFirst(ctx context.Context, node string) (bool, error) {
	name := node[len(m.path)+1:]
	if m.path == "/" {
		name = node[1:]
	}
	for {
		children, _, err := m.c.Children(ctx, m.path)
		if err != nil {
			return false, err
		}
		sortBySequence(children)
		i := slices.Index(children, name)
		switch {
		case i < 0:
			return false, nil
		case i == 0:
			return true, nil
		}
		// Get rather than Exists: Get sets no watch on a node already gone,
		// so no watch outlives its use.
		_, _, changed, err := m.c.GetW(ctx, proto.Join(m.path, children[i-1]))
		if errors.Is(err, client.ErrNoNode) {
			continue
		}
		if err != nil {
			return false, err
		}
		select {
		case ev := <-changed:
			if ev.Type == client.EventNotWatching {
				return false, ev.Err
			}
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// abandon deletes a node this Mutex gave up on, without waiting: across a
// connection loss that may take until the connection is back, and ends when
// the session does, which deletes the node anyway.
func (m *Mutex) abandon(node string) {
	go deleteNode(context.Background(), m.c, node)
}

// deleteNode deletes node, sending the delete again across connection
// losses. A node already gone, with its session or by an earlier attempt,
// counts as deleted.
func deleteNode(ctx context.Context, c *client.Client, node string) error {
	err := client.Retry(ctx, client.RetryForever(sessionRetryDelay), func(ctx context.Context) error {
		return c.Delete(ctx, node, client.AnyVersion)
	})
	if err == nil || errors.Is(err, client.ErrNoNode) || errors.Is(err, client.ErrSessionExpired) || errors.Is(err, client.ErrClosed) {
		return nil
	}
	return err
}

// sortBySequence orders lock node names as Curator does: by what follows
// their last "lock-", so that the protection prefix does not count; a name
// without it sorts by the whole name.
func sortBySequence(names []string) {
	slices.SortStableFunc(names, func(a, b string) int {
		return cmp.Compare(sequenceOf(a), sequenceOf(b))
	})
}

func sequenceOf(name string) string {
	if i := strings.LastIndex(name, lockName); i >= 0 {
		return name[i+len(lockName):]
	}
	return name
}
