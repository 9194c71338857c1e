package shell

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/server/config"
)

const zkCliPath = zkref.ZkCliPath

// zkCliEnv makes the shell's JVM start quickly and print times in UTC.
var zkCliEnv = []string{
	"CLIENT_JVMFLAGS=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData -Xshare:auto",
	"TZ=UTC",
}

func TestMain(m *testing.M) {
	// zkCli.sh runs in UTC; the shell prints times in the local zone.
	time.Local = time.UTC
	os.Exit(m.Run())
}

// requireZkCli skips t, or fails it when CI=true, unless zkCli.sh and a
// ZooKeeper to run it against are installed.
func requireZkCli(t *testing.T) {
	t.Helper()
	zkref.Require(t, zkref.Available())
	if _, err := os.Stat(zkCliPath); err != nil {
		zkref.Require(t, fmt.Errorf("%s from Debian package zookeeper: %w", zkCliPath, err))
	}
}

// aliceDigest is the digest ACL id of alice with password secret.
var aliceDigest = client.DigestID("alice", "secret")

// cliScript is what the differential test runs, in one session, through
// zkCli.sh and through the shell. unordered marks output whose order is
// unspecified (zkCli.sh prints it from hash sets). The script works under
// /t and deletes it at the end, so that the next run starts from the same
// tree. It avoids what ZooKeeper's Java client does differently on
// purpose: a one-shot and a persistent watch on one path (the server then
// keeps only one of them), and removing persistent watches.
var cliScript = []struct {
	cmd       string
	unordered bool
}{
	{cmd: "create /t"},
	{cmd: "create /t/a hello"},
	{cmd: "create /t/a again"},
	{cmd: "create /missing/child x"},
	{cmd: "create -e /t/eph e"},
	{cmd: "create -s /t/seq- s"},
	{cmd: "create -s /t/seq- s"},
	{cmd: "create -e -s /t/eseq- x"},
	{cmd: "create -c /t/cont"},
	{cmd: "create /t/cont/kid k"},
	{cmd: "create -t 600000 /t/ttl x"},
	{cmd: "create /t/a/b"},
	{cmd: "create /t/a/b/c deep"},
	{cmd: "create /t/eph/child x"},
	{cmd: "create -es /t/joined-"},
	{cmd: "create -c -e /t/bad"},
	{cmd: "create -t abc /t/bad"},
	{cmd: "create -t 0 /t/bad"},
	{cmd: "create -e -t 10 /t/bad"},
	{cmd: `create /t/quoted "hello world"`},
	{cmd: "create /t/single 'it is'"},
	{cmd: "create /t/emptyacl x a,b"},
	{cmd: "create /t/x%,}"},
	{cmd: "create bad"},
	{cmd: "create /t/ends/"},
	{cmd: "create -s /t/dir/"},
	{cmd: "create //x"},
	{cmd: "create"},
	{cmd: "ls /t"},
	{cmd: "ls -s /t"},
	{cmd: "ls -R /t"},
	{cmd: "ls -R /t/none"},
	{cmd: "ls /t/none"},
	{cmd: "ls"},
	{cmd: "ls -x /t"},
	{cmd: "ls /t/cont watch"},
	{cmd: "get /t/a"},
	{cmd: "get -s /t/a"},
	{cmd: "get /t/none"},
	{cmd: "get /t/cont"},
	{cmd: "get /t/quoted"},
	{cmd: "get /t/single"},
	{cmd: "stat /t/eph"},
	{cmd: "stat /t/cont"},
	{cmd: "stat /t/ttl"},
	{cmd: "stat /t/none"},
	{cmd: "get -s /zookeeper"},
	{cmd: "set /t/a world"},
	{cmd: "set -s /t/a world2"},
	{cmd: "set -v 7 /t/a stale"},
	{cmd: "set -v 2 /t/a current"},
	{cmd: "set -v2 /t/a attached"},
	{cmd: "set /t/a -- -1"},
	{cmd: "get /t/a"},
	{cmd: "set /t/a -1"},
	{cmd: "set /t/none x"},
	{cmd: "set /t/a"},
	{cmd: "delete /t/a"},
	{cmd: "delete -v 3 /t/a/b/c"},
	{cmd: "delete -v 0 /t/a/b/c"},
	{cmd: "delete /t/none"},
	{cmd: "delete /t/none 5"},
	{cmd: "getAcl /t"},
	{cmd: "getAcl -s /t"},
	{cmd: "getAcl /t/none"},
	{cmd: "setAcl /t/a/b world:anyone:ra"},
	{cmd: "getAcl /t/a/b"},
	{cmd: "create /t/a/b/d x"},
	{cmd: "setAcl -s /t/a/b world:anyone:cdrwa"},
	{cmd: "setAcl -v 0 /t/a/b world:anyone:r"},
	{cmd: "setAcl /t/a/b world:anyone:cdrwa,ip:127.0.0.1:rz"},
	{cmd: "getAcl /t/a/b"},
	{cmd: "setAcl -R /t/a ip:127.0.0.1:cdrwa"},
	{cmd: "getAcl /t/a/b"},
	{cmd: "setAcl /t/a bogus:x:cdrwa"},
	{cmd: "setAcl /t/none world:anyone:r"},
	{cmd: "whoami"},
	{cmd: "create /t/private data digest:" + aliceDigest + ":cdrwa"},
	{cmd: "get /t/private"},
	{cmd: "ls -R /t"},
	{cmd: "addauth digest alice:secret"},
	{cmd: "get /t/private"},
	{cmd: "getAcl /t/private"},
	{cmd: "create /t/auth x auth::cdrwa"},
	{cmd: "getAcl /t/auth"},
	{cmd: "whoami", unordered: true},
	{cmd: "getEphemerals", unordered: true},
	{cmd: "getEphemerals /t/e", unordered: true},
	{cmd: "getEphemerals /t/ephx"},
	{cmd: "getAllChildrenNumber /t"},
	{cmd: "getAllChildrenNumber /t/none"},
	{cmd: "getAllChildrenNumber"},
	{cmd: "sync /t"},
	{cmd: "sync"},
	{cmd: "history"},
	{cmd: "redo 5"}, // create /t/a again
	{cmd: "redo 999"},
	// Watches; their events are compared apart, as they print when they
	// arrive.
	{cmd: "addWatch /t/a"},
	{cmd: "addWatch -m PERSISTENT /t/cont"},
	{cmd: "addWatch -m bogus /t/cont"},
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
	{cmd: "get -w /t/single"},
	{cmd: "ls -w /t/single"},
	{cmd: "delete /t/single"},
	{cmd: "get -w /t/quoted"},
	{cmd: "stat -w /t/quoted"},
	{cmd: "set /t/quoted x"},
	{cmd: "get -w /t/quoted"},
	{cmd: "removewatches /t/quoted -d"},
	{cmd: "ls -w /t/cont/kid"},
	{cmd: "get -w /t/cont/kid"},
	{cmd: "removewatches /t/cont/kid"},
	{cmd: "removewatches /t/none"},
	{cmd: "ls -R -w /t/new"},
	{cmd: "create /t/new/child"},
	{cmd: "deleteall /t/a"},
	{cmd: "ls -R /t"},
	{cmd: "deleteall /t/none"},
	{cmd: "deleteall -b x /t"},
	{cmd: "getAllChildrenNumber /t"},
	// Quotas: nodes under /zookeeper/quota, which the server keeps the
	// stats of. The quota is deleted again, so that the next run starts
	// from the same tree.
	{cmd: "setquota -n 3 /t/q"},
	{cmd: "create /t/q"},
	{cmd: "create /t/q/a 12345"},
	{cmd: "setquota -n 3 /t/q"},
	{cmd: "listquota /t/q"},
	{cmd: "get -s /zookeeper/quota/t/q/zookeeper_stats"},
	{cmd: "create /t/q/b x"},
	{cmd: "create /t/q/c"},
	{cmd: "create /t/q/d"},
	{cmd: "set /t/q/a 1"},
	{cmd: "delete /t/q/c"},
	{cmd: "listquota /t/q"},
	{cmd: "setquota -B 10 /t/q"},
	{cmd: "setquota -N 2 /t/q"},
	{cmd: "listquota /t/q"},
	{cmd: "get -s /zookeeper/quota/t/q/zookeeper_stats"},
	{cmd: "get -s /zookeeper/quota/t/q/zookeeper_limits"},
	{cmd: "setquota -n 1 /t/q/a"},
	{cmd: "setquota -n 1 /t"},
	{cmd: "setquota -n 0 /t/q"},
	{cmd: "setquota -n x /t/q"},
	{cmd: "setquota -N 99999999999 /t/q"},
	{cmd: "setquota -b -1 /t/q"},
	{cmd: "setquota /t/q"},
	{cmd: "setquota -n 1 -b 2 /t/q"},
	{cmd: "setquota -n 1"},
	{cmd: "setquota"},
	{cmd: "setquota -n 1 /zookeeper/quota/x"},
	{cmd: "setquota -n 1 /"},
	{cmd: "setquota -n 1 /t/none"},
	{cmd: "delquota -N /t/q"},
	{cmd: "listquota /t/q"},
	{cmd: "delquota -n -b /t/q"},
	{cmd: "delquota -x /t/q"},
	{cmd: "delquota /t/none"},
	{cmd: "listquota /t/none"},
	{cmd: "listquota"},
	{cmd: "delquota"},
	{cmd: "delquota /t/q"},
	{cmd: "listquota /t/q"},
	{cmd: "ls -R /zookeeper/quota"},
	{cmd: "deleteall /t/q"},
	{cmd: "deleteall -b 3 /t"},
	{cmd: "ls /"},
}

