package storage_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/server/storage"
)

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil))
}

// entries returns entries from..to of term, each with data naming it.
func entries(from, to, term uint64) []raftpb.Entry {
	var ents []raftpb.Entry
	for i := from; i <= to; i++ {
		ents = append(ents, raftpb.Entry{Index: i, Term: term, Data: entryData(i, term)})
	}
	return ents
}

func entryData(index, term uint64) []byte {
	return fmt.Appendf(nil, "entry %d term %d %s", index, term, strings.Repeat("x", int(index%50)))
}

func checkEntries(t *testing.T, got, want []raftpb.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d entries %s, want %d %s", len(got), span(got), len(want), span(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Index != w.Index || g.Term != w.Term || g.Type != w.Type || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("entry %d: got %+v, want %+v", i, g, w)
		}
	}
}

func span(ents []raftpb.Entry) string {
	if len(ents) == 0 {
		return "[]"
	}
	return fmt.Sprintf("[%d..%d]", ents[0].Index, ents[len(ents)-1].Index)
}

func mustCreate(t *testing.T, dir string, metadata []byte) *storage.WAL {
	t.Helper()
	w, err := storage.Create(testLogger(t), dir, metadata)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func mustSave(t *testing.T, w *storage.WAL, st raftpb.HardState, ents []raftpb.Entry) {
	t.Helper()
	if err := w.Save(st, ents); err != nil {
		t.Fatal(err)
	}
}

func mustClose(t *testing.T, w *storage.WAL) {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// mustRead opens the WAL at snap and reads it all; the WAL is left open for
// appending.
func mustRead(t *testing.T, dir string, snap storage.WALSnapshot) (*storage.WAL, []byte, raftpb.HardState, []raftpb.Entry) {
	t.Helper()
	w, err := storage.Open(testLogger(t), dir, snap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	meta, st, ents, err := w.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return w, meta, st, ents
}

// readErr opens the WAL at snap and returns the error of Open or ReadAll.
func readErr(t *testing.T, dir string, snap storage.WALSnapshot) error {
	t.Helper()
	w, err := storage.Open(testLogger(t), dir, snap)
	if err != nil {
		return err
	}
	defer w.Close()
	_, _, _, err = w.ReadAll()
	return err
}

func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// recordSpans returns where each record of a segment starts and ends,
// following the framing in the package documentation.
func recordSpans(b []byte) [][2]int {
	var spans [][2]int
	for off := 0; off+8 <= len(b); {
		n := int(binary.LittleEndian.Uint64(b[off:]))
		if n == 0 || off+8+n > len(b) {
			break
		}
		end := off + 8 + n + (8-n%8)%8
		spans = append(spans, [2]int{off, end})
		off = end
	}
	return spans
}

func TestWALRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		segment  int64
		batches  int
		perBatch uint64
	}{
		{"one segment", 1 << 20, 20, 5},
		{"many segments", 4 << 10, 60, 7},
		{"large batches", 1 << 20, 3, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The count of segments is checked: cut them only when full.
			storage.NoSpares(t)
			storage.SetSegmentBytes(t, tc.segment)
			dir := filepath.Join(t.TempDir(), "wal")
			meta := []byte("node 1 of cluster 7")
			w := mustCreate(t, dir, meta)
			var want []raftpb.Entry
			var st raftpb.HardState
			for b := range uint64(tc.batches) {
				ents := entries(b*tc.perBatch+1, (b+1)*tc.perBatch, 1+b/10)
				st = raftpb.HardState{Term: 1 + b/10, Vote: 2, Commit: b * tc.perBatch}
				mustSave(t, w, st, ents)
				want = append(want, ents...)
			}
			mustClose(t, w)

			_, gotMeta, gotSt, got := mustRead(t, dir, storage.WALSnapshot{})
			if !bytes.Equal(gotMeta, meta) {
				t.Errorf("metadata %q, want %q", gotMeta, meta)
			}
			if gotSt != st {
				t.Errorf("hard state %+v, want %+v", gotSt, st)
			}
			checkEntries(t, got, want)
			if n := len(segmentFiles(t, dir)); (n > 1) != (tc.name == "many segments") {
				t.Errorf("%d segments", n)
			}
		})
	}
}

