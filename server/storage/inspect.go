package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.etcd.io/raft/v3/raftpb"
)

// This file is for tools that read a data directory while no server runs
// on it: they take the WAL's lock, read every record and snapshot file
// without changing anything (a server's own reading truncates torn tails
// and renames broken snapshots), and repair only when asked (CutWAL).

// LockWAL takes the lock an open WAL holds on dir, so that no server opens
// the directory while a tool reads or repairs it. It fails with ErrLocked
// while a server has it open. release gives the lock back.
func LockWAL(dir string) (release func() error, err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: lock WAL: %w", err)
	}
	if err := lockDir(d); err != nil {
		d.Close()
		return nil, err
	}
	return d.Close, nil
}

// ReadIdentityFile returns the identity recorded in the snapshot
// directory snapDir; ok is false when it has none.
func ReadIdentityFile(snapDir string) (id Identity, ok bool, err error) {
	return readIdentityFile(snapDir)
}

// ReadWALIdentity returns the identity the WAL in dir recorded at its
// head; legacy is true for a WAL written before identities were, which
// has none. It reads the head of the first segment only, so damage
// further on does not hide who wrote the log.
func ReadWALIdentity(dir string) (id Identity, legacy bool, err error) {
	segs, err := listSegments(dir)
	if err != nil {
		return Identity{}, false, fmt.Errorf("storage: %w", err)
	}
	if len(segs) == 0 {
		return Identity{}, false, fmt.Errorf("%w: the WAL directory %s has no segments", ErrCorrupt, dir)
	}
	first := segs[contiguousFrom(segs)].name()
	f, err := os.Open(filepath.Join(dir, first))
	if err != nil {
		return Identity{}, false, fmt.Errorf("storage: %w", err)
	}
	defer f.Close()
	var (
		d     decoder
		meta  []byte
		found = errors.New("found")
	)
	_, _, err = replaySegment(&d, f, func(t recordType, data []byte) error {
		if t == metadataType {
			meta = bytes.Clone(data)
			return found
		}
		return nil
	})
	switch {
	case err == nil:
		return Identity{}, false, fmt.Errorf("%w: segment %s has no metadata record", ErrCorrupt, first)
	case err != found:
		return Identity{}, false, fmt.Errorf("storage: read the head of segment %s: %w", first, err)
	case len(meta) == 0:
		return Identity{}, true, nil
	}
	id, err = parseIdentity(meta, "the metadata of the WAL in "+dir)
	return id, false, err
}

// RecordKind is the kind of a WAL record (see the package documentation).
type RecordKind uint8

// The record kinds, numbered as on disk.
const (
	RecordMetadata = RecordKind(metadataType)
	RecordEntry    = RecordKind(entryType)
	RecordState    = RecordKind(stateType)
	RecordCRC      = RecordKind(crcType)
	RecordSnapshot = RecordKind(snapshotType)
)

func (k RecordKind) String() string {
	switch k {
	case RecordMetadata:
		return "metadata"
	case RecordEntry:
		return "entry"
	case RecordState:
		return "state"
	case RecordCRC:
		return "crc"
	case RecordSnapshot:
		return "snapshot"
	}
	return fmt.Sprintf("type %d", uint8(k))
}

// WALRecord is one record of a WAL that passed its checks, as ScanWAL
// reads it. The fields of its kind are set; the values are the record's
// own, the caller may keep them.
type WALRecord struct {
	Segment  string // the segment's file name
	Offset   int64  // where the record begins in the segment
	Kind     RecordKind
	Entry    *raftpb.Entry     // RecordEntry
	State    *raftpb.HardState // RecordState
	Snapshot *WALSnapshot      // RecordSnapshot
	Metadata []byte            // RecordMetadata
}

// WALSegment is what ScanWAL found in one segment.
type WALSegment struct {
	Name  string
	Seq   uint64
	Index uint64 // the raft index the segment was opened for
	// Bytes is the file's size; End is where its last good record ends
	// (the rest is the zeros a segment is prepared with, or damage).
	Bytes, End int64
	Records    int
	// FirstEntry and LastEntry are the indexes of its first and last
	// entry records; 0 when it has none.
	FirstEntry, LastEntry uint64
}

