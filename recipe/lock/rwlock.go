package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/collie-io/collie/client"
)

// ErrUpgrade is returned by Lock on an RWLock that holds the read lock:
// its write node would wait for its own read node forever (Curator's
// would). Release the read lock first.
var ErrUpgrade = errors.New("lock: write lock asked while holding the read lock")

// RWLock is a distributed read/write lock on one path, laid out as Curator's
// InterProcessReadWriteLock: any number of readers, or one writer, granted
// in the order they asked. It is safe for concurrent use; like a Mutex, an
// RWLock value is one holder, whose Lock and RLock calls are reentrant.
type RWLock struct {
	write, read line

	// acquiring admits one Lock or RLock at a time, so that a second one
	// reenters rather than queues a second node.
	acquiring chan struct{}

	mu        sync.Mutex // guards the fields below
	writeHold hold
	readHold  hold
	// kept is the node of a released write lock that still guards the
	// read lock taken under it; it goes with the read lock (see unlock).
	kept string
}

// NewRWLock returns a read/write lock on path (the parent of the lock
// nodes) using c's session.
func NewRWLock(c *client.Client, path string, opts ...Option) *RWLock {
	o := buildOptions(opts)
	// Curator orders both kinds of node by what follows either marker.
	afterRead, afterWrite := after(readName), after(writeName)
	key := func(name string) string { return afterWrite(afterRead(name)) }
	return &RWLock{
		write:     line{c: c, path: path, name: writeName, data: o.data, key: key, blocker: predecessor},
		read:      line{c: c, path: path, name: readName, data: o.data, key: key, blocker: lastWriter},
		acquiring: make(chan struct{}, 1),
	}
}

// lastWriter is a reader's blocker: the last writer's node before its own.
// A reader holds the lock once no writer is ahead of it. Curator 5.4 watches
// the first writer ahead instead; watching the last one wakes a reader only
// when no writer is left ahead, rather than once per writer.
func lastWriter(sorted []string, i int) int {
	for j := i - 1; j >= 0; j-- {
		if strings.Contains(sorted[j], writeName) {
			return j
		}
	}
	return -1
}

// Path returns the lock path.
func (rw *RWLock) Path() string { return rw.write.path }

// Lock takes the write lock: it waits until no other holder is ahead of it
// in line, readers or writer, or ctx ends, or the session expires or the
// client closes. It leaves no node behind on failure (see Mutex.Lock).
// On an RWLock that already holds the write lock it counts one more hold;
// on one that holds the read lock it fails with ErrUpgrade.
func (rw *RWLock) Lock(ctx context.Context) (*Lease, error) {
	if err := acquireSlot(ctx, rw.acquiring); err != nil {
		return nil, err
	}
	defer func() { <-rw.acquiring }()

	rw.mu.Lock()
	lease := rw.writeHold.reenter()
	reading := rw.readHold.lease != nil
	rw.mu.Unlock()
	switch {
	case lease != nil:
		return lease, nil
	case reading:
		return nil, fmt.Errorf("lock %s: %w", rw.Path(), ErrUpgrade)
	}
	node, stat, err := rw.write.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", rw.Path(), err)
	}
	lease = newLease(rw.write.c, node, stat, rw)
	rw.mu.Lock()
	rw.writeHold.set(lease)
	rw.mu.Unlock()
	return lease, nil
}

// RLock takes the read lock: it waits until no writer is ahead of it in
// line, or ctx ends, or the session expires or the client closes. It leaves
// no node behind on failure. On an RWLock that already holds the read lock
// it counts one more hold; on one that holds the write lock it is granted
// at once, as Curator grants it, with a read node of its own.
func (rw *RWLock) RLock(ctx context.Context) (*Lease, error) {
	if err := acquireSlot(ctx, rw.acquiring); err != nil {
		return nil, err
	}
	defer func() { <-rw.acquiring }()

	rw.mu.Lock()
	lease := rw.readHold.reenter()
	writer := rw.writeHold.lease
	rw.mu.Unlock()
	if lease != nil {
		return lease, nil
	}
	lease, err := rw.takeRead(ctx, writer)
	if err != nil {
		return nil, fmt.Errorf("read lock %s: %w", rw.Path(), err)
	}
	return lease, nil
}

