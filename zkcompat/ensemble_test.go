//go:build linux

package zkcompat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/internal/freeport"
	"github.com/collie-io/collie/internal/zkref"
)

// syncBuffer is an io.Writer several goroutines may write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// modes returns the Mode line of each server's srvr.
func modes(t *testing.T, addrs []string) []string {
	t.Helper()
	out := make([]string, len(addrs))
	for i, a := range addrs {
		reply, err := fourLetterWord(a, "srvr")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(reply, "\n") {
			if m, ok := strings.CutPrefix(line, "Mode: "); ok {
				out[i] = m
			}
		}
	}
	return out
}

// awaitLeader waits until exactly one of addrs reports itself leader and
// returns its index.
func awaitLeader(t *testing.T, addrs []string, skip int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		lead := -1
		for i, m := range modes(t, addrs) {
			if m == "leader" && i != skip {
				lead = i
			}
		}
		if lead >= 0 {
			return lead
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader among %v within 30s: modes %v", addrs, modes(t, addrs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The trial mode of the README: one process, three servers, one leader,
// a write through one server read through another, a clean stop.
func TestDevEnsemble(t *testing.T) {
	dir := t.TempDir()
	// The client ports of -dev-ensemble 3 follow -port, its peer ports
	// start 707 after it and its election ports 1707 after it.
	port, err := freeport.Block(0, 1, 2, 707, 708, 709, 1707, 1708, 1709)
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	p := startCollie(t, dir, &out, "server", "-dev-ensemble", "3", "-port", strconv.Itoa(port), "-log-level", "warn")
	addrs := []string{}
	for i := range 3 {
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(port+i))
	}
	for _, a := range addrs {
		p.waitServing(t, a, "srvr", "Zookeeper version: ")
	}
	if want := "connect string: " + strings.Join(addrs, ","); !strings.Contains(out.String(), want) {
		t.Errorf("output %q does not say %q", out.String(), want)
	}
	awaitLeader(t, addrs, -1)
	if m := modes(t, addrs); strings.Count(strings.Join(m, ","), "follower") != 2 {
		t.Errorf("modes %v, want one leader and two followers", m)
	}
	a := connectSession(t, addrs[1], 4*time.Second)
	if _, err := a.Create("/dev", []byte("ensemble"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	b := connectSession(t, addrs[2], 4*time.Second)
	if _, err := b.Sync("/dev"); err != nil {
		t.Fatal(err)
	}
	if data, _, err := b.Get("/dev"); err != nil || string(data) != "ensemble" {
		t.Fatalf("get through another server: %q, %v", data, err)
	}
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
}

// Three server processes from zoo.cfg files with server.N lines and myid:
// clients write through every server while the leader is killed with
// SIGKILL; a new leader takes over, the old one restarts and catches up,
// and every write a client saw acknowledged is on every server.
// processEnsemble is an ensemble of collie server processes, each started
// from its own zoo.cfg with server.N lines and a myid file.
type processEnsemble struct {
	addrs []string
	dirs  []string
	procs []*serverProcess
}

// startProcessEnsemble starts n servers with tickTime tick and the zoo.cfg
// lines extra, and waits until each serves.
func startProcessEnsemble(t *testing.T, n int, tick time.Duration, extra ...string) *processEnsemble {
	t.Helper()
	return startProcessEnsembleEach(t, n, tick, func(int) []string { return extra })
}

// startProcessEnsembleEach is startProcessEnsemble with the extra zoo.cfg
// lines of each server (0 to n-1) from extra.
func startProcessEnsembleEach(t *testing.T, n int, tick time.Duration, extra func(i int) []string) *processEnsemble {
	t.Helper()
	root := t.TempDir()
	e := &processEnsemble{addrs: make([]string, n), dirs: make([]string, n), procs: make([]*serverProcess, n)}
	var lines []string
	for i := range n {
		e.addrs[i] = "127.0.0.1:" + strconv.Itoa(freeLocalPort(t))
		lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i+1, freeLocalPort(t), freeLocalPort(t)))
	}
	for i := range n {
		e.dirs[i] = filepath.Join(root, fmt.Sprintf("s%d", i+1))
		if err := os.MkdirAll(filepath.Join(e.dirs[i], "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.dirs[i], "data", "myid"), []byte(strconv.Itoa(i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		_, port, _ := strings.Cut(e.addrs[i], ":")
		cfg := fmt.Sprintf("tickTime=%d\ndataDir=data\nclientPort=%s\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.enableServer=false\npreAllocSize=1024\n%s\n",
			tick.Milliseconds(), port, strings.Join(slices.Concat(lines, extra(i)), "\n"))
		if err := os.WriteFile(filepath.Join(e.dirs[i], "zoo.cfg"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		e.start(t, i)
	}
	for i := range n {
		e.procs[i].waitServing(t, e.addrs[i], "srvr", "Zookeeper version: ")
	}
	return e
}

// start starts server i (again).
func (e *processEnsemble) start(t *testing.T, i int) {
	t.Helper()
	e.procs[i] = startCollie(t, e.dirs[i], t.Output(), "server", "-c", "zoo.cfg", "-log-level", "warn")
}

// restart starts server i again and waits until it serves.
func (e *processEnsemble) restart(t *testing.T, i int) {
	t.Helper()
	e.start(t, i)
	e.procs[i].waitServing(t, e.addrs[i], "srvr", "Zookeeper version: ")
}

func TestEnsembleKillLeader(t *testing.T) {
	const n = 3
	e := startProcessEnsemble(t, n, 500*time.Millisecond)
	addrs, procs := e.addrs, e.procs
	lead := awaitLeader(t, addrs, -1)

	// One writer per server, each writing its own keys; a write counts
	// only once acknowledged.
	w := startAckedWriters(t, addrs, n)
	deadline := time.Now().Add(30 * time.Second)
	for w.count() < 100 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	procs[lead].kill(t)
	killedAt := time.Now()
	newLead := awaitLeader(t, addrs, lead)
	t.Logf("server %d leads %v after server %d was killed", newLead+1, time.Since(killedAt).Round(time.Millisecond), lead+1)
	before := w.count()
	for w.count() < before+100 && time.Now().Before(deadline.Add(30*time.Second)) {
		time.Sleep(10 * time.Millisecond)
	}
	if w.count() < before+100 {
		t.Fatalf("only %d writes acknowledged after the leader's loss", w.count()-before)
	}
	e.restart(t, lead)
	verifyAcked(t, addrs, w.stop())
}

// ackedWriters are clients that create nodes without pause, through any
// server of an ensemble, and keep those whose creation was acknowledged.
type ackedWriters struct {
	mu    sync.Mutex
	acked map[string]string // path → data
	done  chan struct{}
	wg    sync.WaitGroup
}

// startAckedWriters starts n writers, each with its own session on addrs
// and its own paths.
func startAckedWriters(t *testing.T, addrs []string, n int) *ackedWriters {
	w := &ackedWriters{acked: map[string]string{}, done: make(chan struct{})}
	for i := range n {
		w.wg.Go(func() {
			c, _, err := zk.Connect(addrs, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(discardZKLog{}))
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			for k := 0; ; k++ {
				select {
				case <-w.done:
					return
				default:
				}
				path, value := fmt.Sprintf("/w%d-%d", i, k), fmt.Sprintf("v%d", k)
				if _, err := c.Create(path, []byte(value), 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					// Unknown outcome (the connection broke): not counted.
					time.Sleep(20 * time.Millisecond)
					continue
				}
				w.mu.Lock()
				w.acked[path] = value
				w.mu.Unlock()
			}
		})
	}
	return w
}

// count returns how many writes were acknowledged so far.
func (w *ackedWriters) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// stop stops the writers and returns the acknowledged writes.
func (w *ackedWriters) stop() map[string]string {
	close(w.done)
	w.wg.Wait()
	return w.acked
}

// verifyAcked checks that every acknowledged write reads back on every
// server of addrs, after a sync.
func verifyAcked(t *testing.T, addrs []string, acked map[string]string) {
	t.Helper()
	for i, a := range addrs {
		c := connectSession(t, a, 4*time.Second)
		if _, err := c.Sync("/"); err != nil {
			t.Fatalf("sync on server %d: %v", i+1, err)
		}
		for path, want := range acked {
			data, _, err := c.Get(path)
			if err != nil || string(data) != want {
				t.Fatalf("server %d: acknowledged %s=%s reads %q, %v", i+1, path, want, data, err)
			}
		}
		c.Close()
	}
	t.Logf("%d acknowledged writes on all %d servers", len(acked), len(addrs))
}

// Kazoo's Lock on an ensemble whose leader is killed: the lock goes on
// being taken, by one holder at a time.
func TestKazooLockSurvivesLeaderKill(t *testing.T) {
	python, err := zkref.Python()
	zkref.Require(t, err)
	e := startProcessEnsemble(t, 3, 500*time.Millisecond)
	lead := awaitLeader(t, e.addrs, -1)
	path, err := filepath.Abs(filepath.Join("testdata", "kazoo", "ensemble_lock.py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), kazooScriptTimeout)
	defer cancel()
	p := startInteropProcess(ctx, t, true, []string{"PYTHONDONTWRITEBYTECODE=1"}, python, path, strings.Join(e.addrs, ","))
	if _, err := p.out.waitFor(ctx, p.done, 0, func(l string) bool { return l == "READY" }); err != nil {
		t.Fatalf("ensemble_lock.py did not get ready: %v\noutput:\n%s", err, p.out)
	}
	e.procs[lead].kill(t)
	if _, err := p.stdin.Write([]byte("killed\n")); err != nil {
		t.Fatal(err)
	}
	exit, err := p.wait()
	if exit != 0 || err != nil {
		t.Fatalf("ensemble_lock.py: exit code %d (%v)\noutput:\n%s", exit, err, p.out)
	}
	if lines := p.out.Lines(); len(lines) == 0 || lines[len(lines)-1] != "PASS" {
		t.Fatalf("ensemble_lock.py exited without PASS\noutput:\n%s", p.out)
	}
}

// Curator's InterProcessMutex and LeaderLatch on an ensemble whose leader
// is killed: the mutex goes on being taken, one holder at a time, and the
// latch has one leader again.
func TestCuratorSurvivesLeaderKill(t *testing.T) {
	java, err := zkref.Java()
	zkref.Require(t, err)
	classpath, err := zkref.CuratorClasspath()
	zkref.Require(t, err)
	program, err := filepath.Abs("testdata/curator/CuratorEnsemble.java")
	if err != nil {
		t.Fatal(err)
	}
	e := startProcessEnsemble(t, 3, 500*time.Millisecond)
	lead := awaitLeader(t, e.addrs, -1)
	ctx, cancel := context.WithTimeout(t.Context(), curatorTimeout)
	defer cancel()
	p := startInteropProcess(ctx, t, true, nil, java, curatorArgs(t, t.TempDir(), classpath, program, strings.Join(e.addrs, ","))...)
	if _, err := p.out.waitFor(ctx, p.done, 0, func(l string) bool { return l == "READY" }); err != nil {
		t.Fatalf("CuratorEnsemble did not get ready: %v\noutput:\n%s", err, p.out)
	}
	e.procs[lead].kill(t)
	if _, err := p.stdin.Write([]byte("killed\n")); err != nil {
		t.Fatal(err)
	}
	exit, err := p.wait()
	if lines := p.out.Lines(); exit != 0 || err != nil || len(lines) == 0 || lines[len(lines)-1] != "PASS" {
		t.Fatalf("CuratorEnsemble: exit code %d (%v)\noutput:\n%s", exit, err, p.out)
	}
}

// Kazoo's read-only client against the last server running of a
// three-server ensemble with read-only mode enabled, ZooKeeper's first:
// both serve its reads and refuse its writes and syncs the same way, and
// refuse a client that did not ask for read-only service.
func TestKazooReadOnlyMode(t *testing.T) {
	python, err := zkref.Python()
	zkref.Require(t, err)
	t.Run("zookeeper", func(t *testing.T) {
		// ZooKeeper 3.8 needs local sessions for read-only mode: without
		// them, it answers a read-only client's connect request with a
		// NOTREADONLY reply header, which no client can read.
		e := zkref.StartEnsemble(t, 3, zkref.WithTickTime(500*time.Millisecond),
			zkref.WithJVMArgs("-Dreadonlymode.enabled=true"), zkref.WithConfig("localSessionsEnabled", "true"))
		var addrs []string
		for _, m := range e.Members() {
			addrs = append(addrs, m.Addr())
		}
		testKazooReadOnly(t, python, addrs, func(i int) { e.Kill(i) })
	})
	t.Run("collie", func(t *testing.T) {
		e := startProcessEnsemble(t, 3, 500*time.Millisecond, "readonlymode.enabled=true")
		testKazooReadOnly(t, python, e.addrs, func(i int) { e.procs[i].kill(t) })
	})
}

// writeKazooRO creates, through a client of addrs, the nodes read_only.py
// reads: /kazoo-ro ("v1") and its one child.
func writeKazooRO(t *testing.T, addrs []string) {
	t.Helper()
	c, _, err := zk.Connect(addrs, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(discardZKLog{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{"/kazoo-ro", "/kazoo-ro/child"} {
		if _, err := c.Create(p, []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
}

// testKazooReadOnly writes what read_only.py expects, kills every server
// but the last with kill, waits until the last says it is read-only, and
// runs the script against it.
func testKazooReadOnly(t *testing.T, python string, addrs []string, kill func(int)) {
	last := len(addrs) - 1
	// Written through the last server, which answers once it has applied
	// the writes: it has them when it loses its quorum.
	writeKazooRO(t, addrs[last:])
	for i := range last {
		kill(i)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := zkref.FourLetter(addrs[last], "isro")
		if out == "ro" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("isro on the last server: %q, not \"ro\" within 30s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	runKazooScript(t, python, "read_only.py", addrs[last], []string{
		"ok: the client's state = 'CONNECTED_RO'",
		"ok: data read in read-only mode = (b'v1', 0, 1)",
		"ok: transaction raises NotReadOnlyCallError",
		"ok: a read-write client's connection raises KazooTimeoutError",
	})
}
