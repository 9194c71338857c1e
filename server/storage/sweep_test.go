package storage_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/server/storage"
)

// damageSeedsEnv sets how many seeds TestDamageSweep runs; the default is
// for CI.
const damageSeedsEnv = "COLLIE_STORAGE_DAMAGE_SEEDS"

// TestDamageSweep writes a log across several segments, with snapshots
// taken, recorded and purged as the replication node does, and then, one
// seed at a time, damages one of its files the way disks do: cut short at
// a random offset, one bit flipped, or a run of sectors zeroed. Opened
// again, the directory must either fail with an error that matches
// ErrCorrupt and names the damaged file, or load a snapshot that was
// written and every acknowledged entry after it, unchanged and without a
// gap. Entries may be missing only where the damage left what a crash
// during an append leaves: in the last segment, with every append that
// followed the damaged record wiped out with it (see "Crashes and
// corruption" in the package doc), and then only from the damaged record
// on.
func TestDamageSweep(t *testing.T) {
	seeds := 300
	if s := os.Getenv(damageSeedsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%s=%q: %v", damageSeedsEnv, s, err)
		}
		seeds = n
	}
	storage.NoSpares(t)
	storage.SetSegmentBytes(t, 8<<10)
	p := writeSweepLog(t)
	if len(p.segments) < 3 || len(p.snapshots) < 2 {
		t.Fatalf("%d segments and %d snapshots: want several of each", len(p.segments), len(p.snapshots))
	}
	outcomes := map[string]int{}
	for seed := range uint64(seeds) {
		outcome := p.damageAndCheck(t, seed)
		outcomes[outcome]++
		if t.Failed() {
			t.Fatalf("seed %d failed; the log says what it damaged", seed)
		}
	}
	t.Logf("%d seeds: %v", seeds, outcomes)
}

// sweepLog is the undamaged directory a sweep damages copies of.
type sweepLog struct {
	root      string
	acked     []raftpb.Entry // index i holds entry i+1
	segments  []string       // oldest first, relative to root
	snapshots []string
	content   map[string][]byte // by file
	// snapData is the data of the snapshot at each index written.
	snapData map[uint64][]byte
}

func writeSweepLog(t *testing.T) *sweepLog {
	p := &sweepLog{root: filepath.Join(t.TempDir(), "pristine"), content: map[string][]byte{}, snapData: map[uint64][]byte{}}
	d, _ := mustOpenDisk(t, filepath.Join(p.root, "wal"), filepath.Join(p.root, "snap"))
	r := rand.New(rand.NewPCG(1, 2))
	snapped := uint64(0)
	// Past 700 entries, go on until the last segment is well filled: the
	// tail rule is at work there, and needs appends to follow the damage.
	// The last append holds entries, not a snapshot record.
	for next, more := uint64(1), true; more; {
		more = next <= 700 || lastSegmentEnd(t, filepath.Join(p.root, "wal")) < 5<<10
		ents := make([]raftpb.Entry, 1+r.IntN(9))
		size := 120
		if !more {
			// Over several sectors, so that damage may fall in it alone,
			// and not past the segment's end.
			ents, size = make([]raftpb.Entry, 30), 40
		}
		for i := range ents {
			data := make([]byte, r.IntN(size))
			for j := range data {
				data[j] = byte(r.Uint32())
			}
			if more && r.IntN(20) == 0 {
				clear(data) // zero sectors inside records
				data = append(data, make([]byte, 600)...)
			}
			ents[i] = raftpb.Entry{Index: next + uint64(i), Term: 1, Data: data}
		}
		mustCheck(t, d.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: next + uint64(len(ents)) - 1}, ents))
		p.acked = append(p.acked, ents...)
		next += uint64(len(ents))
		if last := next - 1; more && last-snapped >= 70 {
			meta := raftpb.SnapshotMetadata{Index: last, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{1}}}
			data := fmt.Appendf(nil, "state at %d %s", last, bytes.Repeat([]byte{byte(last)}, r.IntN(3000)))
			p.snapData[last] = data
			_, err := d.WriteSnapshot(meta, func(w io.Writer) error { _, err := w.Write(data); return err })
			mustCheck(t, err)
			mustCheck(t, d.MarkSnapshot(meta))
			mustCheck(t, d.Compact(last))
			snapped = last
		}
	}
	mustCheck(t, d.Close())
	for _, pattern := range []string{"wal/*.wal", "snap/*.snap"} {
		names, err := filepath.Glob(filepath.Join(p.root, pattern))
		mustCheck(t, err)
		for _, name := range names {
			rel, _ := filepath.Rel(p.root, name)
			b, err := os.ReadFile(name)
			mustCheck(t, err)
			p.content[rel] = b
			if strings.HasSuffix(rel, ".wal") {
				p.segments = append(p.segments, rel)
			} else {
				p.snapshots = append(p.snapshots, rel)
			}
		}
	}
	return p
}

