package storage_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/internal/smallfs"
	"github.com/collie-io/collie/server/storage"
)

// allocations fails the allocation of WAL blocks with ENOSPC for the files
// whose name matches while it is set, and counts the failures.
type allocations struct {
	match  atomic.Pointer[func(path string) bool]
	failed atomic.Int64
}

func failAllocations(t *testing.T) *allocations {
	a := &allocations{}
	storage.FailAllocations(t, func(path string) error {
		if m := a.match.Load(); m != nil && (*m)(path) {
			a.failed.Add(1)
			return &fs.PathError{Op: "fallocate", Path: path, Err: syscall.ENOSPC}
		}
		return nil
	})
	return a
}

func (a *allocations) fail(match func(path string) bool) { a.match.Store(&match) }
func (a *allocations) succeed()                          { a.match.Store(nil) }

func newSegments(path string) bool { return strings.HasSuffix(path, ".tmp") }

func wantNoSpace(t *testing.T, err error) {
	t.Helper()
	var retryable interface{ NoSpace() bool }
	if !errors.Is(err, storage.ErrNoSpace) || !errors.As(err, &retryable) || !retryable.NoSpace() {
		t.Fatalf("got %v, want an ErrNoSpace", err)
	}
}

// A cut that finds no space for the next segment does not fail the Save
// that filled the segment, whose records it made durable; the next Save
// fails with ErrNoSpace before it writes anything, and is made again
// once there is space, as raft does with an append it could not make.
func TestWALNoSpaceForTheNextSegment(t *testing.T) {
	const segment = 64 << 10
	storage.SetSegmentBytes(t, segment)
	storage.NoSpares(t)
	alloc := failAllocations(t)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)

	alloc.fail(newSegments)
	var saved []raftpb.Entry
	last := uint64(0)
	for alloc.failed.Load() == 0 {
		ents := entries(last+1, last+10, 1)
		mustSave(t, w, raftpb.HardState{Term: 1, Commit: last}, ents)
		saved = append(saved, ents...)
		last += 10
		if last > 100000 {
			t.Fatal("no cut after 100000 entries")
		}
	}
	if n := len(segmentFiles(t, dir)); n != 1 {
		t.Fatalf("%d segments after a cut without space, want 1", n)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) != 0 {
		t.Fatalf("unfinished segments left behind: %v", tmps)
	}

	// Appends fail, and write nothing: the entries they carried are saved
	// with other data once space is back, and only those are read.
	for range 3 {
		wantNoSpace(t, w.Save(raftpb.HardState{Term: 1, Commit: last}, entries(last+1, last+3, 1)))
		wantNoSpace(t, w.SaveSnapshot(storage.WALSnapshot{Index: last, Term: 1}))
	}
	alloc.succeed()
	ents := entries(last+1, last+3, 2)
	mustSave(t, w, raftpb.HardState{Term: 2, Commit: last + 3}, ents)
	saved = append(saved, ents...)
	if n := len(segmentFiles(t, dir)); n != 2 {
		t.Fatalf("%d segments once there was space, want 2", n)
	}
	mustClose(t, w)

	_, _, st, got := mustRead(t, dir, storage.WALSnapshot{})
	checkEntries(t, got, saved)
	if st.Term != 2 || st.Commit != last+3 {
		t.Fatalf("hard state %+v, want term 2 commit %d", st, last+3)
	}
}

// A Save that runs past the end of a full segment allocates the blocks it
// will write first: without space it fails with ErrNoSpace before writing.
func TestWALNoSpaceToExtendASegment(t *testing.T) {
	const segment = 64 << 10
	storage.SetSegmentBytes(t, segment)
	storage.NoSpares(t)
	alloc := failAllocations(t)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)

	alloc.fail(func(path string) bool { return !newSegments(path) })
	var saved []raftpb.Entry
	last := uint64(0)
	var err error
	for {
		ents := entries(last+1, last+10, 1)
		if err = w.Save(raftpb.HardState{Term: 1, Commit: last}, ents); err != nil {
			break
		}
		saved = append(saved, ents...)
		last += 10
		if last > 100000 {
			t.Fatal("no Save reached the end of the segment after 100000 entries")
		}
	}
	wantNoSpace(t, err)
	alloc.succeed()
	ents := entries(last+1, last+10, 2)
	mustSave(t, w, raftpb.HardState{Term: 2, Commit: last}, ents)
	saved = append(saved, ents...)
	mustClose(t, w)
	_, _, _, got := mustRead(t, dir, storage.WALSnapshot{})
	checkEntries(t, got, saved)
}

