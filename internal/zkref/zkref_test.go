package zkref

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/freeport"
	"github.com/go-zookeeper/zk"
)

// clientTimeout bounds each real client's work against a server.
const clientTimeout = 30 * time.Second

func TestServerServesRealClients(t *testing.T) {
	s := Start(t)
	conn := connect(t, s.Addr())

	t.Run("four-letter words", func(t *testing.T) {
		if reply, err := FourLetter(s.Addr(), "ruok"); err != nil || reply != "imok" {
			t.Fatalf(`FourLetter(ruok) = %q, %v; want "imok"`, reply, err)
		}
		stat, err := FourLetter(s.Addr(), "srvr")
		if err != nil {
			t.Fatalf("FourLetter(srvr): %v", err)
		}
		for _, want := range []string{"Zookeeper version: 3.8.", "Mode: standalone"} {
			if !strings.Contains(stat, want) {
				t.Errorf("srvr reply lacks %q:\n%s", want, stat)
			}
		}
	})

	t.Run("go client create and get", func(t *testing.T) {
		created, err := conn.Create("/go", []byte("written by go"), 0, zk.WorldACL(zk.PermAll))
		if err != nil || created != "/go" {
			t.Fatalf(`Create(/go) = %q, %v; want "/go"`, created, err)
		}
		data, stat, err := conn.Get("/go")
		if err != nil {
			t.Fatalf("Get(/go): %v", err)
		}
		if string(data) != "written by go" || stat.DataLength != int32(len(data)) {
			t.Errorf("Get(/go) = %q with dataLength %d; want %q", data, stat.DataLength, "written by go")
		}
	})

	t.Run("kazoo shares the tree", func(t *testing.T) {
		python, err := Python()
		Require(t, err)
		if _, err := conn.Create("/for-kazoo", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("Create(/for-kazoo): %v", err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), clientTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, python, "-c", kazooEcho, s.Addr(), "/for-kazoo", "/from-kazoo").CombinedOutput()
		if err != nil {
			t.Fatalf("kazoo: %v\n%s", err, out)
		}
		data, _, err := conn.Get("/from-kazoo")
		if err != nil || string(data) != "kazoo read hello" {
			t.Errorf(`Get(/from-kazoo) = %q, %v; want "kazoo read hello"`, data, err)
		}
	})

	t.Run("java client on Classpath", func(t *testing.T) {
		java, err := Java()
		Require(t, err)
		classpath, err := Classpath()
		Require(t, err)
		host, port, err := net.SplitHostPort(s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), clientTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, java, "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", "-cp", classpath,
			"org.apache.zookeeper.client.FourLetterWordMain", host, port, "ruok")
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != "imok" {
			t.Errorf(`java FourLetterWordMain ruok printed %q, %v; want "imok"`, out, err)
		}
	})
}

// kazooEcho reads the node argv[2] and creates argv[3] holding
// "kazoo read " and what it read.
const kazooEcho = `
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=10)
zk.start(timeout=20)
data, _ = zk.get(sys.argv[2])
zk.create(sys.argv[3], b"kazoo read " + data)
zk.stop()
`

func TestKilledServerRestartsWithItsData(t *testing.T) {
	first := Start(t)
	conn := connect(t, first.Addr())
	if _, err := conn.Create("/durable", []byte("kept"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("Create(/durable): %v", err)
	}
	conn.Close()

	first.Kill()
	if reply, err := FourLetter(first.Addr(), "ruok"); err == nil {
		t.Fatalf("killed server still answers ruok with %q", reply)
	}

	second := Start(t, WithDataDir(first.DataDir()))
	data, _, err := connect(t, second.Addr()).Get("/durable")
	if err != nil || string(data) != "kept" {
		t.Errorf(`Get(/durable) after restart = %q, %v; want "kept"`, data, err)
	}
}

func TestStartMovesToAnotherPortWhenItsPortIsTaken(t *testing.T) {
	// The squatter answers like a ZooKeeper, so Start must tell it from
	// its own server.
	squatter := impersonate(t)
	squatterPort := squatter.Addr().(*net.TCPAddr).Port
	picks := 0
	pickPort = func() (int, error) {
		picks++
		if picks == 1 {
			return squatterPort, nil
		}
		return freeport.Take()
	}
	t.Cleanup(func() { pickPort = freeport.Take })

	s := Start(t)
	if s.Addr() == squatter.Addr().String() {
		t.Fatalf("Start returned the squatter's address %s", s.Addr())
	}
	if stat, err := FourLetter(s.Addr(), "srvr"); err != nil || !strings.Contains(stat, "Mode: standalone") {
		t.Errorf("srvr on %s = %q, %v; want a standalone ZooKeeper", s.Addr(), stat, err)
	}
	if picks != 2 {
		t.Errorf("Start picked a port %d times; want 2", picks)
	}
}

// impersonate listens on a loopback port and, until t ends, answers "ruok"
// and "srvr" as a serving ZooKeeper would, and other words with nothing.
func impersonate(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	replies := map[string]string{
		"ruok": "imok",
		"srvr": "Zookeeper version: 3.8.0\nMode: standalone\n",
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			cmd := make([]byte, 4)
			if _, err := io.ReadFull(c, cmd); err == nil {
				io.WriteString(c, replies[string(cmd)])
			}
			c.Close()
		}
	})
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	return l
}