// The script runs zkCliMarker before each command: it prints
// zkCliMarkerLine without asking the server, so the lines between two
// markers are one command's output.
const (
	zkCliMarker     = "printwatches"
	zkCliMarkerLine = "printwatches is on"
	zkCliClosedLine = "WatchedEvent state:Closed type:None path:null"
)

// scriptInput is the script as typed: a marker before each command, and
// close at the end.
func scriptInput() []string {
	var lines []string
	for _, s := range cliScript {
		lines = append(lines, zkCliMarker, s.cmd)
	}
	return append(lines, zkCliMarker, "close")
}

// TestAgainstZkCli runs cliScript through zkCli.sh against ZooKeeper 3.8,
// and through the shell against ZooKeeper and against Collie, and compares
// every command's output and the watch events, with zxids, times and
// session ids normalised.
func TestAgainstZkCli(t *testing.T) {
	requireZkCli(t)
	zk := zkref.Start(t, zkref.WithExtendedTypes())
	collie := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
		c.MaxSessionTimeout = 40 * time.Second
		// ZooKeeper's default, as the ZooKeeper beside it runs with: the
		// script's emptied container (/t/cont) must not go between
		// deleteall's batches on one server only.
		c.ContainerCheckInterval = time.Minute
	}))
	t.Run("script", func(t *testing.T) {
		want := parseRun(t, "zkCli.sh", runZkCliScript(t, zk.Addr()))
		onZK := parseRun(t, "collie cli against ZooKeeper", runShellScript(t, zk.Addr(), len(want.events)))
		onCollie := parseRun(t, "collie cli against Collie", runShellScript(t, collie.Addr(), len(want.events)))
		compareRuns(t, "zkCli.sh", want, "collie cli", onZK)
		compareRuns(t, "ZooKeeper", onZK, "Collie", onCollie)
	})
	t.Run("single command", func(t *testing.T) {
		// Each sequence leaves the tree as it found it.
		commands := [][]string{
			{"create", "/one", "1"},
			{"get", "-s", "/one"},
			{"delete", "/none"},
			{"get", "-x", "/one"},
			{"setquota", "-n", "5", "/one"},
			{"setquota", "-n", "0", "/one"},
			{"setquota", "-n", "1", "/none"},
			{"setquota", "/one"},
			{"listquota", "/none"},
			{"delquota", "/none"},
			{"delquota", "/one"},
			{"delete", "/one"},
		}
		type outcome struct {
			status int
			output []string
		}
		var want []outcome
		for _, args := range commands {
			status, output := runZkCliCommand(t, zk.Addr(), args)
			want = append(want, outcome{status, output})
		}
		for _, srv := range []struct{ name, addr string }{{"ZooKeeper", zk.Addr()}, {"Collie", collie.Addr()}} {
			for i, args := range commands {
				status, stdout, stderr := execCommand(t, Config{Server: srv.addr}, args...)
				got := normaliseStats(linesOf(stdout + stderr))
				if status != want[i].status || !slices.Equal(got, want[i].output) {
					t.Errorf("%q against %s: status %d, output %q; zkCli.sh: status %d, output %q",
						args, srv.name, status, got, want[i].status, want[i].output)
				}
			}
		}
	})
}

