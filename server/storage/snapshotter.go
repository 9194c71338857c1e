package storage

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"go.etcd.io/raft/v3/raftpb"
)

const (
	snapSuffix   = ".snap"
	brokenSuffix = ".broken"
	snapMagic    = "CSNP"
	snapEndMagic = "CSNE"
	snapVersion  = 2
	snapHead     = 12 // magic, version, metadata length
	snapTrailer  = 16 // data length, checksum, end magic
	// maxSnapMetadata bounds the metadata read from a file before it is
	// checked: a ConfState of a few members is tens of bytes.
	maxSnapMetadata = 1 << 20
)

// tmpSeq numbers the temporary files of snapshots being written.
var tmpSeq atomic.Uint64

// ErrNoSnapshot is returned by Load and LoadNewestAvailable when no usable
// snapshot exists: the node starts from an empty state and the whole WAL.
var ErrNoSnapshot = errors.New("storage: no snapshot")

// Snapshotter saves raft snapshots to a directory, one file each, and loads
// the newest one that is intact. It is safe for concurrent use as long as
// Purge does not race with a load.
type Snapshotter struct {
	lg  *slog.Logger
	dir string
}

// NewSnapshotter returns a Snapshotter for dir, creating the directory if
// needed and removing what a crash left behind: unfinished snapshot files and
// all broken ones but the newest. A nil logger discards.
func NewSnapshotter(lg *slog.Logger, dir string) (*Snapshotter, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("storage: snapshot directory: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: snapshot directory: %w", err)
	}
	var broken []string
	for _, e := range ents {
		switch name := e.Name(); {
		case strings.HasSuffix(name, snapSuffix+tmpSuffix):
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return nil, fmt.Errorf("storage: remove unfinished snapshot: %w", err)
			}
		case strings.HasSuffix(name, snapSuffix+brokenSuffix):
			broken = append(broken, name) // in name order, which is age order
		}
	}
	for _, name := range broken[:max(len(broken)-1, 0)] {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("storage: remove broken snapshot: %w", err)
		}
	}
	return &Snapshotter{lg: logger(lg), dir: dir}, nil
}

// Save writes snap to its own file and makes it durable before it returns.
// An empty snapshot (index 0) is not saved.
func (s *Snapshotter) Save(snap raftpb.Snapshot) error {
	_, err := s.Write(snap.Metadata, func(w io.Writer) error {
		_, err := w.Write(snap.Data)
		return err
	})
	return err
}

// Write writes the snapshot at meta to its own file, its data streamed by
// write, and makes it durable before it returns the data's size. The data
// is never held in memory whole, so a snapshot of a large state costs no
// more memory than write's buffers. An empty snapshot (index 0) is not
// saved. Write may run beside the WAL's appends.
func (s *Snapshotter) Write(meta raftpb.SnapshotMetadata, write func(io.Writer) error) (int64, error) {
	if meta.Index == 0 {
		return 0, nil
	}
	path := filepath.Join(s.dir, snapName(WALSnapshot{Index: meta.Index, Term: meta.Term}))
	// A name of its own for each write: a snapshot received from the
	// leader and one taken here may be written at the same index at once.
	tmp := fmt.Sprintf("%s.%d%s", strings.TrimSuffix(path, snapSuffix), tmpSeq.Add(1), snapSuffix+tmpSuffix)
	size, err := writeSnapshotFile(tmp, meta, write)
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("storage: save snapshot: %w", err)
	}
	if err := rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("storage: save snapshot: %w", err)
	}
	if err := syncDir(s.dir); err != nil {
		return 0, fmt.Errorf("storage: save snapshot: %w", err)
	}
	s.lg.Info("storage: saved snapshot", "index", meta.Index, "term", meta.Term, "bytes", size)
	return size, nil
}

