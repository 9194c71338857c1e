package storage_test

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/server/storage"
)

// failWhen returns a FileHook that, once armed, fails the first operation
// op on a file that match accepts with EIO, and lets every other through.
func failWhen(op string, match func(path string) bool) (hook func(op, path string) error, armed *atomic.Bool, failed *atomic.Bool) {
	armed, failed = new(atomic.Bool), new(atomic.Bool)
	return func(o, path string) error {
		if o == op && armed.Load() && match(path) && !failed.Swap(true) {
			return fmt.Errorf("injected: %w", syscall.EIO)
		}
		return nil
	}, armed, failed
}

// After a failed write or fsync, the WAL refuses every further append with
// the first error, and a restart reads back exactly what was made durable:
// the acknowledged entries, and those of the failed append only when the
// failure came after they were made durable. After a failed fsync the
// kernel may have dropped the pages it could not write while still serving
// them from its cache; a restart that read them back would take records
// that never reached the disk for durable ones.
func TestWALFailedWrites(t *testing.T) {
	for _, tc := range []struct {
		name, op string
		match    func(dir, path string) bool
		// durable: the failed append's entries were made durable before
		// the failure.
		durable bool
	}{
		{"fdatasync of an append", "fdatasync", isSegment, false},
		{"write of an append", "write", isSegment, false},
		{"fsync of a full segment at a cut", "fsync", isSegment, false},
		{"fdatasync of a new segment", "fdatasync", func(_, path string) bool { return strings.HasSuffix(path, ".wal.tmp") }, true},
		{"rename of a new segment", "rename", isSegment, true},
		{"fsync of the directory at a cut", "fsync", func(dir, path string) bool { return path == dir }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storage.NoSpares(t)
			storage.SetSegmentBytes(t, 8<<10)
			root := t.TempDir()
			walDir, snapDir := filepath.Join(root, "wal"), filepath.Join(root, "snap")
			hook, armed, failed := failWhen(tc.op, func(path string) bool { return tc.match(walDir, path) })
			storage.FileHook(t, hook)

			d, _ := mustOpenDisk(t, walDir, snapDir)
			var acked []raftpb.Entry
			save := func(from uint64) ([]raftpb.Entry, error) {
				ents := entries(from, from+4, 1)
				return ents, d.Save(raftpb.HardState{Term: 1, Commit: from - 1}, ents)
			}
			for len(acked) < 20 {
				ents, err := save(uint64(len(acked)) + 1)
				mustCheck(t, err)
				acked = append(acked, ents...)
			}
			armed.Store(true)
			var first error
			var lost []raftpb.Entry
			for first == nil {
				if len(acked) > 2000 {
					t.Fatal("no failure after 2000 entries")
				}
				lost, first = save(uint64(len(acked)) + 1)
				if first == nil {
					acked = append(acked, lost...)
				}
			}
			if !failed.Load() || !errors.Is(first, syscall.EIO) {
				t.Fatalf("Save: %v, want the injected failure", first)
			}
			for _, again := range []error{
				d.Save(raftpb.HardState{Term: 1}, entries(uint64(len(acked))+1, uint64(len(acked))+1, 1)),
				d.Save(raftpb.HardState{Term: 2, Vote: 1}, nil),
				d.MarkSnapshot(raftpb.SnapshotMetadata{Index: 5, Term: 1}),
			} {
				if again != first {
					t.Fatalf("append after the failure: %v, want the first error %v", again, first)
				}
			}
			mustCheck(t, d.Close())

			want := acked
			if tc.durable {
				want = append(slices.Clone(acked), lost...)
			}
			d, l := mustOpenDisk(t, walDir, snapDir)
			checkEntries(t, l.ents, want)
			// The log goes on from there.
			next := entries(uint64(len(want))+1, uint64(len(want))+1, 2)
			mustCheck(t, d.Save(raftpb.HardState{Term: 2, Commit: next[0].Index}, next))
			mustCheck(t, d.Close())
			d, l = mustOpenDisk(t, walDir, snapDir)
			checkEntries(t, l.ents, append(want, next...))
			mustCheck(t, d.Close())
		})
	}
}

func isSegment(_, path string) bool { return strings.HasSuffix(path, ".wal") }

