//go:build linux

package zkcompat

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// cliMtTimeout bounds one run of cli_mt, the C client's shell.
const cliMtTimeout = 20 * time.Second

// cliMtNoise matches lines that cli_mt prints whatever the server answers:
// its echo of the command, session events, and timings.
var cliMtNoise = regexp.MustCompile(`^(Batch mode: |Watcher SESSION_EVENT state = CONNECTED_STATE$|Got a new session id: |time = -?\d+ msec$)`)

// cliMtStatLine matches the lines of a Stat as cli_mt prints them that hold
// times and zxids.
var cliMtStatLine = regexp.MustCompile(`^\t(ctime = |czxid=|mtime=|mzxid=)`)

// cliMtChild matches a child's name in the output of ls and ls2.
var cliMtChild = regexp.MustCompile(`^\t[^\t=]+$`)

// TestCClient runs ZooKeeper's C client shell, cli_mt, against ZooKeeper
// 3.8, which shows that the expected output is ZooKeeper's, and against
// Collie.
func TestCClient(t *testing.T) {
	requireClientTool(t, cliMtPath, "zookeeper-bin")
	zookeeper, collie := startInteropServers(t)
	for _, srv := range []interopServer{zookeeper, collie} {
		t.Run(srv.name+"/batch", func(t *testing.T) { testCClientBatch(t, srv) })
		t.Run(srv.name+"/interactive", func(t *testing.T) { testCClientInteractive(t, srv.addr) })
	}
}

// testCClientBatch runs cli_mt once per command in its batch mode (-c),
// which sends one request, prints the result and exits, and checks what it
// prints. Every run is a new session. The expected output is ZooKeeper
// 3.8's, with times and zxids blanked and children sorted: ZooKeeper lists
// children in no particular order.
//
// Ephemeral nodes are created under parents of their own: cli_mt does not
// wait for the server to close its session before it exits, so when an
// ephemeral goes, and with it its parent's cversion and the next sequence
// number there, races with the next run.
func testCClientBatch(t *testing.T, srv interopServer) {
	// stat is how cli_mt prints a Stat: versions in hexadecimal, as
	// unsigned 32-bit numbers.
	stat := func(version, aversion int32) []string {
		return []string{
			"\tctime = <time>", "\tczxid=<zxid>", "\tmtime=<time>", "\tmzxid=<zxid>",
			fmt.Sprintf("\tversion=%x\taversion=%x", uint32(version), uint32(aversion)),
			"\tephemeralOwner = 0",
		}
	}
	tests := []struct {
		cmd  string
		want []string
	}{
		{"create /c", []string{"Creating [/c] node (mode: 0)", "[/c]: rc = 0", "\tname = /c"}},
		{"create /c", []string{"Creating [/c] node (mode: 0)", "[/c]: rc = -110"}},
		{"create /c/none/x", []string{"Creating [/c/none/x] node (mode: 0)", "[/c/none/x]: rc = -101"}},
		{"create /c/e", []string{"Creating [/c/e] node (mode: 0)", "[/c/e]: rc = 0", "\tname = /c/e"}},
		{"create +e /c/e/eph", []string{"Creating [/c/e/eph] node (mode: 1)", "[/c/e/eph]: rc = 0", "\tname = /c/e/eph"}},
		{"create /c/es", []string{"Creating [/c/es] node (mode: 0)", "[/c/es]: rc = 0", "\tname = /c/es"}},
		{"create +es /c/es/n-", []string{"Creating [/c/es/n-] node (mode: 3)", "[/c/es/n-]: rc = 0", "\tname = /c/es/n-0000000000"}},
		{"create +s /c/s-", []string{"Creating [/c/s-] node (mode: 2)", "[/c/s-]: rc = 0", "\tname = /c/s-0000000002"}},
		{"create +s /c/s-", []string{"Creating [/c/s-] node (mode: 2)", "[/c/s-]: rc = 0", "\tname = /c/s-0000000003"}},
		{"create +c /c/cont", []string{"Creating [/c/cont] node (mode: 4)", "[/c/cont]: rc = 0", "\tname = /c/cont"}},
		{"create2 /c/two", slices.Concat(
			[]string{"Creating [/c/two] node (mode: 0)", "[/c/two]: rc = 0", "\tname = /c/two"}, stat(0, 0))},
		{"create2 /c/none/x", []string{"Creating [/c/none/x] node (mode: 0)", "[/c/none/x]: rc = -101", "null"}},
		{"get /c", slices.Concat([]string{"/c: rc = 0", " value_len = 3", "new", "Stat:"}, stat(0, 0))},
		{"set /c hello", slices.Concat([]string{"/c: rc = 0 Stat:"}, stat(1, 0))},
		{"get /c", slices.Concat([]string{"/c: rc = 0", " value_len = 5", "hello", "Stat:"}, stat(1, 0))},
		{"set /none x", []string{"/none: rc = -101 Stat:", "null"}},
		{"get /none", []string{"/none: rc = -101", "", "Stat:", "null"}},
		{"get /zookeeper/config", slices.Concat([]string{"/zookeeper/config: rc = 0", " value_len = 0", "", "Stat:"}, stat(0, -1))},
		{"ls /c", []string{"/c: rc = 0", "\tcont", "\te", "\tes", "\ts-0000000002", "\ts-0000000003", "\ttwo"}},
		{"ls2 /c", slices.Concat([]string{"/c: rc = 0", "\tcont", "\te", "\tes", "\ts-0000000002", "\ts-0000000003", "\ttwo"}, stat(1, 0))},
		{"ls /none", []string{"/none: rc = -101"}},
		{"delete /c", []string{"/c: rc = -111"}},
		{"delete /c/s-0000000002", []string{"/c/s-0000000002: rc = 0"}},
		{"delete /c/s-0000000002", []string{"/c/s-0000000002: rc = -101"}},
		{"sync /c", []string{"[/c]: rc = 0", "\tname = /c"}},
		{"ls /c", []string{"/c: rc = 0", "\tcont", "\te", "\tes", "\ts-0000000003", "\ttwo"}},
	}
	for _, tt := range tests {
		ctx, cancel := context.WithTimeout(t.Context(), cliMtTimeout)
		p := startInteropProcess(ctx, t, false, nil, cliMtPath, "-h", srv.addr, "-c", tt.cmd)
		exit, err := p.wait()
		cancel()
		if exit != 0 {
			t.Fatalf("cli_mt -c %q: exit code %d (%v)\noutput:\n%s", tt.cmd, exit, err, p.out)
		}
		compareClientOutput(t, "cli_mt -c "+strconv.Quote(tt.cmd), "expected", tt.want, srv.name, normaliseCliMt(p.out.Lines()))
	}
}

