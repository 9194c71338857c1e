package shell

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitTimeout bounds every wait of these tests for output, on a loaded
// two-core machine.
const waitTimeout = 30 * time.Second

// transcript collects what a shell or a process prints, and wakes whoever
// waits for some of it.
type transcript struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // has a value after a write nobody has seen yet
}

func newTranscript() *transcript {
	return &transcript{changed: make(chan struct{}, 1)}
}

func (tr *transcript) Write(p []byte) (int, error) {
	tr.mu.Lock()
	n, err := tr.buf.Write(p)
	tr.mu.Unlock()
	select {
	case tr.changed <- struct{}{}:
	default:
	}
	return n, err
}

func (tr *transcript) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.buf.String()
}

func (tr *transcript) Lines() []string {
	s := strings.TrimSuffix(tr.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// waitFor waits until cond holds for the text printed so far, and fails t
// when it does not within waitTimeout.
func (tr *transcript) waitFor(t testing.TB, what string, cond func(text string) bool) {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for !cond(tr.String()) {
		select {
		case <-tr.changed:
		case <-deadline.C:
			t.Fatalf("no %s after %v; output:\n%s", what, waitTimeout, tr)
		}
	}
}

// shellSession is a Shell reading commands from a pipe, as from a script
// piped into `collie cli`, with both outputs in one transcript.
type shellSession struct {
	t    testing.TB
	in   *io.PipeWriter
	out  *transcript
	done chan int // the exit status of Run
}

// startShell runs a shell for cfg, its standard output going to the
// session's transcript, and its standard error too unless cfg says where.
func startShell(t testing.TB, cfg Config) *shellSession {
	t.Helper()
	r, w := io.Pipe()
	s := &shellSession{t: t, in: w, out: newTranscript(), done: make(chan int, 1)}
	cfg.Stdout = s.out
	if cfg.Stderr == nil {
		cfg.Stderr = s.out
	}
	sh := New(cfg)
	go func() { s.done <- sh.Run(context.Background(), r) }()
	t.Cleanup(func() {
		w.Close()
		select {
		case <-s.done:
		case <-time.After(waitTimeout):
			t.Errorf("shell still running %v after its input ended", waitTimeout)
		}
	})
	return s
}

// send writes command lines; it returns once the shell has read them.
func (s *shellSession) send(lines ...string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, strings.Join(lines, "\n")+"\n"); err != nil {
		s.t.Fatalf("write to the shell: %v", err)
	}
}

// end closes the shell's input and returns its exit status.
func (s *shellSession) end() int {
	s.t.Helper()
	s.in.Close()
	select {
	case status := <-s.done:
		s.done <- status // for the cleanup
		return status
	case <-time.After(waitTimeout):
		s.t.Fatalf("shell still running %v after its input ended; output:\n%s", waitTimeout, s.out)
		return -1
	}
}

// count returns how many lines of the transcript are line.
func count(text, line string) int {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if l == line {
			n++
		}
	}
	return n
}
