package storage_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/server/storage"
)

func newSnapshot(index, term uint64) raftpb.Snapshot {
	return raftpb.Snapshot{
		Data: fmt.Appendf(nil, "state at %d: %s", index, bytes.Repeat([]byte{byte(index)}, 1000)),
		Metadata: raftpb.SnapshotMetadata{
			Index:     index,
			Term:      term,
			ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}},
		},
	}
}

func mustSnapshotter(t *testing.T, dir string) *storage.Snapshotter {
	t.Helper()
	s, err := storage.NewSnapshotter(testLogger(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func checkSnapshot(t *testing.T, got *storage.Snapshot, want raftpb.Snapshot) {
	t.Helper()
	if got == nil {
		t.Fatalf("no snapshot, want index %d", want.Metadata.Index)
	}
	r, err := got.Open()
	if err != nil {
		t.Fatalf("open snapshot %d: %v", got.Metadata.Index, err)
	}
	data, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		t.Fatalf("read snapshot %d: %v", got.Metadata.Index, err)
	}
	if !bytes.Equal(data, want.Data) || got.Size() != int64(len(data)) || got.Metadata.Index != want.Metadata.Index ||
		got.Metadata.Term != want.Metadata.Term ||
		!slices.Equal(got.Metadata.ConfState.Voters, want.Metadata.ConfState.Voters) ||
		!slices.Equal(got.Metadata.ConfState.Learners, want.Metadata.ConfState.Learners) {
		t.Fatalf("got snapshot %d/%d %q, want %d/%d", got.Metadata.Index, got.Metadata.Term,
			data[:min(len(data), 20)], want.Metadata.Index, want.Metadata.Term)
	}
}

// snapFiles returns the names in dir, sorted.
func snapFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestSnapshotterSaveLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	s := mustSnapshotter(t, dir)
	if _, err := s.Load(); !errors.Is(err, storage.ErrNoSnapshot) {
		t.Fatalf("Load of an empty directory: %v, want ErrNoSnapshot", err)
	}
	// An empty snapshot is nothing to save.
	mustCheck(t, s.Save(raftpb.Snapshot{}))
	for _, snap := range []raftpb.Snapshot{newSnapshot(10, 1), newSnapshot(300, 2), newSnapshot(20, 1)} {
		mustCheck(t, s.Save(snap))
	}
	want := []string{
		"0000000000000001-000000000000000a.snap",
		"0000000000000001-0000000000000014.snap",
		"0000000000000002-000000000000012c.snap",
	}
	if got := snapFiles(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	got, err := mustSnapshotter(t, dir).Load()
	mustCheck(t, err)
	checkSnapshot(t, got, newSnapshot(300, 2))
}

func TestSnapshotterSkipsBrokenFiles(t *testing.T) {
	newest := "0000000000000002-0000000000000014.snap"
	for _, tc := range []struct {
		name   string
		damage func(path string) error
	}{
		{"flipped payload byte", func(path string) error {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 1
			return os.WriteFile(path, b, 0o600)
		}},
		{"flipped metadata byte", func(path string) error { return flipByte(path, 14) }},
		// A damaged version field is damage, not a file of another version.
		{"flipped version bit", func(path string) error { return flipByte(path, 4) }},
		{"zeroed version", func(path string) error {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			clear(b[4:8])
			return os.WriteFile(path, b, 0o600)
		}},
		{"flipped checksum byte", func(path string) error { return flipByte(path, -6) }},
		{"flipped length byte", func(path string) error { return flipByte(path, -16) }},
		{"cut short", func(path string) error { return os.Truncate(path, 300) }},
		{"last byte missing", func(path string) error {
			info, err := os.Stat(path)
			if err != nil {
				return err
			}
			return os.Truncate(path, info.Size()-1)
		}},
		{"empty", func(path string) error { return os.Truncate(path, 0) }},
		{"header only", func(path string) error { return os.Truncate(path, 20) }},
		{"not a snapshot", func(path string) error { return os.WriteFile(path, []byte("hello, world, how are you"), 0o600) }},
		{"named after another snapshot", func(path string) error {
			dir := filepath.Dir(path)
			return os.Rename(filepath.Join(dir, "0000000000000001-000000000000000a.snap"), path)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "snap")
			s := mustSnapshotter(t, dir)
			mustCheck(t, s.Save(newSnapshot(10, 1)))
			mustCheck(t, s.Save(newSnapshot(15, 1)))
			mustCheck(t, s.Save(newSnapshot(20, 2)))
			mustCheck(t, tc.damage(filepath.Join(dir, newest)))

			got, err := s.Load()
			mustCheck(t, err)
			checkSnapshot(t, got, newSnapshot(15, 1))
			if _, err := os.Stat(filepath.Join(dir, newest+".broken")); err != nil {
				t.Fatalf("broken file not set aside: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, newest)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("broken file still in use: %v", err)
			}
		})
	}
}

// flipByte changes one bit of the byte at off, counted from the end when
// negative.
func flipByte(path string, off int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if off < 0 {
		off += len(b)
	}
	b[off] ^= 1
	return os.WriteFile(path, b, 0o600)
}

func TestSnapshotterWriteStreams(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	s := mustSnapshotter(t, dir)
	meta := raftpb.SnapshotMetadata{Index: 7, Term: 3, ConfState: raftpb.ConfState{Voters: []uint64{1}}}
	// Written in many small pieces, several megabytes in all.
	var want bytes.Buffer
	size, err := s.Write(meta, func(w io.Writer) error {
		for i := range 100_000 {
			piece := fmt.Appendf(nil, "node %d;", i)
			want.Write(piece)
			if _, err := w.Write(piece); err != nil {
				return err
			}
		}
		return nil
	})
	mustCheck(t, err)
	if size != int64(want.Len()) {
		t.Fatalf("Write returned size %d, wrote %d", size, want.Len())
	}
	got, err := mustSnapshotter(t, dir).Load()
	mustCheck(t, err)
	checkSnapshot(t, got, raftpb.Snapshot{Metadata: meta, Data: want.Bytes()})

	// A write that fails leaves no file behind, and the older snapshot.
	failure := errors.New("encoder failed")
	_, err = s.Write(raftpb.SnapshotMetadata{Index: 9, Term: 3}, func(w io.Writer) error {
		w.Write([]byte("half of it"))
		return failure
	})
	if !errors.Is(err, failure) {
		t.Fatalf("Write with a failing encoder: %v, want its error", err)
	}
	if files := snapFiles(t, dir); !slices.Equal(files, []string{"0000000000000003-0000000000000007.snap"}) {
		t.Fatalf("files after a failed write: %v", files)
	}
}

func TestSnapshotterRefusesOtherVersions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	s := mustSnapshotter(t, dir)
	mustCheck(t, s.Save(newSnapshot(10, 1)))
	path := filepath.Join(dir, "0000000000000001-000000000000000a.snap")
	b, err := os.ReadFile(path)
	mustCheck(t, err)
	// A file of another version has a layout this one does not know: it
	// does not check out as version 2, whose checks span the whole file.
	b = append(b[:8:8], "a layout of the future, with its own trailer"...)
	b[4] = 9 // the format version
	mustCheck(t, os.WriteFile(path, b, 0o600))
	// Not damage to skip: a snapshot of another version is the operator's
	// to sort out, and is left where it is.
	_, err = s.Load()
	if err == nil || errors.Is(err, storage.ErrCorrupt) || errors.Is(err, storage.ErrNoSnapshot) {
		t.Fatalf("Load of a version 9 file: %v, want an error that is not ErrCorrupt", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("file of another version was moved: %v", err)
	}
}

func TestSnapshotterLoadNewestAvailable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	s := mustSnapshotter(t, dir)
	for _, snap := range []raftpb.Snapshot{newSnapshot(10, 1), newSnapshot(20, 1), newSnapshot(30, 2)} {
		mustCheck(t, s.Save(snap))
	}
	for _, tc := range []struct {
		name string
		wal  []storage.WALSnapshot
		want storage.WALSnapshot // zero: ErrNoSnapshot
	}{
		{"newest has no WAL record", []storage.WALSnapshot{{}, {Index: 10, Term: 1}, {Index: 20, Term: 1}}, storage.WALSnapshot{Index: 20, Term: 1}},
		{"all recorded", []storage.WALSnapshot{{}, {Index: 10, Term: 1}, {Index: 20, Term: 1}, {Index: 30, Term: 2}}, storage.WALSnapshot{Index: 30, Term: 2}},
		{"term differs", []storage.WALSnapshot{{Index: 10, Term: 1}, {Index: 30, Term: 1}}, storage.WALSnapshot{Index: 10, Term: 1}},
		{"none recorded", []storage.WALSnapshot{{}}, storage.WALSnapshot{}},
		{"no WAL records", nil, storage.WALSnapshot{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.LoadNewestAvailable(tc.wal)
			if tc.want == (storage.WALSnapshot{}) {
				if !errors.Is(err, storage.ErrNoSnapshot) {
					t.Fatalf("got %v, want ErrNoSnapshot", err)
				}
				return
			}
			mustCheck(t, err)
			checkSnapshot(t, got, newSnapshot(tc.want.Index, tc.want.Term))
		})
	}
}

func TestSnapshotterPurge(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	s := mustSnapshotter(t, dir)
	oldest, err := s.Purge(3)
	if err != nil || oldest != 0 {
		t.Fatalf("Purge with no snapshots: %d, %v", oldest, err)
	}
	for i := uint64(1); i <= 5; i++ {
		mustCheck(t, s.Save(newSnapshot(i*100, 1)))
	}
	if _, err := s.Purge(0); err == nil {
		t.Fatal("Purge(0) removed every snapshot")
	}
	for _, tc := range []struct {
		keep   int
		oldest uint64
		left   int
	}{
		{10, 100, 5},
		{3, 300, 3},
		{1, 500, 1},
	} {
		oldest, err := s.Purge(tc.keep)
		mustCheck(t, err)
		if oldest != tc.oldest || len(snapFiles(t, dir)) != tc.left {
			t.Errorf("Purge(%d): oldest kept %d, files %v; want %d, %d files", tc.keep, oldest, snapFiles(t, dir), tc.oldest, tc.left)
		}
	}
	got, err := s.Load()
	mustCheck(t, err)
	checkSnapshot(t, got, newSnapshot(500, 1))
}

func TestNewSnapshotterCleansUp(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{
		"0000000000000001-0000000000000001.snap.broken",
		"0000000000000001-0000000000000002.snap.broken",
		"0000000000000001-0000000000000003.snap.tmp",
		"db",
	} {
		mustCheck(t, os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600))
	}
	mustSnapshotter(t, dir)
	want := []string{"0000000000000001-0000000000000002.snap.broken", "db"}
	if got := snapFiles(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
}
