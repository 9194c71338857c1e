package replication

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/server/storage"
)

// faultyDisk is a storage.Disk whose writes fail once a test says so, as
// a disk whose fsync fails makes them.
type faultyDisk struct {
	*storage.Disk
	failSaves     atomic.Bool // Saves of entries fail
	failSnapshots atomic.Bool // snapshot files are written, but fail
	// failed is set once a Save failed, on the goroutine that appends;
	// retried counts the writes asked for after it.
	failed  atomic.Bool
	retried atomic.Int64
	// snapFailed is the index of the snapshot whose file failed.
	snapFailed atomic.Uint64

	mu      sync.Mutex
	durable []uint64 // the values of the entries Saves made durable
	marked  []uint64 // the snapshots recorded
}

var errInjected = fmt.Errorf("injected: %w", syscall.EIO)

func (d *faultyDisk) noteWrite() {
	if d.failed.Load() {
		d.retried.Add(1)
	}
}

func (d *faultyDisk) Save(st raftpb.HardState, ents []raftpb.Entry) error {
	d.noteWrite()
	if d.failSaves.Load() && len(ents) > 0 {
		d.failed.Store(true)
		return fmt.Errorf("storage: append to WAL: %w", errInjected)
	}
	if err := d.Disk.Save(st, ents); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range ents {
		if len(e.Data) == 8 {
			// An entry saved again replaces the one before, with the
			// entries after it.
			d.durable = slices.DeleteFunc(d.durable, func(v uint64) bool { return v >= e.Index<<32 })
			d.durable = append(d.durable, e.Index<<32|binary.BigEndian.Uint64(e.Data))
		}
	}
	return nil
}

func (d *faultyDisk) WriteSnapshot(meta raftpb.SnapshotMetadata, write func(io.Writer) error) (int64, error) {
	n, err := d.Disk.WriteSnapshot(meta, write)
	if err == nil && d.failSnapshots.Load() {
		// As when the file was renamed into place but the directory's
		// fsync failed: the file is there, and not durable.
		d.snapFailed.Store(meta.Index)
		err = fmt.Errorf("storage: save snapshot: %w", errInjected)
	}
	return n, err
}

func (d *faultyDisk) MarkSnapshot(meta raftpb.SnapshotMetadata) error {
	d.noteWrite()
	d.mu.Lock()
	d.marked = append(d.marked, meta.Index)
	d.mu.Unlock()
	return d.Disk.MarkSnapshot(meta)
}

func (d *faultyDisk) SaveSnapshot(snap raftpb.Snapshot) error {
	d.noteWrite()
	return d.Disk.SaveSnapshot(snap)
}

// durableValues returns the values of the durable entries, in log order.
func (d *faultyDisk) durableValues() []uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var vs []uint64
	for _, v := range d.durable {
		vs = append(vs, v&(1<<32-1))
	}
	return vs
}

// syncBuffer is a bytes.Buffer for a logger that several goroutines use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startOnDisk(t *testing.T, dir string, snapCount uint64, logs io.Writer) (*Node, *faultyDisk, *sumFSM) {
	t.Helper()
	d, err := storage.OpenDisk(filepath.Join(dir, "wal"), filepath.Join(dir, "snap"), storage.Identity{Server: 1}, 3, 64<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	fd, fsm := &faultyDisk{Disk: d}, &sumFSM{}
	n, err := Start(Config{ID: 1, Voters: []uint64{1}, TickInterval: 10 * time.Millisecond,
		ElectionTicks: 10, HeartbeatTicks: 1, SnapCount: snapCount, Storage: fd, FSM: fsm,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	return n, fd, fsm
}

// waitStopped waits for a node to stop on its own and returns its error.
func waitStopped(t *testing.T, n *Node) error {
	t.Helper()
	select {
	case <-n.Done():
		return n.Err()
	case <-time.After(10 * time.Second):
		t.Fatal("the node did not stop")
		return nil
	}
}

// A node whose disk fails a write stops at once, never tries the write
// again, says so, and fails what waits; a node started again on the same
// files has every entry that was made durable and none other.
func TestDiskFailureStopsNode(t *testing.T) {
	for _, tc := range []struct {
		name string
		arm  func(*faultyDisk)
	}{
		{"log append", func(d *faultyDisk) { d.failSaves.Store(true) }},
		{"snapshot", func(d *faultyDisk) { d.failSnapshots.Store(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var logs syncBuffer
			n, fd, fsm := startOnDisk(t, dir, 20, &logs)
			for v := uint64(1); v <= 50; v++ {
				propose(n, v)
			}
			waitFor(t, "50 entries applied", func() bool { return fsm.appliedAll(1, 50) })

			tc.arm(fd)
			failed := func() bool { return fd.failed.Load() || fd.snapFailed.Load() != 0 }
			for v := uint64(51); v <= 100 && !failed(); v++ {
				propose(n, v)
				waitFor(t, "the entry applied or the disk failed", func() bool { return fsm.appliedAll(v, v) || failed() })
			}
			err := waitStopped(t, n)
			if !errors.Is(err, ErrStorageFailed) || !errors.Is(err, errInjected) {
				t.Fatalf("node stopped with %v, want ErrStorageFailed wrapping the disk's error", err)
			}
			if !strings.Contains(logs.String(), "the disk failed a write, which is not tried again; a restart recovers what reached the disk") {
				t.Errorf("no log line says the disk failed:\n%s", logs.String())
			}
			if r := fd.retried.Load(); r != 0 {
				t.Errorf("%d writes after the failure", r)
			}
			dropped := make(chan error, 1)
			n.Propose([]byte("after"), func(err error) { dropped <- err })
			if err := <-dropped; err == nil {
				t.Error("a proposal to the stopped node did not fail")
			}
			durable := fd.durableValues()
			fd.mu.Lock()
			marked := slices.Clone(fd.marked)
			fd.mu.Unlock()
			// A snapshot whose file failed is not recorded.
			if i := fd.snapFailed.Load(); i != 0 && slices.Contains(marked, i) {
				t.Errorf("the snapshot at %d, whose file failed, was recorded", i)
			}
			marks, err := storage.ValidSnapshotEntries(filepath.Join(dir, "wal"))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range marks {
				if m.Index != 0 && !slices.Contains(marked, m.Index) {
					t.Errorf("the WAL records a snapshot at %d that was never marked", m.Index)
				}
			}

			// Started again: the durable entries, and a new one after them.
			n2, _, fsm2 := startOnDisk(t, dir, 20, io.Discard)
			propose(n2, 1000)
			waitFor(t, "the new entry applied", func() bool { return fsm2.appliedAll(1000, 1000) })
			want := append(slices.Clone(durable), 1000)
			sum, _ := fsm2.state()
			var wantSum uint64
			for _, v := range want {
				wantSum += v
			}
			if sum != wantSum {
				t.Errorf("state after restart sums to %d, want %d (the durable entries %v and 1000)", sum, wantSum, durable)
			}
			if got := fsm2.appliedValues(); !slices.Equal(got, want[len(want)-len(got):]) {
				t.Errorf("replayed %v, want the end of %v", got, want)
			}
			n2.Stop()
		})
	}
}

func (f *sumFSM) appliedValues() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.applied)
}