// runZkCliScript pipes the script into zkCli.sh and returns its output. It
// keeps the input open until the shell has printed the Closed event, which
// comes after every other event; then end of input ends it.
func runZkCliScript(t *testing.T, addr string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*waitTimeout)
	defer cancel()
	out := newTranscript()
	cmd := exec.CommandContext(ctx, zkCliPath, "-server", addr)
	cmd.Env = append(os.Environ(), zkCliEnv...)
	cmd.Stdout, cmd.Stderr = out, out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start zkCli.sh: %v", err)
	}
	defer cmd.Wait()
	if _, err := stdin.Write([]byte(strings.Join(scriptInput(), "\n") + "\n")); err != nil {
		t.Fatalf("write to zkCli.sh: %v", err)
	}
	out.waitFor(t, "Closed event from zkCli.sh", func(text string) bool { return strings.Contains(text, zkCliClosedLine) })
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("zkCli.sh: %v\noutput:\n%s", err, out)
	}
	return out.Lines()
}

// runShellScript pipes the script into the shell and returns its output.
// Before close, it waits for the events zkCli.sh printed (as many, less
// the Closed one): closing the session drops events not printed yet.
func runShellScript(t *testing.T, addr string, events int) []string {
	t.Helper()
	s := startShell(t, Config{Server: addr})
	input := scriptInput()
	s.send(input[:len(input)-2]...)
	s.out.waitFor(t, fmt.Sprintf("%d events", events-1), func(text string) bool {
		return strings.Count(text, "\nWatchedEvent ") >= events-1
	})
	s.send(input[len(input)-2:]...)
	if status := s.end(); status != 0 {
		t.Errorf("collie cli against %s: exit status %d, want 0", addr, status)
	}
	return s.out.Lines()
}

