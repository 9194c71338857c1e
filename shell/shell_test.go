package shell

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
)

// exec runs one command as `collie cli -server addr cmd...` does.
func execCommand(t *testing.T, cfg Config, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	out, errOut := newTranscript(), newTranscript()
	cfg.Stdout, cfg.Stderr = out, errOut
	sh := New(cfg)
	defer sh.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	status = sh.Exec(ctx, args)
	return status, out.String(), errOut.String()
}

func TestExecExitStatus(t *testing.T) {
	srv := collietest.Start(t)
	cfg := Config{Server: srv.Addr()}
	tests := []struct {
		args             []string
		status           int
		stdout, stderr   string
		stderrHasPrefix  bool
		stdoutHasSubText bool
	}{
		{args: []string{"create", "/one", "1"}, stderr: "Created /one\n"},
		{args: []string{"get", "/one"}, stdout: "1\n"},
		{args: []string{"create", "/one"}, status: 1, stderr: "Node already exists: /one\n"},
		{args: []string{"delete", "/none"}, status: 1, stderr: "Node does not exist: /none\n"},
		{args: []string{"ls"}, status: 1, stderr: "ls [-s] [-w] [-R] path\n"},
		{args: []string{"get", "-x", "/one"}, status: 1, stderr: "Unrecognized option: -x\n"},
		{args: []string{"set", "-v", "abc", "/one", "x"}, status: 1, stderr: "-v argument must be an int value\n"},
		{args: []string{"get", "one"}, status: 1, stderr: "Path must start with / character\n"},
		{args: []string{"bogus"}, status: 1, stderr: "collie cli ", stderrHasPrefix: true},
		{args: []string{"tree", "/"}, stdout: "/\n├── one\n└── zookeeper\n    ├── config\n    └── quota\n"},
		{args: []string{"delete", "/one"}},
	}
	for _, tt := range tests {
		status, stdout, stderr := execCommand(t, cfg, tt.args...)
		if status != tt.status {
			t.Errorf("%q: status %d, want %d (stderr %q)", tt.args, status, tt.status, stderr)
		}
		if stdout != tt.stdout {
			t.Errorf("%q: stdout %q, want %q", tt.args, stdout, tt.stdout)
		}
		if tt.stderrHasPrefix && !strings.HasPrefix(stderr, tt.stderr) || !tt.stderrHasPrefix && stderr != tt.stderr {
			t.Errorf("%q: stderr %q, want %q", tt.args, stderr, tt.stderr)
		}
	}

	// A server that cannot be reached fails the command, after the timeout.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	status, _, stderr := execCommand(t, Config{Server: closed, Timeout: 300 * time.Millisecond}, "ls", "/")
	if status != 1 || !strings.HasPrefix(stderr, "cannot connect to "+closed) {
		t.Errorf("ls against a closed port: status %d, stderr %q; want 1 and a connection error", status, stderr)
	}
}

