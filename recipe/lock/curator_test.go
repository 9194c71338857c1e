package lock_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/collie-io/collie/client"
	rt "github.com/collie-io/collie/recipe/internal/recipetest"
	"github.com/collie-io/collie/recipe/lock"
)

// lockPeer drives Curator's locks; see its class comment for the commands.
const lockPeer = "LockPeer.java"

// TestCuratorInterop runs Apache Curator 5.4's InterProcessMutex,
// InterProcessReadWriteLock and InterProcessSemaphoreV2 in a Java process
// against a Mutex, an RWLock and a Semaphore on the same paths of a Collie
// server: each side's mutex holder excludes the other's, and the lock
// passes in line order across both; each side's writer excludes the
// other's readers and writers, readers of both sides share the lock, each
// side sees the other's node data, and the two semaphores share one limit.
func TestCuratorInterop(t *testing.T) {
	addr := rt.StartCollie(t)
	peer := rt.Java{Program: lockPeer, Args: []string{addr}}.Start(t)
	t.Run("mutex", func(t *testing.T) {
		t.Run("line", func(t *testing.T) { testCuratorMutexLine(t, addr, peer) })
		t.Run("contention", func(t *testing.T) { testCuratorMutexContention(t, addr, peer) })
	})
	t.Run("rwlock", func(t *testing.T) { testCuratorRWLock(t, addr, peer) })
	t.Run("semaphore", func(t *testing.T) { testCuratorSemaphore(t, addr, peer) })
}

// testCuratorMutexLine queues a Go Mutex behind a Curator holder, and a
// second Curator holder behind the Go one: each waits while the one before
// it holds the lock, and takes it once that one releases, in the order both
// sides agree on.
func testCuratorMutexLine(t *testing.T, addr string, peer *rt.Peer) {
	ctx := rt.Context(t)
	path := "/interop/mutex"
	observer := rt.Dial(t, addr, client.Config{})
	inLine := func(n int) {
		t.Helper()
		rt.WaitFor(t, fmt.Sprintf("%d nodes in line", n), func() bool { return len(rt.Children(t, observer, path)) == n })
	}
	peer.Expect(t, "mutex curator-1 "+path+" curator-1", "ok")
	peer.Expect(t, "mutex curator-2 "+path+" curator-2", "ok")

	// A Curator holder holds the lock: a Go mutex, then a second Curator
	// holder, wait behind it.
	peer.Expect(t, "lock curator-1", "ok")
	peer.Expect(t, "await curator-1", "acquired")
	m := lock.NewMutex(rt.Dial(t, addr, client.Config{}), path, lock.WithData([]byte("go")))
	acquired := lockAsync(ctx, t, m)
	inLine(2)
	peer.Expect(t, "lock curator-2", "ok")
	inLine(3)
	all, err := m.Participants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(all); got != "curator-1 go curator-2" {
		t.Errorf("participants %s, want curator-1 go curator-2", got)
	}
	rt.Pending(t, "a Go mutex behind a Curator holder", acquired)
	peer.Expect(t, "state curator-2", "waiting")

	// It releases: the Go mutex takes the lock, the second Curator holder
	// waits for it.
	peer.Expect(t, "unlock curator-1", "ok")
	lease := rt.Receive(t, acquired)
	inLine(2)
	peer.Expect(t, "state curator-2", "waiting")
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	peer.Expect(t, "await curator-2", "acquired")
	peer.Expect(t, "unlock curator-2", "ok")
	inLine(0)
}