// A snapshot whose file could not be made durable is not recorded in the
// WAL: a restart loads the one before it, and the WAL goes on.
func TestSnapshotFailedWrites(t *testing.T) {
	for _, tc := range []struct {
		name, op string
		match    func(snapDir, path string) bool
	}{
		{"fsync of the file", "fsync", func(_, path string) bool { return strings.HasSuffix(path, ".snap.tmp") }},
		{"rename of the file", "rename", func(_, path string) bool { return strings.HasSuffix(path, ".snap") }},
		{"fsync of the directory", "fsync", func(dir, path string) bool { return path == dir }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			walDir, snapDir := filepath.Join(root, "wal"), filepath.Join(root, "snap")
			hook, armed, failed := failWhen(tc.op, func(path string) bool { return tc.match(snapDir, path) })
			storage.FileHook(t, hook)

			d, _ := mustOpenDisk(t, walDir, snapDir)
			mustCheck(t, d.Save(raftpb.HardState{Term: 1, Commit: 20}, entries(1, 20, 1)))
			mustCheck(t, d.SaveSnapshot(snapshotAt(10)))
			armed.Store(true)
			// As a received snapshot is: the file, then its mark.
			if err := d.SaveSnapshot(snapshotAt(20)); !errors.Is(err, syscall.EIO) || !failed.Load() {
				t.Fatalf("SaveSnapshot: %v, want the injected failure", err)
			}
			// As the node writes its own: the mark only once the file is
			// durable, which it is not.
			write := func(w io.Writer) error { _, err := w.Write(snapshotAt(20).Data); return err }
			failed.Store(false)
			if _, err := d.WriteSnapshot(snapshotAt(20).Metadata, write); !errors.Is(err, syscall.EIO) || !failed.Load() {
				t.Fatalf("WriteSnapshot: %v, want the injected failure", err)
			}
			marks, err := storage.ValidSnapshotEntries(walDir)
			mustCheck(t, err)
			if slices.Contains(marks, (storage.WALSnapshot{Index: 20, Term: 1})) {
				t.Fatalf("the WAL records the snapshot that failed: %v", marks)
			}
			mustCheck(t, d.Save(raftpb.HardState{Term: 1, Commit: 21}, entries(21, 21, 1)))
			mustCheck(t, d.Close())

			_, l := mustOpenDisk(t, walDir, snapDir)
			if l.snap.Index != 10 || string(l.snapData) != string(snapshotAt(10).Data) {
				t.Fatalf("loaded snapshot %d %q, want the one at 10", l.snap.Index, l.snapData)
			}
			checkEntries(t, l.ents, entries(11, 21, 1))
			left, err := filepath.Glob(filepath.Join(snapDir, "*.tmp"))
			mustCheck(t, err)
			if len(left) > 0 {
				t.Errorf("unfinished snapshot files left: %v", left)
			}
		})
	}
}

func snapshotAt(index uint64) raftpb.Snapshot {
	return raftpb.Snapshot{
		Metadata: raftpb.SnapshotMetadata{Index: index, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{1}}},
		Data:     fmt.Appendf(nil, "state at %d", index),
	}
}

// loaded is what a Disk held when it was opened.
type loaded struct {
	snap     raftpb.SnapshotMetadata
	snapData []byte
	st       raftpb.HardState
	ents     []raftpb.Entry
}

// mustOpenDisk opens a Disk and reads its snapshot and log, which leaves it
// ready for appends.
func mustOpenDisk(t *testing.T, walDir, snapDir string) (*storage.Disk, loaded) {
	t.Helper()
	d, l, err := openDisk(t, walDir, snapDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, l
}

func openDisk(t *testing.T, walDir, snapDir string) (*storage.Disk, loaded, error) {
	t.Helper()
	d, err := storage.OpenDisk(walDir, snapDir, storage.Identity{Server: 1}, 3, 0, testLogger(t))
	if err != nil {
		return nil, loaded{}, err
	}
	var l loaded
	var data io.ReadCloser
	if l.snap, data, err = d.LoadSnapshot(); err == nil && data != nil {
		l.snapData, err = io.ReadAll(data)
		data.Close()
	}
	if err == nil {
		l.st, l.ents, err = d.ReadLog()
	}
	if err != nil {
		d.Close()
		return nil, loaded{}, err
	}
	return d, l, nil
}