// damageAndCheck damages a copy of the log as seed says, opens it, checks
// what it loads, and returns a word for the outcome.
func (p *sweepLog) damageAndCheck(t *testing.T, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 0xd15c))
	dir := filepath.Join(filepath.Dir(p.root), fmt.Sprintf("seed%d", seed))
	mustCheck(t, os.CopyFS(dir, os.DirFS(p.root)))
	defer os.RemoveAll(dir)

	files := append(slices.Clone(p.segments), p.snapshots...)
	// The last segment is where the tail rule is at work: damage it most.
	target := p.segments[len(p.segments)-1]
	if r.IntN(2) == 0 {
		target = files[r.IntN(len(files))]
	}
	pristine := p.content[target]
	limit := len(pristine)
	if strings.HasSuffix(target, ".wal") {
		// The last segment is mostly preallocated zeros: damage near
		// the records.
		limit = min(limit, logEnd(pristine)+2*4096)
	}
	off := r.IntN(limit)
	if r.IntN(4) == 0 {
		// Headers and trailers are small targets of their own.
		off = r.IntN(min(64, limit))
		if r.IntN(2) == 0 {
			off = limit - 1 - off
		}
	}
	damaged := bytes.Clone(pristine)
	var what string
	switch r.IntN(3) {
	case 0:
		damaged = damaged[:off]
		what = fmt.Sprintf("cut at %d", off)
	case 1:
		damaged[off] ^= 1 << r.IntN(8)
		what = fmt.Sprintf("bit flipped at %d", off)
	default:
		from := off &^ (storage.SectorBytes - 1)
		to := min(from+(1+r.IntN(16))*storage.SectorBytes, len(damaged))
		clear(damaged[from:to])
		what = fmt.Sprintf("zeroed from %d to %d", from, to)
	}
	path := filepath.Join(dir, target)
	mustCheck(t, os.WriteFile(path, damaged, 0o600))
	t.Logf("seed %d: %s of %d bytes: %s", seed, target, len(pristine), what)

	d, l, err := openDisk(t, filepath.Join(dir, "wal"), filepath.Join(dir, "snap"))
	if err != nil {
		if !errors.Is(err, storage.ErrCorrupt) || !strings.Contains(err.Error(), filepath.Base(target)) {
			t.Errorf("open: %v; want an error that matches ErrCorrupt and names %s", err, target)
		}
		return "refused"
	}
	defer d.Close()

	want, ok := p.snapData[l.snap.Index]
	if !ok || !bytes.Equal(l.snapData, want) {
		t.Errorf("loaded snapshot at %d with %d bytes of data, which was not written", l.snap.Index, len(l.snapData))
		return "wrong snapshot"
	}
	for i, e := range l.ents {
		if want := p.acked[int(l.snap.Index)+i]; e.Index != want.Index || e.Term != want.Term || !bytes.Equal(e.Data, want.Data) {
			t.Errorf("entry %d after snapshot %d: got index %d, %d bytes; want index %d, %d bytes", i, l.snap.Index, e.Index, len(e.Data), want.Index, len(want.Data))
			return "wrong entry"
		}
	}
	last := l.snap.Index + uint64(len(l.ents))
	if l.st.Commit > last {
		t.Errorf("commit %d beyond the last entry %d", l.st.Commit, last)
	}
	outcome := "intact"
	if last < uint64(len(p.acked)) {
		switch keep, ok := p.crashLike(target, pristine, damaged); {
		case !ok:
			t.Errorf("log ends at %d of %d acknowledged entries, but the damage is not what a crash leaves", last, len(p.acked))
		case last < keep:
			t.Errorf("log ends at %d, but every entry through %d lies before the damage", last, keep)
		}
		outcome = "cut like a crash"
	}
	if l.snap.Index != p.newestSnapshot() {
		outcome += ", older snapshot"
	}
	// What was read takes appends.
	next := raftpb.Entry{Index: last + 1, Term: 2, Data: []byte("after")}
	mustCheck(t, d.Save(raftpb.HardState{Term: 2, Vote: 1, Commit: last}, []raftpb.Entry{next}))
	mustCheck(t, d.Close())
	d, l2, err := openDisk(t, filepath.Join(dir, "wal"), filepath.Join(dir, "snap"))
	mustCheck(t, err)
	d.Close()
	if got := l2.snap.Index + uint64(len(l2.ents)); got != last+1 || !bytes.Equal(l2.ents[len(l2.ents)-1].Data, next.Data) {
		t.Errorf("after an append at %d, the log ends at %d", last+1, got)
	}
	return outcome
}