// takeRead queues a read node and waits for its turn, or, when writer is
// this RWLock's write lease, takes the read lock at once.
func (rw *RWLock) takeRead(ctx context.Context, writer *Lease) (*Lease, error) {
	if writer != nil {
		node, stat, err := rw.read.create(ctx)
		if err != nil {
			return nil, err
		}
		// The write lock may have been released while the node was made, or
		// lost with the session: then the node waits its turn as any
		// reader's does. A write node still there after the read node was
		// made shows it was not lost before.
		writing, _, err := rw.read.c.Exists(ctx, writer.node)
		if err != nil {
			abandon(rw.read.c, node)
			return nil, err
		}
		rw.mu.Lock()
		if writing && rw.writeHold.lease == writer {
			lease := newLease(rw.read.c, node, stat, rw)
			rw.readHold.set(lease)
			rw.mu.Unlock()
			return lease, nil
		}
		rw.mu.Unlock()
		held, err := rw.read.waitTurn(ctx, node)
		if held {
			return rw.setRead(node, stat), nil
		}
		abandon(rw.read.c, node)
		if err != nil {
			return nil, err
		}
	}
	node, stat, err := rw.read.acquire(ctx)
	if err != nil {
		return nil, err
	}
	return rw.setRead(node, stat), nil
}

func (rw *RWLock) setRead(node string, stat client.Stat) *Lease {
	lease := newLease(rw.read.c, node, stat, rw)
	rw.mu.Lock()
	rw.readHold.set(lease)
	rw.mu.Unlock()
	return lease
}

// RLocker returns the read lock as a Locker, for Multi.
func (rw *RWLock) RLocker() Locker { return (*readLocker)(rw) }

type readLocker RWLock

func (r *readLocker) Lock(ctx context.Context) (*Lease, error) { return (*RWLock)(r).RLock(ctx) }

// Participants lists the readers and writers in line order, with their
// data (see WithData).
func (rw *RWLock) Participants(ctx context.Context) ([]Participant, error) {
	return rw.write.participants(ctx)
}

// unlock releases one hold of a read or write lease.
//
// The last hold of the write lock, while the read lock taken under it is
// still held, may not simply delete the write node. Curator does, and then
// a writer queued between the write node and the read node holds the lock
// beside the reader. So the write node is kept, and goes with the read
// lock, unless no writer stands between the two: then the read node alone
// keeps every later writer out, and the write node goes at once (Curator's
// downgrade).
func (rw *RWLock) unlock(ctx context.Context, l *Lease) (bool, error) {
	rw.mu.Lock()
	switch l {
	case rw.writeHold.lease:
		if last, _ := rw.writeHold.leave(l); !last {
			rw.mu.Unlock()
			return false, nil
		}
		reader := rw.readHold.lease
		if reader == nil {
			rw.mu.Unlock()
			return rw.releaseNodes(ctx, l, &rw.writeHold, l.node, "")
		}
		rw.kept = l.node
		rw.mu.Unlock()
		return true, rw.downgrade(ctx, l.node, reader.node)
	case rw.readHold.lease:
		if last, _ := rw.readHold.leave(l); !last {
			rw.mu.Unlock()
			return false, nil
		}
		kept := rw.kept
		rw.kept = ""
		rw.mu.Unlock()
		return rw.releaseNodes(ctx, l, &rw.readHold, l.node, kept)
	}
	rw.mu.Unlock()
	return false, ErrNotHeld
}

// releaseNodes deletes the node of a lease whose last hold h has left, and
// a kept write node after it. When the server refuses the first delete,
// the hold is back, the kept node with it.
func (rw *RWLock) releaseNodes(ctx context.Context, l *Lease, h *hold, node, kept string) (bool, error) {
	err := release(ctx, l.c, node)
	if refused(err) {
		rw.mu.Lock()
		h.refused(l)
		if kept != "" {
			rw.kept = kept
		}
		rw.mu.Unlock()
		return false, err
	}
	if kept != "" {
		if kerr := release(ctx, l.c, kept); err == nil || refused(kerr) {
			err = kerr
		}
	}
	return true, err
}

// downgrade deletes the kept write node when no writer's node stands
// between it and the reader's node. Whoever takes rw.kept deletes it: this
// or the read lock's release, if it comes first.
func (rw *RWLock) downgrade(ctx context.Context, writeNode, readNode string) error {
	children, _, err := rw.write.c.Children(ctx, rw.Path())
	if err != nil {
		return nil // the read lock's release will delete it
	}
	sortLine(children, rw.write.key)
	w, r := slices.Index(children, baseName(writeNode)), slices.Index(children, baseName(readNode))
	if w < 0 || r < w || lastWriter(children, r) != w {
		return nil
	}
	rw.mu.Lock()
	mine := rw.kept == writeNode
	if mine {
		rw.kept = ""
	}
	rw.mu.Unlock()
	if !mine {
		return nil
	}
	err = release(ctx, rw.write.c, writeNode)
	if refused(err) {
		// Refused: let the read lock's release try again, if it is to come.
		rw.mu.Lock()
		defer rw.mu.Unlock()
		if rw.readHold.lease != nil && rw.kept == "" {
			rw.kept = writeNode
			return nil
		}
	}
	return err
}
