//go:build linux

package zkcompat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/server/config"
)

// ZooKeeper's own clients, as Debian's zookeeper and zookeeper-bin packages
// install them.
const (
	zkCliPath = zkref.ZkCliPath
	cliMtPath = "/usr/lib/zookeeper/bin/cli_mt"
)

// requireClientTool skips t, or fails it when CI=true, unless the program
// at path, from the named Debian package, is installed.
func requireClientTool(t *testing.T, path, debianPackage string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		zkref.Require(t, fmt.Errorf("%s from Debian package %s: %w", path, debianPackage, err))
	}
}

// interopServer is a server that a test runs a client against.
type interopServer struct {
	name string // "ZooKeeper" or "Collie"
	addr string
}

// startInteropServers starts a ZooKeeper 3.8 server, with TTL nodes
// enabled, and a Collie server, for clients that run in other processes.
// Collie's sessions may be as long as ZooKeeper's by default, up to 40 s: a
// client process starved of CPU on a loaded machine must not lose its
// session, as it would with collietest's 2 s maximum.
func startInteropServers(t *testing.T) (zookeeper, collie interopServer) {
	t.Helper()
	ref := zkref.Start(t, zkref.WithExtendedTypes())
	col := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
		c.MaxSessionTimeout = 40 * time.Second
	}))
	return interopServer{"ZooKeeper", ref.Addr()}, interopServer{"Collie", col.Addr()}
}

// dialInterop connects a Go client to addr, waits for its session and
// closes it when t ends.
func dialInterop(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c := dial(t, addr)
	t.Cleanup(c.Close)
	return c
}

// interopProcess is a client program run by a test: its standard output and
// error go, interleaved as written, into one transcript.
type interopProcess struct {
	stdin *os.File // nil unless started withStdin
	out   *interopTranscript
	done  chan struct{} // closed when the process has exited and out is complete
	err   error         // the exit status; read only after done is closed
}

// startInteropProcess runs name with args until it exits or until ctx ends
// or t ends, which kill it with all its children: zkCli.sh runs java as a
// child of bash. With withStdin the test writes the process's standard input
// through p.stdin; otherwise the process reads nothing.
func startInteropProcess(ctx context.Context, t *testing.T, withStdin bool, env []string, name string, args ...string) *interopProcess {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	p := &interopProcess{out: newInteropTranscript(), done: make(chan struct{})}
	// One writer for both streams: the child gets a single pipe, so lines
	// keep the order in which it wrote them.
	cmd.Stdout, cmd.Stderr = p.out, p.out
	var childStdin *os.File
	if withStdin {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatalf("stdin pipe for %s: %v", name, err)
		}
		cmd.Stdin, childStdin, p.stdin = r, r, w
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	if childStdin != nil {
		childStdin.Close()
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.closeStdin()
		// The error only says the process group has already gone.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
	return p
}

// closeStdin closes the process's standard input; calling it again does
// nothing.
func (p *interopProcess) closeStdin() {
	if p.stdin != nil {
		p.stdin.Close()
	}
}

// wait waits until the process has exited and returns its exit code, or -1
// with the reason when it did not exit by itself.
func (p *interopProcess) wait() (int, error) {
	<-p.done
	var exit *exec.ExitError
	switch {
	case p.err == nil:
		return 0, nil
	case errors.As(p.err, &exit) && exit.Exited():
		return exit.ExitCode(), nil
	default:
		return -1, p.err
	}
}

// interopTranscript collects the lines written to it and lets a test wait
// for a line. It is safe for concurrent use.
type interopTranscript struct {
	mu      sync.Mutex
	partial []byte   // the start of a line not yet ended by '\n'
	lines   []string // complete lines, without '\n'
	grew    chan struct{}
}

func newInteropTranscript() *interopTranscript {
	return &interopTranscript{grew: make(chan struct{})}
}

func (tr *interopTranscript) Write(p []byte) (int, error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.partial = append(tr.partial, p...)
	added := false
	for {
		i := bytes.IndexByte(tr.partial, '\n')
		if i < 0 {
			break
		}
		tr.lines = append(tr.lines, string(tr.partial[:i]))
		tr.partial = tr.partial[i+1:]
		added = true
	}
	if added {
		close(tr.grew)
		tr.grew = make(chan struct{})
	}
	return len(p), nil
}

// Lines returns the complete lines written so far, and the unfinished last
// one if there is one.
func (tr *interopTranscript) Lines() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	lines := slices.Clone(tr.lines)
	if len(tr.partial) > 0 {
		lines = append(lines, string(tr.partial))
	}
	return lines
}

func (tr *interopTranscript) String() string {
	return strings.Join(tr.Lines(), "\n")
}

// waitFor waits until a line at index from or later satisfies match and
// returns that line's index. It fails when ctx ends or done is closed
// first; done is the process's exit.
func (tr *interopTranscript) waitFor(ctx context.Context, done <-chan struct{}, from int, match func(string) bool) (int, error) {
	for {
		tr.mu.Lock()
		for i := from; i < len(tr.lines); i++ {
			if match(tr.lines[i]) {
				tr.mu.Unlock()
				return i, nil
			}
		}
		from = max(from, len(tr.lines))
		grew := tr.grew
		tr.mu.Unlock()
		select {
		case <-grew:
		case <-done:
			// The last lines may have arrived together with the exit.
			select {
			case <-grew:
				continue
			default:
			}
			return -1, errors.New("the client exited")
		case <-ctx.Done():
			return -1, ctx.Err()
		}
	}
}

// interopRenamer replaces values that differ between servers by design,
// such as zxids and session ids, with names in the order the values first
// appear. Two outputs then compare equal exactly when they agree on which of
// those values are equal.
type interopRenamer struct {
	kind  string
	names map[string]string
}

func newInteropRenamer(kind string) *interopRenamer {
	return &interopRenamer{kind: kind, names: map[string]string{}}
}

func (r *interopRenamer) name(value string) string {
	n, ok := r.names[value]
	if !ok {
		n = fmt.Sprintf("<%s %d>", r.kind, len(r.names)+1)
		r.names[value] = n
	}
	return n
}

// compareClientOutput reports through t.Errorf when a client printed got
// where want was expected for what; the names say where each came from,
// such as "ZooKeeper" and "Collie".
func compareClientOutput(t *testing.T, what, wantName string, want []string, gotName string, got []string) {
	t.Helper()
	if !slices.Equal(want, got) {
		t.Errorf("%s: output differs\n%s:\n\t%s\n%s:\n\t%s", what,
			wantName, strings.Join(want, "\n\t"), gotName, strings.Join(got, "\n\t"))
	}
}
