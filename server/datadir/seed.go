package datadir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/storage"
)

// SeedConfig describes a brand-new data directory for Seed: whose it is,
// the membership it starts in, and the state it starts from.
type SeedConfig struct {
	// DataDir and LogDir are the server's dataDir and dataLogDir ("" when
	// the log is kept in DataDir).
	DataDir, LogDir string
	// ID is the server's id: its myid in an ensemble; a standalone server
	// uses its myid, or 1 without one, as server.New does.
	ID uint64
	// Standalone says the directory is a standalone server's; otherwise it
	// is a member of the ensemble whose voters and observers (raft
	// learners) Voters and Learners are, from the server.N lines. Every
	// member of a new ensemble must be seeded with the same membership,
	// Index, Term and state.
	Standalone       bool
	Voters, Learners []uint64
	// Options are the server's (extendedTypesEnabled and the ACL schemes
	// its providers add); the state is read back with them.
	Options fsm.Options
	// Index is the raft index the state is at, and so the zxid after which
	// the server's transactions continue: the first write after the start
	// gets a zxid above it. It must be at least the state's last applied
	// index and zxid. Term is the raft term of that position; 0 means 1.
	Index, Term uint64
	// WriteState writes the state in the format of fsm.FSM.Save.
	WriteState func(io.Writer) error
	// SegmentBytes is the size of a log segment (preAllocSize); 0 for the
	// default.
	SegmentBytes int64
	// NoReadBack leaves out reading the directory back, for a caller that
	// starts a server on it at once, whose start reads it all the same:
	// Seeded then has the Token only.
	NoReadBack bool
}

// Seeded describes what Seed wrote.
type Seeded struct {
	Token    string // the new directory's identity token
	Ensemble uint64 // the ensemble id of the state (0 when it has no secret)
	Nodes    int    // znodes, with the root and /zookeeper's
	Sessions int
}

// Seed writes a brand-new data directory for server ID, as if the server
// had applied everything up to Index and then taken a snapshot: its
// identity, a snapshot of the state at Index with the membership, a log
// that records that snapshot and a hard state that has Index committed,
// and, for an ensemble member, myid. A server started on it restores the
// state and goes on from Index; members seeded alike form one ensemble,
// since they hold the same log position, membership and state. Seed knows
// nothing of where the state comes from (a backup file, another
// coordination service's data); it reads the directory back as a start
// would before it returns.
//
// Seed refuses a target whose snapshot or log directory holds anything
// (ErrTargetNotEmpty), and a myid that names another server.
func Seed(cfg SeedConfig) (*Seeded, error) {
	if cfg.WriteState == nil {
		return nil, errors.New("datadir: seed: no state to write")
	}
	if cfg.Index == 0 {
		return nil, errors.New("datadir: seed: the state's raft index must be at least 1")
	}
	if cfg.Term == 0 {
		cfg.Term = 1
	}
	voters, learners := slices.Clone(cfg.Voters), slices.Clone(cfg.Learners)
	if cfg.Standalone {
		cfg.ID = max(cfg.ID, 1)
		voters, learners = []uint64{cfg.ID}, nil
	} else {
		if cfg.ID == 0 {
			return nil, errors.New("datadir: seed: an ensemble member needs its server id (myid)")
		}
		if !slices.Contains(voters, cfg.ID) && !slices.Contains(learners, cfg.ID) {
			return nil, fmt.Errorf("datadir: seed: server %d is not among the voters %s and observers %s", cfg.ID, ids(voters), ids(learners))
		}
		if len(voters) == 0 {
			return nil, errors.New("datadir: seed: an ensemble needs voters")
		}
	}
	slices.Sort(voters)
	slices.Sort(learners)
	t := seedTarget(cfg.DataDir, cfg.LogDir)
	if err := t.checkEmpty(); err != nil {
		return nil, err
	}
	if !cfg.Standalone {
		if err := writeMyID(cfg.DataDir, cfg.ID); err != nil {
			return nil, err
		}
	}
	meta := raftpb.SnapshotMetadata{Index: cfg.Index, Term: cfg.Term, ConfState: raftpb.ConfState{Voters: voters, Learners: learners}}
	if err := writeSeed(cfg, t, meta); err != nil {
		return nil, fmt.Errorf("%w; remove %s and %s before trying again", err, t.snap, t.wal)
	}
	if cfg.NoReadBack {
		id, _, err := storage.ReadIdentityFile(t.snap)
		if err != nil {
			return nil, err
		}
		return &Seeded{Token: id.Token}, nil
	}
	return readSeed(cfg, meta)
}

