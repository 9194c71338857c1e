package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/datadir"
	"github.com/collie-io/collie/server/fsm"
)

const datadirUsage = `usage: collie datadir <command> [flags]

Tools for the data directory of a stopped server. Each takes -c zoo.cfg
(for dataDir, dataLogDir and myid), or -data-dir and, when the log is kept
elsewhere, -data-log-dir; each refuses a directory a running server holds.

commands:
  info       who wrote the directory, its raft state, members, snapshots and log
  verify     read every log record and snapshot file through its checksums;
             exit 1 when something is damaged
  dump       -what entries: the log's entries; -what tree: the znodes a start
             restores; -json for JSON lines
  truncate   -at segment:offset -backup dir: cut a damaged log tail where
             verify reports it (a standalone server; rebuild an ensemble member)
  rebuild    -from dataDir[,dataLogDir] (once per voter): give a voter that lost
             its data a new directory from the other voters' data

Run collie datadir <command> -h for its flags.
`

func runDatadir(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, datadirUsage)
		return 2
	}
	switch args[0] {
	case "info":
		return datadirInfo(args[1:], stdout, stderr)
	case "verify":
		return datadirVerify(args[1:], stdout, stderr)
	case "dump":
		return datadirDump(args[1:], stdout, stderr)
	case "truncate":
		return datadirTruncate(args[1:], stdout, stderr)
	case "rebuild":
		return datadirRebuild(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, datadirUsage)
		return 0
	}
	fmt.Fprintf(stderr, "collie datadir: unknown command %q\n\n%s", args[0], datadirUsage)
	return 2
}

// dirFlags are the flags that say which data directory.
type dirFlags struct {
	fs                           *flag.FlagSet
	cfgPath, dataDir, dataLogDir *string
	extended                     *bool
}

