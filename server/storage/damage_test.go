package storage_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/server/storage"
)

// oneSegmentLog writes 40 appends of 5 entries each to a WAL that keeps
// them in one segment; entry 102's data is 2 KiB of zeros. It returns the
// directory, the segment, the segment's content up to its last record, and
// the entries.
func oneSegmentLog(t *testing.T) (dir, path string, content []byte, want []raftpb.Entry) {
	t.Helper()
	storage.NoSpares(t)
	storage.SetSegmentBytes(t, 256<<10)
	dir = filepath.Join(t.TempDir(), "wal")
	w := mustCreate(t, dir, nil)
	for b := range uint64(40) {
		ents := entries(b*5+1, b*5+5, 1)
		for i := range ents {
			if ents[i].Index == 102 {
				ents[i].Data = make([]byte, 2048)
			}
		}
		mustSave(t, w, raftpb.HardState{Term: 1, Commit: b * 5}, ents)
		want = append(want, ents...)
	}
	mustClose(t, w)
	segs := segmentFiles(t, dir)
	if len(segs) != 1 {
		t.Fatalf("%d segments", len(segs))
	}
	b, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	spans := recordSpans(b)
	return dir, segs[0], b[:spans[len(spans)-1][1]], want
}

// recordOf returns the span of the record of entry index in a segment.
func recordOf(t *testing.T, content []byte, index uint64) [2]int {
	t.Helper()
	for _, s := range recordSpans(content) {
		rec := content[s[0]:s[1]]
		if rec[12] != 2 { // entry
			continue
		}
		var e raftpb.Entry
		n := binary.LittleEndian.Uint64(rec)
		if err := e.Unmarshal(rec[13 : 8+n]); err == nil && e.Index == index {
			return s
		}
	}
	t.Fatalf("no record of entry %d", index)
	return [2]int{}
}

// Damage to records that were made durable, with more durable records
// after it, is not what a crash leaves: ReadAll must refuse the log,
// naming the segment and where the damage starts, and change nothing.
func TestWALDamageBeforeTheTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		// damage returns the damaged segment, given the segment's content,
		// and the offset of the first record it damaged when that is not
		// the first record whose bytes changed.
		damage func(t *testing.T, b []byte) ([]byte, int)
	}{
		{"zeroed length word", func(t *testing.T, b []byte) ([]byte, int) {
			r := recordOf(t, b, 100)
			clear(b[r[0] : r[0]+8])
			return b, r[0]
		}},
		{"zeroed sector", func(t *testing.T, b []byte) ([]byte, int) {
			sector := recordOf(t, b, 100)[0] &^ (storage.SectorBytes - 1)
			clear(b[sector : sector+storage.SectorBytes])
			return b, -1
		}},
		{"zeroed page", func(t *testing.T, b []byte) ([]byte, int) {
			page := recordOf(t, b, 60)[0]&^4095 + 4096
			clear(b[page : page+4096])
			return b, -1
		}},
		{"length runs past the end of the file", func(t *testing.T, b []byte) ([]byte, int) {
			r := recordOf(t, b, 100)
			b[r[0]+3] ^= 0x04 // a bit of the length word: 1<<26 more
			return b, r[0]
		}},
		{"flipped bit in a record holding a zero sector", func(t *testing.T, b []byte) ([]byte, int) {
			r := recordOf(t, b, 102)
			b[r[0]+30] ^= 0x01
			return b, r[0]
		}},
		{"cut inside a record", func(t *testing.T, b []byte) ([]byte, int) {
			r := recordOf(t, b, 100)
			return b[:r[0]+21], r[0]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, path, content, _ := oneSegmentLog(t)
			full, err := os.ReadFile(path)
			mustCheck(t, err)
			damaged, off := tc.damage(t, bytes.Clone(full))
			if off < 0 {
				off = firstChangedRecord(full, damaged)
			}
			mustCheck(t, os.WriteFile(path, damaged, 0o600))
			if off >= len(content) {
				t.Fatalf("damage at %d is past the log's end %d", off, len(content))
			}

			err = readErr(t, dir, storage.WALSnapshot{})
			if !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("ReadAll: %v, want an error matching ErrCorrupt", err)
			}
			if msg := err.Error(); !strings.Contains(msg, filepath.Base(path)) || !strings.Contains(msg, fmt.Sprintf("offset %d", off)) {
				t.Errorf("error %q does not name %s and offset %d", msg, filepath.Base(path), off)
			}
			after, err := os.ReadFile(path)
			mustCheck(t, err)
			if !bytes.Equal(after, damaged) {
				t.Errorf("the damaged segment was changed by the failed read")
			}
		})
	}
}