// Any other failure to make the next segment fails the WAL for good.
func TestWALFailedSegmentIsNotRetried(t *testing.T) {
	const segment = 64 << 10
	storage.SetSegmentBytes(t, segment)
	storage.NoSpares(t)
	storage.FailAllocations(t, func(path string) error {
		if newSegments(path) {
			return &fs.PathError{Op: "fallocate", Path: path, Err: syscall.EIO}
		}
		return nil
	})
	w := mustCreate(t, filepath.Join(t.TempDir(), "wal"), nil)
	var err error
	for last := uint64(0); err == nil; last += 10 {
		err = w.Save(raftpb.HardState{Term: 1, Commit: last}, entries(last+1, last+10, 1))
	}
	if errors.Is(err, storage.ErrNoSpace) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("cut failed with %v, want the EIO", err)
	}
	if again := w.Save(raftpb.HardState{Term: 1}, nil); !errors.Is(again, syscall.EIO) {
		t.Fatalf("Save after a failed cut: %v, want the first error again", again)
	}
}

// An fsync that fails, for want of space or not, is never tried again: a
// new segment whose fsync fails fails the WAL for good, although the
// segment was not in place yet.
func TestWALFailedSyncIsNotRetried(t *testing.T) {
	const segment = 64 << 10
	storage.SetSegmentBytes(t, segment)
	storage.NoSpares(t)
	storage.FailSyncs(t, func(path string) error {
		if newSegments(path) {
			return syscall.ENOSPC
		}
		return nil
	})
	w := mustCreate(t, filepath.Join(t.TempDir(), "wal"), nil)
	var err error
	for last := uint64(0); err == nil; last += 10 {
		err = w.Save(raftpb.HardState{Term: 1, Commit: last}, entries(last+1, last+10, 1))
	}
	if errors.Is(err, storage.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("cut failed with %v, want the fsync's ENOSPC, not an ErrNoSpace", err)
	}
	if again := w.Save(raftpb.HardState{Term: 1}, nil); !errors.Is(again, syscall.ENOSPC) || errors.Is(again, storage.ErrNoSpace) {
		t.Fatalf("Save after a failed fsync: %v, want the first error again", again)
	}
}

// On a real file system that fills up, appends and snapshot writes fail
// with ErrNoSpace and leave nothing behind; once space is freed they
// succeed, and the log holds exactly the appends that succeeded.
func TestDiskFullFileSystem(t *testing.T) {
	// A spare segment being prepared takes space and gives it back when
	// it cannot be finished: without spares, the space left is the
	// test's alone.
	storage.NoSpares(t)
	const segment = 256 << 10
	root := smallfs.Mount(t, 8<<20)
	walDir, snapDir := filepath.Join(root, "wal"), filepath.Join(root, "snap")
	d, err := storage.OpenDisk(walDir, snapDir, storage.Identity{Server: 1}, 3, segment, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.Close() }()
	if _, _, err := d.ReadLog(); err != nil {
		t.Fatal(err)
	}
	filler := smallfs.Fill(t, root, 3*segment)

	batch := func(first, term uint64) []raftpb.Entry {
		ents := make([]raftpb.Entry, 8)
		for i := range ents {
			ents[i] = raftpb.Entry{Index: first + uint64(i), Term: term, Data: bytes.Repeat([]byte{byte(term)}, 4096)}
		}
		return ents
	}
	var saved []raftpb.Entry
	last := uint64(0)
	for {
		ents := batch(last+1, 1)
		err := d.Save(raftpb.HardState{Term: 1, Commit: last}, ents)
		if err != nil {
			wantNoSpace(t, err)
			t.Logf("after %d entries: %v", last, err)
			break
		}
		saved = append(saved, ents...)
		last += uint64(len(ents))
		if last > 1<<20 {
			t.Fatal("the file system never filled up")
		}
	}
	// The log is not failed: it keeps refusing, for want of space only.
	wantNoSpace(t, d.Save(raftpb.HardState{Term: 1, Commit: last}, batch(last+1, 1)))

	meta := raftpb.SnapshotMetadata{Index: last, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{1}}}
	state := bytes.Repeat([]byte("state"), 1<<20)
	write := func(w io.Writer) error { _, err := w.Write(state); return err }
	_, err = d.WriteSnapshot(meta, write)
	wantNoSpace(t, err)
	if left, _ := filepath.Glob(filepath.Join(snapDir, "*.tmp")); len(left) != 0 {
		t.Fatalf("a snapshot that found no space left %v behind", left)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	ents := batch(last+1, 2)
	if err := d.Save(raftpb.HardState{Term: 2, Commit: last}, ents); err != nil {
		t.Fatalf("Save once space was freed: %v", err)
	}
	saved = append(saved, ents...)
	if _, err := d.WriteSnapshot(meta, write); err != nil {
		t.Fatalf("snapshot once space was freed: %v", err)
	}
	if err := d.MarkSnapshot(meta); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d, err = storage.OpenDisk(walDir, snapDir, storage.Identity{Server: 1}, 3, segment, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	got, r, err := d.LoadSnapshot()
	if err != nil || got.Index != meta.Index {
		t.Fatalf("snapshot after a restart: %+v, %v; want index %d", got, err, meta.Index)
	}
	r.Close()
	_, rest, err := d.ReadLog()
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, rest, saved[meta.Index:])
}