func TestWALLargeEntry(t *testing.T) {
	storage.SetSegmentBytes(t, 1<<20)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	big := raftpb.Entry{Index: 1, Term: 1, Data: bytes.Repeat([]byte("0123456789abcdef"), 200_000)} // 3.2 MB
	want := append([]raftpb.Entry{big}, entries(2, 10, 1)...)
	mustSave(t, w, raftpb.HardState{Term: 1}, want[:1])
	mustSave(t, w, raftpb.HardState{Term: 1, Commit: 10}, want[1:])
	mustClose(t, w)
	_, _, _, got := mustRead(t, dir, storage.WALSnapshot{})
	checkEntries(t, got, want)
}

func TestWALReopenAndAppend(t *testing.T) {
	storage.SetSegmentBytes(t, 8<<10)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, []byte("meta"))
	mustSave(t, w, raftpb.HardState{Term: 1, Commit: 10}, entries(1, 10, 1))
	mustClose(t, w)
	var want []raftpb.Entry
	want = append(want, entries(1, 10, 1)...)

	for round := uint64(1); round <= 4; round++ {
		w, meta, st, got := mustRead(t, dir, storage.WALSnapshot{})
		checkEntries(t, got, want)
		if string(meta) != "meta" {
			t.Fatalf("metadata %q", meta)
		}
		if st.Commit != round*100-90 {
			t.Fatalf("round %d: commit %d", round, st.Commit)
		}
		next := entries(uint64(len(want))+1, round*100+10, 1)
		mustSave(t, w, raftpb.HardState{Term: 1, Commit: round*100 + 10}, next)
		want = append(want, next...)
		mustClose(t, w)
	}
	if n := len(segmentFiles(t, dir)); n < 3 {
		t.Errorf("%d segments, want several", n)
	}
}

func TestWALOverwritesUncommittedEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	mustSave(t, w, raftpb.HardState{Term: 1, Commit: 3}, entries(1, 6, 1))
	// A new leader at term 2 replaces entries 4..6 with its own.
	mustSave(t, w, raftpb.HardState{Term: 2, Commit: 3}, entries(4, 5, 2))
	mustClose(t, w)

	w, _, _, got := mustRead(t, dir, storage.WALSnapshot{})
	checkEntries(t, got, append(entries(1, 3, 1), entries(4, 5, 2)...))
	// The log now ends at 5: 6 follows without a gap.
	mustSave(t, w, raftpb.HardState{Term: 2, Commit: 6}, entries(6, 6, 2))
}

func TestWALSaveRejectsGaps(t *testing.T) {
	for _, tc := range []struct {
		name string
		ents []raftpb.Entry
	}{
		{"gap after the log", entries(7, 8, 1)},
		{"gap inside the batch", append(entries(6, 6, 1), entries(8, 8, 1)...)},
		{"out of order", append(entries(6, 7, 1), entries(6, 6, 1)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "wal")
			w := mustCreate(t, dir, nil)
			mustSave(t, w, raftpb.HardState{Term: 1}, entries(1, 5, 1))
			if err := w.Save(raftpb.HardState{Term: 1}, tc.ents); err == nil {
				t.Fatal("Save accepted entries that do not follow the log")
			}
			// Nothing was written and the WAL goes on.
			mustSave(t, w, raftpb.HardState{Term: 1, Commit: 6}, entries(6, 6, 1))
			mustClose(t, w)
			_, _, _, got := mustRead(t, dir, storage.WALSnapshot{})
			checkEntries(t, got, entries(1, 6, 1))
		})
	}
}

