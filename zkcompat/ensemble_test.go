package zkcompat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
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
	port := freeLocalPort(t)
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
func TestEnsembleKillLeader(t *testing.T) {
	const n = 3
	root := t.TempDir()
	var lines []string
	addrs := make([]string, n)
	for i := range n {
		addrs[i] = "127.0.0.1:" + strconv.Itoa(freeLocalPort(t))
		lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i+1, freeLocalPort(t), freeLocalPort(t)))
	}
	dirs := make([]string, n)
	for i := range n {
		dirs[i] = filepath.Join(root, fmt.Sprintf("s%d", i+1))
		if err := os.MkdirAll(filepath.Join(dirs[i], "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dirs[i], "data", "myid"), []byte(strconv.Itoa(i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		_, port, _ := strings.Cut(addrs[i], ":")
		cfg := fmt.Sprintf("tickTime=500\ndataDir=data\nclientPort=%s\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.enableServer=false\npreAllocSize=1024\n%s\n",
			port, strings.Join(lines, "\n"))
		if err := os.WriteFile(filepath.Join(dirs[i], "zoo.cfg"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	procs := make([]*serverProcess, n)
	for i := range n {
		procs[i] = startCollie(t, dirs[i], t.Output(), "server", "-c", "zoo.cfg", "-log-level", "warn")
	}
	for i := range n {
		procs[i].waitServing(t, addrs[i], "srvr", "Zookeeper version: ")
	}
	lead := awaitLeader(t, addrs, -1)

	// One writer per server, each writing its own keys; a write counts
	// only once acknowledged.
	var (
		mu    sync.Mutex
		acked = map[string]string{}
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			c, _, err := zk.Connect(addrs, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(discardZKLog{}))
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				path, value := fmt.Sprintf("/w%d-%d", i, k), fmt.Sprintf("v%d", k)
				if _, err := c.Create(path, []byte(value), 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					// Unknown outcome (the connection broke): not counted.
					time.Sleep(20 * time.Millisecond)
					continue
				}
				mu.Lock()
				acked[path] = value
				mu.Unlock()
			}
		})
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	deadline := time.Now().Add(30 * time.Second)
	for count() < 100 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	procs[lead].kill(t)
	killedAt := time.Now()
	newLead := awaitLeader(t, addrs, lead)
	t.Logf("server %d leads %v after server %d was killed", newLead+1, time.Since(killedAt).Round(time.Millisecond), lead+1)
	before := count()
	for count() < before+100 && time.Now().Before(deadline.Add(30*time.Second)) {
		time.Sleep(10 * time.Millisecond)
	}
	if count() < before+100 {
		t.Fatalf("only %d writes acknowledged after the leader's loss", count()-before)
	}
	procs[lead] = startCollie(t, dirs[lead], t.Output(), "server", "-c", "zoo.cfg", "-log-level", "warn")
	procs[lead].waitServing(t, addrs[lead], "srvr", "Zookeeper version: ")
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
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
	}
	t.Logf("%d acknowledged writes on all %d servers", len(acked), n)
}
