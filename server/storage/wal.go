package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// WALSnapshot is the WAL's record that a snapshot at Index and Term was
// saved. It is also how Open is told where to start reading.
type WALSnapshot struct {
	Index uint64
	Term  uint64
}

var (
	// ErrCorrupt means the files hold something this package did not write
	// or a crash cannot explain. The member cannot recover on its own; it
	// must be rebuilt from its peers.
	ErrCorrupt = errors.New("storage: corrupt data")
	// ErrCRCMismatch is the ErrCorrupt of a record or file whose checksum
	// does not match its contents.
	ErrCRCMismatch = fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	// ErrMetadataConflict is the ErrCorrupt of a WAL whose segments carry
	// different metadata: segments of two logs were mixed.
	ErrMetadataConflict = fmt.Errorf("%w: conflicting WAL metadata", ErrCorrupt)
	// ErrSnapshotNotFound is returned by Open and ReadAll when the WAL has
	// no record of the snapshot it was opened at.
	ErrSnapshotNotFound = errors.New("storage: snapshot not found in the WAL")
	// ErrSnapshotMismatch is returned by ReadAll when the WAL recorded a
	// snapshot at the index it was opened at, but with another term.
	ErrSnapshotMismatch = errors.New("storage: snapshot term does not match the WAL")
	// ErrLocked is returned by Create and Open when another WAL has the
	// directory open.
	ErrLocked = errors.New("storage: WAL directory is in use")
	// ErrRecordTooLarge is returned by Save for an entry, and by Create for
	// metadata, above 128 MiB; nothing of that call was written.
	ErrRecordTooLarge = errors.New("storage: record too large")

	errClosed = errors.New("storage: WAL is closed")
	errUnread = errors.New("storage: WAL must be read with ReadAll before it is appended to")
)

// segmentBytes is the size at which a segment is cut. Tests lower it.
var segmentBytes int64 = 64 << 20

// wholePages rounds a segment size up to whole pages: appends write whole
// pages, and a crash while one runs past the preallocated end of a segment
// must leave the file whole pages long, as the tail rule expects.
func wholePages(n int64) int64 { return (n + pageBytes - 1) &^ (pageBytes - 1) }

// spares turns on the preparing of segments ahead of their cut. Tests that
// need segments cut only when full turn it off.
var spares = true

// The file operations whose failure the WAL and the snapshots must
// survive go through these variables, so that tests can make them fail or
// stop the process part way.
var (
	// syncData makes a segment's appended records durable.
	syncData = fdatasync
	// writeAt writes a segment's records.
	writeAt = (*os.File).WriteAt
	// syncFile makes a snapshot file, a truncated segment or a directory
	// durable.
	syncFile = (*os.File).Sync
	// rename gives a finished segment or snapshot file its name.
	rename = os.Rename
	// remove purges a segment or snapshot file.
	remove = os.Remove
)

// slowSync is how long an fsync may take before the WAL warns: beyond it,
// raft heartbeats and elections start to suffer.
const slowSync = time.Second

// WAL is the write-ahead log of one raft node. A WAL from Create appends
// at once; a WAL from Open must first be read to the end with ReadAll.
type WAL struct {
	lg           *slog.Logger
	dir          string
	dirFile      *os.File // locked while the WAL is open; fsynced after renames and removals
	segmentBytes int64

	// Set by Open, used by ReadAll.
	start WALSnapshot
	segs  []segment

	mu sync.Mutex
	// The fields below are guarded by mu.
	metadata []byte
	// state is the last HardState written. Use: decide whether a Save must
	// fsync; head every new segment.
	state raftpb.HardState
	// lastIndex is the index of the last entry written, or of a snapshot
	// record above it. Invariant: the next Save starts at or below
	// lastIndex+1.
	lastIndex uint64
	tail      segment
	enc       *encoder // appends to the tail segment; nil until ReadAll
	// durable is how far the tail segment's records are known to be on
	// disk: the end of the records of the last fsync that succeeded.
	durable int64
	err     error // the first failed write; the WAL accepts no more
	closed  bool
	// tailWritten is set when the tail segment was a spare, its blocks
	// written ahead. A tail that is not is cut as soon as a spare is ready.
	tailWritten bool
	// spare is the next segment being prepared, or nil. spareFailed stops
	// new attempts after a failure until the next cut.
	spare       *spare
	spareFailed bool
	// tailCut is set when a cut truncated the tail segment to its records
	// but found no space for the next one: the next append makes it first.
	tailCut bool
}