func writeSnapshotFile(path string, meta raftpb.SnapshotMetadata, write func(io.Writer) error) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	m, err := meta.Marshal()
	if err != nil {
		return 0, fmt.Errorf("encode metadata: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	head := make([]byte, 0, snapHead+len(m))
	head = append(head, snapMagic...)
	head = binary.LittleEndian.AppendUint32(head, snapVersion)
	head = binary.LittleEndian.AppendUint32(head, uint32(len(m)))
	head = append(head, m...)
	if _, err := bw.Write(head); err != nil {
		return 0, err
	}
	data := &checksumWriter{w: bw, crc: crc32.Update(0, castagnoli, m)}
	if err := write(data); err != nil {
		return 0, err
	}
	trailer := binary.LittleEndian.AppendUint64(nil, uint64(data.n))
	trailer = binary.LittleEndian.AppendUint32(trailer, data.crc)
	trailer = append(trailer, snapEndMagic...)
	if _, err := bw.Write(trailer); err != nil {
		return 0, err
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	if err := syncFile(f); err != nil {
		return 0, err
	}
	return data.n, f.Close()
}

// checksumWriter counts and checksums what goes through it.
type checksumWriter struct {
	w   io.Writer
	crc uint32
	n   int64
}

func (c *checksumWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	c.n += int64(n)
	return n, err
}

// Snapshot is a snapshot file that passed its checks: its metadata, and its
// data, read with Open.
type Snapshot struct {
	Metadata raftpb.SnapshotMetadata
	path     string
	// off and size locate the data in the file.
	off, size int64
}

// Size returns the length of the data.
func (s *Snapshot) Size() int64 { return s.size }

// Open returns a reader of the data; the caller closes it. The file was
// checked when it was found, so a reader sees the data intact unless the
// file changes underneath it.
func (s *Snapshot) Open() (io.ReadCloser, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("storage: open snapshot: %w", err)
	}
	return snapshotData{io.NewSectionReader(f, s.off, s.size), f}, nil
}

// snapshotData reads a snapshot's data and closes its file.
type snapshotData struct {
	*io.SectionReader
	f *os.File
}

func (d snapshotData) Close() error { return d.f.Close() }

// Load returns the newest intact snapshot. Broken files on the way are
// renamed to .broken and skipped. It returns ErrNoSnapshot when none is left.
func (s *Snapshotter) Load() (*Snapshot, error) {
	return s.loadNewest(func(WALSnapshot) bool { return true })
}

// LoadNewestAvailable returns the newest intact snapshot that the WAL has a
// record of (see ValidSnapshotEntries): a newer file whose WAL record never
// reached the disk cannot be replayed from. It returns ErrNoSnapshot when
// there is none.
func (s *Snapshotter) LoadNewestAvailable(walSnaps []WALSnapshot) (*Snapshot, error) {
	return s.loadNewest(func(m WALSnapshot) bool { return slices.Contains(walSnaps, m) })
}

func (s *Snapshotter) loadNewest(usable func(WALSnapshot) bool) (*Snapshot, error) {
	marks, err := s.list()
	if err != nil {
		return nil, err
	}
	for _, m := range marks {
		if !usable(m) {
			continue
		}
		path := filepath.Join(s.dir, snapName(m))
		snap, err := readSnapshot(path, m)
		if err == nil {
			return snap, nil
		}
		if !errors.Is(err, ErrCorrupt) {
			return nil, fmt.Errorf("storage: load snapshot: %w", err)
		}
		if rerr := os.Rename(path, path+brokenSuffix); rerr != nil {
			return nil, fmt.Errorf("storage: set aside broken snapshot: %w", rerr)
		}
		s.lg.Warn("storage: snapshot is broken; trying an older one", "path", path+brokenSuffix, "err", err)
	}
	return nil, ErrNoSnapshot
}

// Purge removes all snapshot files but the newest keep, and returns the
// index of the oldest one kept (0 when there is none): the WAL must be kept
// from there on (WAL.PurgeTo).
func (s *Snapshotter) Purge(keep int) (oldest uint64, err error) {
	if keep < 1 {
		return 0, fmt.Errorf("storage: purge snapshots: must keep at least one, not %d", keep)
	}
	marks, err := s.list()
	if err != nil {
		return 0, err
	}
	if len(marks) == 0 {
		return 0, nil
	}
	kept := marks[:min(keep, len(marks))]
	for _, m := range marks[len(kept):] {
		if err := remove(filepath.Join(s.dir, snapName(m))); err != nil {
			return 0, fmt.Errorf("storage: purge snapshots: %w", err)
		}
	}
	return kept[len(kept)-1].Index, nil
}

// list returns the snapshot files, newest first.
func (s *Snapshotter) list() ([]WALSnapshot, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("storage: list snapshots: %w", err)
	}
	var marks []WALSnapshot
	for _, e := range ents {
		if term, index, ok := parseHexPair(e.Name(), snapSuffix); ok && e.Type().IsRegular() {
			marks = append(marks, WALSnapshot{Index: index, Term: term})
		}
	}
	slices.Reverse(marks)
	return marks, nil
}