// runZkCliCommand runs zkCli.sh with one command on its command line and
// returns its exit status and its output without the noise.
func runZkCliCommand(t *testing.T, addr string, args []string) (int, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*waitTimeout)
	defer cancel()
	out := newTranscript()
	cmd := exec.CommandContext(ctx, zkCliPath, append([]string{"-server", addr}, args...)...)
	cmd.Env = append(os.Environ(), zkCliEnv...)
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	status := 0
	if exit, ok := err.(*exec.ExitError); ok {
		status = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("zkCli.sh %q: %v", args, err)
	}
	var lines []string
	for _, l := range out.Lines() {
		if !isNoise(l) && !strings.HasPrefix(l, "WatchedEvent ") {
			lines = append(lines, javaOptionError.ReplaceAllString(l, ""))
		}
	}
	return status, normaliseStats(lines)
}

func linesOf(s string) []string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// isNoise reports whether a line is printed whatever the commands do:
// blank lines, the watcher's banner, greetings, the logging library's
// warnings.
func isNoise(line string) bool {
	return line == "" || line == "WATCHER::" || strings.HasPrefix(line, "SLF4J: ") ||
		strings.HasPrefix(line, "Connecting to ") || line == "Welcome to ZooKeeper!" ||
		strings.HasPrefix(line, "JLine support is ")
}

// javaOptionError starts zkCli.sh's messages about options: Java's option
// parser names its exception.
var javaOptionError = regexp.MustCompile(`^org\.apache\.commons\.cli\.[A-Za-z]+Exception: `)

// run is a script's output: what each command printed, and the events.
type run struct {
	steps  [][]string
	events []string
}

