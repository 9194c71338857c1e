//go:build linux

package zkcompat

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// zkCliStep is one command of the zkCli.sh script.
type zkCliStep struct {
	cmd string
	// unordered says the output's order is unspecified: ZooKeeper prints
	// these lines, or the elements of a "[a, b]" list, from hash sets.
	unordered bool
	// want, when set, is the normalised output both servers must print.
	want []string
}

// zkCliAliceDigest is the digest ACL id of user alice with password secret:
// base64(sha1("alice:secret")).
const zkCliAliceDigest = "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="

// zkCliScript covers the commands of ZooKeeper 3.8's zkCli.sh. It runs in
// one session against a fresh server. Trees whose deletion fires watches are
// kept linear: deleteall deletes siblings in the server's child order, which
// is unspecified.
var zkCliScript = []zkCliStep{
	{cmd: "create /t", want: []string{"Created /t"}},
	{cmd: "create /t/a hello"},
	{cmd: "create /t/a again", want: []string{"Node already exists: /t/a"}},
	{cmd: "create /missing/child x", want: []string{"Node does not exist: /missing/child"}},
	{cmd: "create -e /t/eph e"},
	{cmd: "create -s /t/seq- s", want: []string{"Created /t/seq-0000000002"}},
	{cmd: "create -s /t/seq- s"},
	{cmd: "create -e -s /t/eseq- x"},
	{cmd: "create -c /t/cont"},
	{cmd: "create /t/cont/kid k"},
	{cmd: "create -t 600000 /t/ttl x"},
	{cmd: "create /t/a/b"},
	{cmd: "create /t/a/b/c deep"},
	{cmd: "create /t/eph/child x"},
	{cmd: "ls /t", want: []string{"[a, cont, eph, eseq-0000000004, seq-0000000002, seq-0000000003, ttl]"}},
	{cmd: "ls -s /t"},
	{cmd: "ls -R /t", unordered: true},
	{cmd: "ls /"},
	{cmd: "ls -R /", unordered: true},
	{cmd: "ls /t/none"},
	{cmd: "get /t/a", want: []string{"hello"}},
	{cmd: "get -s /t/a"},
	{cmd: "get /t/none"},
	{cmd: "stat /t/eph"},
	{cmd: "stat /t/cont"},
	{cmd: "stat /t/ttl"},
	{cmd: "stat /"},
	{cmd: "stat /t/none"},
	{cmd: "get -s /zookeeper"},
	{cmd: "set /t/a world"},
	{cmd: "set -s /t/a world2"},
	{cmd: "set -v 7 /t/a stale", want: []string{"version No is not valid : /t/a"}},
	{cmd: "set -v 2 /t/a current"},
	{cmd: "set /t/none x"},
	{cmd: "get -s /t/a"},
	{cmd: "delete /t/a", want: []string{"Node not empty: /t/a"}},
	{cmd: "delete -v 3 /t/a/b/c", want: []string{"version No is not valid : /t/a/b/c"}},
	{cmd: "delete -v 0 /t/a/b/c"},
	{cmd: "delete /t/none"},
	{cmd: "getAcl /t", want: []string{"'world,'anyone", ": cdrwa"}},
	{cmd: "getAcl -s /t"},
	{cmd: "getAcl /t/none"},
	{cmd: "setAcl /t/a/b world:anyone:ra"},
	{cmd: "getAcl /t/a/b", want: []string{"'world,'anyone", ": ra"}},
	{cmd: "create /t/a/b/d x", want: []string{"Insufficient permission : /t/a/b/d"}},
	{cmd: "setAcl -s /t/a/b world:anyone:cdrwa"},
	{cmd: "setAcl -v 0 /t/a/b world:anyone:r"},
	{cmd: "setAcl -v 2 /t/a/b world:anyone:cdrwa,ip:127.0.0.1:r"},
	{cmd: "getAcl -s /t/a/b"},
	{cmd: "setAcl -R /t/a ip:127.0.0.1:cdrwa"},
	{cmd: "getAcl /t/a/b", want: []string{"'ip,'127.0.0.1", ": cdrwa"}},
	{cmd: "setAcl /t/a bogus:x:cdrwa"},
	{cmd: "getAcl -s /zookeeper/config"},
	{cmd: "set /zookeeper/config x"},
	{cmd: "whoami", want: []string{"Auth scheme: User", "ip: 127.0.0.1"}},
	{cmd: "create /t/private data digest:" + zkCliAliceDigest + ":cdrwa"},
	{cmd: "get /t/private", want: []string{"Insufficient permission : /t/private"}},
	{cmd: "getAcl /t/private"},
	{cmd: "addauth digest alice:secret"},
	{cmd: "get /t/private", want: []string{"data"}},
	{cmd: "getAcl /t/private", want: []string{"'digest,'" + zkCliAliceDigest, ": cdrwa"}},
	{cmd: "create /t/auth x auth::cdrwa"},
	{cmd: "getAcl -s /t/auth"},
	{cmd: "whoami", unordered: true},
	{cmd: "getEphemerals", unordered: true},
	{cmd: "getEphemerals /t/e", unordered: true, want: []string{"[/t/eph, /t/eseq-0000000004]"}},
	{cmd: "getEphemerals /t/ephx", unordered: true},
	{cmd: "getAllChildrenNumber /t"},
	{cmd: "getAllChildrenNumber /"},
	{cmd: "getAllChildrenNumber /t/none"},
	{cmd: "sync /t", want: []string{"Sync is OK"}},
	{cmd: "sync /t/none"},
	// Watches: their events are compared separately, in arrival order.
	{cmd: "addWatch /t/a"},
	{cmd: "addWatch -m PERSISTENT /t/cont"},
	{cmd: "create /t/a/w1"},
	{cmd: "set /t/a/w1 v"},
	{cmd: "create /t/cont/w2"},
	{cmd: "set /t/cont/w2 v"},
	{cmd: "set /t/cont data"},
	{cmd: "delete /t/a/w1"},
	{cmd: "get -w /t/seq-0000000002"},
	{cmd: "set /t/seq-0000000002 v2"},
	{cmd: "set /t/seq-0000000002 v3"},
	{cmd: "ls -w /t/a/b"},
	{cmd: "create /t/a/b/w3"},
	{cmd: "stat -w /t/new"},
	{cmd: "create /t/new"},
	{cmd: "deleteall /t/a"},
	{cmd: "ls -R /t", unordered: true},
	{cmd: "deleteall /t/none"},
	{cmd: "getAllChildrenNumber /t"},
}

