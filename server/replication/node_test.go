package replication

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// memStorage is Storage in memory, kept across node restarts the way a
// disk would be.
type memStorage struct {
	// gate, if set, holds each Save of entries until the test lets it go.
	gate atomic.Pointer[gate]
	// full, while set, fails the log's writes for want of space, and
	// snapFull the snapshots' (they may be on another disk).
	full, snapFull atomic.Bool

	mu   sync.Mutex
	snap raftpb.Snapshot
	// written holds snapshots written but not yet marked in the log.
	written map[uint64]raftpb.Snapshot
	st      raftpb.HardState
	ents    []raftpb.Entry
	saves   int
}

func (m *memStorage) LoadSnapshot() (raftpb.SnapshotMetadata, io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.snap.Metadata.Index == 0 {
		return raftpb.SnapshotMetadata{}, nil, nil
	}
	return m.snap.Metadata, io.NopCloser(bytes.NewReader(m.snap.Data)), nil
}

func (m *memStorage) ReadLog() (raftpb.HardState, []raftpb.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ents []raftpb.Entry
	for _, e := range m.ents {
		if e.Index > m.snap.Metadata.Index {
			ents = append(ents, e)
		}
	}
	return m.st, ents, nil
}

func (m *memStorage) Save(st raftpb.HardState, ents []raftpb.Entry) error {
	if m.full.Load() {
		return errNoSpace
	}
	if g := m.gate.Load(); g != nil && len(ents) > 0 {
		g.blocked <- struct{}{}
		<-g.release
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !raft.IsEmptyHardState(st) {
		m.st = st
	}
	if len(ents) > 0 {
		// Entries replace any suffix they overlap, as in a WAL.
		first := ents[0].Index
		m.ents = slices.DeleteFunc(m.ents, func(e raftpb.Entry) bool { return e.Index >= first })
		m.ents = append(m.ents, ents...)
		m.saves++
	}
	return nil
}

// errNoSpace is a write that found no space and changed nothing, as
// package storage reports one.
var errNoSpace error = noSpaceError{}

type noSpaceError struct{}

func (noSpaceError) Error() string { return "no space left on device" }
func (noSpaceError) NoSpace() bool { return true }

// gate lets a test stop Save: Save sends on blocked, then waits on release.
type gate struct{ blocked, release chan struct{} }

func (m *memStorage) SaveSnapshot(s raftpb.Snapshot) error {
	if m.full.Load() || m.snapFull.Load() {
		return errNoSpace
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snap = s
	return nil
}

func (m *memStorage) WriteSnapshot(meta raftpb.SnapshotMetadata, write func(io.Writer) error) (int64, error) {
	if m.snapFull.Load() {
		return 0, errNoSpace
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.written == nil {
		m.written = make(map[uint64]raftpb.Snapshot)
	}
	m.written[meta.Index] = raftpb.Snapshot{Metadata: meta, Data: buf.Bytes()}
	return int64(buf.Len()), nil
}

func (m *memStorage) MarkSnapshot(meta raftpb.SnapshotMetadata) error {
	if m.full.Load() {
		return errNoSpace
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	snap, ok := m.written[meta.Index]
	if !ok {
		return fmt.Errorf("snapshot %d marked before it was written", meta.Index)
	}
	delete(m.written, meta.Index)
	m.snap = snap
	return nil
}

func (m *memStorage) OpenSnapshot(meta raftpb.SnapshotMetadata) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.snap.Metadata.Index != meta.Index || m.snap.Metadata.Term != meta.Term {
		return nil, fmt.Errorf("no snapshot at %d/%d", meta.Index, meta.Term)
	}
	return io.NopCloser(bytes.NewReader(m.snap.Data)), nil
}

// lastIndex is the last index the storage holds, in its log or in its
// snapshot.
func (m *memStorage) lastIndex() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	index := m.snap.Metadata.Index
	if len(m.ents) > 0 {
		index = max(index, m.ents[len(m.ents)-1].Index)
	}
	return index
}

func (m *memStorage) snapIndex() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snap.Metadata.Index
}

func (m *memStorage) Compact(uint64) error { return nil }
func (m *memStorage) Close() error         { return nil }

// sumFSM adds up the uint64 carried by each normal entry.
type sumFSM struct {
	// holdSnapshot, if set, keeps every snapshot encoding waiting until it
	// is closed.
	holdSnapshot chan struct{}

	mu      sync.Mutex
	sum     uint64
	applied []uint64
	last    uint64 // the index of the last entry applied, of any kind
}

func (f *sumFSM) Apply(ents []raftpb.Entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range ents {
		f.last = e.Index
		if e.Type == raftpb.EntryNormal && len(e.Data) == 8 {
			v := binary.BigEndian.Uint64(e.Data)
			f.sum += v
			f.applied = append(f.applied, v)
		}
	}
}

func (f *sumFSM) BeginSnapshot() func(io.Writer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	data := binary.BigEndian.AppendUint64(nil, f.sum)
	hold := f.holdSnapshot
	return func(w io.Writer) error {
		if hold != nil {
			<-hold
		}
		_, err := w.Write(data)
		return err
	}
}

func (f *sumFSM) Restore(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(b) != 8 {
		return errors.New("bad snapshot")
	}
	f.sum = binary.BigEndian.Uint64(b)
	return nil
}

// appliedAll reports whether every value in from..to was applied.
func (f *sumFSM) appliedAll(from, to uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := uint64(0)
	for _, v := range f.applied {
		if v >= from && v <= to {
			n++
		}
	}
	return n == to-from+1
}

func (f *sumFSM) lastIndex() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func (f *sumFSM) state() (uint64, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sum, len(f.applied)
}

func start(t *testing.T, st *memStorage, fsm *sumFSM, snapCount uint64) *Node {
	t.Helper()
	n, err := Start(Config{ID: 1, Voters: []uint64{1}, TickInterval: 10 * time.Millisecond,
		ElectionTicks: 10, HeartbeatTicks: 1, SnapCount: snapCount, Storage: st, FSM: fsm})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func propose(n *Node, v uint64) {
	n.Propose(binary.BigEndian.AppendUint64(nil, v), func(error) {})
}

func TestProposalsApplyInOrderAndSurviveRestart(t *testing.T) {
	st, fsm := &memStorage{}, &sumFSM{}
	n := start(t, st, fsm, 50)
	for v := uint64(1); v <= 200; v++ {
		propose(n, v)
	}
	waitFor(t, "200 entries applied", func() bool { _, c := fsm.state(); return c == 200 })
	if !slices.IsSorted(fsm.applied) {
		t.Fatal("entries applied out of order")
	}
	waitFor(t, "a snapshot saved", func() bool { st.mu.Lock(); defer st.mu.Unlock(); return st.snap.Metadata.Index != 0 })
	n.Stop()
	n.Stop() // a second Stop is harmless
	if st.snap.Metadata.Index == 0 {
		t.Fatal("no snapshot taken with SnapCount 50")
	}

	// A restart restores the snapshot and replays the log after it.
	restored := &sumFSM{}
	n = start(t, st, restored, 50)
	defer n.Stop()
	want := uint64(200 * 201 / 2)
	waitFor(t, "state restored", func() bool { s, _ := restored.state(); return s == want })
	propose(n, 1000)
	waitFor(t, "new entry applied", func() bool { s, _ := restored.state(); return s == want+1000 })
}

func TestReadIndexWaitsForApply(t *testing.T) {
	st, fsm := &memStorage{}, &sumFSM{}
	n := start(t, st, fsm, 0)
	defer n.Stop()
	for v := uint64(1); v <= 20; v++ {
		propose(n, v)
	}
	done := make(chan uint64, 1)
	n.ReadIndex(func(index uint64, err error) {
		if err != nil {
			t.Error(err)
		}
		done <- index
	})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ReadIndex never answered")
	}
}

func TestStoppedNodeRefusesWork(t *testing.T) {
	n := start(t, &memStorage{}, &sumFSM{}, 0)
	n.Stop()
	failed := make(chan error, 1)
	n.Propose([]byte("x"), func(err error) { failed <- err })
	if err := <-failed; !errors.Is(err, ErrStopped) {
		t.Fatalf("Propose after Stop: %v", err)
	}
	n.ReadIndex(func(_ uint64, err error) { failed <- err })
	if err := <-failed; !errors.Is(err, ErrStopped) {
		t.Fatalf("ReadIndex after Stop: %v", err)
	}
}

// TestGroupCommit checks that proposals queued while the log is being
// written share the next write: one fsync for all of them.
func TestGroupCommit(t *testing.T) {
	st, fsm := &memStorage{}, &sumFSM{}
	n := start(t, st, fsm, 0)
	defer n.Stop()
	// The new leader's empty entry, after the bootstrap's, is written
	// before the test begins.
	waitFor(t, "the leader's first entry applied", func() bool { return fsm.lastIndex() >= 2 })
	st.mu.Lock()
	before := st.saves
	st.mu.Unlock()
	g := &gate{make(chan struct{}), make(chan struct{})}
	st.gate.Store(g)
	// Also when the test fails: the node stops only once its write ends.
	defer func() { st.gate.Store(nil); close(g.release) }()
	propose(n, 1)
	<-g.blocked // the first write is under way
	for v := uint64(2); v <= 101; v++ {
		propose(n, v)
	}
	// The loop goes on while the disk works: it hands the 100 entries to
	// the append goroutine, which is still writing the first.
	waitFor(t, "100 entries queued for the log", func() bool {
		n.appendq.mu.Lock()
		defer n.appendq.mu.Unlock()
		queued := 0
		for _, task := range n.appendq.items {
			queued += len(task.msg.Entries)
		}
		return queued == 100
	})
	g.release <- struct{}{}
	<-g.blocked // the second write: it must carry all 100 queued proposals
	st.gate.Store(nil)
	g.release <- struct{}{}
	waitFor(t, "101 entries applied", func() bool { _, c := fsm.state(); return c == 101 })
	st.mu.Lock()
	defer st.mu.Unlock()
	if got := st.saves - before; got != 2 {
		t.Fatalf("%d log writes for 101 proposals, 100 of them queued during the first write; want 2", got)
	}
}

// TestInMemoryLogIsTrimmed checks that applied entries do not pile up in
// memory between snapshots: by count, and by size for large entries.
func TestInMemoryLogIsTrimmed(t *testing.T) {
	st, fsm := &memStorage{}, &sumFSM{}
	n := start(t, st, fsm, 0)
	defer n.Stop()
	big := make([]byte, 1<<20)
	for range 200 {
		n.Propose(big, func(error) {})
	}
	for v := uint64(1); v <= 3*keepEntries; v++ {
		propose(n, v)
	}
	waitFor(t, "entries applied", func() bool { _, c := fsm.state(); return c == 3*keepEntries })
	// Ask the node's goroutine for its log bounds through a read, which
	// runs after the trim of the Ready that applied the last entry.
	done := make(chan struct{})
	n.ReadIndex(func(uint64, error) { close(done) })
	<-done
	n.Stop()
	first, _ := n.mem.FirstIndex()
	last, _ := n.mem.LastIndex()
	if kept := last - first + 1; kept > 2*keepEntries {
		t.Fatalf("in-memory log holds %d entries, want at most %d", kept, 2*keepEntries)
	}
	ents, _ := n.mem.Entries(first, last+1, math.MaxUint64)
	size := 0
	for _, e := range ents {
		size += len(e.Data)
	}
	if size > 2*keepBytes+len(big) {
		t.Fatalf("in-memory log holds %d bytes, want at most %d", size, 2*keepBytes)
	}
}

// TestSlowSnapshotWhileLogIsTrimmed: a snapshot still being encoded while
// the in-memory log is trimmed past its index must still be saved (a
// regression: raft's CreateSnapshot panicked on the compacted index).
func TestSlowSnapshotWhileLogIsTrimmed(t *testing.T) {
	st := &memStorage{}
	fsm := &sumFSM{holdSnapshot: make(chan struct{})}
	n := start(t, st, fsm, 100)
	defer n.Stop()
	total := uint64(3*keepEntries + 200)
	for v := uint64(1); v <= total; v++ {
		propose(n, v)
	}
	waitFor(t, "entries applied", func() bool { _, c := fsm.state(); return uint64(c) == total })
	close(fsm.holdSnapshot)
	waitFor(t, "the held snapshot saved", func() bool { st.mu.Lock(); defer st.mu.Unlock(); return st.snap.Metadata.Index != 0 })
	if err := n.Err(); err != nil {
		t.Fatal(err)
	}
}

// A server whose configuration lists other members than its data records
// refuses to start, naming both.
func TestStartRefusesOtherMembers(t *testing.T) {
	st := &memStorage{}
	startWith := func(voters, learners []uint64) (*Node, error) {
		return Start(Config{ID: 1, Voters: voters, Learners: learners, TickInterval: 10 * time.Millisecond,
			ElectionTicks: 10, HeartbeatTicks: 1, SnapCount: 1000, Storage: st, FSM: &sumFSM{}, Transport: dropAll{}})
	}
	n, err := startWith([]uint64{1, 2, 3}, nil) // records its members in the initial snapshot
	if err != nil {
		t.Fatal(err)
	}
	n.Stop()
	for _, c := range []struct {
		voters, learners []uint64
		want             string
	}{
		{[]uint64{1, 2, 3, 4}, nil, "lists voters 1 2 3 4 and observers none, but this server's data records voters 1 2 3 and observers none"},
		{[]uint64{1, 2}, []uint64{3}, "lists voters 1 2 and observers 3"},
	} {
		_, err := startWith(c.voters, c.learners)
		if !errors.Is(err, ErrMembers) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("start with voters %v, learners %v: got %v, want ErrMembers saying %q", c.voters, c.learners, err, c.want)
		}
	}
	// The recorded members start, in any order, and so do they with an
	// observer added.
	for _, learners := range [][]uint64{nil, {4}} {
		n, err = startWith([]uint64{3, 1, 2}, learners)
		if err != nil {
			t.Fatalf("start with learners %v: %v", learners, err)
		}
		n.Stop()
	}
}

// dropAll is a transport to nowhere.
type dropAll struct{}

func (dropAll) Send([]raftpb.Message) {}