func newDirFlags(name string, stderr io.Writer) *dirFlags {
	fs := flag.NewFlagSet("collie datadir "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &dirFlags{
		fs:         fs,
		cfgPath:    fs.String("c", "", "the server's `zoo.cfg`: dataDir, dataLogDir, myid and extendedTypesEnabled come from it"),
		dataDir:    fs.String("data-dir", "", "the server's dataDir, instead of or overriding -c"),
		dataLogDir: fs.String("data-log-dir", "", "the server's dataLogDir, when the log is not in the dataDir"),
		extended:   fs.Bool("extended-types", false, "the server runs with extendedTypesEnabled=true (implied by -c when its zoo.cfg says so)"),
	}
}

// target is the directory the flags name, and the server's settings.
type target struct {
	dataDir, logDir string
	cfg             *config.Config // nil without -c
	opts            fsm.Options
}

func (f *dirFlags) target() (target, error) {
	t := target{dataDir: *f.dataDir, logDir: *f.dataLogDir, opts: fsm.Options{ExtendedTypes: *f.extended}}
	if *f.cfgPath != "" {
		cfg, err := config.Load(*f.cfgPath)
		if err != nil {
			return t, err
		}
		t.cfg = &cfg
		t.opts.ExtendedTypes = t.opts.ExtendedTypes || cfg.ExtendedTypesEnabled
		if t.dataDir == "" {
			t.dataDir = cfg.DataDir
			if t.logDir == "" {
				t.logDir = cfg.DataLogDir
			}
		}
	}
	if t.dataDir == "" {
		return t, errors.New("say which data directory: -c zoo.cfg, or -data-dir")
	}
	return t, nil
}

func (t target) open() (*datadir.Dir, error) {
	return datadir.Open(t.dataDir, t.logDir, t.opts)
}

// parse parses args, which must leave no operands; it reports a usage
// error as exit status 2.
func (f *dirFlags) parse(args []string) (target, int) {
	if err := f.fs.Parse(args); err != nil {
		return target{}, 2
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(f.fs.Output(), "%s: unexpected arguments %q\n", f.fs.Name(), f.fs.Args())
		return target{}, 2
	}
	t, err := f.target()
	if err != nil {
		fmt.Fprintf(f.fs.Output(), "%s: %v\n", f.fs.Name(), err)
		return target{}, 2
	}
	return t, 0
}

func fail(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "collie datadir %s: %v\n", name, err)
	return 1
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func datadirInfo(args []string, stdout, stderr io.Writer) int {
	f := newDirFlags("info", stderr)
	asJSON := f.fs.Bool("json", false, "print JSON")
	t, code := f.parse(args)
	if code != 0 {
		return code
	}
	d, err := t.open()
	if err != nil {
		return fail(stderr, "info", err)
	}
	defer d.Close()
	info, err := d.Info()
	if err != nil {
		return fail(stderr, "info", err)
	}
	if *asJSON {
		err = writeJSON(stdout, info)
	} else {
		err = info.WriteText(stdout)
	}
	if err != nil {
		return fail(stderr, "info", err)
	}
	return 0
}

func datadirVerify(args []string, stdout, stderr io.Writer) int {
	f := newDirFlags("verify", stderr)
	asJSON := f.fs.Bool("json", false, "print JSON")
	t, code := f.parse(args)
	if code != 0 {
		return code
	}
	d, err := t.open()
	if err != nil {
		return fail(stderr, "verify", err)
	}
	defer d.Close()
	report, err := d.Verify()
	if err != nil {
		return fail(stderr, "verify", err)
	}
	if *asJSON {
		err = writeJSON(stdout, report)
	} else {
		err = report.WriteText(stdout)
	}
	if err != nil {
		return fail(stderr, "verify", err)
	}
	if !report.Clean() {
		return 1
	}
	return 0
}

func datadirDump(args []string, stdout, stderr io.Writer) int {
	f := newDirFlags("dump", stderr)
	what := f.fs.String("what", "", "`entries` (the log) or tree (the znodes a start restores)")
	asJSON := f.fs.Bool("json", false, "print a JSON object per line")
	t, code := f.parse(args)
	if code != 0 {
		return code
	}
	if *what != "entries" && *what != "tree" {
		fmt.Fprintf(stderr, "collie datadir dump: -what %q: use entries or tree\n", *what)
		return 2
	}
	d, err := t.open()
	if err != nil {
		return fail(stderr, "dump", err)
	}
	defer d.Close()
	if *what == "tree" {
		if err := d.DumpTree(stdout, *asJSON); err != nil {
			return fail(stderr, "dump", err)
		}
		return 0
	}
	scan, err := d.DumpEntries(stdout, *asJSON)
	if err != nil {
		return fail(stderr, "dump", err)
	}
	for _, p := range scan.Problems {
		fmt.Fprintf(stderr, "collie datadir dump: %s\n", p)
	}
	if len(scan.Damaged()) > 0 {
		fmt.Fprintf(stderr, "collie datadir dump: the log is damaged; the entries after the damage in its segment could not be read\n")
		return 1
	}
	return 0
}

func datadirTruncate(args []string, stdout, stderr io.Writer) int {
	f := newDirFlags("truncate", stderr)
	at := f.fs.String("at", "", "where to cut, `segment:offset`, as verify reports the first damage")
	backup := f.fs.String("backup", "", "a new or empty `directory` the WAL directory is copied to, and compared with, before the cut")
	f.fs.Usage = func() {
		fmt.Fprint(stderr, `usage: collie datadir truncate -at segment:offset -backup dir [-c zoo.cfg | -data-dir dir]

Cuts the WAL of a stopped server at a record boundary, where verify reports
the first damage: the record there, the rest of its segment and every later
segment go, after the WAL directory was copied to -backup and the copy
compared with it. What is cut is lost, acknowledged writes included.

For a standalone server only: in an ensemble, rebuild the damaged member
from the others instead. Cutting acknowledged entries from a voter is the
same as losing them, and the ensemble would no longer be sure to hold every
acknowledged write on a majority.

`)
		f.fs.PrintDefaults()
	}
	t, code := f.parse(args)
	if code != 0 {
		return code
	}
	if *backup == "" {
		fmt.Fprintf(stderr, "collie datadir truncate: -backup is required: the cut cannot be undone without a copy of the WAL\n")
		return 2
	}
	i := strings.LastIndexByte(*at, ':')
	offset, err := strconv.ParseInt((*at)[i+1:], 10, 64)
	if i <= 0 || err != nil || offset < 0 {
		fmt.Fprintf(stderr, "collie datadir truncate: -at %q: give segment:offset, as collie datadir verify reports it\n", *at)
		return 2
	}
	d, err := t.open()
	if err != nil {
		return fail(stderr, "truncate", err)
	}
	defer d.Close()
	res, err := d.Truncate((*at)[:i], offset, *backup)
	if res != nil && res.BackupFiles > 0 {
		res.WriteText(stdout)
	}
	if err != nil {
		return fail(stderr, "truncate", err)
	}
	return 0
}

// fromFlag collects -from values: dataDir, or dataDir,dataLogDir.
type fromFlag []datadir.Member

func (f *fromFlag) String() string { return "" }

func (f *fromFlag) Set(v string) error {
	data, log, _ := strings.Cut(v, ",")
	if data == "" {
		return errors.New("give dataDir, or dataDir,dataLogDir")
	}
	*f = append(*f, datadir.Member{DataDir: data, LogDir: log})
	return nil
}

func datadirRebuild(args []string, stdout, stderr io.Writer) int {
	f := newDirFlags("rebuild", stderr)
	var from fromFlag
	f.fs.Var(&from, "from", "an other voter's `dataDir[,dataLogDir]`; once for each other voter")
	force := f.fs.Bool("force-empty-target", false, "remove what the target's snap and wal directories hold, after listing it")
	id := f.fs.Uint64("id", 0, "the server id of the server being rebuilt, when -data-dir has no myid file")
	f.fs.Usage = func() {
		fmt.Fprint(stderr, `usage: collie datadir rebuild [-c zoo.cfg | -data-dir dir [-id n]] -from dataDir[,dataLogDir] ... [-force-empty-target]

Gives a voter of an ensemble that lost its data a new data directory, made
from the other voters' data: the most up-to-date of their logs by raft's
rule, whole, with its newest snapshot, and a term above any of theirs.
Every server of the ensemble must be stopped, and every other voter named
with -from. See "A member that lost its data" in Collie's README.

`)
		f.fs.PrintDefaults()
	}
	t, code := f.parse(args)
	if code != 0 {
		return code
	}
	rc := datadir.RebuildConfig{
		Target:           datadir.Member{DataDir: t.dataDir, LogDir: t.logDir},
		ID:               *id,
		Sources:          from,
		ForceEmptyTarget: *force,
		Options:          t.opts,
		Out:              stdout,
	}
	if t.cfg != nil {
		if t.cfg.Standalone {
			return fail(stderr, "rebuild", errors.New("the configuration is a standalone server's: there are no other voters to rebuild it from; restore its data from a backup"))
		}
		if rc.ID == 0 {
			rc.ID = t.cfg.ServerID
		}
		rc.Retain, rc.SegmentBytes = t.cfg.AutopurgeSnapRetainCount, t.cfg.PreAllocSize
	}
	if rc.ID == 0 {
		myid, err := readMyID(t.dataDir)
		if err != nil {
			fmt.Fprintf(stderr, "collie datadir rebuild: say which server this is: -id, or a myid file in the data directory (%v)\n", err)
			return 2
		}
		rc.ID = myid
	}
	if len(from) == 0 {
		fmt.Fprintf(stderr, "collie datadir rebuild: name the other voters' data directories with -from\n")
		return 2
	}
	if err := datadir.Rebuild(rc); err != nil {
		return fail(stderr, "rebuild", err)
	}
	return 0
}

func readMyID(dataDir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "myid"))
	if err != nil {
		return 0, err
	}
	return config.ParseMyID(b)
}