func TestWithExtendedTypesAllowsTTLNodes(t *testing.T) {
	tests := []struct {
		name    string
		opts    []Option
		wantErr string // in the error's text; "" for success
	}{
		// ZooKeeper answers UNIMPLEMENTED (-6), which go-zookeeper reports
		// as an unknown error.
		{name: "default", wantErr: "-6"},
		{name: "WithExtendedTypes", opts: []Option{WithExtendedTypes()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := Start(t, tt.opts...)
			_, err := connect(t, s.Addr()).CreateTTL("/ttl", nil, zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Minute)
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("CreateTTL error = %v; want %q", err, tt.wantErr)
			}
		})
	}
}

func TestOptionsReachTheServer(t *testing.T) {
	s := Start(t,
		WithTickTime(500*time.Millisecond),
		WithConfig("maxClientCnxns", "7"),
		WithJVMArgs("-Dzookeeper.extendedTypesEnabled=true"),
		WithFullJIT(),
	)
	conf, err := FourLetter(s.Addr(), "conf")
	if err != nil {
		t.Fatalf("FourLetter(conf): %v", err)
	}
	for _, want := range []string{"\ntickTime=500\n", "\nmaxClientCnxns=7\n", "\ndataDir=" + s.DataDir()} {
		if !strings.Contains(conf, want) {
			t.Errorf("conf reply lacks %q:\n%s", strings.TrimSpace(want), conf)
		}
	}
	// TTL nodes need extendedTypesEnabled, given here only as a JVM argument.
	if _, err := connect(t, s.Addr()).CreateTTL("/ttl", nil, zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Minute); err != nil {
		t.Errorf("CreateTTL with extended types from WithJVMArgs: %v", err)
	}
}

func TestRequireFailsOnlyInCI(t *testing.T) {
	missing := errors.New("java not found")
	tests := []struct {
		name        string
		ci          string
		err         error
		wantFatal   bool
		wantSkipped bool
	}{
		{name: "tool present", ci: "true", err: nil},
		{name: "missing on a developer machine", ci: "", err: missing, wantSkipped: true},
		{name: "missing with CI=false", ci: "false", err: missing, wantSkipped: true},
		{name: "missing in CI", ci: "true", err: missing, wantFatal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			r := &recorder{TB: t}
			Require(r, tt.err)
			if r.fatal != tt.wantFatal || r.skipped != tt.wantSkipped {
				t.Errorf("Require: fatal=%v skipped=%v; want fatal=%v skipped=%v", r.fatal, r.skipped, tt.wantFatal, tt.wantSkipped)
			}
			if r.skipped && !strings.Contains(r.msg, "./scripts/test.sh") {
				t.Errorf("skip message %q does not say how to install the tools", r.msg)
			}
		})
	}
}

// recorder notes how Require ends a test instead of ending it.
type recorder struct {
	testing.TB
	fatal, skipped bool
	msg            string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = true
	r.msg = fmt.Sprintf(format, args...)
}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = true
	r.msg = fmt.Sprintf(format, args...)
}

// connect opens a go-zookeeper session to addr that lasts until t ends.
func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	logger := &testLogger{t: t}
	conn, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(logger))
	if err != nil {
		t.Fatalf("zk.Connect(%s): %v", addr, err)
	}
	t.Cleanup(func() {
		conn.Close()
		logger.stop()
	})
	timeout := time.After(clientTimeout)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-timeout:
			t.Fatalf("no session with %s after %v", addr, clientTimeout)
		}
	}
}

// testLogger sends go-zookeeper's log to the test's log until stop, after
// which the client's goroutines may still log but the test may have ended.
type testLogger struct {
	t       *testing.T
	mu      sync.Mutex
	stopped bool
}

func (l *testLogger) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.t.Logf("zk: "+format, args...)
	}
}

func (l *testLogger) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
}

// Three members elect a leader; a write through one is read through
// another; with the leader killed the other two elect a new one and keep
// the data; the killed member restarts and catches up.
func TestEnsembleElectsAndSurvivesLeaderKill(t *testing.T) {
	e := StartEnsemble(t, 3, WithTickTime(200*time.Millisecond))
	lead := e.Leader()
	if lead < 0 {
		t.Fatal("no member says it leads")
	}
	other := (lead + 1) % 3
	w := connect(t, e.Members()[lead].Addr())
	if _, err := w.Create("/ens", []byte("one"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("Create(/ens): %v", err)
	}
	r := connect(t, e.Members()[other].Addr())
	if _, err := r.Sync("/ens"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if data, _, err := r.Get("/ens"); err != nil || string(data) != "one" {
		t.Fatalf("Get(/ens) on another member = %q, %v", data, err)
	}

	e.Kill(lead)
	deadline := time.Now().Add(clientTimeout)
	for e.Leader() < 0 || e.Leader() == lead {
		if time.Now().After(deadline) {
			t.Fatalf("no new leader within %v of the leader's kill", clientTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.Restart(lead)
	back := connect(t, e.Members()[lead].Addr())
	if data, _, err := back.Get("/ens"); err != nil || string(data) != "one" {
		t.Errorf("Get(/ens) on the restarted member = %q, %v", data, err)
	}
}
