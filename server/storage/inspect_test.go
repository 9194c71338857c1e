package storage_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/server/storage"
)

// dirContents returns the contents of every file in dir, by name.
func dirContents(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}

// TestReadLogMatchesReadAll: over several segments, a snapshot record,
// entries a new term overwrote and a torn tail, ReadLog returns what
// ReadAll returns, from the start and from the snapshot, and changes no
// byte, where ReadAll truncates the torn tail.
func TestReadLogMatchesReadAll(t *testing.T) {
	storage.NoSpares(t)
	storage.SetSegmentBytes(t, 4<<10)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, []byte("meta"))
	for i := uint64(0); i < 30; i++ {
		mustSave(t, w, raftpb.HardState{Term: 1, Vote: 1, Commit: i * 10}, entries(i*10+1, i*10+10, 1))
	}
	mustCheck(t, w.SaveSnapshot(storage.WALSnapshot{Index: 60, Term: 1}))
	mustSave(t, w, raftpb.HardState{Term: 2, Vote: 2, Commit: 295}, entries(295, 310, 2))
	mustSave(t, w, raftpb.HardState{}, entries(311, 311, 2))
	mustClose(t, w)
	segs := segmentFiles(t, dir)
	if len(segs) < 4 {
		t.Fatalf("%d segments", len(segs))
	}
	// Entry 311 torn as a crash leaves it: its sector with the length
	// word never reached the disk, the rest of the record did.
	editSegment(t, segs[len(segs)-1], func(b []byte) []byte {
		spans := recordSpans(b)
		last := spans[len(spans)-1]
		clear(b[last[0] : last[0]+8])
		return b
	})
	before := dirContents(t, dir)

	for _, at := range []storage.WALSnapshot{{}, {Index: 60, Term: 1}} {
		// As damaged: ReadAll below truncates the tail.
		for name, content := range before {
			mustCheck(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
		}
		meta, st, ents, err := storage.ReadLog(dir, at)
		if err != nil {
			t.Fatalf("ReadLog at %d: %v", at.Index, err)
		}
		if !maps.Equal(dirContents(t, dir), before) {
			t.Fatalf("ReadLog at %d changed the WAL", at.Index)
		}
		if string(meta) != "meta" || st != (raftpb.HardState{Term: 2, Vote: 2, Commit: 295}) {
			t.Errorf("ReadLog at %d: metadata %q, hard state %+v", at.Index, meta, st)
		}
		w, wantMeta, wantSt, want := mustRead(t, dir, at)
		mustClose(t, w)
		if string(meta) != string(wantMeta) || st != wantSt {
			t.Errorf("ReadLog at %d: %q %+v; ReadAll: %q %+v", at.Index, meta, st, wantMeta, wantSt)
		}
		checkEntries(t, ents, want)
		checkEntries(t, ents, slices.Concat(entries(at.Index+1, 294, 1), entries(295, 310, 2)))
	}

	if _, _, _, err := storage.ReadLog(dir, storage.WALSnapshot{Index: 60, Term: 2}); !errors.Is(err, storage.ErrSnapshotMismatch) {
		t.Errorf("ReadLog at a snapshot of another term: %v", err)
	}
	if _, _, _, err := storage.ReadLog(dir, storage.WALSnapshot{Index: 70, Term: 1}); !errors.Is(err, storage.ErrSnapshotNotFound) {
		t.Errorf("ReadLog at a snapshot the WAL does not know: %v", err)
	}
}

