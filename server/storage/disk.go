package storage

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"go.etcd.io/raft/v3/raftpb"
)

// Disk is a raft node's durable state: a WAL and a directory of snapshots,
// kept consistent with each other. It is what package replication stores
// through.
type Disk struct {
	lg      *slog.Logger
	walDir  string
	snaps   *Snapshotter
	wal     *WAL
	retain  int
	pending *Snapshot
	id      Identity
	// scheduled is set when purging runs on a schedule (Purge) rather
	// than at every Compact; purgeMu keeps two purges apart.
	scheduled atomic.Bool
	purgeMu   sync.Mutex
}

// Identity returns who wrote the directory, as OpenDisk checked it.
func (d *Disk) Identity() Identity { return d.id }

// OpenDisk opens (creating on first use) the WAL in walDir and the
// snapshots in snapDir, the state of the server who (its Server and
// Replicated) names. It refuses, with an error matching ErrIdentity, a log
// and snapshots that are not one server's (a moved or emptied log
// directory among them), or another server's or mode's data. retain is how
// many snapshots Compact keeps (autopurge.snapRetainCount); segmentSize is
// the size of a WAL segment (preAllocSize), 0 for the default of 64 MiB.
func OpenDisk(walDir, snapDir string, who Identity, retain int, segmentSize int64, lg *slog.Logger) (*Disk, error) {
	lg = logger(lg)
	if segmentSize <= 0 {
		segmentSize = segmentBytes
	}
	// Appends write whole pages, and the crash rule relies on it.
	segmentSize = wholePages(segmentSize)
	id, err := checkIdentity(walDir, snapDir, who, func(metadata []byte) error {
		w, err := create(lg, walDir, metadata, segmentSize)
		if err != nil {
			return err
		}
		return w.Close()
	})
	if err != nil {
		return nil, err
	}
	snaps, err := NewSnapshotter(lg, snapDir)
	if err != nil {
		return nil, err
	}
	d := &Disk{lg: lg, walDir: walDir, snaps: snaps, retain: max(retain, 1), id: id}
	// The newest snapshot the WAL knows of: a snapshot file whose WAL
	// marker never reached the disk cannot be replayed from.
	marks, err := ValidSnapshotEntries(walDir)
	if err != nil {
		return nil, err
	}
	snap, err := snaps.LoadNewestAvailable(marks)
	switch {
	case errors.Is(err, ErrNoSnapshot):
		snap = &Snapshot{}
	case err != nil:
		return nil, err
	}
	w, err := Open(lg, walDir, WALSnapshot{Index: snap.Metadata.Index, Term: snap.Metadata.Term})
	if err != nil {
		return nil, d.brokenSnapshot(err)
	}
	w.segmentBytes = segmentSize
	d.wal = w
	d.pending = snap
	return d, nil
}

// LoadSnapshot returns the newest usable snapshot's metadata (index 0 when
// there is none) and a reader of its data (nil when there is none; the
// caller closes it). It may be called once.
func (d *Disk) LoadSnapshot() (raftpb.SnapshotMetadata, io.ReadCloser, error) {
	if d.pending == nil {
		return raftpb.SnapshotMetadata{}, nil, errors.New("storage: LoadSnapshot called twice")
	}
	snap := d.pending
	d.pending = nil
	if snap.Metadata.Index == 0 {
		return raftpb.SnapshotMetadata{}, nil, nil
	}
	data, err := snap.Open()
	if err != nil {
		return raftpb.SnapshotMetadata{}, nil, err
	}
	return snap.Metadata, data, nil
}

// ReadLog returns the hard state and the entries after the snapshot. It
// must be called once, before any Save; it may run beside the reading of
// the snapshot's data.
func (d *Disk) ReadLog() (raftpb.HardState, []raftpb.Entry, error) {
	_, st, ents, err := d.wal.ReadAll()
	if err != nil {
		return raftpb.HardState{}, nil, d.brokenSnapshot(err)
	}
	return st, ents, nil
}