// Create makes a WAL in dir, which must not hold one, and returns it ready
// to append. metadata is stored at the head of every segment and returned
// by ReadAll. A nil logger discards.
func Create(lg *slog.Logger, dir string, metadata []byte) (*WAL, error) {
	return create(lg, dir, metadata, segmentBytes)
}

// create is Create with segments of size bytes: the first is allocated
// whole at once, and a disk too small for the default size would refuse it.
func create(lg *slog.Logger, dir string, metadata []byte, size int64) (_ *WAL, err error) {
	if Exist(dir) {
		return nil, fmt.Errorf("storage: create WAL %s: %w", dir, fs.ErrExist)
	}
	if len(metadata) > maxRecordBytes-bodyHeader {
		return nil, fmt.Errorf("%w: metadata of %d bytes", ErrRecordTooLarge, len(metadata))
	}
	// The first segment is built aside and renamed into place, so that a
	// crash never leaves a WAL directory without one.
	tmp := filepath.Clean(dir) + tmpSuffix
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tmp, 0o750); err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	d, err := os.Open(tmp)
	if err != nil {
		return nil, err
	}
	var f *os.File
	defer func() {
		if err != nil {
			if f != nil {
				f.Close()
			}
			d.Close()
		}
	}()
	// The lock is on the directory itself and survives the rename.
	if err := lockDir(d); err != nil {
		return nil, err
	}
	first := segment{}
	if f, err = os.OpenFile(filepath.Join(tmp, first.name()), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
		return nil, err
	}
	size = wholePages(size)
	if err := preallocate(f, size); err != nil {
		return nil, err
	}
	enc := newEncoder(f, 0, 0)
	if err := writeHeader(enc, 0, metadata, nil); err != nil {
		return nil, err
	}
	if err := enc.encodeSnapshot(WALSnapshot{}); err != nil {
		return nil, err
	}
	if err := enc.flush(); err != nil {
		return nil, err
	}
	if err := syncData(f); err != nil {
		return nil, err
	}
	if err := syncFile(d); err != nil {
		return nil, err
	}
	// Replaces dir only if it is an empty directory.
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("storage: create WAL: %w", err)
	}
	if err := rename(tmp, dir); err != nil {
		return nil, err
	}
	if err := syncDir(filepath.Dir(filepath.Clean(dir))); err != nil {
		return nil, err
	}
	return &WAL{
		lg:           logger(lg),
		dir:          dir,
		dirFile:      d,
		segmentBytes: size,
		metadata:     bytes.Clone(metadata),
		enc:          enc,
		durable:      enc.offset(),
	}, nil
}

// Open opens the WAL in dir for reading from snap on, then appending. snap
// is the snapshot the state machine will be restored from, or the zero
// WALSnapshot when there is none; the WAL must have a record of it (see
// ValidSnapshotEntries). A nil logger discards.
func Open(lg *slog.Logger, dir string, snap WALSnapshot) (_ *WAL, err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: open WAL: %w", err)
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if err := lockDir(d); err != nil {
		return nil, err
	}
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("storage: open WAL %s: no segments: %w", dir, fs.ErrNotExist)
	}
	i := searchIndex(segs, snap.Index)
	if i < 0 {
		return nil, fmt.Errorf("%w: index %d precedes the first segment %s", ErrSnapshotNotFound, snap.Index, segs[0].name())
	}
	segs = segs[i:]
	if j := contiguousFrom(segs); j != 0 {
		return nil, fmt.Errorf("%w: WAL segment %s does not follow %s: a segment between them is missing", ErrCorrupt,
			filepath.Join(dir, segs[j].name()), filepath.Join(dir, segs[j-1].name()))
	}
	if err := removeStaleTemps(dir); err != nil {
		return nil, err
	}
	return &WAL{
		lg:           logger(lg),
		dir:          dir,
		dirFile:      d,
		segmentBytes: wholePages(segmentBytes),
		start:        snap,
		segs:         segs,
	}, nil
}