func TestWALSyncsOncePerSave(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	syncs := storage.CountSyncs(t)
	for _, tc := range []struct {
		name  string
		save  func() error
		syncs int64
	}{
		{"entries and state", func() error { return w.Save(raftpb.HardState{Term: 1, Vote: 1}, entries(1, 100, 1)) }, 1},
		{"nothing", func() error { return w.Save(raftpb.HardState{}, nil) }, 0},
		{"commit only", func() error { return w.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 50}, nil) }, 0},
		{"new term", func() error { return w.Save(raftpb.HardState{Term: 2, Vote: 0, Commit: 50}, nil) }, 1},
		{"new vote", func() error { return w.Save(raftpb.HardState{Term: 2, Vote: 3, Commit: 50}, nil) }, 1},
		{"entries only", func() error { return w.Save(raftpb.HardState{}, entries(101, 101, 2)) }, 1},
		{"snapshot record", func() error { return w.SaveSnapshot(storage.WALSnapshot{Index: 50, Term: 1}) }, 1},
	} {
		before := syncs.Load()
		if err := tc.save(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if n := syncs.Load() - before; n != tc.syncs {
			t.Errorf("%s: %d fsyncs, want %d", tc.name, n, tc.syncs)
		}
	}
	mustClose(t, w)
	// The commit-only state was written, and reached the disk with the
	// next fsync.
	_, _, st, got := mustRead(t, dir, storage.WALSnapshot{})
	if want := (raftpb.HardState{Term: 2, Vote: 3, Commit: 50}); st != want {
		t.Errorf("hard state %+v, want %+v", st, want)
	}
	if len(got) != 101 {
		t.Errorf("%d entries, want 101", len(got))
	}
}

// TestWALTornTail leaves the last append of a log as a crash can: each
// sector it wrote either reached the disk or still holds what it held
// before (the acknowledged records, then zeros), or, for a file that
// appends grow, the file ends at a page boundary inside the append. The
// log must read as it was before the append, or with it.
func TestWALTornTail(t *testing.T) {
	storage.NoSpares(t)
	storage.SetSegmentBytes(t, 64<<10)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	mustSave(t, w, raftpb.HardState{Term: 1, Commit: 20}, entries(1, 20, 1))
	mustClose(t, w)
	path := segmentFiles(t, dir)[0]
	before, err := os.ReadFile(path)
	mustCheck(t, err)
	acked := recordSpans(before)
	from := acked[len(acked)-1][1] // where the last append begins

	w, _, _, _ = mustRead(t, dir, storage.WALSnapshot{})
	last := raftpb.Entry{Index: 21, Term: 1, Data: bytes.Repeat([]byte{0xa5}, 3*storage.SectorBytes)}
	mustSave(t, w, raftpb.HardState{}, []raftpb.Entry{last})
	mustClose(t, w)
	after, err := os.ReadFile(path)
	mustCheck(t, err)
	spans := recordSpans(after)
	to := spans[len(spans)-1][1] // where it ends
	if len(spans) != len(acked)+2 {
		t.Fatalf("the last append wrote %d records, want a crc record and an entry", len(spans)-len(acked))
	}

	sectors := (to - from&^(storage.SectorBytes-1) + storage.SectorBytes - 1) / storage.SectorBytes
	first := from &^ (storage.SectorBytes - 1)
	// image returns the segment with the sectors of the last append for
	// which written is false holding what they held before it.
	image := func(written func(sector int) bool) []byte {
		b := bytes.Clone(after)
		for i := range sectors {
			if !written(i) {
				lo := max(first+i*storage.SectorBytes, from)
				clear(b[lo : first+(i+1)*storage.SectorBytes])
			}
		}
		return b
	}
	check := func(t *testing.T, content []byte) {
		t.Helper()
		mustCheck(t, os.WriteFile(path, content, 0o600))
		w, _, _, got := mustRead(t, dir, storage.WALSnapshot{})
		want := entries(1, 20, 1)
		if len(got) == 21 {
			want = append(want, last)
		}
		checkEntries(t, got, want)
		// The cut-off append is gone for good: what follows takes its place.
		next := raftpb.Entry{Index: uint64(len(got)) + 1, Term: 2, Data: []byte("after the crash")}
		mustSave(t, w, raftpb.HardState{Term: 2, Commit: next.Index}, []raftpb.Entry{next})
		mustClose(t, w)
		w, _, _, got = mustRead(t, dir, storage.WALSnapshot{})
		checkEntries(t, got, append(want, next))
		mustClose(t, w)
	}

	t.Run("sectors written in order", func(t *testing.T) {
		for n := range sectors + 1 {
			check(t, image(func(i int) bool { return i < n }))
		}
	})
	t.Run("one sector not written", func(t *testing.T) {
		for n := range sectors {
			check(t, image(func(i int) bool { return i != n }))
		}
	})
	t.Run("sectors in any order", func(t *testing.T) {
		for seed := range uint64(20) {
			r := rand.New(rand.NewPCG(seed, 1))
			check(t, image(func(int) bool { return r.IntN(2) == 0 }))
		}
	})
	t.Run("logged", func(t *testing.T) {
		// The entry's last sector is lost: the entry is cut off, after the
		// crc record that began the append.
		mustCheck(t, os.WriteFile(path, image(func(i int) bool { return i != sectors-1 }), 0o600))
		var logs bytes.Buffer
		w, err := storage.Open(slog.New(slog.NewJSONHandler(&logs, nil)), dir, storage.WALSnapshot{})
		mustCheck(t, err)
		_, _, got, err := w.ReadAll()
		mustCheck(t, err)
		mustClose(t, w)
		checkEntries(t, got, entries(1, 20, 1))
		var rec struct {
			Level, Msg, File string
			Offset, Bytes    int64
			Records          int
		}
		if err := json.Unmarshal(logs.Bytes(), &rec); err != nil {
			t.Fatalf("log %q: %v", logs.Bytes(), err)
		}
		entryAt := int64(spans[len(spans)-1][0])
		wantBytes := int64(first+(sectors-1)*storage.SectorBytes) - entryAt
		if rec.Level != "WARN" || rec.File != path || rec.Offset != entryAt || rec.Bytes != wantBytes || rec.Records != 1 {
			t.Fatalf("logged %+v; want a warning naming %s, offset %d, %d bytes, 1 record", rec, path, entryAt, wantBytes)
		}
	})
	t.Run("file grown by whole pages", func(t *testing.T) {
		// Without preallocation, the file's size is one that a page write
		// left it with.
		for end := (from + 4095) &^ 4095; end < to+4096; end += 4096 {
			check(t, after[:end])
		}
	})
}