// parseRun splits output at the markers and normalises it.
func parseRun(t *testing.T, name string, lines []string) run {
	t.Helper()
	var r run
	var steps [][]string
	for _, line := range lines {
		line = javaOptionError.ReplaceAllString(line, "")
		switch {
		case line == zkCliMarkerLine:
			steps = append(steps, []string{})
		case strings.HasPrefix(line, "WatchedEvent "):
			r.events = append(r.events, line)
		case isNoise(line) || steps == nil:
		default:
			steps[len(steps)-1] = append(steps[len(steps)-1], line)
		}
	}
	if len(steps) != len(cliScript)+1 {
		t.Fatalf("%s: %d markers in the output, want %d\noutput:\n%s", name, len(steps), len(cliScript)+1, strings.Join(lines, "\n"))
	}
	r.steps = steps[:len(cliScript)]
	for i, s := range r.steps {
		r.steps[i] = normaliseStats(s)
		if cliScript[i].unordered {
			r.steps[i] = sortedOutput(r.steps[i])
		}
	}
	return r
}

// compareRuns compares two runs step by step, and their events as sets:
// the shell prints the events of different watches from different
// goroutines, zkCli.sh from one thread, so only their multisets must
// agree, with the first (connected) and last (closed) in place.
func compareRuns(t *testing.T, wantName string, want run, gotName string, got run) {
	t.Helper()
	for i, s := range cliScript {
		if !slices.Equal(want.steps[i], got.steps[i]) {
			t.Errorf("%q:\n%s:\n\t%s\n%s:\n\t%s", s.cmd, wantName, strings.Join(want.steps[i], "\n\t"), gotName, strings.Join(got.steps[i], "\n\t"))
		}
	}
	sortedEvents := func(events []string) []string {
		if len(events) < 2 {
			return events
		}
		middle := slices.Sorted(slices.Values(events[1 : len(events)-1]))
		return slices.Concat(events[:1], middle, events[len(events)-1:])
	}
	if w, g := sortedEvents(want.events), sortedEvents(got.events); !slices.Equal(w, g) {
		t.Errorf("watch events:\n%s:\n\t%s\n%s:\n\t%s", wantName, strings.Join(w, "\n\t"), gotName, strings.Join(g, "\n\t"))
	}
}

// statLine matches a line of a Stat.
var statLine = regexp.MustCompile(`^(cZxid|mZxid|pZxid|ctime|mtime|ephemeralOwner) = (.*)$`)

// javaDateLine matches a time as Java's Date.toString prints it in UTC.
var javaDateLine = regexp.MustCompile(`^[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d UTC \d{4}$`)

// normaliseStats replaces the zxids and session ids in Stats with names in
// order of first appearance, and times other than 0 with "<time>" (when
// they have Java's format).
func normaliseStats(lines []string) []string {
	zxids, sessions := map[string]string{}, map[string]string{}
	rename := func(names map[string]string, kind, v string) string {
		if n, ok := names[v]; ok {
			return n
		}
		names[v] = kind + strconv.Itoa(len(names))
		return names[v]
	}
	out := slices.Clone(lines)
	for i, line := range out {
		m := statLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		key, value := m[1], m[2]
		switch {
		case value == "0x0" || value == "Thu Jan 01 00:00:00 UTC 1970":
		case key == "ctime" || key == "mtime":
			if javaDateLine.MatchString(value) {
				value = "<time>"
			}
		case key == "ephemeralOwner":
			value = rename(sessions, "session", value)
		default:
			value = rename(zxids, "zxid", value)
		}
		out[i] = key + " = " + value
	}
	return out
}

// listLine matches a list as zkCli.sh prints it: "[a, b, c]".
var listLine = regexp.MustCompile(`^\[(.*)\]$`)

// sortedOutput sorts the lines of an output, and the elements of its lists.
func sortedOutput(lines []string) []string {
	out := make([]string, len(lines))
	for i, line := range lines {
		if m := listLine.FindStringSubmatch(line); m != nil && m[1] != "" {
			line = "[" + strings.Join(slices.Sorted(slices.Values(strings.Split(m[1], ", "))), ", ") + "]"
		}
		out[i] = line
	}
	slices.Sort(out)
	return out
}