// testCuratorMutexContention has Go mutexes, each with a session of its
// own, and Curator holders take the lock in turns, all of them queued
// behind a first holder before it releases; each holder adds one to a
// counter by a read and a write conditional on the version read. A refused
// write would show two holders at once: none is refused, and the counter
// ends at the number of acquisitions.
func testCuratorMutexContention(t *testing.T, addr string, peer *rt.Peer) {
	const contenders, rounds = 2, 20 // on each side
	ctx := rt.Context(t)
	path, counter := "/interop/mutex-contention", "/interop-mutex-counter"
	c := rt.Dial(t, addr, client.Config{})
	if _, _, err := c.Create(ctx, counter, []byte("0"), client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	gate, err := lock.NewMutex(c, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range contenders {
		name := fmt.Sprintf("contender-%d", i+1)
		peer.Expect(t, fmt.Sprintf("mutex %s %s %s", name, path, name), "ok")
		peer.Expect(t, fmt.Sprintf("contend %s %s %d", name, counter, rounds), "ok")
	}
	wait := contend(ctx, t, addr, contenders, rounds, counter, func(c *client.Client) *lock.Mutex { return lock.NewMutex(c, path) })
	rt.WaitFor(t, "every contender in line", func() bool { return len(rt.Children(t, c, path)) == 1+2*contenders })
	if err := gate.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	wait()
	for i := range contenders {
		peer.Expect(t, fmt.Sprintf("await contender-%d", i+1), fmt.Sprintf("done %d", rounds))
	}
	data, _, err := c.Get(ctx, counter)
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(2 * contenders * rounds); string(data) != want {
		t.Errorf("counter %s, want %s", data, want)
	}
	if left := rt.Children(t, c, path); len(left) != 0 {
		t.Errorf("nodes left in line: %v", left)
	}
}

func testCuratorRWLock(t *testing.T, addr string, peer *rt.Peer) {
	ctx := rt.Context(t)
	path := "/interop/rw"
	observer := rt.Dial(t, addr, client.Config{})
	inLine := func(n int) {
		t.Helper()
		rt.WaitFor(t, fmt.Sprintf("%d nodes in line", n), func() bool { return len(rt.Children(t, observer, path)) == n })
	}
	peer.Expect(t, "rwlock writer "+path+" curator-writer", "ok")
	peer.Expect(t, "rwlock reader "+path+" curator-reader", "ok")

	// A Curator writer holds the lock: a Go reader, a Curator reader and a
	// Go writer wait behind it.
	peer.Expect(t, "write writer", "ok")
	peer.Expect(t, "await writer", "acquired")
	goReader := queue(t, addr, path, false, lock.WithData([]byte("go-reader")))
	peer.Expect(t, "read reader", "ok")
	inLine(3)
	goWriter := queue(t, addr, path, true, lock.WithData([]byte("go-writer")))
	all, err := goWriter.rw.Participants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(all); got != "curator-writer:w go-reader:r curator-reader:r go-writer:w" {
		t.Errorf("participants %s, want curator-writer:w go-reader:r curator-reader:r go-writer:w", got)
	}
	rt.Pending(t, "a Go reader behind a Curator writer", goReader.acquired)
	peer.Expect(t, "state reader", "waiting")

	// It releases: both readers share the lock, the Go writer waits for
	// both.
	peer.Expect(t, "unwrite writer", "ok")
	read := rt.Receive(t, goReader.acquired)
	peer.Expect(t, "await reader", "acquired")
	rt.Pending(t, "a Go writer behind readers", goWriter.acquired)
	if err := read.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	rt.Pending(t, "a Go writer behind a Curator reader", goWriter.acquired)
	peer.Expect(t, "unread reader", "ok")
	write := rt.Receive(t, goWriter.acquired)

	// A Go writer holds the lock: a Curator reader and a Curator writer
	// wait behind it, and get it in line order.
	peer.Expect(t, "read reader", "ok")
	inLine(2)
	peer.Expect(t, "write writer", "ok")
	inLine(3)
	peer.Expect(t, "state reader", "waiting")
	peer.Expect(t, "state writer", "waiting")
	if err := write.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	peer.Expect(t, "await reader", "acquired")
	peer.Expect(t, "state writer", "waiting")
	peer.Expect(t, "unread reader", "ok")
	peer.Expect(t, "await writer", "acquired")
	peer.Expect(t, "unwrite writer", "ok")
	inLine(0)
}

func testCuratorSemaphore(t *testing.T, addr string, peer *rt.Peer) {
	ctx := rt.Context(t)
	path := "/interop/semaphore"
	observer := rt.Dial(t, addr, client.Config{})
	leaseNodes := func(n int) {
		t.Helper()
		rt.WaitFor(t, fmt.Sprintf("%d lease nodes", n), func() bool { return len(rt.Children(t, observer, path+"/leases")) == n })
	}
	peer.Expect(t, "semaphore curator "+path+" 3 curator", "ok")
	s := lock.NewSemaphore(rt.Dial(t, addr, client.Config{}), path, 3, lock.WithData([]byte("go")))

	// Curator holds two leases of three: Go gets one, and waits for a
	// second until Curator returns its own.
	peer.Expect(t, "acquire curator 2", "ok")
	peer.Expect(t, "await curator", "acquired")
	first, err := s.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	acquired := make(chan []*lock.Lease, 1)
	go func() {
		leases, err := s.Acquire(ctx, 1)
		if err != nil {
			t.Error(err)
		}
		acquired <- leases
	}()
	leaseNodes(4)
	rt.Pending(t, "a fourth lease", acquired)
	all, err := s.Participants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(all); got != "curator curator go go" {
		t.Errorf("participants %s, want curator curator go go", got)
	}
	peer.Expect(t, "return curator", "ok")
	second := rt.Receive(t, acquired)

	// Go holds two leases: Curator gets one of the two it asks for, and
	// the other once Go returns one.
	peer.Expect(t, "acquire curator 2", "ok")
	leaseNodes(4)
	peer.Expect(t, "state curator", "waiting")
	if err := first[0].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	peer.Expect(t, "await curator", "acquired")
	leaseNodes(3)
	peer.Expect(t, "return curator", "ok")
	if err := second[0].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	leaseNodes(0)
}

// describe lists participants' data, each a reader's or writer's (":r",
// ":w") when they are an RWLock's.
func describe(all []lock.Participant) string {
	var b strings.Builder
	for i, p := range all {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.Write(p.Data)
		switch {
		case p.Read:
			b.WriteString(":r")
		case strings.Contains(p.Node, "__WRIT__"):
			b.WriteString(":w")
		}
	}
	return b.String()
}