// ReadAll reads the WAL from the snapshot given to Open to the end and
// readies it for appending. It returns the metadata, the last HardState and
// the entries after the snapshot. Where an entry index was written more than
// once, the last write wins, as raft overwrites uncommitted entries; entries
// above HardState.Commit may still change. A torn write at the end of the
// log is dropped and truncated away. ReadAll fails with ErrSnapshotNotFound
// or ErrSnapshotMismatch when the WAL does not know the snapshot, and with
// an error matching ErrCorrupt when the log is damaged; after an error the
// WAL can only be closed.
func (w *WAL) ReadAll() (metadata []byte, st raftpb.HardState, ents []raftpb.Entry, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, st, nil, errClosed
	}
	if w.segs == nil {
		return nil, st, nil, errors.New("storage: ReadAll may be called once, on an opened WAL")
	}
	segs := w.segs
	w.segs = nil

	var (
		match    bool
		haveMeta bool
		last     uint64 // see WAL.lastIndex
		marked   uint64 // highest snapshot record
	)
	end, err := replay(w.dir, segs, true, func(t recordType, data []byte) error {
		switch t {
		case entryType:
			var e raftpb.Entry
			if err := decodeEntry(data, &e); err != nil {
				return err
			}
			if e.Index > w.start.Index {
				at := e.Index - w.start.Index - 1
				if at > uint64(len(ents)) {
					prev := w.start.Index + uint64(len(ents))
					if marked >= e.Index-1 {
						// The log was restored from a leader's snapshot
						// after w.start: only that snapshot can be replayed.
						return fmt.Errorf("storage: entry %d follows snapshot %d, newer than the one at %d the WAL was opened at", e.Index, marked, w.start.Index)
					}
					return fmt.Errorf("%w: entry %d follows entry %d", ErrCorrupt, e.Index, prev)
				}
				ents = append(ents[:at], e)
			}
			last = e.Index
		case stateType:
			var s raftpb.HardState
			if err := s.Unmarshal(data); err != nil {
				return fmt.Errorf("%w: hard state: %w", ErrCorrupt, err)
			}
			st = s
		case metadataType:
			if haveMeta && !bytes.Equal(metadata, data) {
				return ErrMetadataConflict
			}
			if !haveMeta {
				metadata, haveMeta = bytes.Clone(data), true
			}
		case crcType:
			// Checked by the decoder.
		case snapshotType:
			s, err := decodeSnapshot(data)
			if err != nil {
				return err
			}
			if s.Index == w.start.Index {
				if s.Term != w.start.Term {
					return fmt.Errorf("%w: WAL has index %d at term %d, not %d", ErrSnapshotMismatch, s.Index, s.Term, w.start.Term)
				}
				match = true
			}
			last = max(last, s.Index)
			marked = max(marked, s.Index)
		default:
			return fmt.Errorf("%w: unknown record type %d", ErrCorrupt, t)
		}
		return nil
	})
	if err != nil {
		return nil, raftpb.HardState{}, nil, fmt.Errorf("storage: read WAL: %w", err)
	}
	if !match {
		end.f.Close()
		return nil, raftpb.HardState{}, nil, fmt.Errorf("%w: index %d term %d", ErrSnapshotNotFound, w.start.Index, w.start.Term)
	}
	if err := w.prepareTail(end); err != nil {
		end.f.Close()
		return nil, raftpb.HardState{}, nil, fmt.Errorf("storage: prepare WAL %s for appending: %w", w.dir, err)
	}
	w.metadata, w.state, w.lastIndex = metadata, st, last
	return metadata, st, ents, nil
}