// zkCliWantEvents are the watch events the script fires, in order; both
// servers must deliver exactly these.
var zkCliWantEvents = []string{
	"WatchedEvent state:SyncConnected type:None path:null",
	"WatchedEvent state:SyncConnected type:NodeCreated path:/t/a/w1",
	"WatchedEvent state:SyncConnected type:NodeDataChanged path:/t/a/w1",
	"WatchedEvent state:SyncConnected type:NodeChildrenChanged path:/t/cont",
	"WatchedEvent state:SyncConnected type:NodeDataChanged path:/t/cont",
	"WatchedEvent state:SyncConnected type:NodeDeleted path:/t/a/w1",
	"WatchedEvent state:SyncConnected type:NodeDataChanged path:/t/seq-0000000002",
	"WatchedEvent state:SyncConnected type:NodeCreated path:/t/a/b/w3",
	"WatchedEvent state:SyncConnected type:NodeChildrenChanged path:/t/a/b",
	"WatchedEvent state:SyncConnected type:NodeCreated path:/t/new",
	"WatchedEvent state:SyncConnected type:NodeDeleted path:/t/a/b/w3",
	"WatchedEvent state:SyncConnected type:NodeDeleted path:/t/a/b",
	"WatchedEvent state:SyncConnected type:NodeDeleted path:/t/a",
	"WatchedEvent state:Closed type:None path:null",
}

// TestZkCli runs ZooKeeper's shell, zkCli.sh, against ZooKeeper 3.8 and
// against Collie, and compares what it prints, with zxids, times and session
// ids normalised.
func TestZkCli(t *testing.T) {
	requireClientTool(t, zkCliPath, "zookeeper")
	zookeeper, collie := startInteropServers(t)
	// The script lists the whole tree: it runs first, on empty servers.
	t.Run("script", func(t *testing.T) { testZkCliScript(t, zookeeper, collie) })
	t.Run("single command", func(t *testing.T) { testZkCliSingleCommand(t, zookeeper, collie) })
}

// testZkCliScript pipes zkCliScript into the shell's interactive mode, one
// session per server, and compares the output of every command, and the
// watch events printed.
func testZkCliScript(t *testing.T, zookeeper, collie interopServer) {
	var cmds []string
	for _, s := range zkCliScript {
		cmds = append(cmds, s.cmd)
	}
	want := runZkCliScript(t, zookeeper.addr, cmds)
	got := runZkCliScript(t, collie.addr, cmds)

	for i, step := range zkCliScript {
		w, g := normaliseZkCliStep(want.steps[i], step.unordered), normaliseZkCliStep(got.steps[i], step.unordered)
		what := "step " + step.cmd
		if step.want != nil {
			compareClientOutput(t, what, "expected", step.want, zookeeper.name, w)
		}
		compareClientOutput(t, what, zookeeper.name, w, collie.name, g)
	}
	compareClientOutput(t, "watch events", "expected", zkCliWantEvents, zookeeper.name, want.events)
	compareClientOutput(t, "watch events", zookeeper.name, want.events, collie.name, got.events)
}