func TestWALCorruption(t *testing.T) {
	for _, tc := range []struct {
		name string
		// damage changes the segments (oldest first) of a WAL holding
		// entries 1..300 in several segments.
		damage func(t *testing.T, segs []string)
		want   error
	}{
		{"flipped byte in the last segment", func(t *testing.T, segs []string) {
			flipInRecord(t, segs[len(segs)-1], 3)
		}, storage.ErrCRCMismatch},
		{"flipped byte in an older segment", func(t *testing.T, segs []string) {
			flipInRecord(t, segs[1], 4)
		}, storage.ErrCRCMismatch},
		{"huge length in an older segment", func(t *testing.T, segs []string) {
			editSegment(t, segs[1], func(b []byte) []byte {
				binary.LittleEndian.PutUint64(b[recordSpans(b)[3][0]:], 1<<40)
				return b
			})
		}, storage.ErrCorrupt},
		{"length with high bits in the last segment", func(t *testing.T, segs []string) {
			editSegment(t, segs[len(segs)-1], func(b []byte) []byte {
				binary.LittleEndian.PutUint64(b[recordSpans(b)[3][0]:], 1<<60|32)
				return b
			})
		}, storage.ErrCorrupt},
		{"older segment lost its last record", func(t *testing.T, segs []string) {
			editSegment(t, segs[1], func(b []byte) []byte {
				spans := recordSpans(b)
				return b[:spans[len(spans)-1][0]]
			})
		}, storage.ErrCRCMismatch},
		{"older segment cut in a record", func(t *testing.T, segs []string) {
			editSegment(t, segs[1], func(b []byte) []byte { return b[:len(b)-3] })
		}, storage.ErrCorrupt},
		{"missing segment", func(t *testing.T, segs []string) {
			if err := os.Remove(segs[1]); err != nil {
				t.Fatal(err)
			}
		}, storage.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Which records the last segment holds matters here.
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
			tc.damage(t, segs)
			err := readErr(t, dir, storage.WALSnapshot{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadAll error %v, want %v", err, tc.want)
			}
			if !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("error %v does not match ErrCorrupt", err)
			}
		})
	}
}

