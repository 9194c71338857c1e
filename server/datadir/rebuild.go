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

	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/storage"
)

// Member names a server's data directory: its dataDir, and its dataLogDir
// when the log is kept elsewhere ("" when not).
type Member struct {
	DataDir, LogDir string
}

// RebuildConfig says which voter to rebuild, and from which.
type RebuildConfig struct {
	// Target is the data directory of the voter that lost its data, and
	// ID its server id (myid).
	Target Member
	ID     uint64
	// Sources are the data directories of every other voter of the
	// ensemble.
	Sources []Member
	// ForceEmptyTarget lets Rebuild remove what the target's snapshot and
	// log directories hold (a start after the loss leaves an empty state
	// there), after listing it. Nothing else in dataDir is touched.
	ForceEmptyTarget bool
	// Options, Retain and SegmentBytes are the target server's
	// (extendedTypesEnabled, autopurge.snapRetainCount, preAllocSize; 0
	// for the defaults).
	Options      fsm.Options
	Retain       int
	SegmentBytes int64
	// Out receives what Rebuild finds and does, as it goes.
	Out io.Writer
}

// ErrTargetNotEmpty is returned by Rebuild when the target holds
// snapshots or a log and ForceEmptyTarget is not set.
var ErrTargetNotEmpty = errors.New("datadir: the target data directory is not empty")

// source is the data directory of one of the other voters.
type source struct {
	Member
	dir      *Dir
	server   uint64
	st       *State
	ensemble uint64
	held     []uint64
}

// Rebuild gives a voter of an ensemble that lost its data directory a new
// one, made from the data of the other voters, with every server of the
// ensemble stopped. Such a voter is refused by its peers: it voted and
// acknowledged entries, majorities counted on it, and starting it empty
// could lose acknowledged writes or let it vote twice in one term. The
// rebuilt directory keeps raft's guarantees:
//
//   - Leader completeness. Every committed entry is on a majority of the
//     voters; without the lost one, on at least one of the others. Of the
//     others' logs, the one raft's election rule prefers (the higher last
//     term, then the higher last index) holds every committed entry, as
//     the log of any leader those voters could elect would. Rebuild
//     copies that log whole, with its newest usable snapshot: the
//     uncommitted entries too, since a voter's commit index lags the
//     leader's and an entry above it may already be committed, counted on
//     the lost voter's acknowledgement. The rebuilt voter holds every
//     acknowledged write again, in a log that raft already holds on
//     another voter.
//   - One vote per term. The lost voter may have voted in any term up to
//     the highest it saw. A vote for another voter was in a term that
//     voter reached; a vote for itself in a term no other voter reached
//     won nothing, since winning takes another voter's vote, which moves
//     that voter to the term. The rebuilt voter starts in one more than
//     the highest term of every other voter, without a vote, so no term
//     gets two votes from it that could elect two leaders.
//
// Both need every other voter: Rebuild refuses unless Sources names each
// voter the membership records but ID. It also refuses a target whose
// snapshot or log directory is not empty, unless ForceEmptyTarget.
func Rebuild(cfg RebuildConfig) (err error) {
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	if cfg.ID == 0 {
		return errors.New("datadir: rebuild needs the id of the server to rebuild (its myid)")
	}
	if len(cfg.Sources) == 0 {
		return errors.New("datadir: rebuild needs the data directories of the ensemble's other voters (-from)")
	}
	var srcs []*source
	defer func() {
		for _, s := range srcs {
			s.dir.Close()
		}
	}()
	for _, m := range cfg.Sources {
		s, err := openSource(m, cfg.Options)
		if err != nil {
			return err
		}
		srcs = append(srcs, s)
		fmt.Fprintf(out, "server %d in %s: term %d, last entry %d (term %d), commit %d, snapshot %d\n",
			s.server, s.DataDir, s.st.HardState.Term, s.st.LastIndex(), s.st.LastTerm(), s.st.HardState.Commit, s.st.snapMark().Index)
	}
	best, err := checkSources(cfg.ID, srcs)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ensemble %016x, voters %s; on record as having held the log: %s\n", best.ensemble, ids(best.st.Voters), ids(best.held))

	target, err := prepareTarget(cfg, out)
	if err != nil {
		return err
	}

	term := uint64(0)
	for _, s := range srcs {
		term = max(term, s.st.HardState.Term, s.st.LastTerm())
	}
	term++
	meta := best.st.Snapshot.Metadata
	hs := raftpb.HardState{Term: term, Commit: max(best.st.HardState.Commit, meta.Index)}
	fmt.Fprintf(out, "copying from server %d, the most up to date by raft's rule (last entry %d, term %d): snapshot %d (term %d), entries %s\n",
		best.server, best.st.LastIndex(), best.st.LastTerm(), meta.Index, meta.Term, entriesSpan(best.st.Entries))
	fmt.Fprintf(out, "hard state: term %d (one more than the highest of the voters given), no vote, commit %d\n", hs.Term, hs.Commit)

	if err := writeTarget(cfg, target, best, hs); err != nil {
		return fmt.Errorf("%w; the target is incomplete: run rebuild again with -force-empty-target", err)
	}
	// Read back as a server will.
	dir, err := Open(cfg.Target.DataDir, cfg.Target.LogDir, cfg.Options)
	if err != nil {
		return err
	}
	defer dir.Close()
	st, err := dir.Load(true)
	if err != nil {
		return fmt.Errorf("datadir: the rebuilt directory does not read back: %w", err)
	}
	if st.LastIndex() != best.st.LastIndex() || st.LastTerm() != best.st.LastTerm() || st.HardState != hs || st.FSM.EnsembleID() != best.ensemble {
		return fmt.Errorf("datadir: the rebuilt directory reads back as last entry %d (term %d), hard state %+v, ensemble %016x, not as written",
			st.LastIndex(), st.LastTerm(), st.HardState, st.FSM.EnsembleID())
	}
	id, _, err := storage.ReadIdentityFile(dir.SnapDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "rebuilt server %d in %s: token %s, snapshot %d, log to %d, %d znodes\n",
		cfg.ID, cfg.Target.DataDir, id.Token, meta.Index, st.LastIndex(), st.FSM.Tree().Len())
	fmt.Fprintf(out, "start every server of the ensemble again\n")
	return nil
}