// CheckSeedTarget returns nil when Seed could write a data directory in
// dataDir and logDir ("" for dataDir), and ErrTargetNotEmpty (wrapped)
// when they hold something already: for a caller that seeds later, and
// wants to know at its start that it will be able to.
func CheckSeedTarget(dataDir, logDir string) error {
	return seedTarget(dataDir, logDir).checkEmpty()
}

func seedTarget(dataDir, logDir string) targetDirs {
	if logDir == "" {
		logDir = dataDir
	}
	return targetDirs{snap: filepath.Join(dataDir, snapSubdir), wal: filepath.Join(logDir, walSubdir)}
}

func (t targetDirs) checkEmpty() error {
	files, err := listFiles(t.snap, t.wal)
	if err != nil {
		return err
	}
	if len(files) > 0 {
		return fmt.Errorf("%w: %s and %s must be empty or absent, and hold %d files and directories (%s first)", ErrTargetNotEmpty, t.snap, t.wal, len(files), files[0])
	}
	return nil
}

// writeMyID writes dataDir/myid, or checks the one there.
func writeMyID(dataDir string, id uint64) error {
	switch got, err := readMyID(dataDir); {
	case err == nil && got != id:
		return fmt.Errorf("datadir: %s says server %d, not %d", filepath.Join(dataDir, "myid"), got, id)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return fmt.Errorf("datadir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "myid"), []byte(strconv.FormatUint(id, 10)+"\n"), 0o644); err != nil {
		return fmt.Errorf("datadir: %w", err)
	}
	return nil
}

// writeSeed writes the directory in the order of a server's own
// snapshot: the file, its record in the log, then the hard state.
func writeSeed(cfg SeedConfig, t targetDirs, meta raftpb.SnapshotMetadata) error {
	who := storage.Identity{Server: cfg.ID, Replicated: !cfg.Standalone}
	disk, err := storage.OpenDisk(t.wal, t.snap, who, 0, cfg.SegmentBytes, nil)
	if err != nil {
		return fmt.Errorf("datadir: create the data directory: %w", err)
	}
	defer disk.Close()
	if _, ents, err := disk.ReadLog(); err != nil || len(ents) > 0 {
		return fmt.Errorf("datadir: the new log is not empty (%d entries): %v", len(ents), err)
	}
	if _, err := disk.WriteSnapshot(meta, cfg.WriteState); err != nil {
		return fmt.Errorf("datadir: write the snapshot at %d: %w", meta.Index, err)
	}
	if err := disk.MarkSnapshot(meta); err != nil {
		return fmt.Errorf("datadir: %w", err)
	}
	if err := disk.Save(raftpb.HardState{Term: meta.Term, Commit: meta.Index}, nil); err != nil {
		return fmt.Errorf("datadir: write the log: %w", err)
	}
	return disk.Close()
}

// readSeed reads the new directory back as a start would, and checks it
// is what was meant.
func readSeed(cfg SeedConfig, meta raftpb.SnapshotMetadata) (*Seeded, error) {
	dir, err := Open(cfg.DataDir, cfg.LogDir, cfg.Options)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	st, err := dir.Load(true)
	if err != nil {
		return nil, fmt.Errorf("datadir: the seeded directory does not read back: %w", err)
	}
	f := st.FSM
	switch {
	case st.Snapshot == nil || st.Snapshot.Metadata.Index != meta.Index || st.LastIndex() != meta.Index:
		return nil, fmt.Errorf("datadir: the seeded directory reads back at index %d, not %d", st.LastIndex(), meta.Index)
	case !slices.Equal(st.Voters, meta.ConfState.Voters) || !slices.Equal(st.Learners, meta.ConfState.Learners):
		return nil, fmt.Errorf("datadir: the seeded directory records voters %s and observers %s, not %s and %s", ids(st.Voters), ids(st.Learners), ids(meta.ConfState.Voters), ids(meta.ConfState.Learners))
	case f.Applied() > meta.Index:
		return nil, fmt.Errorf("datadir: the state was applied up to index %d, beyond the index %d it is seeded at", f.Applied(), meta.Index)
	case f.LastZxid() > int64(meta.Index):
		return nil, fmt.Errorf("datadir: the state's last zxid %#x is above the index %#x it is seeded at: the server's next zxids would not be above it", f.LastZxid(), meta.Index)
	}
	id, _, err := storage.ReadIdentityFile(dir.SnapDir)
	if err != nil {
		return nil, err
	}
	return &Seeded{Token: id.Token, Ensemble: f.EnsembleID(), Nodes: f.Tree().Len(), Sessions: len(f.Sessions())}, nil
}