// WALProblem is a record ScanWAL could not take, and where it is.
type WALProblem struct {
	Segment string
	Offset  int64
	// Torn is set for a write a crash tore at the end of the log: it was
	// never acknowledged, and a server drops it, with whatever follows it,
	// when it starts. Every other problem is damage (Err matches
	// ErrCorrupt) or a log this version cannot read.
	Torn bool
	// Rest is set when the remainder of the segment, from Offset on,
	// could not be read past this problem.
	Rest bool
	Err  error
}

func (p WALProblem) String() string {
	return fmt.Sprintf("%s, offset %d: %v", p.Segment, p.Offset, p.Err)
}

// WALScan is the outcome of reading a WAL through: its segments and the
// problems found, in log order.
type WALScan struct {
	Segments []WALSegment
	// Ignored are older segments behind a gap in the sequence, which a
	// purge interrupted by a crash leaves: no server reads them.
	Ignored  []string
	Problems []WALProblem
}

// Damaged returns the problems that are not a torn tail.
func (s *WALScan) Damaged() []WALProblem {
	var out []WALProblem
	for _, p := range s.Problems {
		if !p.Torn {
			out = append(out, p)
		}
	}
	return out
}

// ScanWAL reads every record of the WAL in dir through its checksums, in
// order, without changing anything, and hands each good one to fn unless
// fn is nil (an error from fn ends the scan and is returned). Each problem
// is recorded with its segment and offset. A record that breaks the
// framing or the checksum chain ends the reading of its segment, and
// reading goes on with the next segment, whose chain starts again from its
// crc record; a record that reads but makes no sense (an entry index that
// leaves a gap, conflicting metadata) does not. Hold LockWAL while
// scanning a WAL a server could open.
func ScanWAL(dir string, fn func(WALRecord) error) (*WALScan, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: scan WAL: %w", err)
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("storage: scan WAL %s: no segments: %w", dir, fs.ErrNotExist)
	}
	scan := &WALScan{}
	i := contiguousFrom(segs)
	for _, s := range segs[:i] {
		scan.Ignored = append(scan.Ignored, s.name())
	}
	err = scanSegments(dir, segs[i:], scan, false, fn)
	return scan, err
}

