package storage_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-io/collie/server/storage"
	"go.etcd.io/raft/v3/raftpb"
)

// A snapshot written and marked through a Disk can be opened again by its
// metadata, for sending it to another member; another term cannot.
func TestDiskOpenSnapshot(t *testing.T) {
	dir := t.TempDir()
	d, err := storage.OpenDisk(filepath.Join(dir, "wal"), filepath.Join(dir, "snap"), storage.Identity{Server: 1}, 3, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, _, err := d.ReadLog(); err != nil {
		t.Fatal(err)
	}
	ents := []raftpb.Entry{{Index: 1, Term: 1}, {Index: 2, Term: 1}}
	if err := d.Save(raftpb.HardState{Term: 1, Commit: 2}, ents); err != nil {
		t.Fatal(err)
	}
	meta := raftpb.SnapshotMetadata{Index: 2, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}}}
	data := bytes.Repeat([]byte("state "), 10000)
	if _, err := d.WriteSnapshot(meta, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		t.Fatal(err)
	}
	if err := d.MarkSnapshot(meta); err != nil {
		t.Fatal(err)
	}
	r, err := d.OpenSnapshot(meta)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, %v; want the %d written", len(got), err, len(data))
	}
	if _, err := d.OpenSnapshot(raftpb.SnapshotMetadata{Index: 2, Term: 2}); err == nil {
		t.Fatal("opened a snapshot at a term that was never written")
	}
}

// The first segment a Disk creates has the configured size, not the
// default's 64 MiB: a small disk configured for small segments must not
// be refused at the first start.
func TestDiskFirstSegmentSize(t *testing.T) {
	const size = 256 << 10
	dir := t.TempDir()
	walDir := filepath.Join(dir, "wal")
	d, err := storage.OpenDisk(walDir, filepath.Join(dir, "snap"), storage.Identity{Server: 1}, 3, size, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	segs := segmentFiles(t, walDir)
	if len(segs) != 1 {
		t.Fatalf("%d segments in a new WAL, want 1", len(segs))
	}
	fi, err := os.Stat(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != size {
		t.Fatalf("first segment of %d bytes, want %d", fi.Size(), size)
	}
}

// A damaged snapshot that no older snapshot can stand in for, since the
// log was purged up to it, stops the start with an error that says so and
// names the file, at this start and the next.
func TestDiskDamagedSnapshotWithoutFallback(t *testing.T) {
	storage.SetSegmentBytes(t, 4<<10)
	root := t.TempDir()
	walDir, snapDir := filepath.Join(root, "wal"), filepath.Join(root, "snap")
	d, err := storage.OpenDisk(walDir, snapDir, storage.Identity{Server: 1}, 1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.ReadLog(); err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < 20; i++ {
		if err := d.Save(raftpb.HardState{Term: 1, Commit: i*10 + 10}, entries(i*10+1, i*10+10, 1)); err != nil {
			t.Fatal(err)
		}
	}
	meta := raftpb.SnapshotMetadata{Index: 150, Term: 1}
	if _, err := d.WriteSnapshot(meta, func(w io.Writer) error { _, err := w.Write([]byte("state")); return err }); err != nil {
		t.Fatal(err)
	}
	if err := d.MarkSnapshot(meta); err != nil {
		t.Fatal(err)
	}
	if err := d.Compact(150); err != nil {
		t.Fatal(err)
	}
	d.Close()
	snap := filepath.Join(snapDir, "0000000000000001-0000000000000096.snap")
	if err := flipByte(snap, -10); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		d, err := storage.OpenDisk(walDir, snapDir, storage.Identity{Server: 1}, 1, 0, nil)
		if err == nil {
			_, _, err = d.ReadLog()
			d.Close()
		}
		if !errors.Is(err, storage.ErrCorrupt) || !strings.Contains(err.Error(), snap) {
			t.Fatalf("open: %v; want an error that matches ErrCorrupt and names %s", err, snap)
		}
	}
}

// Segments are whole pages long, whatever size they are asked to be: a
// crash during an append that runs past the preallocated end must leave a
// file of whole pages, as the tail rule expects of appends.
func TestDiskSegmentsAreWholePages(t *testing.T) {
	storage.NoSpares(t)
	root := t.TempDir()
	walDir := filepath.Join(root, "wal")
	d, err := storage.OpenDisk(walDir, filepath.Join(root, "snap"), storage.Identity{Server: 1}, 1, 5<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, _, err := d.ReadLog(); err != nil {
		t.Fatal(err)
	}
	if err := d.Save(raftpb.HardState{Term: 1, Commit: 1}, entries(1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	segs, err := filepath.Glob(filepath.Join(walDir, "*.wal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		if fi, err := os.Stat(s); err != nil || fi.Size()%4096 != 0 {
			t.Fatalf("%s: %v, %v; want whole pages", s, fi.Size(), err)
		}
	}
}
