package lock

import (
	"context"
	"fmt"
	"slices"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
)

// The children of a semaphore's path, and the name of its lease nodes, as
// Curator's InterProcessSemaphoreV2 names them.
const (
	semaphoreLocks  = "locks"
	semaphoreLeases = "leases"
	leaseName       = "lease-"
)

// Semaphore is a distributed counting semaphore on one path, laid out as
// Curator's InterProcessSemaphoreV2: at most a fixed number of leases are
// held at once, by all the processes that use the path. Every user of a
// path must agree on that number; nothing checks it, as with Curator. It
// is safe for concurrent use, and leases are not reentrant: every Acquire
// takes new ones.
type Semaphore struct {
	c      *client.Client
	path   string
	leases int // the most that may be held at once
	data   []byte
}

// NewSemaphore returns a semaphore of maxLeases leases on path using c's
// session.
func NewSemaphore(c *client.Client, path string, maxLeases int, opts ...Option) *Semaphore {
	o := buildOptions(opts)
	return &Semaphore{c: c, path: path, leases: maxLeases, data: o.data}
}

// Path returns the semaphore's path.
func (s *Semaphore) Path() string { return s.path }

// Acquire waits until it holds n leases, or ctx ends, or the session
// expires or the client closes. It takes the n leases at once: it holds
// the semaphore's mutex while it waits, so that two Acquires of several
// leases never each hold part of what the other needs. (Curator's takes
// them one at a time, and two such acquisitions can wait for each other
// forever.) On failure it leaves no node behind (see Mutex.Lock). Each
// lease is released on its own, with Unlock.
func (s *Semaphore) Acquire(ctx context.Context, n int) ([]*Lease, error) {
	if n < 1 || n > s.leases {
		return nil, fmt.Errorf("semaphore %s: cannot acquire %d of %d leases", s.path, n, s.leases)
	}
	for {
		// A Mutex of its own: concurrent acquisitions are separate holders.
		guard, err := NewMutex(s.c, proto.Join(s.path, semaphoreLocks), WithData(s.data)).Lock(ctx)
		if err != nil {
			return nil, fmt.Errorf("semaphore %s: %w", s.path, err)
		}
		nodes, stats, err := s.takeLeases(ctx, n)
		// Whatever happened, let the next in line try: in the background if
		// ctx has ended.
		if uerr := guard.Unlock(ctx); err == nil && refused(uerr) {
			err = uerr
			for _, node := range nodes {
				abandon(s.c, node)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("semaphore %s: %w", s.path, err)
		}
		if nodes == nil {
			continue // a lease node vanished while waiting: begin again, as Curator does
		}
		leases := make([]*Lease, n)
		for i, node := range nodes {
			owner := &single{}
			leases[i] = newLease(s.c, node, stats[i], owner)
			owner.hold.set(leases[i])
		}
		return leases, nil
	}
}

// takeLeases creates n lease nodes and waits until the leases, its own
// among them, are no more than the semaphore has. It returns no nodes, and
// no error, when one of them vanished meanwhile; on failure it leaves none
// behind.
// Whoever holds the semaphore's mutex is the only one to wait for leases,
// so a returned lease wakes one waiter: the others wait in the mutex's
// line.
func (s *Semaphore) takeLeases(ctx context.Context, n int) ([]string, []client.Stat, error) {
	leases := proto.Join(s.path, semaphoreLeases)
	l := line{c: s.c, path: leases, name: leaseName, data: s.data}
	nodes := make([]string, 0, n)
	stats := make([]client.Stat, 0, n)
	fail := func(err error) ([]string, []client.Stat, error) {
		for _, node := range nodes {
			abandon(s.c, node)
		}
		return nil, nil, err
	}
	for range n {
		node, stat, err := l.create(ctx)
		if err != nil {
			return fail(err)
		}
		nodes, stats = append(nodes, node), append(stats, stat)
	}
	for watch := false; ; watch = !watch {
		// Read without a watch first: a watch set by a read that finds
		// room would be left on the server, to fire for nothing later.
		var children []string
		var changed <-chan client.Event
		var err error
		if watch {
			children, _, changed, err = s.c.ChildrenW(ctx, leases)
		} else {
			children, _, err = s.c.Children(ctx, leases)
		}
		switch {
		case err != nil:
			return fail(err)
		case slices.ContainsFunc(nodes, func(node string) bool { return !slices.Contains(children, baseName(node)) }):
			return fail(nil)
		case len(children) <= s.leases:
			return nodes, stats, nil
		case !watch:
			continue
		}
		select {
		case ev := <-changed:
			if ev.Type == client.EventNotWatching {
				return fail(ev.Err)
			}
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
}

// Participants lists the leases held, and those being waited for, in the
// order they were asked for, with their data (see WithData).
func (s *Semaphore) Participants(ctx context.Context) ([]Participant, error) {
	l := line{c: s.c, path: proto.Join(s.path, semaphoreLeases), key: after(leaseName)}
	return l.participants(ctx)
}

// SemaphoreMutex is a distributed lock that is not reentrant, laid out as
// Curator's InterProcessSemaphoreMutex: a Semaphore of one lease. A second
// Lock on the same SemaphoreMutex waits for the first lease's Unlock, as
// any other contender does.
type SemaphoreMutex struct {
	s *Semaphore
}

// NewSemaphoreMutex returns a lock on path using c's session.
func NewSemaphoreMutex(c *client.Client, path string, opts ...Option) *SemaphoreMutex {
	return &SemaphoreMutex{s: NewSemaphore(c, path, 1, opts...)}
}

// Path returns the lock's path.
func (m *SemaphoreMutex) Path() string { return m.s.path }

// Lock waits until it holds the lock, or ctx ends, or the session expires
// or the client closes. The lease's token grows with every holder.
func (m *SemaphoreMutex) Lock(ctx context.Context) (*Lease, error) {
	leases, err := m.s.Acquire(ctx, 1)
	if err != nil {
		return nil, err
	}
	return leases[0], nil
}

// Participants lists the holder, and the contender waiting for the
// holder's lease, with their data.
func (m *SemaphoreMutex) Participants(ctx context.Context) ([]Participant, error) {
	return m.s.Participants(ctx)
}