// scanSegments reads segs into scan. With stop set it returns at the first
// problem that is not a torn tail, as an error.
func scanSegments(dir string, segs []segment, scan *WALScan, stop bool, fn func(WALRecord) error) error {
	var (
		d        decoder
		meta     []byte
		haveMeta bool
		// last is the index the next entry may follow (see WAL.lastIndex).
		last uint64
	)
	if len(segs) > 0 {
		last = max(segs[0].index, 1) - 1
	}
	for i, s := range segs {
		seg := WALSegment{Name: s.name(), Seq: s.seq, Index: s.index}
		var stopErr, fnErr error
		problem := func(p WALProblem) {
			p.Segment = seg.Name
			scan.Problems = append(scan.Problems, p)
			if stop && !p.Torn && stopErr == nil {
				stopErr = fmt.Errorf("segment %s, record at offset %d: %w", seg.Name, p.Offset, p.Err)
			}
		}
		f, err := os.Open(filepath.Join(dir, seg.Name))
		if err != nil {
			return fmt.Errorf("storage: scan WAL: %w", err)
		}
		end, why, err := replaySegment(&d, f, func(t recordType, data []byte) error {
			seg.Records++
			rec, bad := record(seg.Name, d.recOff, t, data)
			switch {
			case bad != nil:
			case rec.Entry != nil:
				e := rec.Entry
				if e.Index > last+1 {
					bad = fmt.Errorf("%w: entry %d follows entry %d", ErrCorrupt, e.Index, last)
				}
				last = e.Index
				if seg.FirstEntry == 0 {
					seg.FirstEntry = e.Index
				}
				seg.LastEntry = e.Index
			case rec.Snapshot != nil:
				last = max(last, rec.Snapshot.Index)
			case rec.Kind == RecordMetadata:
				if haveMeta && !bytes.Equal(meta, data) {
					bad = ErrMetadataConflict
				} else if !haveMeta {
					meta, haveMeta = rec.Metadata, true
				}
			}
			if bad != nil {
				problem(WALProblem{Offset: rec.Offset, Err: bad})
				return stopErr
			}
			if fn != nil {
				fnErr = fn(rec)
			}
			return fnErr
		})
		seg.End = d.off
		if fi, serr := f.Stat(); serr == nil {
			seg.Bytes = fi.Size()
		}
		// Where the records stop early, the last segment may end as a
		// crash during an append leaves it, by the rule a start applies
		// (checkTail); any other segment was complete.
		torn := false
		if err == nil && why != nil && fnErr == nil && stopErr == nil {
			if i == len(segs)-1 {
				var t tail
				if t, err = checkTail(f, seg.Bytes, end, why); err == nil {
					torn = t.end > end
				}
			} else {
				err = fmt.Errorf("%w: %w before the end of a segment that was full", ErrCorrupt, why)
			}
		}
		f.Close()
		scan.Segments = append(scan.Segments, seg)
		switch {
		case fnErr != nil:
			return fnErr
		case stopErr != nil:
			return stopErr
		case err != nil && !errors.Is(err, ErrCorrupt):
			return fmt.Errorf("storage: scan WAL segment %s: %w", seg.Name, err)
		case err != nil:
			problem(WALProblem{Offset: d.recOff, Rest: true, Err: err})
		case torn:
			problem(WALProblem{Offset: end, Torn: true, Err: errTornTail})
		}
		if stopErr != nil {
			return stopErr
		}
		if (err != nil || torn) && i+1 < len(segs) {
			// Neither the chain nor the entry indexes carry over a damaged
			// segment: the next one starts its chain from its crc record,
			// and its entries from the index it was opened for.
			d.chained = false
			last = max(segs[i+1].index, 1) - 1
		}
	}
	return nil
}

var errTornTail = errors.New("a write torn by a crash at the end of the log: it was never acknowledged, and a server drops it when it starts")

// record decodes the data of a record of type t at off in segment seg.
// bad is set when the data makes no sense for its type.
func record(seg string, off int64, t recordType, data []byte) (rec WALRecord, bad error) {
	rec = WALRecord{Segment: seg, Offset: off, Kind: RecordKind(t)}
	switch t {
	case entryType:
		var e raftpb.Entry
		if err := decodeEntry(data, &e); err != nil {
			return rec, err
		}
		e.Data = bytes.Clone(e.Data)
		rec.Entry = &e
	case stateType:
		var st raftpb.HardState
		if err := st.Unmarshal(data); err != nil {
			return rec, fmt.Errorf("%w: hard state: %w", ErrCorrupt, err)
		}
		rec.State = &st
	case metadataType:
		rec.Metadata = bytes.Clone(data)
	case crcType:
	case snapshotType:
		snap, err := decodeSnapshot(data)
		if err != nil {
			return rec, err
		}
		rec.Snapshot = &snap
	default:
		return rec, fmt.Errorf("%w: unknown record type %d", ErrCorrupt, t)
	}
	return rec, nil
}