func openSource(m Member, opts fsm.Options) (*source, error) {
	dir, err := Open(m.DataDir, m.LogDir, opts)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", m.DataDir, err)
	}
	s := &source{Member: m, dir: dir}
	fail := func(err error) (*source, error) {
		dir.Close()
		return nil, err
	}
	id, ok, err := storage.ReadIdentityFile(dir.SnapDir)
	if err != nil {
		return fail(err)
	}
	if !ok {
		// Written before identities were recorded: its myid says.
		if id.Server, err = readMyID(m.DataDir); err != nil {
			return fail(fmt.Errorf("datadir: source %s records no identity, and %w", m.DataDir, err))
		}
		id.Replicated = true
	}
	if !id.Replicated {
		return fail(fmt.Errorf("datadir: source %s holds a standalone server's data, not an ensemble member's", m.DataDir))
	}
	s.server = id.Server
	if s.st, err = dir.Load(true); err != nil {
		return fail(fmt.Errorf("datadir: source %s (server %d) cannot be read: %w; run collie datadir verify on it", m.DataDir, s.server, err))
	}
	if s.st.Snapshot == nil {
		return fail(fmt.Errorf("datadir: source %s (server %d) has no snapshot, which every ensemble member starts from: it is not a member's data", m.DataDir, s.server))
	}
	// The tree is not needed from here on, and a large one should not be
	// held once per source.
	s.ensemble, s.held = s.st.FSM.EnsembleID(), s.st.FSM.MembersWithLog()
	s.st.FSM = nil
	return s, nil
}