func editSegment(t *testing.T, path string, edit func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, edit(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

// flipInRecord flips a bit in the data of record i of a segment.
func flipInRecord(t *testing.T, path string, i int) {
	t.Helper()
	editSegment(t, path, func(b []byte) []byte {
		spans := recordSpans(b)
		if len(spans) <= i+1 {
			t.Fatalf("%s has %d records", path, len(spans))
		}
		b[spans[i][0]+8+5+2] ^= 0x10
		return b
	})
}

// errNotCorrupt stands for any error but ErrCorrupt.
var errNotCorrupt = errors.New("an error other than ErrCorrupt")

func mustCheck(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestWALSnapshotRecords(t *testing.T) {
	storage.SetSegmentBytes(t, 4<<10)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	mustSave(t, w, raftpb.HardState{Term: 1, Commit: 100}, entries(1, 100, 1))
	mustCheck(t, w.SaveSnapshot(storage.WALSnapshot{Index: 60, Term: 1}))
	mustSave(t, w, raftpb.HardState{Term: 2, Commit: 150}, entries(101, 200, 2))
	mustCheck(t, w.SaveSnapshot(storage.WALSnapshot{Index: 150, Term: 2}))
	mustClose(t, w)

	type openCase struct {
		snap storage.WALSnapshot
		want []raftpb.Entry
		err  error
	}
	run := func(t *testing.T, commit uint64, cases []openCase) {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("index %d term %d", tc.snap.Index, tc.snap.Term), func(t *testing.T) {
				if tc.err != nil {
					err := readErr(t, dir, tc.snap)
					if tc.err == errNotCorrupt && (err == nil || errors.Is(err, storage.ErrCorrupt)) || tc.err != errNotCorrupt && !errors.Is(err, tc.err) {
						t.Fatalf("got error %v, want %v", err, tc.err)
					}
					return
				}
				w, _, st, got := mustRead(t, dir, tc.snap)
				checkEntries(t, got, tc.want)
				if st.Commit != commit {
					t.Errorf("commit %d, want %d", st.Commit, commit)
				}
				mustClose(t, w)
			})
		}
	}
	t.Run("local snapshots", func(t *testing.T) {
		run(t, 150, []openCase{
			{storage.WALSnapshot{}, append(entries(1, 100, 1), entries(101, 200, 2)...), nil},
			{storage.WALSnapshot{Index: 60, Term: 1}, append(entries(61, 100, 1), entries(101, 200, 2)...), nil},
			{storage.WALSnapshot{Index: 150, Term: 2}, entries(151, 200, 2), nil},
			{storage.WALSnapshot{Index: 150, Term: 1}, nil, storage.ErrSnapshotMismatch},
			{storage.WALSnapshot{Index: 70, Term: 1}, nil, storage.ErrSnapshotNotFound},
		})
	})

	// A snapshot from the leader replaces the log: entries resume after it.
	w, _, _, _ = mustRead(t, dir, storage.WALSnapshot{})
	mustCheck(t, w.SaveSnapshot(storage.WALSnapshot{Index: 300, Term: 3}))
	mustSave(t, w, raftpb.HardState{Term: 3, Commit: 300}, nil)
	mustSave(t, w, raftpb.HardState{Term: 3, Commit: 305}, entries(301, 305, 3))
	mustClose(t, w)
	t.Run("leader snapshot", func(t *testing.T) {
		run(t, 305, []openCase{
			{storage.WALSnapshot{Index: 300, Term: 3}, entries(301, 305, 3), nil},
			{storage.WALSnapshot{Index: 150, Term: 2}, nil, errNotCorrupt},
		})
	})
}

func TestValidSnapshotEntries(t *testing.T) {
	storage.SetSegmentBytes(t, 4<<10)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	mustSave(t, w, raftpb.HardState{Term: 1, Commit: 100}, entries(1, 100, 1))
	mustCheck(t, w.SaveSnapshot(storage.WALSnapshot{Index: 50, Term: 1}))
	mustCheck(t, w.SaveSnapshot(storage.WALSnapshot{Index: 100, Term: 1}))
	// Received from a leader, but the HardState committing it was lost.
	mustCheck(t, w.SaveSnapshot(storage.WALSnapshot{Index: 400, Term: 2}))

	got, err := storage.ValidSnapshotEntries(dir)
	mustCheck(t, err)
	want := []storage.WALSnapshot{{}, {Index: 50, Term: 1}, {Index: 100, Term: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("with the WAL open: %v, want %v", got, want)
	}
	mustSave(t, w, raftpb.HardState{Term: 2, Commit: 400}, nil)
	mustSave(t, w, raftpb.HardState{Term: 2, Commit: 400}, entries(401, 600, 2))
	mustCheck(t, w.PurgeTo(400))
	mustClose(t, w)

	got, err = storage.ValidSnapshotEntries(dir)
	mustCheck(t, err)
	// The segment holding entries 1..100 is gone: snapshots before 101
	// cannot be replayed from any more, though their records remain.
	want = []storage.WALSnapshot{{Index: 400, Term: 2}}
	if segs := segmentFiles(t, dir); strings.HasSuffix(segs[0], "0000000000000000.wal") {
		t.Fatalf("first segment %s was not purged", segs[0])
	}
	if !slices.Equal(got, want) {
		t.Errorf("after purge: %v, want %v", got, want)
	}
}

func TestWALPurgeTo(t *testing.T) {
	storage.SetSegmentBytes(t, 4<<10)
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	for i := uint64(0); i < 50; i++ {
		mustSave(t, w, raftpb.HardState{Term: 1, Commit: i*10 + 10}, entries(i*10+1, i*10+10, 1))
		if i%10 == 9 {
			mustCheck(t, w.SaveSnapshot(storage.WALSnapshot{Index: i*10 + 10, Term: 1}))
		}
	}
	before := segmentFiles(t, dir)
	if len(before) < 6 {
		t.Fatalf("%d segments", len(before))
	}

	mustCheck(t, w.PurgeTo(200))
	after := segmentFiles(t, dir)
	if len(after) >= len(before) || after[len(after)-1] != before[len(before)-1] {
		t.Fatalf("purge left %d of %d segments", len(after), len(before))
	}
	// The log is still readable from snapshot 200, and not from before it.
	mustClose(t, w)
	if err := readErr(t, dir, storage.WALSnapshot{Index: 100, Term: 1}); !errors.Is(err, storage.ErrSnapshotNotFound) {
		t.Errorf("open before the purged index: %v, want ErrSnapshotNotFound", err)
	}
	w, _, _, got := mustRead(t, dir, storage.WALSnapshot{Index: 200, Term: 1})
	checkEntries(t, got, entries(201, 500, 1))

	mustCheck(t, w.PurgeTo(500))
	mustSave(t, w, raftpb.HardState{Term: 1, Commit: 501}, entries(501, 501, 1))
	mustClose(t, w)
	if segs := segmentFiles(t, dir); len(segs) > 2 {
		t.Errorf("%d segments left after purging to the last snapshot", len(segs))
	}
	_, _, _, got = mustRead(t, dir, storage.WALSnapshot{Index: 500, Term: 1})
	checkEntries(t, got, entries(501, 501, 1))
}

func TestWALDirectoryInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	if _, err := storage.Open(nil, dir, storage.WALSnapshot{}); !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	mustClose(t, w)
	w, _, _, _ = mustRead(t, dir, storage.WALSnapshot{})
	if _, err := storage.Open(nil, dir, storage.WALSnapshot{}); !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("open while open: %v, want ErrLocked", err)
	}
	mustClose(t, w)
}

