package datadir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/collie-io/collie/server/storage"
)

// Info describes a data directory: who wrote it, the raft state it holds,
// and its files.
type Info struct {
	DataDir string `json:"data_dir"`
	LogDir  string `json:"log_dir"`
	SnapDir string `json:"snap_dir"`

	Identity IdentityInfo `json:"identity"`
	// EnsembleID is the fsm's EnsembleID in hex; "" while the state holds
	// no session secret (before the first leader proposed one).
	EnsembleID string    `json:"ensemble_id,omitempty"`
	HardState  HardState `json:"hard_state"`
	// LastIndex and LastTerm are the log's, or the snapshot's when no
	// entry follows it; Applied is how far a start replays it (see
	// State.Applied).
	LastIndex uint64  `json:"last_index"`
	LastTerm  uint64  `json:"last_term"`
	Applied   uint64  `json:"applied"`
	Znodes    int     `json:"znodes"`
	Sessions  int     `json:"sessions"`
	Members   Members `json:"members"`
	// MembersWithLog are the voters the ensemble has on record as having
	// held its log.
	MembersWithLog []uint64 `json:"members_with_log"`
	// StateError says why the state could not be read; the fields above
	// it that come from the state are then empty.
	StateError string `json:"state_error,omitempty"`

	Snapshots []SnapshotInfo `json:"snapshots"`
	WAL       WALInfo        `json:"wal"`
}

// IdentityInfo is the identity a data directory recorded.
type IdentityInfo struct {
	Server uint64 `json:"server"`
	// Mode is "standalone" or "ensemble".
	Mode  string `json:"mode"`
	Token string `json:"token"`
	// Log is where the WAL directory was when a server last opened the
	// directory.
	Log string `json:"log,omitempty"`
	// Notes say what does not match: no identity file, a log of another
	// directory, a log from before identities were recorded.
	Notes []string `json:"notes,omitempty"`
}

// HardState is raft's durable state.
type HardState struct {
	Term   uint64 `json:"term"`
	Vote   uint64 `json:"vote"`
	Commit uint64 `json:"commit"`
}

// Members are the members a log records.
type Members struct {
	Voters    []uint64 `json:"voters"`
	Observers []uint64 `json:"observers"`
}

// SnapshotInfo is one snapshot file.
type SnapshotInfo struct {
	File  string `json:"file"`
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	Bytes int64  `json:"bytes"`
	// OK is set when the file passes its checks (checksum, framing);
	// Error says why it does not.
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Broken is set for a file a server set aside as damaged; Used for the
	// one a server starts from.
	Broken bool `json:"broken,omitempty"`
	Used   bool `json:"used,omitempty"`
}

// WALInfo summarizes the log's segments.
type WALInfo struct {
	Dir      string `json:"dir"`
	Segments int    `json:"segments"`
	// FirstIndex and LastIndex are those of the first and last entry
	// records; 0 when there are none.
	FirstIndex uint64 `json:"first_index"`
	LastIndex  uint64 `json:"last_index"`
	// Bytes is what the segment files take on disk; Used what their
	// records take (segments are full-size files from the start).
	Bytes int64         `json:"bytes"`
	Used  int64         `json:"used"`
	Files []SegmentInfo `json:"files"`
	// Problems are what collie datadir verify would report, torn tails
	// included.
	Problems []string `json:"problems,omitempty"`
}

// SegmentInfo is one WAL segment.
type SegmentInfo struct {
	File       string `json:"file"`
	FirstEntry uint64 `json:"first_entry"`
	LastEntry  uint64 `json:"last_entry"`
	Bytes      int64  `json:"bytes"`
	Used       int64  `json:"used"`
}

// Info reads everything it reports; a log that cannot be read leaves the
// state out (StateError) and still lists the files.
func (d *Dir) Info() (*Info, error) {
	info := &Info{DataDir: d.DataDir, LogDir: d.LogDir, SnapDir: d.SnapDir, MembersWithLog: []uint64{}}
	var err error
	if info.Identity, err = d.identity(); err != nil {
		return nil, err
	}
	scan, err := storage.ScanWAL(d.WALDir, nil)
	if err != nil {
		return nil, err
	}
	info.WAL = walInfo(d.WALDir, scan)

	st, err := d.Load(true)
	if err != nil {
		info.StateError = err.Error()
		files, lerr := storage.ListSnapshots(d.SnapDir)
		if lerr != nil && !errors.Is(lerr, fs.ErrNotExist) {
			return nil, lerr
		}
		info.Snapshots = snapshotInfos(files, nil)
		return info, nil
	}
	info.Snapshots = snapshotInfos(st.Snapshots, st.Snapshot)
	info.HardState = HardState{Term: st.HardState.Term, Vote: st.HardState.Vote, Commit: st.HardState.Commit}
	info.LastIndex, info.LastTerm, info.Applied = st.LastIndex(), st.LastTerm(), st.Applied
	info.Members = Members{Voters: nonNil(st.Voters), Observers: nonNil(st.Learners)}
	if id := st.FSM.EnsembleID(); id != 0 {
		info.EnsembleID = fmt.Sprintf("%016x", id)
	}
	info.MembersWithLog = nonNil(st.FSM.MembersWithLog())
	info.Znodes = st.FSM.Tree().Len()
	info.Sessions = len(st.FSM.Sessions())
	return info, nil
}

func nonNil(ids []uint64) []uint64 {
	if ids == nil {
		return []uint64{}
	}
	return ids
}