// testZkCliSingleCommand runs zkCli.sh with one command on its command
// line, as scripts do: it runs the command, prints its result and exits
// with 0, or with 1 when the server answers with an error.
func testZkCliSingleCommand(t *testing.T, zookeeper, collie interopServer) {
	tests := []struct {
		args     []string
		wantExit int
		want     []string
	}{
		{[]string{"create", "/one", "1"}, 0, []string{"Created /one"}},
		{[]string{"get", "/one"}, 0, []string{"1"}},
		{[]string{"delete", "/none"}, 1, []string{"Node does not exist: /none"}},
	}
	for _, tt := range tests {
		cmd := "zkCli.sh " + strings.Join(tt.args, " ")
		var outputs [2][]string
		for i, srv := range []interopServer{zookeeper, collie} {
			exit, out := runZkCliCommand(t, srv.addr, tt.args)
			if exit != tt.wantExit {
				t.Errorf("%s against %s: exit code %d, want %d\noutput:\n\t%s", cmd, srv.name, exit, tt.wantExit, strings.Join(out, "\n\t"))
			}
			outputs[i] = out
		}
		compareClientOutput(t, cmd, "expected", tt.want, zookeeper.name, outputs[0])
		compareClientOutput(t, cmd, zookeeper.name, outputs[0], collie.name, outputs[1])
	}
}

// zkCliRun is what zkCli.sh printed for a script.
type zkCliRun struct {
	steps  [][]string // the lines printed by each command, in script order
	events []string   // every "WatchedEvent" line, in the order printed
}

// A script runs zkCliMarker before each command. It prints zkCliMarkerLine
// without asking the server anything, so the lines between two markers are
// one command's output. zkCliClosedLine is the event that ends a session.
const (
	zkCliMarker     = "printwatches"
	zkCliMarkerLine = "printwatches is on"
	zkCliClosedLine = "WatchedEvent state:Closed type:None path:null"
)

// zkCliTimeout bounds one zkCli.sh process, JVM start included, on a loaded
// two-core machine.
const zkCliTimeout = 60 * time.Second

// zkCliEnv makes the shell's JVM start quickly and print times in UTC.
var zkCliEnv = []string{
	"CLIENT_JVMFLAGS=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData -Xshare:auto",
	"TZ=UTC",
}

// runZkCliScript runs cmds in one zkCli.sh session against addr. It writes
// the whole script, ending with "close", and keeps standard input open
// until the shell prints the Closed event: watch events are printed by
// another thread, and the Closed event, delivered last, shows that all
// earlier ones have been printed. Then end of input makes the shell exit.
func runZkCliScript(t *testing.T, addr string, cmds []string) zkCliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), zkCliTimeout)
	defer cancel()
	p := startInteropProcess(ctx, t, true, zkCliEnv, zkCliPath, "-server", addr)
	if _, err := p.stdin.WriteString(zkCliScriptInput(cmds)); err != nil {
		t.Fatalf("zkCli.sh against %s: write the script: %v\noutput:\n%s", addr, err, p.out)
	}
	isClosed := func(line string) bool { return line == zkCliClosedLine }
	if _, err := p.out.waitFor(ctx, p.done, 0, isClosed); err != nil {
		t.Fatalf("zkCli.sh against %s: no Closed event: %v\noutput:\n%s", addr, err, p.out)
	}
	p.closeStdin()
	if exit, err := p.wait(); exit != 0 {
		t.Fatalf("zkCli.sh against %s: exit code %d (%v)\noutput:\n%s", addr, exit, err, p.out)
	}
	return splitZkCliRun(t, "zkCli.sh against "+addr, p.out.Lines(), len(cmds))
}

// zkCliScriptInput is a script of cmds as typed into zkCli.sh's
// interactive mode: zkCliMarker before each command, and "close" last.
func zkCliScriptInput(cmds []string) string {
	var script strings.Builder
	for _, c := range append(slices.Clone(cmds), "close") {
		script.WriteString(zkCliMarker + "\n" + c + "\n")
	}
	return script.String()
}