// firstChangedRecord returns the start of the first record of the segment
// before whose bytes differ in after, or len(before) when none does.
func firstChangedRecord(before, after []byte) int {
	for _, s := range recordSpans(before) {
		if s[1] > len(after) || !bytes.Equal(before[s[0]:s[1]], after[s[0]:s[1]]) {
			return s[0]
		}
	}
	return len(before)
}

// A corrupt log says how to cut it at the damage: truncate the damaged
// segment there and remove the later ones, or remove it too when the
// damage is in its header. A log so cut reads up to the damage.
func TestCorruptErrorCut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		record func(b []byte) int // the record of the last segment but one to damage
	}{
		{"in the records", func(b []byte) int { return recordOf(t, b, firstEntryIn(t, b)+3)[0] }},
		{"in the header", func([]byte) int { return 24 }}, // the metadata record
	} {
		t.Run(tc.name, func(t *testing.T) {
			storage.NoSpares(t)
			storage.SetSegmentBytes(t, 4<<10)
			dir := filepath.Join(t.TempDir(), "wal")
			w := mustCreate(t, dir, nil)
			for i := uint64(0); i < 30; i++ {
				mustSave(t, w, raftpb.HardState{Term: 1, Commit: i*10 + 10}, entries(i*10+1, i*10+10, 1))
			}
			mustClose(t, w)
			segs := segmentFiles(t, dir)
			damaged := segs[len(segs)-2]
			b, err := os.ReadFile(damaged)
			mustCheck(t, err)
			at := tc.record(b)
			b[at+8] ^= 0x20 // its checksum
			mustCheck(t, os.WriteFile(damaged, b, 0o600))

			var ce *storage.CorruptError
			if err := readErr(t, dir, storage.WALSnapshot{}); !errors.As(err, &ce) || ce.Path != damaged || ce.Offset != int64(at) {
				t.Fatalf("ReadAll: %v; want a CorruptError at %s, offset %d", err, damaged, at)
			}
			size, remove, ok := ce.Cut()
			if !ok || !slices.Equal(remove[len(remove)-1:], segs[len(segs)-1:]) {
				t.Fatalf("Cut: %d %v %v", size, remove, ok)
			}
			if size >= 0 {
				mustCheck(t, os.Truncate(damaged, size))
			}
			for _, f := range remove {
				mustCheck(t, os.Remove(f))
			}
			_, _, _, got := mustRead(t, dir, storage.WALSnapshot{})
			last := firstEntryIn(t, b) - 1
			if size > 0 {
				last += 3
			}
			checkEntries(t, got, entries(1, last, 1))
		})
	}
}

// firstEntryIn returns the index of the first entry in a segment.
func firstEntryIn(t *testing.T, b []byte) uint64 {
	t.Helper()
	for _, s := range recordSpans(b) {
		if rec := b[s[0]:s[1]]; rec[12] == 2 {
			var e raftpb.Entry
			mustUnmarshal(&e, rec[13:8+binary.LittleEndian.Uint64(rec)])
			return e.Index
		}
	}
	t.Fatal("no entry in the segment")
	return 0
}