// brokenSnapshot explains an error of reading the log from an older
// snapshot than it was written from, when the newer ones were set aside
// as damaged: the damage is what stops the start.
func (d *Disk) brokenSnapshot(err error) error {
	if errors.Is(err, ErrCorrupt) {
		return err
	}
	broken, lerr := filepath.Glob(filepath.Join(d.snaps.dir, "*"+snapSuffix+brokenSuffix))
	if lerr != nil || len(broken) == 0 {
		return err
	}
	return fmt.Errorf("%w: %s was set aside as damaged, and the log cannot be replayed from an older snapshot: %w",
		ErrCorrupt, strings.Join(broken, ", "), err)
}

// Save appends the hard state and entries with one fsync. See WAL.Save
// for its ErrNoSpace.
func (d *Disk) Save(st raftpb.HardState, ents []raftpb.Entry) error {
	return d.wal.Save(st, ents)
}

// SaveSnapshot writes a snapshot received whole, then its WAL marker, in
// the order that survives a crash between the two: a file without a marker
// is ignored at the next start. A snapshot that finds no space fails with
// an ErrNoSpace, its unfinished file removed.
func (d *Disk) SaveSnapshot(snap raftpb.Snapshot) error {
	if err := d.snaps.Save(snap); err != nil {
		return snapshotNoSpace(d.snaps.dir, err)
	}
	return d.MarkSnapshot(snap.Metadata)
}

// WriteSnapshot writes the snapshot file of meta, its data streamed by
// write (see Snapshotter.Write), and returns the data's size. It may run on
// its own goroutine beside Save; the snapshot counts only once
// MarkSnapshot has recorded it. A snapshot that finds no space fails with
// an ErrNoSpace, its unfinished file removed: it may be written again
// later.
func (d *Disk) WriteSnapshot(meta raftpb.SnapshotMetadata, write func(io.Writer) error) (int64, error) {
	size, err := d.snaps.Write(meta, write)
	return size, snapshotNoSpace(d.snaps.dir, err)
}

// MarkSnapshot records in the WAL that the snapshot file of meta is
// durable, so a restart may begin from it. It is an append: call it from
// the goroutine that calls Save.
func (d *Disk) MarkSnapshot(meta raftpb.SnapshotMetadata) error {
	return d.wal.SaveSnapshot(WALSnapshot{Index: meta.Index, Term: meta.Term})
}

// OpenSnapshot returns a reader of the data of the snapshot file of meta;
// the caller closes it. A file being purged meanwhile stays readable.
func (d *Disk) OpenSnapshot(meta raftpb.SnapshotMetadata) (io.ReadCloser, error) {
	m := WALSnapshot{Index: meta.Index, Term: meta.Term}
	snap, err := readSnapshot(filepath.Join(d.snaps.dir, snapName(m)), m)
	if err != nil {
		return nil, fmt.Errorf("storage: open snapshot %d: %w", meta.Index, err)
	}
	return snap.Open()
}

// Compact removes snapshots beyond the newest retain and the WAL segments
// that only the removed snapshots needed, unless PurgeOnSchedule was
// called: Purge does it then.
func (d *Disk) Compact(uint64) error {
	if d.scheduled.Load() {
		return nil
	}
	return d.Purge()
}

// PurgeOnSchedule leaves purging to whoever calls Purge, as ZooKeeper's
// autopurge.purgeInterval does, rather than to every Compact.
func (d *Disk) PurgeOnSchedule() { d.scheduled.Store(true) }

// Purge removes snapshots beyond the newest retain and the WAL segments
// that only the removed snapshots needed. It may run beside the node's
// appends and snapshots: the segment being appended to is never removed,
// and a snapshot file being read stays readable.
func (d *Disk) Purge() error {
	d.purgeMu.Lock()
	defer d.purgeMu.Unlock()
	oldest, err := d.snaps.Purge(d.retain)
	if err != nil {
		return err
	}
	if oldest == 0 {
		return nil
	}
	return d.wal.PurgeTo(oldest)
}

// Close closes the WAL.
func (d *Disk) Close() error { return d.wal.Close() }
