package storage_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/collie-io/collie/server/storage"
	"go.etcd.io/raft/v3/raftpb"
)

// A WAL prepares its next segment ahead, cuts a tail that was only
// allocated as soon as that segment is ready, and keeps appending to a
// prepared tail until it is full.
func TestWALSpareSegments(t *testing.T) {
	const segment = 64 << 10
	storage.SetSegmentBytes(t, segment)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	spare := filepath.Join(dir, storage.SpareName)

	mustSave(t, w, raftpb.HardState{Term: 1, Commit: 0}, entries(1, 1, 1))
	storage.WaitSpare(w)
	if fi, err := os.Stat(spare); err != nil || fi.Size() != segment {
		t.Fatalf("spare segment after the first save: %v, %v; want %d bytes", fi, err, segment)
	}
	if n := len(segmentFiles(t, dir)); n != 1 {
		t.Fatalf("%d segments before the spare was used, want 1", n)
	}

	// The first segment was only allocated: the next save moves to the
	// spare although the segment is far from full.
	mustSave(t, w, raftpb.HardState{Term: 1, Commit: 1}, entries(2, 2, 1))
	segs := segmentFiles(t, dir)
	if len(segs) != 2 {
		t.Fatalf("%d segments after the spare was ready, want 2", len(segs))
	}
	if fi, err := os.Stat(segs[1]); err != nil || fi.Size() != segment {
		t.Fatalf("new tail %v, %v; want the spare's %d bytes", fi, err, segment)
	}

	// A tail that was a spare is kept until full, even with a new spare
	// ready.
	last := uint64(2)
	for range 5 {
		storage.WaitSpare(w)
		last++
		mustSave(t, w, raftpb.HardState{Term: 1, Commit: last - 1}, entries(last, last, 1))
	}
	if n := len(segmentFiles(t, dir)); n != 2 {
		t.Fatalf("%d segments after small saves to a prepared tail, want 2", n)
	}
	// Fill past the segment size: the cut takes the spare.
	for len(segmentFiles(t, dir)) < 3 {
		storage.WaitSpare(w)
		last++
		mustSave(t, w, raftpb.HardState{Term: 1, Commit: last - 1}, entries(last, last+9, 1))
		last += 9
		if last > 10000 {
			t.Fatal("no cut after 10000 entries")
		}
	}
	mustClose(t, w)
	if _, err := os.Stat(spare); !os.IsNotExist(err) {
		t.Fatalf("spare segment left after Close: %v", err)
	}

	w, _, st, got := mustRead(t, dir, storage.WALSnapshot{})
	defer mustClose(t, w)
	checkEntries(t, got, entries(1, last, 1))
	if st.Commit != last-10 {
		t.Errorf("commit %d, want %d", st.Commit, last-10)
	}
}

// A spare segment a crash left half written is removed at the next start,
// and the log reads as before.
func TestWALStaleSpareRemoved(t *testing.T) {
	storage.SetSegmentBytes(t, 64<<10)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	mustSave(t, w, raftpb.HardState{Term: 1, Commit: 3}, entries(1, 3, 1))
	mustClose(t, w)
	spare := filepath.Join(dir, storage.SpareName)
	if err := os.WriteFile(spare, []byte("half written"), 0o600); err != nil {
		t.Fatal(err)
	}

	w, _, _, got := mustRead(t, dir, storage.WALSnapshot{})
	checkEntries(t, got, entries(1, 3, 1))
	if _, err := os.Stat(spare); !os.IsNotExist(err) {
		t.Fatalf("stale spare segment still there after Open: %v", err)
	}
	mustSave(t, w, raftpb.HardState{Term: 1, Commit: 4}, entries(4, 4, 1))
	mustClose(t, w)
	w, _, _, got = mustRead(t, dir, storage.WALSnapshot{})
	defer mustClose(t, w)
	checkEntries(t, got, entries(1, 4, 1))
}

// A file system that refuses direct writes still gets its spares, written
// through the page cache, and the log reads back whole.
func TestWALSpareWithoutDirectWrites(t *testing.T) {
	const segment = 64 << 10
	storage.SetSegmentBytes(t, segment)
	root := t.TempDir()
	if !storage.MisalignDirectWrites(t, root) {
		t.Skip("this file system takes unaligned direct writes: nothing to fall back from")
	}
	dir := filepath.Join(root, "wal")
	w := mustCreate(t, dir, nil)
	mustSave(t, w, raftpb.HardState{Term: 1, Commit: 0}, entries(1, 1, 1))
	storage.WaitSpare(w)
	data, err := os.ReadFile(filepath.Join(dir, storage.SpareName))
	if err != nil || len(data) != segment {
		t.Fatalf("spare segment: %d bytes, %v; want %d", len(data), err, segment)
	}
	for i, b := range data {
		if b != 0 {
			t.Fatalf("spare segment byte %d is %#x, want 0", i, b)
		}
	}
	// The next save moves to the spare.
	mustSave(t, w, raftpb.HardState{Term: 1, Commit: 1}, entries(2, 2, 1))
	if n := len(segmentFiles(t, dir)); n != 2 {
		t.Fatalf("%d segments after the spare was ready, want 2", n)
	}
	mustClose(t, w)
	w, _, _, got := mustRead(t, dir, storage.WALSnapshot{})
	defer mustClose(t, w)
	checkEntries(t, got, entries(1, 2, 1))
}