// TestScanWALReportsEachProblem: damage in two segments is reported for
// each, with its segment and the offset of its record; the segment
// between them is read whole; a torn tail is reported as torn, not as
// damage; ReadLog fails on the first damage.
func TestScanWALReportsEachProblem(t *testing.T) {
	storage.NoSpares(t)
	storage.SetSegmentBytes(t, 4<<10)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	for i := uint64(0); i < 30; i++ {
		mustSave(t, w, raftpb.HardState{Term: 1, Commit: i * 10}, entries(i*10+1, i*10+10, 1))
	}
	mustClose(t, w)
	segs := segmentFiles(t, dir)
	if len(segs) < 5 {
		t.Fatalf("%d segments", len(segs))
	}
	offsetOf := func(path string, i int) int64 {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		spans := recordSpans(b)
		if i < 0 {
			i += len(spans)
		}
		return int64(spans[i][0])
	}
	flipInRecord(t, segs[1], 6)
	flipInRecord(t, segs[3], 3)
	tail := segs[len(segs)-1]
	tornAt := offsetOf(tail, -1)
	editSegment(t, tail, func(b []byte) []byte { clear(b[tornAt : tornAt+8]); return b })
	want := []storage.WALProblem{
		{Segment: filepath.Base(segs[1]), Offset: offsetOf(segs[1], 6), Rest: true},
		{Segment: filepath.Base(segs[3]), Offset: offsetOf(segs[3], 3), Rest: true},
		{Segment: filepath.Base(tail), Offset: tornAt, Torn: true},
	}
	before := dirContents(t, dir)
	seen := map[string]int{}
	scan, err := storage.ScanWAL(dir, func(r storage.WALRecord) error {
		seen[r.Segment]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(dirContents(t, dir), before) {
		t.Fatal("ScanWAL changed the WAL")
	}
	if len(scan.Problems) != len(want) {
		t.Fatalf("problems %v, want %d", scan.Problems, len(want))
	}
	for i, p := range scan.Problems {
		w := want[i]
		if p.Segment != w.Segment || p.Offset != w.Offset || p.Torn != w.Torn || p.Rest != w.Rest {
			t.Errorf("problem %d: %+v, want %+v", i, p, w)
		}
		if !w.Torn && !errors.Is(p.Err, storage.ErrCRCMismatch) {
			t.Errorf("problem %d: %v, want a checksum mismatch", i, p.Err)
		}
	}
	if n := len(scan.Damaged()); n != 2 {
		t.Errorf("%d damaged, want 2", n)
	}
	b, err := os.ReadFile(segs[2])
	if err != nil {
		t.Fatal(err)
	}
	if got, all := seen[filepath.Base(segs[2])], len(recordSpans(b)); got != all {
		t.Errorf("read %d records of the segment between the damage, of %d", got, all)
	}
	if seg := scan.Segments[1]; seg.End != offsetOf(segs[1], 6) || seg.FirstEntry == 0 {
		t.Errorf("damaged segment %+v", seg)
	}
	if _, _, _, err := storage.ReadLog(dir, storage.WALSnapshot{}); !errors.Is(err, storage.ErrCRCMismatch) {
		t.Errorf("ReadLog of a damaged WAL: %v", err)
	}
}

// TestCutWAL cuts at a record boundary of a middle segment: the later
// segments go, and the log reads to the entry before the cut. It refuses
// an offset that is not a boundary, or cuts a segment's header.
func TestCutWAL(t *testing.T) {
	storage.NoSpares(t)
	storage.SetSegmentBytes(t, 4<<10)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	for i := uint64(0); i < 30; i++ {
		mustSave(t, w, raftpb.HardState{Term: 1, Commit: i * 10}, entries(i*10+1, i*10+10, 1))
	}
	mustClose(t, w)
	segs := segmentFiles(t, dir)
	if len(segs) < 4 {
		t.Fatalf("%d segments", len(segs))
	}
	// The first entry record of segment 2 after its header.
	var cut storage.WALRecord
	var prev uint64
	if _, err := storage.ScanWAL(dir, func(r storage.WALRecord) error {
		if r.Segment == filepath.Base(segs[2]) && r.Entry != nil && cut.Entry == nil {
			cut = r
		}
		if cut.Entry == nil && r.Entry != nil {
			prev = r.Entry.Index
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	release, err := storage.LockWAL(dir)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(segs[2])
	for _, off := range []int64{0, 16, cut.Offset + 8} {
		if _, err := storage.CutWAL(dir, name, off); err == nil {
			t.Errorf("CutWAL at offset %d succeeded", off)
		}
	}
	removed, err := storage.CutWAL(dir, name, cut.Offset)
	if err != nil {
		t.Fatal(err)
	}
	var wantRemoved []string
	for _, s := range segs[3:] {
		wantRemoved = append(wantRemoved, filepath.Base(s))
	}
	if !slices.Equal(removed, wantRemoved) {
		t.Errorf("removed %v, want %v", removed, wantRemoved)
	}
	mustCheck(t, release())
	w, _, _, ents := mustRead(t, dir, storage.WALSnapshot{})
	checkEntries(t, ents, entries(1, prev, 1))
	mustSave(t, w, raftpb.HardState{Term: 1, Commit: prev + 1}, entries(prev+1, prev+1, 1))
	mustClose(t, w)
}

func TestLockWAL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	if _, err := storage.LockWAL(dir); !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("LockWAL of an open WAL: %v", err)
	}
	mustClose(t, w)
	release, err := storage.LockWAL(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storage.Open(testLogger(t), dir, storage.WALSnapshot{}); !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("Open while a tool holds the lock: %v", err)
	}
	mustCheck(t, release())
}

// TestNewestUsableSnapshotChangesNothing: a damaged newest snapshot is
// skipped, not renamed as LoadNewestAvailable renames it; a file the WAL
// has no record of is skipped too.
func TestNewestUsableSnapshotChangesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	s := mustSnapshotter(t, dir)
	for _, i := range []uint64{10, 20, 30, 40} {
		mustCheck(t, s.Save(newSnapshot(i, 2)))
	}
	newest := filepath.Join(dir, "0000000000000002-000000000000001e.snap")
	mustCheck(t, flipByte(newest, 100))
	before := dirContents(t, dir)
	files, err := storage.ListSnapshots(dir)
	if err != nil {
		t.Fatal(err)
	}
	var indexes []uint64
	for _, f := range files {
		indexes = append(indexes, f.Index)
	}
	if !slices.Equal(indexes, []uint64{40, 30, 20, 10}) {
		t.Fatalf("ListSnapshots: %v", indexes)
	}
	marks := []storage.WALSnapshot{{Index: 10, Term: 2}, {Index: 20, Term: 2}, {Index: 30, Term: 2}}
	snap, err := storage.NewestUsableSnapshot(files, marks)
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, snap, newSnapshot(20, 2))
	if err := files[1].Check(); !errors.Is(err, storage.ErrCRCMismatch) {
		t.Errorf("Check of the damaged file: %v", err)
	}
	if !maps.Equal(dirContents(t, dir), before) {
		t.Error("NewestUsableSnapshot changed the snapshot directory")
	}
	if _, err := storage.NewestUsableSnapshot(files, nil); !errors.Is(err, storage.ErrNoSnapshot) {
		t.Errorf("no marks: %v", err)
	}
}
