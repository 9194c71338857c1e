package zkdata

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// ErrNoData is returned by Load for a directory without ZooKeeper data.
var ErrNoData = errors.New("zkdata: no ZooKeeper data")

// ErrGap is returned by Load when the transactions after the snapshot are
// not all there.
var ErrGap = errors.New("zkdata: transactions missing")

// LoadOptions say where a ZooKeeper server keeps its data and how it ran.
type LoadOptions struct {
	// DataDir is zoo.cfg's dataDir (or its version-2 directory), which
	// holds the snapshots; DataLogDir is dataLogDir, "" when the logs are
	// in DataDir too.
	DataDir, DataLogDir string
	// Extended is zoo.cfg's extendedTypesEnabled.
	Extended bool
	// Progress, when set, is called after each log file is read.
	Progress func(LogReport)
}

// Report says what Load read.
type Report struct {
	SnapDir, LogDir string
	// Snapshot is the snapshot the tree starts from; Skipped the newer
	// ones that could not be read, each with why.
	Snapshot *SnapshotInfo
	SnapFile string
	Skipped  []Skipped
	Logs     []LogReport
	// Applied counts the transactions replayed after the snapshot;
	// FirstZxid and LastZxid are the first and last of them (0 if none).
	Applied             int
	FirstZxid, LastZxid int64
	// LastDigest is the digest of ZooKeeper's tree that the last
	// transaction replayed was logged with, nil when it had none (digests
	// disabled, or ZooKeeper before 3.6) or no transaction was replayed.
	LastDigest *TxnDigest
}

// Skipped is a snapshot Load could not use.
type Skipped struct {
	File   string
	Reason string
}

// LogReport is what Load found in one log file.
type LogReport struct {
	File string
	// Txns is the number of whole transactions in the file, Applied the
	// number after the snapshot.
	Txns, Applied int
	LogEnd
}

// Load reads a stopped ZooKeeper server's data as the server would on
// starting: the newest snapshot that reads cleanly, then the logged
// transactions after it, in zxid order. Unlike ZooKeeper, it refuses
// rather than start from less than the files hold: a log damaged before
// its end, or transactions missing between the snapshot and the last
// log, is an error saying where. A torn write at the end of the last log
// is dropped and reported: it was never acknowledged.
func Load(opts LoadOptions) (*DataTree, *Report, error) {
	snapDir := versionDir(opts.DataDir)
	logDir := snapDir
	if opts.DataLogDir != "" {
		logDir = versionDir(opts.DataLogDir)
	}
	rep := &Report{SnapDir: snapDir, LogDir: logDir}
	snaps, err := listFiles(snapDir, "snapshot")
	if err != nil {
		return nil, rep, err
	}
	logs, err := listFiles(logDir, "log")
	if err != nil {
		return nil, rep, err
	}
	if len(snaps) == 0 {
		if len(logs) == 0 {
			return nil, rep, fmt.Errorf("%w in %s: no snapshot.* or log.* files (give zoo.cfg's dataDir, and dataLogDir if the logs are kept apart)", ErrNoData, snapDir)
		}
		return nil, rep, fmt.Errorf("%w: %s has transaction logs but no snapshot: ZooKeeper writes snapshot.0 when it first starts, so it was removed; a tree rebuilt from the logs alone may lack what they do not hold", ErrNoData, snapDir)
	}
	var t *DataTree
	for i := len(snaps) - 1; i >= 0; i-- {
		tree, info, err := ReadSnapshotFile(snaps[i].path, opts.Extended)
		if err != nil {
			rep.Skipped = append(rep.Skipped, Skipped{File: snaps[i].path, Reason: err.Error()})
			continue
		}
		t, rep.Snapshot, rep.SnapFile = tree, info, snaps[i].path
		break
	}
	if t == nil {
		return nil, rep, fmt.Errorf("%w: none of the %d snapshots in %s reads cleanly; the newest: %s", ErrBadSnapshot, len(snaps), snapDir, rep.Skipped[0].Reason)
	}
	snapZxid := t.LastZxid
	// The logs to read: the last that starts at or before the snapshot,
	// and every later one.
	first := 0
	for i, l := range logs {
		if l.zxid <= snapZxid {
			first = i
		}
	}
	logs = logs[first:]
	if len(logs) > 0 && logs[0].zxid > snapZxid+1 {
		return nil, rep, fmt.Errorf("%w: the snapshot is at zxid 0x%x and the first log, %s, starts at 0x%x", ErrGap, snapZxid, logs[0].path, logs[0].zxid)
	}
	prev := snapZxid
	for i, l := range logs {
		lr := LogReport{File: l.path}
		end, err := ReadLogFile(l.path, func(txn *Txn, off int64) error {
			lr.Txns++
			if txn.Zxid <= snapZxid {
				return nil
			}
			if err := follows(prev, txn.Zxid); err != nil {
				return fmt.Errorf("%w: %s at offset %d: %w", ErrGap, l.path, off, err)
			}
			prev = txn.Zxid
			t.Apply(txn)
			rep.LastDigest = txn.Digest
			lr.Applied++
			rep.Applied++
			if rep.FirstZxid == 0 {
				rep.FirstZxid = txn.Zxid
			}
			rep.LastZxid = txn.Zxid
			return nil
		})
		lr.LogEnd = end
		if err != nil {
			return nil, rep, err
		}
		if end.Torn && i < len(logs)-1 {
			// ZooKeeper goes on with the next log; so does Load, and
			// the zxids of that log's transactions say whether any
			// were lost.
			lr.Torn = true
		}
		rep.Logs = append(rep.Logs, lr)
		if opts.Progress != nil {
			opts.Progress(lr)
		}
	}
	return t, rep, nil
}

// follows checks that next is the zxid ZooKeeper gives the transaction
// after prev: the next counter in the same epoch, or the first of a
// later epoch.
func follows(prev, next int64) error {
	pe, pc := prev>>32, prev&0xffffffff
	ne, nc := next>>32, next&0xffffffff
	switch {
	case ne == pe && nc == pc+1:
		return nil
	case ne > pe && nc == 1:
		return nil
	case next <= prev:
		return fmt.Errorf("zxid 0x%x after 0x%x: the logs overlap or are out of order", next, prev)
	}
	return fmt.Errorf("zxid 0x%x after 0x%x: the transactions between are in no log", next, prev)
}

// versionDir returns dir's version-2 subdirectory, where ZooKeeper keeps
// its files, or dir itself when it is one.
func versionDir(dir string) string {
	if filepath.Base(filepath.Clean(dir)) == "version-2" {
		return dir
	}
	return filepath.Join(dir, "version-2")
}

type zkFile struct {
	path string
	zxid int64
}

// listFiles returns the files of dir named prefix.<zxid>, by zxid.
func listFiles(dir, prefix string) ([]zkFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s does not exist (give zoo.cfg's dataDir, and dataLogDir if the logs are kept apart)", ErrNoData, dir)
		}
		return nil, err
	}
	var files []zkFile
	for _, e := range ents {
		if z, _, ok := ParseName(e.Name(), prefix); ok && e.Type().IsRegular() {
			files = append(files, zkFile{path: filepath.Join(dir, e.Name()), zxid: z})
		}
	}
	slices.SortFunc(files, func(a, b zkFile) int { return cmp.Compare(a.zxid, b.zxid) })
	return files, nil
}