// ReadLog returns what ReadAll would after Open at snap: the metadata,
// the last HardState and the entries after the snapshot, where an index
// written more than once holds its last write. Unlike ReadAll it changes
// nothing: a torn write at the end of the log is left out, not truncated
// away. It fails as ReadAll does, with an error matching ErrCorrupt for a
// damaged log. Hold LockWAL.
func ReadLog(dir string, snap WALSnapshot) (metadata []byte, st raftpb.HardState, ents []raftpb.Entry, err error) {
	segs, err := listSegments(dir)
	if err != nil {
		return nil, st, nil, fmt.Errorf("storage: read WAL: %w", err)
	}
	if len(segs) == 0 {
		return nil, st, nil, fmt.Errorf("storage: read WAL %s: no segments: %w", dir, fs.ErrNotExist)
	}
	i := searchIndex(segs, snap.Index)
	if i < 0 {
		return nil, st, nil, fmt.Errorf("%w: index %d precedes the first segment %s", ErrSnapshotNotFound, snap.Index, segs[0].name())
	}
	segs = segs[i:]
	if j := contiguousFrom(segs); j != 0 {
		return nil, st, nil, fmt.Errorf("%w: segment %s does not follow %s", ErrCorrupt, segs[j].name(), segs[j-1].name())
	}
	var (
		match  bool
		marked uint64
	)
	err = scanSegments(dir, segs, &WALScan{}, true, func(r WALRecord) error {
		switch r.Kind {
		case RecordEntry:
			e := *r.Entry
			if e.Index <= snap.Index {
				return nil
			}
			at := e.Index - snap.Index - 1
			if at > uint64(len(ents)) {
				if marked >= e.Index-1 {
					return fmt.Errorf("storage: entry %d follows snapshot %d, newer than the one at %d the WAL was read from", e.Index, marked, snap.Index)
				}
				return fmt.Errorf("%w: entry %d follows entry %d", ErrCorrupt, e.Index, snap.Index+uint64(len(ents)))
			}
			ents = append(ents[:at], e)
		case RecordState:
			st = *r.State
		case RecordMetadata:
			if metadata == nil {
				metadata = r.Metadata
			}
		case RecordSnapshot:
			s := *r.Snapshot
			if s.Index == snap.Index {
				if s.Term != snap.Term {
					return fmt.Errorf("%w: WAL has index %d at term %d, not %d", ErrSnapshotMismatch, s.Index, s.Term, snap.Term)
				}
				match = true
			}
			marked = max(marked, s.Index)
		}
		return nil
	})
	if err != nil {
		return nil, raftpb.HardState{}, nil, fmt.Errorf("storage: read WAL %s: %w", dir, err)
	}
	if !match {
		return nil, raftpb.HardState{}, nil, fmt.Errorf("%w: index %d term %d", ErrSnapshotNotFound, snap.Index, snap.Term)
	}
	return metadata, st, ents, nil
}

// SnapshotFile is a file of a snapshot directory, as ListSnapshots found
// it and Check read it.
type SnapshotFile struct {
	Name        string
	Index, Term uint64
	Bytes       int64 // the file's size
	// Broken is set for a file a server found damaged and set aside,
	// renamed with .broken.
	Broken bool
	path   string
	snap   *Snapshot
	err    error
	read   bool
}

// ListSnapshots returns the snapshot files of dir, broken ones included,
// newest first, without reading them.
func ListSnapshots(dir string) ([]SnapshotFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: list snapshots: %w", err)
	}
	var files []SnapshotFile
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		f := SnapshotFile{Name: e.Name(), path: filepath.Join(dir, e.Name())}
		var ok bool
		if f.Term, f.Index, ok = parseHexPair(f.Name, snapSuffix); !ok {
			if f.Term, f.Index, ok = parseHexPair(f.Name, snapSuffix+brokenSuffix); !ok {
				continue
			}
			f.Broken = true
		}
		if info, err := e.Info(); err == nil {
			f.Bytes = info.Size()
		}
		files = append(files, f)
	}
	// Name order is age order; a broken file after the intact one of the
	// same snapshot, which cannot both exist but sorts the same.
	slices.SortStableFunc(files, func(a, b SnapshotFile) int {
		return strings.Compare(strings.TrimSuffix(b.Name, brokenSuffix), strings.TrimSuffix(a.Name, brokenSuffix))
	})
	return files, nil
}

// Check reads the file through its checks, once, and returns why it
// fails them: an error matching ErrCorrupt for damage, another for a
// file of another format version; nil when it passes.
func (f *SnapshotFile) Check() error {
	if !f.read {
		f.snap, f.err = readSnapshot(f.path, WALSnapshot{Index: f.Index, Term: f.Term})
		f.read = true
	}
	return f.err
}

