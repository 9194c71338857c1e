package storage

import (
	"errors"
	"fmt"
	"log/slog"

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
	pending *raftpb.Snapshot
}

// OpenDisk opens (creating on first use) the WAL in walDir and the
// snapshots in snapDir. retain is how many snapshots Compact keeps
// (autopurge.snapRetainCount).
func OpenDisk(walDir, snapDir string, retain int, lg *slog.Logger) (*Disk, error) {
	lg = logger(lg)
	snaps, err := NewSnapshotter(lg, snapDir)
	if err != nil {
		return nil, err
	}
	d := &Disk{lg: lg, walDir: walDir, snaps: snaps, retain: max(retain, 1)}
	if !Exist(walDir) {
		w, err := Create(lg, walDir, nil)
		if err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	}
	// The newest snapshot the WAL knows of: a snapshot file whose WAL
	// marker never reached the disk cannot be replayed from.
	marks, err := ValidSnapshotEntries(walDir)
	if err != nil {
		return nil, err
	}
	snap, err := snaps.LoadNewestAvailable(marks)
	switch {
	case errors.Is(err, ErrNoSnapshot):
		snap = &raftpb.Snapshot{}
	case err != nil:
		return nil, err
	}
	w, err := Open(lg, walDir, WALSnapshot{Index: snap.Metadata.Index, Term: snap.Metadata.Term})
	if err != nil {
		return nil, err
	}
	d.wal = w
	d.pending = snap
	return d, nil
}

// Load returns the newest usable snapshot, the hard state, and the entries
// after the snapshot. It may be called once, before any Save.
func (d *Disk) Load() (raftpb.Snapshot, raftpb.HardState, []raftpb.Entry, error) {
	if d.pending == nil {
		return raftpb.Snapshot{}, raftpb.HardState{}, nil, errors.New("storage: Load called twice")
	}
	snap := *d.pending
	d.pending = nil
	_, st, ents, err := d.wal.ReadAll()
	if err != nil {
		return raftpb.Snapshot{}, raftpb.HardState{}, nil, fmt.Errorf("storage: read WAL: %w", err)
	}
	return snap, st, ents, nil
}

// Save appends the hard state and entries with one fsync.
func (d *Disk) Save(st raftpb.HardState, ents []raftpb.Entry) error {
	return d.wal.Save(st, ents)
}

// SaveSnapshot writes the snapshot file, then its WAL marker, in the order
// that survives a crash between the two: a file without a marker is
// ignored at the next start.
func (d *Disk) SaveSnapshot(snap raftpb.Snapshot) error {
	if err := d.snaps.Save(snap); err != nil {
		return err
	}
	return d.wal.SaveSnapshot(WALSnapshot{Index: snap.Metadata.Index, Term: snap.Metadata.Term})
}

// Compact removes snapshots beyond the newest retain and the WAL segments
// that only the removed snapshots needed.
func (d *Disk) Compact(uint64) error {
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
