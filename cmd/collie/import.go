package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/datadir"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/zkdata"
	"github.com/collie-io/collie/server/zkimport"
)

const importUsage = `usage: collie import -c zoo.cfg [flags]

Takes over a stopped ZooKeeper 3.4-3.9 server's data: reads its newest
snapshot that reads cleanly and every logged transaction after it, and
writes the data directory of a new Collie server whose tree is ZooKeeper's,
every Stat field included. Collie's zxids go on from ZooKeeper's last.

The Collie server is the one -c describes (dataDir, dataLogDir, myid,
server.N lines, extendedTypesEnabled). ZooKeeper's files are read from the
same dataDir and dataLogDir (their version-2 directories), unless
-zk-data-dir and -zk-data-log-dir say otherwise; Collie's own files go
beside them, in snap and wal.

In an ensemble, import the same ZooKeeper data into every member, each
with its own zoo.cfg and the same -ensemble-token.

Sessions that were open are kept: a client that reconnects within its
session timeout keeps its session and its ephemeral nodes, and a session
whose client does not come back expires as it would on ZooKeeper.
-drop-sessions closes them instead, deleting their ephemerals.
`

func runImport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collie import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, importUsage)
		fmt.Fprintln(stderr, "\nflags:")
		fs.PrintDefaults()
	}
	cfgPath := fs.String("c", "", "the Collie server's `zoo.cfg` (required)")
	zkDataDir := fs.String("zk-data-dir", "", "ZooKeeper's dataDir, which holds version-2/snapshot.* (default: the dataDir of -c)")
	zkLogDir := fs.String("zk-data-log-dir", "", "ZooKeeper's dataLogDir, which holds version-2/log.* (default: the dataLogDir of -c, or -zk-data-dir)")
	drop := fs.Bool("drop-sessions", false, "close the sessions that were open, deleting their ephemeral nodes, instead of keeping them")
	noDigest := fs.Bool("no-digest-check", false, "do not compare the tree with the digest ZooKeeper logged with its last transaction")
	token := fs.String("ensemble-token", "", "for an ensemble: the same secret `string` on every member, from which, with the data, the members' shared session secret is made")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || *cfgPath == "" {
		fs.Usage()
		return 2
	}
	if err := importZooKeeper(importRequest{cfgPath: *cfgPath, zkDataDir: *zkDataDir, zkLogDir: *zkLogDir, drop: *drop, token: *token, noDigest: *noDigest}, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "collie import: %v\n", err)
		return 1
	}
	return 0
}

type importRequest struct {
	cfgPath, zkDataDir, zkLogDir string
	drop, noDigest               bool
	token                        string
}