// prepareTail makes the last segment ready for appending after its last good
// record.
func (w *WAL) prepareTail(end replayEnd) error {
	fi, err := end.f.Stat()
	if err != nil {
		return err
	}
	if end.torn.end > end.off {
		w.lg.Warn("storage: cut off a write that a crash interrupted at the end of the WAL",
			"file", filepath.Join(w.dir, end.seg.name()), "offset", end.off,
			"bytes", end.torn.end-end.off, "records", end.torn.records)
	}
	if fi.Size() > end.off {
		// Whatever follows the last good record goes, not just a torn one:
		// a crash can leave bytes beyond a zero length word, and appending
		// over part of them would turn them into corruption.
		if err := end.f.Truncate(end.off); err != nil {
			return err
		}
	}
	// The records read may be a dead process's writes that the kernel
	// still holds: they are acknowledged from now on, so they must be on
	// disk.
	if err := syncFile(end.f); err != nil {
		return err
	}
	if err := preallocate(end.f, w.segmentBytes); err != nil {
		return err
	}
	w.tail = end.seg
	w.enc = newEncoder(end.f, end.off, end.chain)
	w.durable = end.off
	return w.enc.resume()
}

// Save appends entries and then the HardState, and makes them durable with
// a single fsync before it returns: pass everything one raft Ready holds in
// one call. An empty HardState is not written; Save with nothing to write
// does nothing. A HardState that changes only Commit is not fsynced, as raft
// allows (a lost commit index is learned again): it reaches the disk with the
// next fsync. Entries must
// be consecutive and must not leave a gap after the entries already written;
// an entry at or below the last one written replaces it and everything after
// it. A Save that finds no space on the disk for its records fails with an
// ErrNoSpace before it writes any, and may be made again.
func (w *WAL) Save(st raftpb.HardState, ents []raftpb.Entry) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.appendable(); err != nil {
		return err
	}
	emptyState := st == raftpb.HardState{}
	if emptyState && len(ents) == 0 {
		return nil
	}
	if err := w.checkEntries(ents); err != nil {
		return err
	}
	if err := w.makeRoom(recordBytes(&st, ents)); err != nil {
		return err
	}
	mustSync := len(ents) > 0 || st.Term != w.state.Term || st.Vote != w.state.Vote
	if err := w.enc.openBatch(); err != nil {
		return w.fail(err)
	}
	for i := range ents {
		if err := w.enc.encodeEntry(&ents[i]); err != nil {
			return w.fail(err)
		}
	}
	if len(ents) > 0 {
		w.lastIndex = ents[len(ents)-1].Index
	}
	if !emptyState {
		if err := w.enc.encodeState(&st); err != nil {
			return w.fail(err)
		}
		w.state = st
	}
	if w.enc.offset() >= w.segmentBytes || !w.tailWritten && w.spare != nil && w.spare.ready() {
		return w.cutAfterSave()
	}
	if mustSync {
		if err := w.fail(w.sync()); err != nil {
			return err
		}
	}
	w.prepareSpare()
	return nil
}

// prepareSpare starts preparing the next segment unless one is under way,
// and logs a failed one.
func (w *WAL) prepareSpare() {
	if w.spare != nil {
		err := w.spare.failed()
		if err == nil {
			return
		}
		w.lg.Warn("storage: could not prepare the next WAL segment; it will be allocated when needed", "err", err)
		w.spare, w.spareFailed = nil, true
	}
	if spares && !w.spareFailed && spareRoom(w.dir, w.segmentBytes) {
		w.spare = startSpare(w.dir, w.segmentBytes)
	}
}

func (w *WAL) checkEntries(ents []raftpb.Entry) error {
	if len(ents) > 0 && ents[0].Index > w.lastIndex+1 {
		return fmt.Errorf("storage: entry %d would leave a gap after entry %d", ents[0].Index, w.lastIndex)
	}
	for i := range ents {
		if i > 0 && ents[i].Index != ents[i-1].Index+1 {
			return fmt.Errorf("storage: entry %d follows entry %d", ents[i].Index, ents[i-1].Index)
		}
		if ents[i].Size() > maxRecordBytes-bodyHeader {
			return fmt.Errorf("%w: entry %d has %d bytes", ErrRecordTooLarge, ents[i].Index, ents[i].Size())
		}
	}
	return nil
}