// checkSources checks that the sources are every other voter of one
// ensemble, and returns the most up-to-date one.
func checkSources(target uint64, srcs []*source) (*source, error) {
	slices.SortFunc(srcs, func(a, b *source) int { return cmpUint(a.server, b.server) })
	best := srcs[0]
	for i, s := range srcs {
		switch {
		case s.server == target:
			return nil, fmt.Errorf("datadir: %s is server %d's own data, the server being rebuilt: give the other voters' data directories", s.DataDir, target)
		case i > 0 && s.server == srcs[i-1].server:
			return nil, fmt.Errorf("datadir: %s and %s are both server %d's data", srcs[i-1].DataDir, s.DataDir, s.server)
		case s.ensemble == 0:
			return nil, fmt.Errorf("datadir: server %d's data in %s belongs to no ensemble yet (no session secret): it cannot have held the log the rebuilt server lost", s.server, s.DataDir)
		case s.ensemble != srcs[0].ensemble:
			return nil, fmt.Errorf("datadir: server %d's data is ensemble %016x's, and server %d's is %016x's: give the voters of one ensemble", s.server, s.ensemble, srcs[0].server, srcs[0].ensemble)
		case !slices.Equal(s.st.Voters, srcs[0].st.Voters):
			return nil, fmt.Errorf("datadir: server %d records voters %s, and server %d records %s", s.server, ids(s.st.Voters), srcs[0].server, ids(srcs[0].st.Voters))
		case !slices.Contains(s.st.Voters, s.server):
			return nil, fmt.Errorf("datadir: server %d (%s) is not a voter (voters %s): give the voters' data directories", s.server, s.DataDir, ids(s.st.Voters))
		}
		// Raft's election rule: the higher last term, then the longer log.
		if s.st.LastTerm() > best.st.LastTerm() || s.st.LastTerm() == best.st.LastTerm() && s.st.LastIndex() > best.st.LastIndex() {
			best = s
		}
	}
	voters := best.st.Voters
	if !slices.Contains(voters, target) {
		return nil, fmt.Errorf("datadir: server %d is not a voter of this ensemble (voters %s): an observer that lost its data may start empty and catch up", target, ids(voters))
	}
	var missing []uint64
	for _, v := range voters {
		if v != target && !slices.ContainsFunc(srcs, func(s *source) bool { return s.server == v }) {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("datadir: the ensemble's voters are %s, and the data of %s is not given: name every other voter's data directory with -from, so that the rebuilt server holds every acknowledged write and starts in a term it never voted in",
			ids(voters), ids(missing))
	}
	return best, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// targetDirs are the directories Rebuild writes.
type targetDirs struct{ snap, wal string }

// prepareTarget checks the target's myid and that its snapshot and log
// directories are empty, or empties them when told to.
func prepareTarget(cfg RebuildConfig, out io.Writer) (targetDirs, error) {
	logDir := cfg.Target.LogDir
	if logDir == "" {
		logDir = cfg.Target.DataDir
	}
	t := targetDirs{snap: filepath.Join(cfg.Target.DataDir, snapSubdir), wal: filepath.Join(logDir, walSubdir)}
	myid := filepath.Join(cfg.Target.DataDir, "myid")
	switch id, err := readMyID(cfg.Target.DataDir); {
	case err == nil && id != cfg.ID:
		return t, fmt.Errorf("datadir: %s says server %d, not %d: give the data directory of the server being rebuilt", myid, id, cfg.ID)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return t, err
	}
	// What the target holds, and whether it is what a refused start
	// leaves: the empty state every member starts from.
	var held string
	if storage.Exist(t.wal) {
		dir, err := Open(cfg.Target.DataDir, cfg.Target.LogDir, cfg.Options)
		if err != nil {
			return t, err
		}
		defer dir.Close()
		switch st, err := dir.Load(false); {
		case err != nil:
			held = fmt.Sprintf("a log that cannot be read (%v)", err)
		case st.LastIndex() <= 1:
			held = "an empty state, what a start after the loss leaves"
		default:
			held = fmt.Sprintf("a log to index %d (term %d, hard state term %d): not what a start after the loss leaves", st.LastIndex(), st.LastTerm(), st.HardState.Term)
		}
	}
	files, err := listFiles(t.snap, t.wal)
	if err != nil {
		return t, err
	}
	if len(files) > 0 {
		fmt.Fprintf(out, "the target holds:\n")
		for _, f := range files {
			fmt.Fprintf(out, "  %s\n", f)
		}
		if held != "" {
			fmt.Fprintf(out, "that is %s\n", held)
		}
		if !cfg.ForceEmptyTarget {
			return t, fmt.Errorf("%w: %s and %s must be empty or absent; if what they hold is what a start after the loss left, or is otherwise not needed, run again with -force-empty-target to remove it", ErrTargetNotEmpty, t.snap, t.wal)
		}
		for _, dir := range []string{t.wal, t.snap} {
			if err := os.RemoveAll(dir); err != nil {
				return t, fmt.Errorf("datadir: empty the target: %w", err)
			}
		}
		fmt.Fprintf(out, "removed it (-force-empty-target)\n")
	}
	if err := os.MkdirAll(cfg.Target.DataDir, 0o750); err != nil {
		return t, fmt.Errorf("datadir: %w", err)
	}
	if _, err := os.Stat(myid); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(myid, []byte(strconv.FormatUint(cfg.ID, 10)+"\n"), 0o644); err != nil {
			return t, fmt.Errorf("datadir: %w", err)
		}
		fmt.Fprintf(out, "wrote %s\n", myid)
	}
	return t, nil
}

// writeTarget makes the target's data directory, with the target's own
// identity, from best's snapshot and log, with the hard state hs.
func writeTarget(cfg RebuildConfig, t targetDirs, best *source, hs raftpb.HardState) error {
	disk, err := storage.OpenDisk(t.wal, t.snap, storage.Identity{Server: cfg.ID, Replicated: true}, cfg.Retain, cfg.SegmentBytes, nil)
	if err != nil {
		return fmt.Errorf("datadir: create the target: %w", err)
	}
	defer disk.Close()
	if _, ents, err := disk.ReadLog(); err != nil || len(ents) > 0 {
		return fmt.Errorf("datadir: the new log is not empty (%d entries): %v", len(ents), err)
	}
	snap := best.st.Snapshot
	meta := snap.Metadata
	// The order of a server's own writes: the file, then its record.
	if _, err := disk.WriteSnapshot(meta, func(w io.Writer) error {
		r, err := snap.Open()
		if err != nil {
			return err
		}
		defer r.Close()
		_, err = io.Copy(w, r)
		return err
	}); err != nil {
		return fmt.Errorf("datadir: copy snapshot %d: %w", meta.Index, err)
	}
	if err := disk.MarkSnapshot(meta); err != nil {
		return fmt.Errorf("datadir: %w", err)
	}
	if err := disk.Save(hs, best.st.Entries); err != nil {
		return fmt.Errorf("datadir: write the log: %w", err)
	}
	return disk.Close()
}

func readMyID(dataDir string) (uint64, error) {
	path := filepath.Join(dataDir, "myid")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("datadir: read myid: %w", err)
	}
	id, err := config.ParseMyID(b)
	if err != nil {
		return 0, fmt.Errorf("datadir: %s: %w", path, err)
	}
	return id, nil
}

func entriesSpan(ents []raftpb.Entry) string {
	if len(ents) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d..%d", ents[0].Index, ents[len(ents)-1].Index)
}