// Snapshot returns the snapshot of a file that passed Check, nil
// otherwise.
func (f *SnapshotFile) Snapshot() *Snapshot {
	if f.Check() != nil {
		return nil
	}
	return f.snap
}

// NewestUsableSnapshot returns the snapshot a server would start from
// (see Snapshotter.LoadNewestAvailable): the newest of files that the WAL
// has a record of (marks, from ValidSnapshotEntries) and that passes its
// checks. It changes nothing: a damaged file is skipped, not renamed. It
// returns ErrNoSnapshot when there is none.
func NewestUsableSnapshot(files []SnapshotFile, marks []WALSnapshot) (*Snapshot, error) {
	for i := range files {
		f := &files[i]
		if f.Broken || !slices.Contains(marks, WALSnapshot{Index: f.Index, Term: f.Term}) {
			continue
		}
		err := f.Check()
		switch {
		case err == nil:
			return f.snap, nil
		case !errors.Is(err, ErrCorrupt):
			return nil, fmt.Errorf("storage: load snapshot: %w", err)
		}
	}
	return nil, ErrNoSnapshot
}

// CutWAL removes from the WAL in dir the record at offset in the segment
// named segName, everything after it in that segment, and every later
// segment: the later segments first, newest first, then the cut segment is
// truncated, so that a crash part way leaves a log that reads to its end.
// offset must be where a record of the segment begins, after the crc and
// metadata records every segment starts with, or where reading the
// segment stops at a damaged record. Nothing else is checked: whether the
// records cut were acknowledged is the caller's to judge. Hold LockWAL.
// It returns the segments removed.
func CutWAL(dir, segName string, offset int64) (removed []string, err error) {
	target, ok := parseSegmentName(segName)
	if !ok {
		return nil, fmt.Errorf("storage: cut WAL: %q is not a segment name", segName)
	}
	segs, err := listSegments(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: cut WAL: %w", err)
	}
	at := slices.Index(segs, target)
	switch {
	case at < 0:
		return nil, fmt.Errorf("storage: cut WAL: no segment %s in %s", segName, dir)
	case at < contiguousFrom(segs):
		return nil, fmt.Errorf("storage: cut WAL: segment %s is behind a gap in the sequence, and no server reads it", segName)
	}
	path := filepath.Join(dir, segName)
	if err := checkBoundary(path, offset); err != nil {
		return nil, err
	}
	later := segs[at+1:]
	for i := len(later) - 1; i >= 0; i-- {
		if err := os.Remove(filepath.Join(dir, later[i].name())); err != nil {
			return removed, fmt.Errorf("storage: cut WAL: %w", err)
		}
		removed = append(removed, later[i].name())
		if err := syncDir(dir); err != nil {
			return removed, fmt.Errorf("storage: cut WAL: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return removed, fmt.Errorf("storage: cut WAL: %w", err)
	}
	err = f.Truncate(offset)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return removed, fmt.Errorf("storage: cut WAL segment %s: %w", segName, err)
	}
	slices.Reverse(removed)
	return removed, nil
}

// checkBoundary makes sure offset is a place CutWAL may cut the segment
// at path.
func checkBoundary(path string, offset int64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("storage: cut WAL: %w", err)
	}
	defer f.Close()
	var (
		d      decoder
		starts []int64
	)
	_, _, rerr := replaySegment(&d, f, func(recordType, []byte) error {
		starts = append(starts, d.recOff)
		return nil
	})
	if rerr != nil && !errors.Is(rerr, ErrCorrupt) {
		return fmt.Errorf("storage: cut WAL: %w", rerr)
	}
	name := filepath.Base(path)
	if len(starts) < 2 || offset <= starts[1] {
		return fmt.Errorf("storage: cut WAL: offset %d of %s is within the records a segment starts with; cut the segment before it instead, or restore from a backup", offset, name)
	}
	if !slices.Contains(starts, offset) && offset != d.off {
		return fmt.Errorf("storage: cut WAL: no record of %s begins at offset %d; give an offset that collie datadir verify or dump reports", name, offset)
	}
	return nil
}
