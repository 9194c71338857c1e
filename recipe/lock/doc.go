// Package lock implements distributed locks and semaphores with fencing tokens,
// built on the client package and laid out as Apache Curator 5.4's, so that
// Curator processes and Go processes on the same path exclude each other:
//
//   - Mutex: a fair, reentrant lock, Curator's InterProcessMutex, or
//     Kazoo's Lock from NewKazooMutex.
//   - RWLock: a fair read/write lock, Curator's InterProcessReadWriteLock:
//     readers share it, a writer holds it alone.
//   - Semaphore: at most a given number of leases held at once, Curator's
//     InterProcessSemaphoreV2.
//   - SemaphoreMutex: a lock that is not reentrant, Curator's
//     InterProcessSemaphoreMutex (a semaphore of one lease).
//   - Multi: several locks taken as one, all or none, Curator's
//     InterProcessMultiLock.
//
// # Layout
//
// A Mutex's contenders create, under the lock path, ephemeral sequential
// nodes named "_c_<uuid>-lock-<10-digit sequence>" (a protected create, so a
// create whose reply was lost is found again rather than left behind holding
// a place in line). Parents that do not exist are created as containers,
// which the server removes once they are empty. The holder is the child with
// the smallest sequence, comparing names by what follows their last "lock-"
// (the protection prefix is ignored). Every other contender watches only its
// immediate predecessor, never the parent, so a release wakes exactly one
// waiter, and the lock is granted in the order the nodes were created.
//
// NewKazooMutex lays a Mutex out as python-kazoo 2.8's Lock instead, so
// that it excludes Kazoo's holders: its nodes are
// "_c_<uuid>-__lock__<sequence>", where Kazoo's own are
// "<uuid hex>__lock__<sequence>". The prefix is Collie's protection prefix,
// kept for the same reason as above; Kazoo reads only the "__lock__" marker
// and the sequence after it. Its line is only the children whose names end
// in "__lock__" and a sequence (Kazoo's contender pattern), ordered by that
// sequence; every other child, a Kazoo ReadLock's or a Curator lock's, is
// ignored, as Kazoo's Lock ignores it. Each contender watches its immediate
// predecessor in that line, as Kazoo's do.
//
// An RWLock's nodes are "_c_<uuid>-__READ__<sequence>" and
// "_c_<uuid>-__WRIT__<sequence>", in one line ordered by sequence. A writer
// holds the lock when its node is first and watches the node just before
// its own; a reader holds it when no writer's node is before its own and
// watches the last writer's node before it, so the readers behind a writer
// all wake when it goes, and only then.
//
// A Semaphore at path keeps two children: "locks", the line of a Mutex, and
// "leases", where each lease is a node "_c_<uuid>-lease-<sequence>". To take
// leases, a contender takes the mutex, creates a lease node for each lease it
// asks for, and, while "leases" holds more nodes than the semaphore has
// leases, waits for a child of "leases" to go, then releases the mutex. Only
// the mutex's holder ever watches "leases", so a returned lease wakes one
// waiter. Curator's takes several leases one at a time, each under the
// mutex; this one takes them together, so that two contenders for several
// leases cannot each hold part of what the other waits for.
//
// Every node holds the data given with WithData, as Curator's lock node
// bytes; Participants lists the nodes in line with their data.
//
// # Holding a lock
//
//	m := lock.NewMutex(c, "/app/locks/orders", lock.WithData([]byte("host-1")))
//	lease, err := m.Lock(ctx)
//	if err != nil { ... }
//	defer lease.Unlock(context.Background())
//	// Write only while holding the lock, refused by the server otherwise:
//	_, err = lease.Do(ctx, client.SetOp("/app/orders/42", data, client.AnyVersion))
//
// Every recipe hands out a Lease for each node it holds (a semaphore one
// per lease). A lease is trustworthy only while its Lost channel is open.
// It closes as soon as the client's connection breaks (the session may be
// expiring, and another contender may hold the lock by the time it is
// back), when the session expires, when the client closes, and when the
// node is deleted by anyone else. A lost lease stays lost: Unlock it and
// lock again.
//
// Even a holder that watches Lost can be paused (a long garbage collection, a
// stopped virtual machine) past the moment it lost the lock. Two fences stop
// its late writes: Token, the zxid that created the lease's node, which grows
// with every new holder of an exclusive lock, for resources outside
// ZooKeeper that can remember the largest token they have seen; and Guard
// and Do, which make a transaction check that the lease's node still
// exists, so that the server refuses the write once the lock has passed on.
//
// # Releasing
//
// Unlock deletes the lease's node as Curator's guaranteed delete does: the
// delete is sent again across connection losses, and when Unlock's context
// ends first it goes on in the background until it succeeds or the session
// ends (Unlock then says so with ErrReleasePending). A delete lost with a
// connection never leaves a lock held by nobody. The same goes for the node
// of a Lock that fails or is cancelled: it never stays in line.
//
// # Reentrancy
//
// As with Curator, where reentrancy is per thread, a Mutex value is one
// holder: Lock on a Mutex that already holds the lock returns the same Lease
// and counts one more hold, and the lock is released once every Lock has been
// matched by an Unlock. Goroutines that must exclude each other use
// separate Mutex values, which may share a client. An RWLock value is one
// holder too, of the read lock, the write lock or both: its write lock
// holder may take the read lock, granted at once, as Curator allows, but
// not the other way round (ErrUpgrade). Releasing the write lock while
// still reading downgrades it: the write node goes at once when no other
// writer is queued between it and the read node, and otherwise stays until
// the read lock is released too, so that such a writer never holds the
// lock beside the reader (Curator lets it). A SemaphoreMutex and a
// Semaphore are not reentrant: every Lock or Acquire takes a new lease.
//
// # Reading and writing
//
//	rw := lock.NewRWLock(c, "/app/locks/catalog")
//	r, err := rw.RLock(ctx) // shared with other readers
//	...
//	w, err := rw.Lock(ctx) // alone
//
// # Limiting concurrency
//
//	s := lock.NewSemaphore(c, "/app/limits/exports", 4)
//	leases, err := s.Acquire(ctx, 1)
//	if err != nil { ... }
//	defer leases[0].Unlock(context.Background())
//
// # Several locks at once
//
//	both := lock.NewMulti(lock.NewMutex(c, "/app/locks/a"), lock.NewMutex(c, "/app/locks/b"))
//	held, err := both.Lock(ctx) // both, or neither
//	if err != nil { ... }
//	defer held.Unlock(context.Background()) // b, then a
package lock
