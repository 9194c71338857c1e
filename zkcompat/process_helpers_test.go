package zkcompat

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/freeport"
	"github.com/go-zookeeper/zk"
)

// collieBuild is the cmd/collie binary, built at most once per test run
// and removed by TestMain.
var collieBuild struct {
	once sync.Once
	dir  string // temporary directory holding the binary
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if collieBuild.dir != "" {
		os.RemoveAll(collieBuild.dir)
	}
	os.Exit(code)
}

// collieBinary returns the path of the collie binary built from this
// module's cmd/collie.
func collieBinary(t *testing.T) string {
	t.Helper()
	collieBuild.once.Do(func() {
		collieBuild.path, collieBuild.err = compileCollie()
	})
	if collieBuild.err != nil {
		t.Fatal(collieBuild.err)
	}
	return collieBuild.path
}

func compileCollie() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root: go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("find the module root: go env GOMOD names no go.mod")
	}
	dir, err := os.MkdirTemp("", "collie-bin-")
	if err != nil {
		return "", fmt.Errorf("build cmd/collie: %w", err)
	}
	collieBuild.dir = dir
	bin := filepath.Join(dir, "collie")
	build := exec.Command("go", "build", "-o", bin, "./cmd/collie")
	build.Dir = filepath.Dir(gomod)
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build cmd/collie: %w\n%s", err, out)
	}
	return bin, nil
}

// freeLocalPort returns a TCP port on 127.0.0.1 that was free a moment ago
// and that no other caller in this test process was given.
func freeLocalPort(t *testing.T) int {
	t.Helper()
	port, err := freeport.Take()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// serverProcess is a running collie binary.
type serverProcess struct {
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{} // closed once the process has exited
	waitErr error         // what Wait returned; read after exited is closed
	out     io.Writer     // where its output goes, shown when it fails
}

// startCollie runs the collie binary with args in the working directory
// dir, its output going to out. The process is killed when the test ends.
func startCollie(t *testing.T, dir string, out io.Writer, args ...string) *serverProcess {
	t.Helper()
	cmd := exec.Command(collieBinary(t), args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	p := &serverProcess{cmd: cmd, started: time.Now(), exited: make(chan struct{}), out: out}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start collie %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill(t) })
	return p
}

// waitServing waits until the server at addr answers the four-letter word
// with a reply that starts with want, and returns how long that took since
// the process started.
func (p *serverProcess) waitServing(t *testing.T, addr, word, want string) time.Duration {
	t.Helper()
	return p.waitServingWithin(t, addr, word, want, 30*time.Second)
}

// waitServingWithin is waitServing for a server that may take longer than
// usual to serve, such as one loading a large tree.
func (p *serverProcess) waitServingWithin(t *testing.T, addr, word, want string, limit time.Duration) time.Duration {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last string
	for {
		reply, err := fourLetterWord(addr, word)
		if err == nil && strings.HasPrefix(reply, want) {
			return time.Since(p.started)
		}
		last = reply
		if err != nil {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("collie at %s did not answer %s with %q within %v; last answer: %s", addr, word, want, limit, last)
		}
		select {
		case <-p.exited:
			output := "(not kept)"
			if s, ok := p.out.(fmt.Stringer); ok {
				output = s.String()
			}
			t.Fatalf("collie exited before serving: %v; its output:\n%s", p.waitErr, output)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// kill sends SIGKILL and waits for the process to exit.
func (p *serverProcess) kill(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
		return
	default:
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("kill collie: %v", err)
	}
	p.wait(t)
}

// stop sends SIGTERM, waits for the process to exit and returns its exit
// code.
func (p *serverProcess) stop(t *testing.T) int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("stop collie: %v", err)
	}
	p.wait(t)
	return p.cmd.ProcessState.ExitCode()
}

func (p *serverProcess) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("collie (pid %d) did not exit within 20s", p.cmd.Process.Pid)
	}
}

// runCollie runs the collie binary to completion in dir and returns its
// exit code and its combined output.
func runCollie(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, collieBinary(t), args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run collie %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("collie %s still running after 30s\n%s", strings.Join(args, " "), out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// fourLetterWord sends a four-letter word and returns the whole reply.
func fourLetterWord(addr, word string) (string, error) {
	return sendFourLetter(addr, []byte(word), false)
}

// sendFourLetter sends msg, a four-letter word and what follows it, then
// with closeWrite says it will send no more, and returns the whole reply.
func sendFourLetter(addr string, msg []byte, closeWrite bool) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	if _, err := c.Write(msg); err != nil {
		return "", err
	}
	if closeWrite {
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			return "", err
		}
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// mntrValue returns one value of the mntr four-letter word as a number.
func mntrValue(t *testing.T, addr, key string) int {
	t.Helper()
	reply, err := fourLetterWord(addr, "mntr")
	if err != nil {
		t.Fatalf("mntr: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(reply))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if ok && k == key {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("mntr %s: %q is not a number", key, v)
			}
			return n
		}
	}
	t.Fatalf("mntr has no %s:\n%s", key, reply)
	return 0
}

// zkSession is a go-zookeeper connection whose session state changes are
// recorded as they happen, so a test can wait for a reconnection.
type zkSession struct {
	*zk.Conn

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every state change
	state       zk.State
	id          int64 // the session, once established
	established int   // how many times a session was established or re-established
	expired     bool
}

// connectSession connects to addr asking for the given session timeout and
// waits until the session is established. The connection is closed when
// the test ends.
func connectSession(t *testing.T, addr string, timeout time.Duration) *zkSession {
	t.Helper()
	s := &zkSession{changed: make(chan struct{})}
	c, _, err := zk.Connect([]string{addr}, timeout,
		zk.WithLogInfo(false), zk.WithLogger(discardZKLog{}), zk.WithEventCallback(s.observe))
	if err != nil {
		t.Fatal(err)
	}
	s.Conn = c
	t.Cleanup(c.Close)
	s.waitUntil(t, "a session", func() bool { return s.established > 0 })
	s.mu.Lock()
	s.id = c.SessionID()
	s.mu.Unlock()
	return s
}

// session returns the session's id, which go-zookeeper forgets once the
// session has expired.
func (s *zkSession) session() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

func (s *zkSession) observe(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = ev.State
	switch ev.State {
	case zk.StateHasSession:
		s.established++
	case zk.StateExpired:
		s.expired = true
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitUntil waits, at most 30 seconds, until cond holds; cond runs with
// s.mu held. An expired session fails the test.
func (s *zkSession) waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		ok, expired, changed, id := cond(), s.expired, s.changed, s.id
		s.mu.Unlock()
		if expired {
			t.Fatalf("session 0x%x expired while waiting for %s", id, what)
		}
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("session 0x%x: no %s within 30s", id, what)
		}
	}
}

// disconnected waits until the client has noticed that its server is gone
// and returns how many sessions it had established until then.
func (s *zkSession) disconnected(t *testing.T) int {
	t.Helper()
	s.waitUntil(t, "disconnection", func() bool { return s.state != zk.StateHasSession })
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.established
}

// reestablished waits until the client has established its session again
// after the count of establishments that disconnected returned.
func (s *zkSession) reestablished(t *testing.T, before int) {
	t.Helper()
	s.waitUntil(t, "reconnection", func() bool { return s.established > before && s.state == zk.StateHasSession })
}

type discardZKLog struct{}

func (discardZKLog) Printf(string, ...any) {}
