package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/inspect"
)

func runDump(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collie dump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: collie dump FILE|DIR [flags]\n\nEvery znode (path, data, Stat, ACL) and session of a Collie backup file or\na stopped server's data directory, after a line that says what it is.\n\n")
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "JSON lines instead of text")
	logDir := fs.String("data-log-dir", "", "for a data directory whose log is kept apart: its dataLogDir")
	extended := fs.Bool("extended-types", false, "the state was written with extendedTypesEnabled=true")
	path, code := parseWithFile(fs, args)
	if code != 0 {
		return code
	}
	if err := inspect.Dump(path, stdout, inspect.Options{JSON: *asJSON, LogDir: *logDir, FSM: fsm.Options{ExtendedTypes: *extended}}); err != nil {
		fmt.Fprintf(stderr, "collie dump: %v\n", err)
		return 1
	}
	return 0
}