// identity reads the identity file and the WAL's, and says where they
// disagree.
func (d *Dir) identity() (IdentityInfo, error) {
	file, haveFile, err := storage.ReadIdentityFile(d.SnapDir)
	if err != nil {
		return IdentityInfo{}, err
	}
	logID, legacy, err := storage.ReadWALIdentity(d.WALDir)
	if err != nil {
		return IdentityInfo{}, err
	}
	id := file
	var notes []string
	switch {
	case !haveFile && legacy:
		notes = append(notes, "no identity recorded: written before identities were; a server holds it to its configured id at its next start")
	case !haveFile:
		id = logID
		notes = append(notes, fmt.Sprintf("%s has no identity file: this log's snapshots are elsewhere, or were never written", d.SnapDir))
	case legacy:
		notes = append(notes, "the log was written before identities were recorded")
	case file.Token != logID.Token:
		notes = append(notes, fmt.Sprintf("the log's token is %s: the log and the snapshots are from different data directories", logID.Token))
	case file.Server != logID.Server || file.Replicated != logID.Replicated:
		notes = append(notes, fmt.Sprintf("the log was written by server %d (%s)", logID.Server, mode(logID)))
	}
	return IdentityInfo{Server: id.Server, Mode: mode(id), Token: id.Token, Log: id.Log, Notes: notes}, nil
}

func mode(id storage.Identity) string {
	if id.Replicated {
		return "ensemble"
	}
	return "standalone"
}

func snapshotInfos(files []storage.SnapshotFile, used *storage.Snapshot) []SnapshotInfo {
	out := []SnapshotInfo{}
	for i := range files {
		f := &files[i]
		si := SnapshotInfo{File: f.Name, Index: f.Index, Term: f.Term, Bytes: f.Bytes, Broken: f.Broken}
		if err := f.Check(); err != nil {
			si.Error = err.Error()
		} else {
			si.OK = true
			si.Used = used != nil && used.Metadata.Index == f.Index && used.Metadata.Term == f.Term && !f.Broken
		}
		out = append(out, si)
	}
	return out
}

func walInfo(dir string, scan *storage.WALScan) WALInfo {
	w := WALInfo{Dir: dir, Segments: len(scan.Segments), Files: []SegmentInfo{}}
	for _, s := range scan.Segments {
		w.Bytes += s.Bytes
		w.Used += s.End
		if w.FirstIndex == 0 {
			w.FirstIndex = s.FirstEntry
		}
		if s.LastEntry != 0 {
			w.LastIndex = s.LastEntry
		}
		w.Files = append(w.Files, SegmentInfo{File: s.Name, FirstEntry: s.FirstEntry, LastEntry: s.LastEntry, Bytes: s.Bytes, Used: s.End})
	}
	for _, name := range scan.Ignored {
		w.Problems = append(w.Problems, fmt.Sprintf("%s: behind a gap in the sequence (a purge a crash interrupted); no server reads it", name))
	}
	for _, p := range scan.Problems {
		w.Problems = append(w.Problems, p.String())
	}
	return w
}

// WriteText writes the information for a reader.
func (info *Info) WriteText(w io.Writer) error {
	var b strings.Builder
	line := func(key, format string, args ...any) {
		fmt.Fprintf(&b, "%-15s %s\n", key, fmt.Sprintf(format, args...))
	}
	line("data directory", "%s", info.DataDir)
	if info.LogDir != info.DataDir {
		line("log directory", "%s", info.LogDir)
	}
	id := info.Identity
	line("identity", "server %d, %s, token %s", id.Server, id.Mode, orNone(id.Token))
	if id.Log != "" {
		line("", "log last in %s", id.Log)
	}
	for _, n := range id.Notes {
		line("", "%s", n)
	}
	if info.StateError != "" {
		line("state", "cannot be read: %s", info.StateError)
		line("", "run collie datadir verify")
	} else {
		line("ensemble", "%s", orNone(info.EnsembleID))
		hs := info.HardState
		line("hard state", "term %d, vote %d, commit %d", hs.Term, hs.Vote, hs.Commit)
		line("log", "last index %d, term %d; a start applies it to %d", info.LastIndex, info.LastTerm, info.Applied)
		line("state", "%d znodes, %d sessions", info.Znodes, info.Sessions)
		line("members", "voters %s; observers %s", ids(info.Members.Voters), ids(info.Members.Observers))
		line("held the log", "%s", ids(info.MembersWithLog))
	}
	line("snapshots", "%d in %s", len(info.Snapshots), info.SnapDir)
	for _, s := range info.Snapshots {
		state := "ok"
		if !s.OK {
			state = "damaged: " + s.Error
		}
		if s.Broken {
			state += ", set aside by a server"
		}
		if s.Used {
			state += ", the one a start uses"
		}
		line("", "%s  index %d term %d, %d bytes, %s", s.File, s.Index, s.Term, s.Bytes, state)
	}
	wal := info.WAL
	line("wal", "%d segments in %s, entries %s, %d bytes (%d used)", wal.Segments, wal.Dir, span(wal.FirstIndex, wal.LastIndex), wal.Bytes, wal.Used)
	for _, s := range wal.Files {
		line("", "%s  entries %s, %d bytes (%d used)", s.File, span(s.FirstEntry, s.LastEntry), s.Bytes, s.Used)
	}
	for _, p := range wal.Problems {
		line("", "problem: %s", p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func ids(list []uint64) string {
	if len(list) == 0 {
		return "none"
	}
	s := make([]string, len(list))
	for i, id := range list {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, " ")
}

func span(first, last uint64) string {
	if first == 0 && last == 0 {
		return "none"
	}
	return fmt.Sprintf("%d..%d", first, last)
}