// splitZkCliRun splits the output of a script of n commands (as
// zkCliScriptInput writes it) at the markers, into each command's lines
// and the watch events, with Stats normalised.
func splitZkCliRun(t *testing.T, what string, lines []string, n int) zkCliRun {
	t.Helper()
	var run zkCliRun
	// The lines before the first marker are the shell's greeting; the ones
	// after the last belong to "close".
	var steps [][]string
	for _, line := range lines {
		// A command may end its output without a newline (setAcl -R prints
		// its errors so): the marker then ends that line.
		if rest, ok := strings.CutSuffix(line, zkCliMarkerLine); ok && rest != "" && steps != nil {
			steps[len(steps)-1] = append(steps[len(steps)-1], rest)
			line = zkCliMarkerLine
		}
		switch {
		case line == zkCliMarkerLine:
			steps = append(steps, []string{})
		case strings.HasPrefix(line, "WatchedEvent "):
			run.events = append(run.events, line)
		case isZkCliNoise(line) || steps == nil:
		default:
			steps[len(steps)-1] = append(steps[len(steps)-1], line)
		}
	}
	if len(steps) != n+1 {
		t.Fatalf("%s: %d markers in the output, want %d\noutput:\n%s", what, len(steps), n+1, strings.Join(lines, "\n"))
	}
	if closing := steps[n]; len(closing) > 0 {
		t.Errorf("%s: close printed %q", what, closing)
	}
	run.steps = steps[:n]
	normaliseZkCliStats(run.steps)
	return run
}

// runZkCliCommand runs zkCli.sh with args as its command line against addr
// and returns its exit code and its output without the greeting, logging
// and connection events.
func runZkCliCommand(t *testing.T, addr string, args []string) (int, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), zkCliTimeout)
	defer cancel()
	p := startInteropProcess(ctx, t, false, zkCliEnv, zkCliPath, append([]string{"-server", addr}, args...)...)
	exit, err := p.wait()
	if err != nil {
		t.Fatalf("zkCli.sh %s against %s: %v\noutput:\n%s", strings.Join(args, " "), addr, err, p.out)
	}
	var out []string
	for _, line := range p.out.Lines() {
		if !isZkCliNoise(line) && !strings.HasPrefix(line, "WatchedEvent ") && !strings.HasPrefix(line, "Connecting to ") {
			out = append(out, line)
		}
	}
	return exit, out
}

// isZkCliNoise reports whether zkCli.sh printed line whatever the server does:
// blank lines, the watcher's banner and the logging library's warnings.
func isZkCliNoise(line string) bool {
	return line == "" || line == "WATCHER::" || strings.HasPrefix(line, "SLF4J: ")
}

// zkCliStatLine matches a line of a Stat as zkCli.sh prints it.
var zkCliStatLine = regexp.MustCompile(`^(cZxid|mZxid|pZxid|ctime|mtime|ephemeralOwner) = (.*)$`)

// zkCliEpoch is how zkCli.sh prints time 0, the ctime and mtime of the nodes
// that exist before any transaction.
const zkCliEpoch = "Thu Jan 01 00:00:00 UTC 1970"

// normaliseZkCliStats replaces, in place, the zxids and session ids in the Stats
// of a run's output with names in order of first appearance, and times
// other than 0 with "<time>".
func normaliseZkCliStats(steps [][]string) {
	zxids, sessions := newInteropRenamer("zxid"), newInteropRenamer("session")
	for _, lines := range steps {
		for i, line := range lines {
			m := zkCliStatLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			key, value := m[1], m[2]
			switch {
			case value == "0x0" || value == zkCliEpoch:
			case key == "ctime" || key == "mtime":
				value = "<time>"
			case key == "ephemeralOwner":
				value = sessions.name(value)
			default:
				value = zxids.name(value)
			}
			lines[i] = key + " = " + value
		}
	}
}

// zkCliListLine matches a list as zkCli.sh prints it: "[a, b, c]".
var zkCliListLine = regexp.MustCompile(`^\[(.*)\]$`)

// normaliseZkCliStep returns a step's output; when the output's order is
// unspecified, with its lines and the elements of its lists sorted.
func normaliseZkCliStep(lines []string, unordered bool) []string {
	if !unordered {
		return lines
	}
	out := make([]string, len(lines))
	for i, line := range lines {
		if m := zkCliListLine.FindStringSubmatch(line); m != nil && m[1] != "" {
			elems := strings.Split(m[1], ", ")
			slices.Sort(elems)
			line = "[" + strings.Join(elems, ", ") + "]"
		}
		out[i] = line
	}
	slices.Sort(out)
	return out
}