func TestWALOrderOfCalls(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	created := mustCreate(t, dir, nil)
	if _, _, _, err := created.ReadAll(); err == nil {
		t.Error("ReadAll of a created WAL succeeded")
	}
	mustSave(t, created, raftpb.HardState{Term: 1}, entries(1, 3, 1))
	mustClose(t, created)
	mustCheck(t, created.Close())
	if err := created.Save(raftpb.HardState{Term: 1}, entries(4, 4, 1)); err == nil {
		t.Error("Save after Close succeeded")
	}

	w, err := storage.Open(nil, dir, storage.WALSnapshot{})
	mustCheck(t, err)
	defer w.Close()
	if err := w.Save(raftpb.HardState{Term: 1}, entries(4, 4, 1)); err == nil {
		t.Error("Save before ReadAll succeeded")
	}
	if err := w.PurgeTo(3); err == nil {
		t.Error("PurgeTo before ReadAll succeeded")
	}
	_, _, ents, err := w.ReadAll()
	mustCheck(t, err)
	checkEntries(t, ents, entries(1, 3, 1))
	if _, _, _, err := w.ReadAll(); err == nil {
		t.Error("second ReadAll succeeded")
	}
	mustSave(t, w, raftpb.HardState{Term: 1}, entries(4, 4, 1))
}