// SaveSnapshot records that a snapshot was saved, and fsyncs. Save the
// snapshot file first: a record must never point at a missing file. Like
// Save, it may fail with an ErrNoSpace, having written nothing.
func (w *WAL) SaveSnapshot(s WALSnapshot) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.appendable(); err != nil {
		return err
	}
	if err := w.makeRoom(frameBytes(4) + frameBytes(16)); err != nil {
		return err
	}
	if err := w.enc.openBatch(); err != nil {
		return w.fail(err)
	}
	if err := w.enc.encodeSnapshot(s); err != nil {
		return w.fail(err)
	}
	w.lastIndex = max(w.lastIndex, s.Index)
	return w.fail(w.sync())
}

// PurgeTo removes the segments that replaying from a snapshot at index does
// not need: all those before the segment that holds index. Pass the index of
// the oldest snapshot kept. The segment being appended to is never removed.
func (w *WAL) PurgeTo(index uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errClosed
	}
	if w.enc == nil {
		return errUnread
	}
	segs, err := listSegments(w.dir)
	if err != nil {
		return fmt.Errorf("storage: purge WAL: %w", err)
	}
	removed := 0
	// Oldest first, so that a crash part way leaves a contiguous log.
	for _, s := range segs[:max(searchIndex(segs, index), 0)] {
		if s.seq >= w.tail.seq {
			break
		}
		if err := remove(filepath.Join(w.dir, s.name())); err != nil {
			return fmt.Errorf("storage: purge WAL: %w", err)
		}
		removed++
	}
	if removed == 0 {
		return nil
	}
	w.lg.Debug("storage: purged WAL segments", "count", removed, "index", index)
	if err := syncFile(w.dirFile); err != nil {
		return fmt.Errorf("storage: purge WAL: %w", err)
	}
	return nil
}

// Close flushes and fsyncs what was appended, and releases the directory.
func (w *WAL) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.spare != nil {
		w.spare.discard()
		w.spare = nil
	}
	var errs []error
	if w.enc != nil {
		if w.err == nil {
			errs = append(errs, w.sync())
		}
		errs = append(errs, w.enc.f.Close())
	}
	errs = append(errs, w.dirFile.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("storage: close WAL %s: %w", w.dir, err)
	}
	return nil
}

func (w *WAL) appendable() error {
	switch {
	case w.closed:
		return errClosed
	case w.err != nil:
		return w.err
	case w.enc == nil:
		return errUnread
	}
	return nil
}

// fail makes err, if any, the WAL's permanent state: after a failed write or
// fsync nothing says which records reached the disk.
//
// The tail segment is cut back to what the last good fsync made durable.
// After a failed fsync the kernel may mark the pages it could not write
// clean and go on serving them from its cache: a restart of the process
// would read them back, take records that never reached the disk for
// durable ones, and acknowledge them. A truncation drops them from the
// cache; if it does not reach the disk either, a crash leaves what a crash
// during the append would.
func (w *WAL) fail(err error) error {
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("storage: append to WAL %s: %w", w.dir, err)
		if terr := w.enc.f.Truncate(w.durable); terr != nil {
			w.lg.Warn("storage: could not cut the WAL back to its durable records after a failed write",
				"file", filepath.Join(w.dir, w.tail.name()), "offset", w.durable, "err", terr)
		}
	}
	return w.err
}

func (w *WAL) sync() error {
	if err := w.enc.flush(); err != nil {
		return err
	}
	start := time.Now()
	err := syncData(w.enc.f)
	if took := time.Since(start); took > slowSync {
		w.lg.Warn("storage: slow WAL fsync", "took", took)
	}
	if err == nil {
		w.enc.open = false
		w.durable = w.enc.offset()
	}
	return err
}