func (p *sweepLog) newestSnapshot() uint64 {
	var newest uint64
	for i := range p.snapData {
		newest = max(newest, i)
	}
	return newest
}

// crashLike reports whether damage to file, which held pristine and now
// holds damaged, leaves what a crash during an append can: it is in the
// last segment, every crc record after the first damaged record (each
// begins an append) was damaged too, and a file cut short ends at a record
// boundary or a page boundary. It also returns the last entry whose record
// lies wholly before the damage.
func (p *sweepLog) crashLike(file string, pristine, damaged []byte) (keep uint64, ok bool) {
	if file != p.segments[len(p.segments)-1] {
		return 0, false
	}
	intact := func(s [2]int) bool {
		return s[1] <= len(damaged) && bytes.Equal(pristine[s[0]:s[1]], damaged[s[0]:s[1]])
	}
	hit := -1
	for _, s := range recordSpans(pristine) {
		rec := pristine[s[0]:s[1]]
		if s[0] < len(damaged) && len(damaged) < s[1] && len(damaged)%4096 != 0 {
			return 0, false // cut inside a record, where no page ends
		}
		switch {
		case hit < 0 && !intact(s):
			hit = s[0]
		case hit < 0 && rec[12] == 2: // an entry
			var e raftpb.Entry
			mustUnmarshal(&e, rec[13:8+binary.LittleEndian.Uint64(rec)])
			keep = e.Index
		case hit >= 0 && rec[12] == 4 && intact(s): // a crc record
			return keep, false
		}
	}
	if keep == 0 {
		// No entry before the damage in this segment: those of the
		// segments before it are kept.
		keep = p.firstIndexOf(file) - 1
	}
	return keep, hit >= 0
}

// firstIndexOf returns the raft index a segment was opened for.
func (p *sweepLog) firstIndexOf(file string) uint64 {
	name := strings.TrimSuffix(filepath.Base(file), ".wal")
	i, _ := strconv.ParseUint(name[17:], 16, 64)
	return i
}

func mustUnmarshal(e *raftpb.Entry, b []byte) {
	if err := e.Unmarshal(b); err != nil {
		panic(err)
	}
}

// lastSegmentEnd returns where the records of the last segment in dir end.
func lastSegmentEnd(t *testing.T, dir string) int {
	segs := segmentFiles(t, dir)
	b, err := os.ReadFile(segs[len(segs)-1])
	mustCheck(t, err)
	return logEnd(b)
}

// logEnd returns where the records of a segment end.
func logEnd(b []byte) int {
	spans := recordSpans(b)
	return spans[len(spans)-1][1]
}
