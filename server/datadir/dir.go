// Package datadir inspects and repairs a Collie server's data directory
// while the server is stopped: what `collie datadir` runs. It reads the
// files through package storage and the state through package fsm, as a
// server restoring from them would, and changes nothing except where a
// repair is asked for (Truncate, Rebuild).
//
// A Dir holds the WAL's lock while it is open, so a server that starts
// meanwhile refuses the directory, and one that runs makes Open fail with
// ErrRunning.
package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/replication"
	"github.com/collie-io/collie/server/storage"
)

// The layout server.New gives a data directory: the snapshots in
// dataDir/snap, the log in dataLogDir/wal.
const (
	snapSubdir = "snap"
	walSubdir  = "wal"
)

// ErrRunning is returned by Open when a server has the directory open.
var ErrRunning = errors.New("datadir: a server is running on this data directory")

// Dir is a server's data directory, open for a tool.
type Dir struct {
	// DataDir and LogDir are the server's dataDir and dataLogDir; SnapDir
	// and WALDir the directories of its snapshots and its log in them.
	DataDir, LogDir string
	SnapDir, WALDir string
	opts            fsm.Options
	release         func() error
}

// Open opens the data directory of a stopped server: dataDir, and
// dataLogDir when its log is elsewhere ("" when not). opts must be the
// server's (extendedTypesEnabled). Close it when done.
func Open(dataDir, dataLogDir string, opts fsm.Options) (*Dir, error) {
	if dataLogDir == "" {
		dataLogDir = dataDir
	}
	d := &Dir{
		DataDir: dataDir,
		LogDir:  dataLogDir,
		SnapDir: filepath.Join(dataDir, snapSubdir),
		WALDir:  filepath.Join(dataLogDir, walSubdir),
		opts:    opts,
	}
	if !storage.Exist(d.WALDir) {
		if files, _ := storage.ListSnapshots(d.SnapDir); len(files) > 0 {
			return nil, fmt.Errorf("datadir: there is no log in %s, but %s holds snapshots: give the directory that holds this server's wal directory (dataLogDir, -data-log-dir)", d.WALDir, d.SnapDir)
		}
		return nil, fmt.Errorf("datadir: there is no log in %s: give a server's dataDir (and its dataLogDir when the log is kept elsewhere)", d.WALDir)
	}
	release, err := storage.LockWAL(d.WALDir)
	switch {
	case errors.Is(err, storage.ErrLocked):
		return nil, fmt.Errorf("%w: %s is locked by the server using it; stop the server first", ErrRunning, d.WALDir)
	case err != nil:
		return nil, fmt.Errorf("datadir: %w", err)
	}
	d.release = release
	return d, nil
}

// Close releases the directory.
func (d *Dir) Close() error {
	if d.release == nil {
		return nil
	}
	err := d.release()
	d.release = nil
	return err
}

// State is a server's state as it restores it at a start: the newest
// usable snapshot, the log after it, and the state machine those make.
type State struct {
	// Snapshots are the snapshot files, newest first; Snapshot is the one
	// a server starts from, nil when there is none.
	Snapshots []storage.SnapshotFile
	Snapshot  *storage.Snapshot
	// Metadata is the WAL's (the identity it recorded).
	Metadata  []byte
	HardState raftpb.HardState
	// Entries are the log's entries after the snapshot, committed or not.
	Entries []raftpb.Entry
	// Voters and Learners are the members the snapshot and the log record.
	Voters, Learners []uint64
	// FSM is the state machine, with the log applied up to Applied: the
	// commit index, or, for a single voter, whose log is committed as soon
	// as it is written, the last entry. Nil unless asked for.
	FSM     *fsm.FSM
	Applied uint64
}

// LastIndex and LastTerm are those of the last entry of the log, or of the
// snapshot when no entry follows it: what raft compares to decide which
// of two logs is more up to date.
func (s *State) LastIndex() uint64 {
	if n := len(s.Entries); n > 0 {
		return s.Entries[n-1].Index
	}
	return s.snapMark().Index
}

func (s *State) LastTerm() uint64 {
	if n := len(s.Entries); n > 0 {
		return s.Entries[n-1].Term
	}
	return s.snapMark().Term
}

func (s *State) snapMark() storage.WALSnapshot {
	if s.Snapshot == nil {
		return storage.WALSnapshot{}
	}
	return storage.WALSnapshot{Index: s.Snapshot.Metadata.Index, Term: s.Snapshot.Metadata.Term}
}

// Load reads the state a server would start from, without changing
// anything. With replay, it restores the snapshot into a state machine and
// applies the log, as a start does; the tree is then held in memory.
func (d *Dir) Load(replay bool) (*State, error) {
	s := &State{}
	files, err := storage.ListSnapshots(d.SnapDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	s.Snapshots = files
	marks, err := storage.ValidSnapshotEntries(d.WALDir)
	if err != nil {
		return nil, err
	}
	s.Snapshot, err = storage.NewestUsableSnapshot(files, marks)
	if err != nil && !errors.Is(err, storage.ErrNoSnapshot) {
		return nil, err
	}
	s.Metadata, s.HardState, s.Entries, err = storage.ReadLog(d.WALDir, s.snapMark())
	if err != nil {
		return nil, err
	}
	var cs raftpb.ConfState
	if s.Snapshot != nil {
		cs = s.Snapshot.Metadata.ConfState
	}
	if s.Voters, s.Learners, err = replication.RecordedMembers(cs, s.Entries); err != nil {
		return nil, err
	}
	if replay {
		if err := s.replay(d.opts); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// replay restores the snapshot and applies the log as a server's start
// does (server's stateMachine.Apply).
func (s *State) replay(opts fsm.Options) error {
	f := fsm.New(opts)
	if s.Snapshot != nil {
		r, err := s.Snapshot.Open()
		if err != nil {
			return err
		}
		f, err = fsm.Restore(opts, r)
		r.Close()
		if err != nil {
			return fmt.Errorf("datadir: restore snapshot %d: %w", s.Snapshot.Metadata.Index, err)
		}
		f.Skip(s.Snapshot.Metadata.Index)
	}
	to := s.HardState.Commit
	if len(s.Voters) == 1 {
		to = s.LastIndex()
	}
	for _, ent := range s.Entries {
		if ent.Index > to {
			break
		}
		if ent.Index <= f.Applied() {
			continue
		}
		if ent.Type != raftpb.EntryNormal || len(ent.Data) == 0 {
			f.Skip(ent.Index)
			continue
		}
		e, err := fsm.UnmarshalEntry(ent.Data)
		if err != nil {
			return fmt.Errorf("datadir: entry %d: %w", ent.Index, err)
		}
		f.Apply(ent.Index, e)
	}
	s.FSM, s.Applied = f, f.Applied()
	return nil
}

// listFiles returns every file and directory under the dirs that exist,
// as "path (n bytes)", for showing an operator what a directory holds.
func listFiles(dirs ...string) ([]string, error) {
	var out []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && path == dir {
				return fs.SkipDir
			}
			if err != nil {
				return err
			}
			if path == dir {
				return nil
			}
			if e.IsDir() {
				out = append(out, path+string(os.PathSeparator))
				return nil
			}
			info, err := e.Info()
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s (%d bytes)", path, info.Size()))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("datadir: %w", err)
		}
	}
	slices.Sort(out)
	return out, nil
}