// cut closes the tail segment and starts the next one.
func (w *WAL) cut() (err error) {
	old := w.enc
	if err := old.flush(); err != nil {
		return err
	}
	// Drop the preallocated space: only the last segment may end in zeros.
	if err := old.f.Truncate(old.offset()); err != nil {
		return err
	}
	if err := syncFile(old.f); err != nil {
		return err
	}
	w.durable = old.offset()

	next := segment{seq: w.tail.seq + 1, index: w.lastIndex + 1}
	path := filepath.Join(w.dir, next.name())
	tmp := path + tmpSuffix
	f, written, err := w.nextSegmentFile(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	enc := &encoder{f: f, chain: old.chain, buf: old.buf[:0]}
	var st *raftpb.HardState
	if w.state != (raftpb.HardState{}) {
		st = &w.state
	}
	if err := writeHeader(enc, old.chain, w.metadata, st); err != nil {
		return err
	}
	if err := enc.flush(); err != nil {
		return err
	}
	if err := syncData(f); err != nil {
		return err
	}
	// The segment appears under its name only once it is complete.
	if err := rename(tmp, path); err != nil {
		return err
	}
	if err := syncFile(w.dirFile); err != nil {
		return err
	}
	if err := old.f.Close(); err != nil {
		w.lg.Warn("storage: close full WAL segment", "segment", w.tail.name(), "err", err)
	}
	w.enc, w.tail, w.tailWritten = enc, next, written
	w.durable = enc.offset()
	w.spareFailed = false
	w.lg.Info("storage: started WAL segment", "segment", next.name())
	return nil
}

// nextSegmentFile returns the file, named tmp, of the segment a cut starts:
// the spare when it is ready (written is then true), or else a new file
// that is only allocated.
func (w *WAL) nextSegmentFile(tmp string) (f *os.File, written bool, err error) {
	if w.spare != nil && w.spare.ready() {
		s := w.spare
		w.spare = nil
		if err := rename(s.path, tmp); err != nil {
			s.discard()
			return nil, false, err
		}
		return s.f, true, nil
	}
	f, err = os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := allocate(f, w.segmentBytes); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, false, err
	}
	return f, false, nil
}

// writeHeader writes the records every segment starts with.
func writeHeader(enc *encoder, prev uint32, metadata []byte, st *raftpb.HardState) error {
	if err := enc.encodeCRC(prev); err != nil {
		return err
	}
	if err := enc.encodeBytes(metadataType, metadata); err != nil {
		return err
	}
	if st != nil {
		return enc.encodeState(st)
	}
	return nil
}