// TestJSON runs a script with -json and parses every line back: one value
// per command, events apart.
func TestJSON(t *testing.T) {
	srv := collietest.Start(t)
	stderr := newTranscript()
	s := startShell(t, Config{Server: srv.Addr(), JSON: true, Stderr: stderr})
	cmds := []string{
		"create /j hello",
		"create -s /j/seq- x",
		"get -s /j",
		"ls /j",
		"ls -R /j",
		"getAcl /j",
		"get /none",
		"set -s /j world",
		"stat /j",
		"getAllChildrenNumber /j",
		"getEphemerals",
		"whoami",
		"tree /j",
		"create /j/bin",
		"get /j/bin",
		"get -w /j",
		"set /j again",
		"history",
		"sync /j",
		"deleteall /j",
		"close",
	}
	s.send(cmds...)
	if status := s.end(); status != 0 {
		t.Errorf("exit status %d, want 0 (the last command succeeded)", status)
	}
	var results []map[string]any
	var events []map[string]any
	if got, want := stderr.String(), "Connecting to "+srv.Addr()+"\n"; got != want {
		t.Errorf("standard error %q, want %q", got, want)
	}
	for _, line := range s.out.Lines() {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %q is not a JSON object: %v\noutput:\n%s", line, err, s.out)
		}
		if e, ok := v["event"]; ok {
			events = append(events, e.(map[string]any))
			continue
		}
		results = append(results, v)
	}
	if len(results) != len(cmds) {
		t.Fatalf("%d results for %d commands:\n%s", len(results), len(cmds), s.out)
	}
	byCmd := map[string]map[string]any{}
	for i, c := range cmds {
		byCmd[c] = results[i]
	}
	check := func(cmd, key string, want any) {
		t.Helper()
		got, _ := json.Marshal(byCmd[cmd][key])
		w, _ := json.Marshal(want)
		if string(got) != string(w) {
			t.Errorf("%s: %s = %s, want %s", cmd, key, got, w)
		}
	}
	check("create /j hello", "path", "/j")
	check("create -s /j/seq- x", "path", "/j/seq-0000000000")
	check("get -s /j", "data", "hello")
	check("ls /j", "children", []string{"seq-0000000000"})
	check("ls -R /j", "paths", []string{"/j", "/j/seq-0000000000"})
	check("getAcl /j", "acl", []map[string]string{{"scheme": "world", "id": "anyone", "perms": "cdrwa"}})
	check("get /none", "error", "Node does not exist: /none")
	check("get /none", "code", "NONODE")
	check("getAllChildrenNumber /j", "count", 1)
	check("getEphemerals", "paths", []string{})
	check("whoami", "identities", []map[string]string{{"scheme": "ip", "user": "127.0.0.1"}})
	check("get /j/bin", "data", nil)
	check("deleteall /j", "deleted", 3)
	stat, _ := byCmd["set -s /j world"]["stat"].(map[string]any)
	if stat["dataVersion"] != 1.0 || stat["dataLength"] != 5.0 || !strings.HasPrefix(stat["mZxid"].(string), "0x") {
		t.Errorf("set -s stat = %v, want dataVersion 1, dataLength 5 and a hex mZxid", stat)
	}
	tree, _ := json.Marshal(byCmd["tree /j"])
	if want := `{"children":[{"path":"/j/seq-0000000000"}],"path":"/j"}`; string(tree) != want {
		t.Errorf("tree = %s, want %s", tree, want)
	}
	wantEvents := []map[string]any{
		{"state": "SyncConnected", "type": "None", "path": nil},
		{"state": "SyncConnected", "type": "NodeDataChanged", "path": "/j"},
		{"state": "Closed", "type": "None", "path": nil},
	}
	got, _ := json.Marshal(events)
	want, _ := json.Marshal(wantEvents)
	if string(got) != string(want) {
		t.Errorf("events %s, want %s", got, want)
	}
}