// normaliseCliMt drops cli_mt's noise from its output, blanks times and
// zxids, and sorts runs of children.
func normaliseCliMt(lines []string) []string {
	var out []string
	children := -1 // where the current run of children starts in out
	for _, line := range lines {
		if cliMtNoise.MatchString(line) {
			continue
		}
		if m := cliMtStatLine.FindStringSubmatch(line); m != nil {
			if strings.HasSuffix(m[1], "time = ") || m[1] == "mtime=" {
				line = "\t" + m[1] + "<time>"
			} else {
				line = "\t" + m[1] + "<zxid>"
			}
		}
		if cliMtChild.MatchString(line) {
			if children < 0 {
				children = len(out)
			}
		} else if children >= 0 {
			slices.Sort(out[children:])
			children = -1
		}
		out = append(out, line)
	}
	if children >= 0 {
		slices.Sort(out[children:])
	}
	return out
}

// testCClientInteractive drives one cli_mt session through its standard
// input, waiting for each command's result before the next: an ephemeral
// node belongs to its session, get and ls leave watches that fire when
// another client changes the node, and the ephemeral goes when the shell
// quits.
func testCClientInteractive(t *testing.T, addr string) {
	other := dialInterop(t, addr)
	if _, err := other.Create("/w", []byte("v0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), cliMtTimeout)
	defer cancel()
	p := startInteropProcess(ctx, t, true, nil, cliMtPath, "-h", addr)
	next := 0 // the first line not yet looked at
	// await waits for a line matching pattern after the ones seen so far.
	await := func(what, pattern string) []string {
		t.Helper()
		re := regexp.MustCompile(pattern)
		i, err := p.out.waitFor(ctx, p.done, next, re.MatchString)
		if err != nil {
			t.Fatalf("cli_mt: waiting for %s (%q): %v\noutput:\n%s", what, pattern, err, p.out)
		}
		next = i + 1
		return re.FindStringSubmatch(p.out.Lines()[i])
	}
	send := func(cmd string) {
		t.Helper()
		if _, err := p.stdin.WriteString(cmd + "\n"); err != nil {
			t.Fatalf("cli_mt: send %q: %v\noutput:\n%s", cmd, err, p.out)
		}
	}

	m := await("the session", `^Got a new session id: 0x([0-9a-f]+)$`)
	session, err := strconv.ParseUint(m[1], 16, 64)
	if err != nil {
		t.Fatalf("session id %q: %v", m[1], err)
	}

	send("create +e /w/eph")
	await("the create", `^\[/w/eph\]: rc = 0$`)
	await("the created name", `^\tname = /w/eph$`)
	ok, st, deleted, err := other.ExistsW("/w/eph")
	if err != nil || !ok {
		t.Fatalf("exists /w/eph from another session: %v, %v", ok, err)
	}
	if owner := uint64(st.EphemeralOwner); owner != session {
		t.Errorf("ephemeralOwner of /w/eph = %#x, want cli_mt's session %#x", owner, session)
	}

	// get and ls set a data watch and a child watch on /w.
	send("get /w")
	await("the get", `^/w: rc = 0$`)
	await("the data", `^v0$`)
	await("the end of the Stat", `^\tephemeralOwner = 0$`)
	send("ls /w")
	await("the ls", `^/w: rc = 0$`)
	await("the child", `^\teph$`)

	if _, err := other.Set("/w", []byte("v1"), -1); err != nil {
		t.Fatal(err)
	}
	await("the data watch", `^Watcher CHANGED_EVENT state = CONNECTED_STATE for path /w$`)
	if _, err := other.Create("/w/x", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	await("the child watch", `^Watcher CHILD_EVENT state = CONNECTED_STATE for path /w$`)

	send("quit")
	if exit, err := p.wait(); exit != 0 {
		t.Fatalf("cli_mt: exit code %d (%v)\noutput:\n%s", exit, err, p.out)
	}
	// cli_mt exits once its closeSession is sent, so the ephemeral goes
	// soon after, not necessarily before.
	select {
	case ev := <-deleted:
		if ev.Type != zk.EventNodeDeleted {
			t.Errorf("watch on /w/eph: %v, want %v", ev.Type, zk.EventNodeDeleted)
		}
	case <-ctx.Done():
		t.Fatalf("/w/eph not deleted after cli_mt quit")
	}
	for i, line := range p.out.Lines() {
		if strings.HasPrefix(line, "Watcher ") && !strings.Contains(line, "SESSION_EVENT") &&
			!slices.Contains([]string{
				"Watcher CHANGED_EVENT state = CONNECTED_STATE for path /w",
				"Watcher CHILD_EVENT state = CONNECTED_STATE for path /w",
			}, line) {
			t.Errorf("cli_mt output line %d: unexpected event %q", i+1, line)
		}
	}
}
