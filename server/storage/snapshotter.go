package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.etcd.io/raft/v3/raftpb"
)

const (
	snapSuffix   = ".snap"
	brokenSuffix = ".broken"
	snapMagic    = "CSNP"
	snapVersion  = 1
	snapHeader   = 20 // magic, version, length, checksum
)

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
	m := snap.Metadata
	if m.Index == 0 {
		return nil
	}
	buf := make([]byte, snapHeader+snap.Size())
	payload := buf[snapHeader:]
	if _, err := snap.MarshalToSizedBuffer(payload); err != nil {
		return fmt.Errorf("storage: encode snapshot: %w", err)
	}
	copy(buf, snapMagic)
	binary.LittleEndian.PutUint32(buf[4:], snapVersion)
	binary.LittleEndian.PutUint64(buf[8:], uint64(len(payload)))
	binary.LittleEndian.PutUint32(buf[16:], crc32.Checksum(payload, castagnoli))

	path := filepath.Join(s.dir, snapName(WALSnapshot{Index: m.Index, Term: m.Term}))
	tmp := path + tmpSuffix
	if err := writeFileSync(tmp, buf); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("storage: save snapshot: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("storage: save snapshot: %w", err)
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("storage: save snapshot: %w", err)
	}
	s.lg.Info("storage: saved snapshot", "index", m.Index, "term", m.Term, "bytes", len(buf))
	return nil
}

// Load returns the newest intact snapshot. Broken files on the way are
// renamed to .broken and skipped. It returns ErrNoSnapshot when none is left.
func (s *Snapshotter) Load() (*raftpb.Snapshot, error) {
	return s.loadNewest(func(WALSnapshot) bool { return true })
}

// LoadNewestAvailable returns the newest intact snapshot that the WAL has a
// record of (see ValidSnapshotEntries): a newer file whose WAL record never
// reached the disk cannot be replayed from. It returns ErrNoSnapshot when
// there is none.
func (s *Snapshotter) LoadNewestAvailable(walSnaps []WALSnapshot) (*raftpb.Snapshot, error) {
	return s.loadNewest(func(m WALSnapshot) bool { return slices.Contains(walSnaps, m) })
}

func (s *Snapshotter) loadNewest(usable func(WALSnapshot) bool) (*raftpb.Snapshot, error) {
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
		if err := os.Remove(filepath.Join(s.dir, snapName(m))); err != nil {
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

// readSnapshot reads and checks the snapshot file at path, which is named
// after want. Damage is reported as ErrCorrupt.
func readSnapshot(path string, want WALSnapshot) (*raftpb.Snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < snapHeader || string(b[:4]) != snapMagic {
		return nil, fmt.Errorf("%w: not a snapshot file", ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != snapVersion {
		return nil, fmt.Errorf("%w: snapshot format version %d", ErrCorrupt, v)
	}
	payload := b[snapHeader:]
	if n := binary.LittleEndian.Uint64(b[8:]); n != uint64(len(payload)) {
		return nil, fmt.Errorf("%w: snapshot of %d bytes has %d", ErrCorrupt, n, len(payload))
	}
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(b[16:]) {
		return nil, ErrCRCMismatch
	}
	var snap raftpb.Snapshot
	if err := snap.Unmarshal(payload); err != nil {
		return nil, fmt.Errorf("%w: snapshot: %w", ErrCorrupt, err)
	}
	if got := (WALSnapshot{Index: snap.Metadata.Index, Term: snap.Metadata.Term}); got != want {
		return nil, fmt.Errorf("%w: file holds index %d term %d", ErrCorrupt, got.Index, got.Term)
	}
	return &snap, nil
}

func writeFileSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