// TestLocalCommands covers the commands the shell answers itself and the
// session commands: history, redo, printwatches, close, connect, quit.
func TestLocalCommands(t *testing.T) {
	srv := collietest.Start(t)
	s := startShell(t, Config{Server: srv.Addr()})
	s.send(
		"create /h one",    // 0
		"get /h",           // 1
		"redo 1",           // 2
		"redo 2",           // 3: redo 2 became get /h
		"redo 9",           // 4
		"redo x",           // 5
		"printwatches",     // 6
		"printwatches off", // 7
		"printwatches",     // 8
		"printwatches on",  // 9
		"history",          // 10
		"close",            // 11
		"get /h",           // 12
		"connect",          // 13
		"get /h",           // 14
		"quit",             // 15
		"get /h",           // never read
	)
	if status := s.end(); status != 0 {
		t.Errorf("exit status %d, want 0", status)
	}
	want := []string{
		"Connecting to " + srv.Addr(),
		"", "WATCHER::", "", "WatchedEvent state:SyncConnected type:None path:null",
		"Created /h",
		"one",
		"one",
		"one",
		"Command index out of range",
		"Command index out of range",
		"printwatches is on",
		"printwatches is off",
		"0 - create /h one",
		"1 - get /h",
		"2 - get /h",
		"3 - get /h",
		"4 - redo 9",
		"5 - redo x",
		"6 - printwatches",
		"7 - printwatches off",
		"8 - printwatches",
		"9 - printwatches on",
		"10 - history",
		"", "WATCHER::", "", "WatchedEvent state:Closed type:None path:null",
		"Not connected",
		"", "WATCHER::", "", "WatchedEvent state:SyncConnected type:None path:null",
		"one",
	}
	if got := s.out.Lines(); !slices.Equal(got, want) {
		t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestWatchEventsPrintOnce checks that a change prints once however many
// of the shell's watches it fires, as through zkCli.sh's single watcher.
func TestWatchEventsPrintOnce(t *testing.T) {
	srv := collietest.Start(t)
	s := startShell(t, Config{Server: srv.Addr()})
	event := func(typ, path string) string {
		return "WatchedEvent state:SyncConnected type:" + typ + " path:" + path
	}
	// waitEvent waits for the nth printing of an event.
	waitEvent := func(line string, n int) {
		t.Helper()
		s.out.waitFor(t, line, func(text string) bool { return count(text, line) >= n })
	}
	s.send("create /w", "create /w/x", "create /w/y", "create /barrier")

	// One-shot watches of both kinds on one node, and the node deleted.
	s.send("get -w /w/y", "get -w /w/y", "stat -w /w/y", "ls -w /w/y", "delete /w/y")
	waitEvent(event("NodeDeleted", "/w/y"), 1)

	// A recursive watch above a plain one, and a one-shot watch: a data
	// change prints once, from the recursive watch.
	s.send("addWatch /w", "addWatch -m PERSISTENT /w/x", "get -w /w/x", "set /w/x v1")
	waitEvent(event("NodeDataChanged", "/w/x"), 1)
	// The plain watch alone prints the children change the recursive one
	// does not report.
	s.send("create /w/x/kid")
	waitEvent(event("NodeChildrenChanged", "/w/x"), 1)
	waitEvent(event("NodeCreated", "/w/x/kid"), 1)

	// Replacing the recursive watch by a plain one stops the events below.
	s.send("addWatch -m PERSISTENT /w", "set /w/x/kid v", "set /w v")
	waitEvent(event("NodeDataChanged", "/w"), 1)

	// removewatches of a persistent watch says so; of nothing, fails.
	s.send("removewatches /w", "removewatches /w")
	waitEvent("WatchedEvent state:SyncConnected type:PersistentWatchRemoved path:/w", 1)
	s.out.waitFor(t, "No such watcher", func(text string) bool {
		return strings.Contains(text, "KeeperErrorCode = No such watcher for /w\n")
	})

	// A barrier: an event after all the others, so duplicates would have
	// printed by the time it has.
	s.send("get -w /barrier", "set /barrier x")
	waitEvent(event("NodeDataChanged", "/barrier"), 1)
	s.send("close")
	waitEvent("WatchedEvent state:Closed type:None path:null", 1)
	text := s.out.String()
	for _, line := range []string{
		event("NodeDeleted", "/w/y"),
		event("NodeDataChanged", "/w/x"),
		event("NodeChildrenChanged", "/w/x"),
		event("NodeCreated", "/w/x/kid"),
		event("NodeDataChanged", "/w"),
	} {
		if n := count(text, line); n != 1 {
			t.Errorf("%q printed %d times, want once; output:\n%s", line, n, text)
		}
	}
	if n := count(text, event("NodeDataChanged", "/w/x/kid")); n != 0 {
		t.Errorf("a plain watch on /w reported a change of /w/x/kid; output:\n%s", text)
	}
}

// TestTreeAndDeleteAll covers tree, ls -R and deleteall on a tree larger
// than one batch.
func TestTreeAndDeleteAll(t *testing.T) {
	srv := collietest.Start(t)
	cfg := Config{Server: srv.Addr()}
	s := startShell(t, cfg)
	s.send("create /r", "create /r/b", "create /r/a", "create /r/a/y", "create /r/a/x", "create /r/c", "create /r/c/z")
	s.send("tree /r", "ls -R /r", "deleteall -b 2 /r", "ls /", "tree /none", "close")
	if status := s.end(); status != 0 {
		t.Errorf("exit status %d, want 0", status)
	}
	text := s.out.String()
	wantTree := "/r\n├── a\n│   ├── x\n│   └── y\n├── b\n└── c\n    └── z\n"
	if !strings.Contains(text, wantTree) {
		t.Errorf("tree /r: want\n%s\noutput:\n%s", wantTree, text)
	}
	// ls -R lists a node's children, then the subtree of each, as zkCli.sh.
	wantLs := "/r\n/r/a\n/r/b\n/r/c\n/r/a/x\n/r/a/y\n/r/c/z\n"
	if !strings.Contains(text, wantLs) {
		t.Errorf("ls -R /r: want\n%s\noutput:\n%s", wantLs, text)
	}
	if !strings.Contains(text, "[zookeeper]\nNode does not exist: /none\n") {
		t.Errorf("deleteall left nodes, or tree of a missing node did not fail; output:\n%s", text)
	}
}

// TestChroot runs commands below a chroot, which the shell shows as "/".
func TestChroot(t *testing.T) {
	srv := collietest.Start(t)
	if status, _, stderr := execCommand(t, Config{Server: srv.Addr()}, "create", "/app"); status != 0 {
		t.Fatalf("create /app: %s", stderr)
	}
	cfg := Config{Server: srv.Addr() + "/app"}
	for _, args := range [][]string{{"create", "/x", "1"}, {"create", "-e", "-s", "/e-"}} {
		if status, _, stderr := execCommand(t, cfg, args...); status != 0 {
			t.Fatalf("%q: %s", args, stderr)
		}
	}
	s := startShell(t, cfg)
	s.send("ls /", "create -e /eph", "getEphemerals", "tree", "ls -R /")
	s.end()
	want := "[x]\nCreated /eph\n[/eph]\n/\n├── eph\n└── x\n/\n/eph\n/x\n"
	if got := s.out.String(); !strings.Contains(got, want) {
		t.Errorf("output:\n%s\nwant it to hold:\n%s", got, want)
	}
}

// TestCompletion completes commands and paths as the tab key does.
func TestCompletion(t *testing.T) {
	srv := collietest.Start(t)
	for _, p := range []string{"/alpha", "/alps", "/beta", "/beta/one"} {
		if status, _, stderr := execCommand(t, Config{Server: srv.Addr()}, "create", p); status != 0 {
			t.Fatalf("create %s: %s", p, stderr)
		}
	}
	sh := New(Config{Server: srv.Addr()})
	defer sh.Close()
	if err := sh.connect(t.Context(), srv.Addr(), false); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		line   string
		pos    int // -1: the end of line
		want   string
		listed string // what it prints: the choices when it cannot choose
	}{
		{line: "dele", pos: -1, want: "delete"},
		{line: "del", pos: -1, want: "del", listed: "delete  deleteall  delquota\n"},
		{line: "setq", pos: -1, want: "setquota "},
		{line: "delete", pos: -1, want: "delete", listed: "delete  deleteall\n"},
		{line: "wh", pos: -1, want: "whoami "},
		{line: "xyz", pos: -1, want: "xyz"},
		{line: "get /b", pos: -1, want: "get /beta"},
		{line: "get /beta/", pos: -1, want: "get /beta/one"},
		{line: "get /al", pos: -1, want: "get /alp"},
		{line: "get /alp", pos: -1, want: "get /alp", listed: "alpha  alps\n"},
		{line: "get /b -s", pos: 6, want: "get /beta -s"},
		{line: "get /none/", pos: -1, want: "get /none/"},
		{line: "get b", pos: -1, want: "get b"},
	}
	for _, tt := range tests {
		pos := tt.pos
		if pos < 0 {
			pos = len(tt.line)
		}
		var listed strings.Builder
		got, gotPos, ok := sh.completeLine(t.Context(), &listed, tt.line, pos)
		if !ok || got != tt.want || listed.String() != tt.listed {
			t.Errorf("complete %q at %d = %q, %v, listing %q; want %q, listing %q", tt.line, pos, got, ok, listed.String(), tt.want, tt.listed)
		}
		if wantPos := len(tt.want) - (len(tt.line) - pos); gotPos != wantPos {
			t.Errorf("complete %q at %d: cursor at %d, want %d", tt.line, pos, gotPos, wantPos)
		}
	}
}