// ValidSnapshotEntries returns the snapshot records of the WAL in dir that a
// restart may use: those at or below the last committed index, and not older
// than the oldest segment left. It only reads, so it may run while the WAL is
// open elsewhere. Hand the result to Snapshotter.LoadNewestAvailable.
func ValidSnapshotEntries(dir string) ([]WALSnapshot, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: list WAL snapshots: %w", err)
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("storage: list WAL snapshots in %s: %w", dir, fs.ErrNotExist)
	}
	// A crash part way through a purge may leave older segments behind a
	// gap; only the last contiguous run is the log.
	segs = segs[contiguousFrom(segs):]
	var (
		marks []WALSnapshot
		st    raftpb.HardState
	)
	_, err = replay(dir, segs, false, func(t recordType, data []byte) error {
		switch t {
		case snapshotType:
			s, err := decodeSnapshot(data)
			if err != nil {
				return err
			}
			marks = append(marks, s)
		case stateType:
			var s raftpb.HardState
			if err := s.Unmarshal(data); err != nil {
				return fmt.Errorf("%w: hard state: %w", ErrCorrupt, err)
			}
			st = s
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: list WAL snapshots in %s: %w", dir, err)
	}
	valid := marks[:0]
	for _, s := range marks {
		// A snapshot above the commit index was received from a leader but
		// the HardState that commits it did not reach the disk.
		if s.Index <= st.Commit && s.Index >= segs[0].index {
			valid = append(valid, s)
		}
	}
	return valid, nil
}

// replayEnd is where reading the log stopped.
type replayEnd struct {
	f     *os.File // the last segment, open for writing; only when asked for
	seg   segment
	off   int64 // just after the last good record
	chain uint32
	torn  tail // what a crash left after off, to be cut off
}

// replay reads the records of segs in order and hands each to fn. Where the
// records of the last segment stop before its end, what follows is checked
// to be what a crash during an append leaves (checkTail) when reading to
// append (keepTail); otherwise it is taken to be so, since the log may be
// being appended to meanwhile. Every other segment must end with its last
// record.
func replay(dir string, segs []segment, keepTail bool, fn func(recordType, []byte) error) (replayEnd, error) {
	// Reading to append is reading the entries to keep: their data may
	// alias what was read.
	d := decoder{keep: keepTail}
	for i, s := range segs {
		last := i == len(segs)-1
		path := filepath.Join(dir, s.name())
		flag := os.O_RDONLY
		if last && keepTail {
			flag = os.O_RDWR
		}
		f, err := os.OpenFile(path, flag, 0)
		if err != nil {
			return replayEnd{}, err
		}
		end := replayEnd{f: f, seg: s}
		var why error
		end.off, why, err = replaySegment(&d, f, fn)
		switch {
		case err == nil && why != nil && !last:
			err = fmt.Errorf("%w: %w before the end of a segment that was full", ErrCorrupt, why)
		case err == nil && why != nil && keepTail:
			var fi os.FileInfo
			if fi, err = f.Stat(); err == nil {
				end.torn, err = checkTail(f, fi.Size(), end.off, why)
			}
		}
		if err != nil {
			f.Close()
			return replayEnd{}, locate(dir, segs, i, d.recOff, d.recNo < 2, err)
		}
		if last && keepTail {
			end.chain = d.chain
			return end, nil
		}
		f.Close()
	}
	return replayEnd{}, nil
}

// locate says where in the log, segment i of segs at offset off (in its
// header or not), err was found.
func locate(dir string, segs []segment, i int, off int64, header bool, err error) error {
	path := filepath.Join(dir, segs[i].name())
	if !errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("%s, offset %d: %w", path, off, err)
	}
	if off == 0 && i > 0 && errors.Is(err, ErrCRCMismatch) {
		// The chain breaks between two segments: the earlier one may
		// have lost its last records as well.
		err = fmt.Errorf("%w; or %s lost records at its end", err, filepath.Join(dir, segs[i-1].name()))
	}
	ce := &CorruptError{Path: path, Offset: off, Err: err, segment: true, header: header}
	for _, s := range segs[i+1:] {
		ce.Later = append(ce.Later, filepath.Join(dir, s.name()))
	}
	return ce
}

// replaySegment hands the records of one segment to fn. It returns where
// they stop and, when that is not the end of the file, why (errZeroLength,
// errTorn or errCutShort).
func replaySegment(d *decoder, f *os.File, fn func(recordType, []byte) error) (off int64, why, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, err
	}
	d.reset(f, fi.Size())
	for i := 0; ; i++ {
		t, data, err := d.next()
		switch {
		case i < 2 && (err == io.EOF || err == errZeroLength || err == errTorn || err == errCutShort):
			// Segments are complete before they get their names.
			return 0, nil, fmt.Errorf("%w: segment header cut short (%w)", ErrCorrupt, err)
		case err == io.EOF:
			return d.off, nil, nil
		case err == errZeroLength || err == errTorn || err == errCutShort:
			return d.off, err, nil
		case err != nil:
			return 0, nil, err
		case i == 0 && t != crcType:
			return 0, nil, fmt.Errorf("%w: segment starts with record type %d", ErrCorrupt, t)
		case i == 1 && t != metadataType:
			return 0, nil, fmt.Errorf("%w: segment header has record type %d where metadata belongs", ErrCorrupt, t)
		}
		if err := fn(t, data); err != nil {
			return 0, nil, err
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = syncFile(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func logger(lg *slog.Logger) *slog.Logger {
	if lg == nil {
		return slog.New(slog.DiscardHandler)
	}
	return lg
}