func importZooKeeper(req importRequest, stdout, stderr io.Writer) error {
	cfg, err := config.Load(req.cfgPath)
	if err != nil {
		return err
	}
	if !cfg.Standalone && req.token == "" {
		return errors.New("an ensemble's members must share a session secret: give every member the same -ensemble-token, a secret string (it is not needed after the import)")
	}
	zkData, zkLog := req.zkDataDir, req.zkLogDir
	if zkData == "" {
		zkData = cfg.DataDir
		if zkLog == "" {
			zkLog = cfg.DataLogDir
		}
	}
	start := time.Now()
	fmt.Fprintf(stderr, "reading ZooKeeper's data in %s\n", filepath.Join(zkData, "version-2"))
	db, rep, err := zkdata.Load(zkdata.LoadOptions{
		DataDir: zkData, DataLogDir: zkLog, Extended: cfg.ExtendedTypesEnabled,
		Progress: func(l zkdata.LogReport) {
			fmt.Fprintf(stderr, "  %s: %d transactions, %d after the snapshot\n", filepath.Base(l.File), l.Txns, l.Applied)
		},
	})
	for _, s := range rep.Skipped {
		fmt.Fprintf(stderr, "  skipped %s: %s\n", filepath.Base(s.File), s.Reason)
	}
	if err != nil {
		return err
	}
	if db.LastZxid <= 0 {
		return fmt.Errorf("ZooKeeper's data in %s is at zxid %d: it never took a write, so there is nothing to import; start Collie on its own", rep.SnapDir, db.LastZxid)
	}
	opts := fsm.Options{ExtendedTypes: cfg.ExtendedTypesEnabled}
	conv := zkimport.Options{FSM: opts, DropSessions: req.drop}
	if !req.noDigest {
		conv.Digest = rep.LastDigest
	}
	if !cfg.Standalone {
		conv.EnsembleToken = req.token
	}
	res, err := zkimport.Convert(db, conv)
	if errors.Is(err, zkimport.ErrDigestMismatch) {
		return fmt.Errorf("%w at zxid 0x%x: the files do not hold the tree ZooKeeper had; import another server's copy of the data (-zk-data-dir), or, knowing the tree may differ, use -no-digest-check", err, rep.LastZxid)
	}
	if err != nil {
		return err
	}
	voters, learners := members(cfg)
	id := cfg.ServerID
	if cfg.Standalone {
		id = max(id, 1)
	}
	seeded, err := datadir.Seed(datadir.SeedConfig{
		DataDir: cfg.DataDir, LogDir: cfg.DataLogDir, ID: id,
		Standalone: cfg.Standalone, Voters: voters, Learners: learners,
		Options: opts, Index: uint64(res.LastZxid),
		WriteState:   res.FSM.Save,
		SegmentBytes: cfg.PreAllocSize,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "snapshot   %s (zxid 0x%x)\n", rep.SnapFile, rep.Snapshot.Zxid)
	fmt.Fprintf(stdout, "log        %d transactions replayed", rep.Applied)
	if rep.Applied > 0 {
		fmt.Fprintf(stdout, ", zxids 0x%x to 0x%x", rep.FirstZxid, rep.LastZxid)
	}
	fmt.Fprintln(stdout)
	for _, l := range rep.Logs {
		if l.Torn {
			fmt.Fprintf(stdout, "           %s ends with a write cut short at offset %d (%d bytes): never acknowledged, dropped\n", filepath.Base(l.File), l.Offset, l.TornBytes)
		}
	}
	switch {
	case conv.Digest != nil:
		fmt.Fprintf(stdout, "digest     %d, as ZooKeeper logged it at zxid 0x%x\n", conv.Digest.TreeDigest, rep.LastZxid)
	case req.noDigest:
		fmt.Fprintf(stdout, "digest     not checked (-no-digest-check)\n")
	default:
		fmt.Fprintf(stdout, "digest     not checked: ZooKeeper logged none with its last transaction\n")
	}
	fmt.Fprintf(stdout, "znodes     %d\n", seeded.Nodes)
	if req.drop {
		fmt.Fprintf(stdout, "sessions   %d closed, their ephemeral nodes deleted\n", len(res.Dropped))
	} else {
		fmt.Fprintf(stdout, "sessions   %d kept: each expires unless its client reconnects within its timeout\n", seeded.Sessions)
	}
	fmt.Fprintf(stdout, "zxid       0x%x; Collie's next transactions come after it\n", res.LastZxid)
	fmt.Fprintf(stdout, "ensemble   %016x\n", seeded.Ensemble)
	fmt.Fprintf(stdout, "wrote      %s", filepath.Join(cfg.DataDir, "snap"))
	if cfg.DataLogDir != "" {
		fmt.Fprintf(stdout, " and %s", filepath.Join(cfg.DataLogDir, "wal"))
	}
	fmt.Fprintf(stdout, " in %s\n", time.Since(start).Round(time.Millisecond))
	if !cfg.Standalone {
		fmt.Fprintf(stdout, "every member must be imported from the same ZooKeeper data with the same -ensemble-token: their ensemble ids (above) must match\n")
	}
	fmt.Fprintf(stdout, "start it with: collie server -c %s\n", req.cfgPath)
	return nil
}

// members returns the voters and observers of an ensemble's zoo.cfg.
func members(cfg config.Config) (voters, learners []uint64) {
	for _, m := range cfg.Servers {
		if m.Observer {
			learners = append(learners, m.ID)
		} else {
			voters = append(voters, m.ID)
		}
	}
	return voters, learners
}
