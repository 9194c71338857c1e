package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"
)

// While the disk is full, a proposal that reached raft waits for its
// append, which is made once space is back; later proposals are refused
// at once, and are never applied. Reads still get their index.
func TestDiskFullHoldsAppendsAndRefusesProposals(t *testing.T) {
	st, fsm := &memStorage{}, &sumFSM{}
	n := start(t, st, fsm, 0)
	defer n.Stop()
	for v := uint64(1); v <= 10; v++ {
		propose(n, v)
	}
	waitFor(t, "the first values applied", func() bool { return fsm.appliedAll(1, 10) })

	st.full.Store(true)
	propose(n, 11)
	waitFor(t, "the node to find its disk full", func() bool { return n.DiskFull() != nil })
	var refusal error
	n.Propose(binary.BigEndian.AppendUint64(nil, 12), func(err error) { refusal = err })
	if !errors.Is(refusal, ErrDiskFull) {
		t.Fatalf("a proposal while the disk is full failed with %v before Propose returned, want ErrDiskFull", refusal)
	}
	read := make(chan error, 1)
	n.ReadIndex(func(_ uint64, err error) { read <- err })
	select {
	case err := <-read:
		if err != nil {
			t.Fatalf("ReadIndex while the disk is full: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no ReadIndex within 10s while the disk is full")
	}
	if _, count := fsm.state(); count != 10 {
		t.Fatalf("%d values applied while the disk is full, want the 10 from before", count)
	}
	if err := n.Err(); err != nil {
		t.Fatalf("node stopped: %v", err)
	}

	st.full.Store(false)
	waitFor(t, "the held value applied", func() bool { return fsm.appliedAll(11, 11) })
	waitFor(t, "the node to find space", func() bool { return n.DiskFull() == nil })
	propose(n, 13)
	waitFor(t, "a value proposed after the disk had space", func() bool { return fsm.appliedAll(13, 13) })
	fsm.mu.Lock()
	applied := slices.Clone(fsm.applied)
	fsm.mu.Unlock()
	if want := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13}; !slices.Equal(applied, want) {
		t.Fatalf("applied %v, want %v", applied, want)
	}
}

// A snapshot that finds no space is abandoned and tried again later; the
// node goes on applying meanwhile.
func TestDiskFullAbandonsSnapshots(t *testing.T) {
	st, fsm := &memStorage{}, &sumFSM{}
	st.snapFull.Store(true)
	n := start(t, st, fsm, 5)
	defer n.Stop()
	for v := uint64(1); v <= 20; v++ {
		propose(n, v)
	}
	waitFor(t, "values applied without snapshots", func() bool { return fsm.appliedAll(1, 20) })
	if i := st.snapIndex(); i != 0 {
		t.Fatalf("snapshot at %d saved on a full disk", i)
	}
	if err := n.Err(); err != nil {
		t.Fatalf("node stopped: %v", err)
	}
	st.snapFull.Store(false)
	// A snapshot is considered as entries are applied.
	for v := uint64(21); st.snapIndex() == 0; v++ {
		propose(n, v)
		waitFor(t, "a value applied", func() bool { return fsm.appliedAll(v, v) })
		if v > 100000 {
			t.Fatal("no snapshot once the disk had space")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A leader whose disk is full hands its leadership over; the others go on
// committing, and it catches up once it has space. A follower whose disk
// is full acknowledges nothing (the router checks), and catches up too.
func TestEnsembleDiskFull(t *testing.T) {
	r := newRouter(t)
	ms := startEnsemble(t, r, 3, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, m := range ms {
		if err := m.n.AwaitLeader(ctx); err != nil {
			t.Fatalf("member %d: %v", m.id, err)
		}
	}
	lead := leaderOf(t, ms)
	proposeAll(t, lead, 1, 50)

	lead.st.full.Store(true)
	proposeAll(t, follower(ms, lead), 51, 60)
	waitFor(t, "the full leader to hand over", func() bool { return leaderOf(t, ms) != lead })
	next := leaderOf(t, ms)
	proposeAll(t, next, 61, 100)
	healthy := slices.DeleteFunc(slices.Clone(ms), func(m *member) bool { return m == lead })
	awaitApplied(t, healthy, sumTo(1, 100), 100)
	if sum, _ := lead.fsm.state(); sum == sumTo(1, 100) {
		t.Fatal("the member whose disk is full applied entries it could not store")
	}
	lead.st.full.Store(false)
	awaitApplied(t, ms, sumTo(1, 100), 100)

	f := follower(ms, next)
	f.st.full.Store(true)
	proposeAll(t, next, 101, 150)
	others := slices.DeleteFunc(slices.Clone(ms), func(m *member) bool { return m == f })
	awaitApplied(t, others, sumTo(1, 150), 150)
	if got := leaderOf(t, ms); got != next {
		t.Fatalf("leader %d after a follower's disk filled, want %d still", got.id, next.id)
	}
	f.st.full.Store(false)
	awaitApplied(t, ms, sumTo(1, 150), 150)
}

// follower returns a member other than lead.
func follower(ms []*member, lead *member) *member {
	for _, m := range ms {
		if m != lead {
			return m
		}
	}
	return nil
}