func snapName(m WALSnapshot) string { return fmt.Sprintf("%016x-%016x%s", m.Term, m.Index, snapSuffix) }

// readSnapshot checks the snapshot file at path, which is named after
// want, reading it through once. Damage is reported as ErrCorrupt; a file
// of another format version is an error of its own, for the operator.
func readSnapshot(path string, want WALSnapshot) (*Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := info.Size()
	var head [snapHead]byte
	if _, err := io.ReadFull(f, head[:]); err != nil || string(head[:4]) != snapMagic {
		return nil, fmt.Errorf("%w: not a snapshot file", ErrCorrupt)
	}
	snap, err := checkSnapshot(f, size, head, path, want)
	// The version is outside the checksum, so a damaged one is told
	// from another version by the rest of the file: a file that checks
	// out as this version is one, whatever its version field says.
	switch v := binary.LittleEndian.Uint32(head[4:]); {
	case v == snapVersion:
		return snap, err
	case err == nil:
		return nil, fmt.Errorf("%w: snapshot format version field reads %d, yet the file checks out as version %d", ErrCorrupt, v, snapVersion)
	case v == 0 || v > maxSnapVersion:
		return nil, fmt.Errorf("%w: snapshot format version %d", ErrCorrupt, v)
	default:
		return nil, fmt.Errorf("storage: snapshot %s has format version %d; this Collie reads version %d", path, v, snapVersion)
	}
}

// maxSnapVersion bounds the versions a snapshot file may claim: a larger
// one is damage.
const maxSnapVersion = 255

// checkSnapshot reads the rest of a file of the current version whose head
// was read, and checks it.
func checkSnapshot(f *os.File, size int64, head [snapHead]byte, path string, want WALSnapshot) (*Snapshot, error) {
	metaLen := int64(binary.LittleEndian.Uint32(head[8:]))
	if metaLen > maxSnapMetadata || snapHead+metaLen+snapTrailer > size {
		return nil, fmt.Errorf("%w: snapshot metadata of %d bytes in a file of %d", ErrCorrupt, metaLen, size)
	}
	var trailer [snapTrailer]byte
	if _, err := f.ReadAt(trailer[:], size-snapTrailer); err != nil {
		return nil, fmt.Errorf("storage: read snapshot: %w", err)
	}
	dataLen := size - snapHead - metaLen - snapTrailer
	if string(trailer[12:]) != snapEndMagic || binary.LittleEndian.Uint64(trailer[:]) != uint64(dataLen) {
		return nil, fmt.Errorf("%w: snapshot is cut short", ErrCorrupt)
	}
	m := make([]byte, metaLen)
	if _, err := io.ReadFull(f, m); err != nil {
		return nil, fmt.Errorf("storage: read snapshot: %w", err)
	}
	crc := crc32.Update(0, castagnoli, m)
	buf := make([]byte, 1<<20)
	for left := dataLen; left > 0; {
		n, err := f.Read(buf[:min(left, int64(len(buf)))])
		if err != nil {
			return nil, fmt.Errorf("storage: read snapshot: %w", err)
		}
		crc = crc32.Update(crc, castagnoli, buf[:n])
		left -= int64(n)
	}
	if crc != binary.LittleEndian.Uint32(trailer[8:]) {
		return nil, ErrCRCMismatch
	}
	var meta raftpb.SnapshotMetadata
	if err := meta.Unmarshal(m); err != nil {
		return nil, fmt.Errorf("%w: snapshot metadata: %w", ErrCorrupt, err)
	}
	if got := (WALSnapshot{Index: meta.Index, Term: meta.Term}); got != want {
		return nil, fmt.Errorf("%w: file holds index %d term %d", ErrCorrupt, got.Index, got.Term)
	}
	return &Snapshot{Metadata: meta, path: path, off: snapHead + metaLen, size: dataLen}, nil
}