func TestCreate(t *testing.T) {
	root := t.TempDir()
	t.Run("refuses an existing WAL", func(t *testing.T) {
		dir := filepath.Join(root, "exists")
		mustClose(t, mustCreate(t, dir, nil))
		if _, err := storage.Create(nil, dir, nil); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("got %v, want fs.ErrExist", err)
		}
	})
	t.Run("takes an empty directory", func(t *testing.T) {
		dir := filepath.Join(root, "empty")
		mustCheck(t, os.Mkdir(dir, 0o750))
		mustClose(t, mustCreate(t, dir, []byte("m")))
		if !storage.Exist(dir) {
			t.Fatal("no WAL after Create")
		}
	})
	t.Run("leaves a directory with other files alone", func(t *testing.T) {
		dir := filepath.Join(root, "other")
		mustCheck(t, os.Mkdir(dir, 0o750))
		mustCheck(t, os.WriteFile(filepath.Join(dir, "keep"), nil, 0o600))
		if w, err := storage.Create(nil, dir, nil); err == nil {
			w.Close()
			t.Fatal("Create replaced a directory holding other files")
		}
		if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Exist", func(t *testing.T) {
		if storage.Exist(filepath.Join(root, "none")) || storage.Exist(filepath.Join(root, "other")) {
			t.Fatal("Exist without segments")
		}
	})
	t.Run("cleans up an interrupted segment cut", func(t *testing.T) {
		dir := filepath.Join(root, "cut")
		mustClose(t, mustCreate(t, dir, nil))
		stale := filepath.Join(dir, "0000000000000001-0000000000000001.wal.tmp")
		mustCheck(t, os.WriteFile(stale, []byte("half"), 0o600))
		w, _, _, _ := mustRead(t, dir, storage.WALSnapshot{})
		if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("stale segment still there: %v", err)
		}
		mustClose(t, w)
	})
}

// FuzzReadSegment feeds arbitrary bytes as the only segment of a WAL: ReadAll
// may fail, but must neither panic nor allocate what a length claims.
func FuzzReadSegment(f *testing.F) {
	storage.SetSegmentBytes(f, 8<<10)
	seed := filepath.Join(f.TempDir(), "seed")
	w, err := storage.Create(nil, seed, []byte("meta"))
	if err != nil {
		f.Fatal(err)
	}
	w.Save(raftpb.HardState{Term: 1, Commit: 3}, entries(1, 3, 1))
	w.SaveSnapshot(storage.WALSnapshot{Index: 2, Term: 1})
	w.Close()
	name := "0000000000000000-0000000000000000.wal"
	b, err := os.ReadFile(filepath.Join(seed, name))
	if err != nil {
		f.Fatal(err)
	}
	end := recordSpans(b)[len(recordSpans(b))-1][1]
	f.Add(b[:end])
	f.Add(b[:end-5])
	f.Add(b[:40])
	huge := bytes.Clone(b[:end])
	binary.LittleEndian.PutUint64(huge[recordSpans(huge)[2][0]:], 1<<55)
	f.Add(huge)

	f.Fuzz(func(t *testing.T, content []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
		w, err := storage.Open(nil, dir, storage.WALSnapshot{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		meta, st, ents, err := w.ReadAll()
		if err != nil {
			return
		}
		// A log that reads, once repaired, takes appends and reads back
		// the same.
		if err := w.SaveSnapshot(storage.WALSnapshot{}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		w, err = storage.Open(nil, dir, storage.WALSnapshot{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		meta2, st2, ents2, err := w.ReadAll()
		if err != nil {
			t.Fatalf("read after repair: %v", err)
		}
		if !bytes.Equal(meta, meta2) || st != st2 || len(ents) != len(ents2) {
			t.Fatalf("read %q %+v %d entries, then %q %+v %d", meta, st, len(ents), meta2, st2, len(ents2))
		}
		for i := range ents {
			if ents[i].Index != ents2[i].Index || !bytes.Equal(ents[i].Data, ents2[i].Data) {
				t.Fatalf("entry %d changed", i)
			}
		}
	})
}
