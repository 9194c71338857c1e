//go:build unix

package shell

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/collie-io/collie/collietest"
)

// TestTerminal drives the shell through a pseudo-terminal as a person
// would: the prompt, a command, the up arrow recalling it, tab completion
// of a command and of a path, Ctrl-D to leave.
func TestTerminal(t *testing.T) {
	srv := collietest.Start(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	// In the poller, a read of either end ends when the file is closed.
	ptmx, tty = pollable(t, ptmx), pollable(t, tty)
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 200}); err != nil {
		t.Fatal(err)
	}
	screen := newTranscript()
	var copying sync.WaitGroup
	copying.Go(func() { _, _ = io.Copy(screen, ptmx) }) // ends when ptmx closes
	done := make(chan int, 1)
	sh := New(Config{Server: srv.Addr(), Stdout: tty})
	go func() { done <- sh.Run(t.Context(), tty) }()
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
		copying.Wait()
		select {
		case <-done:
		case <-time.After(waitTimeout):
			t.Errorf("the shell still runs %v after its terminal closed", waitTimeout)
		}
	})

	typeKeys := func(keys string) {
		t.Helper()
		if _, err := io.WriteString(ptmx, keys); err != nil {
			t.Fatalf("type %q: %v", keys, err)
		}
	}
	// waitPrompt waits for the prompt of command n.
	waitPrompt := func(n int) {
		t.Helper()
		prompt := fmt.Sprintf("[zk: %s(CONNECTED) %d] ", srv.Addr(), n)
		screen.waitFor(t, "prompt "+prompt, func(text string) bool { return strings.Contains(text, prompt) })
	}
	waitCount := func(what string, n int) {
		t.Helper()
		screen.waitFor(t, fmt.Sprintf("%q %d times", what, n), func(text string) bool { return strings.Count(text, what) >= n })
	}

	waitPrompt(0)
	typeKeys("create /alpha one\r")
	waitPrompt(1)
	waitCount("Created /alpha", 1)

	typeKeys("get /alpha\r")
	waitPrompt(2)
	waitCount("\none\r", 1)

	// The up arrow brings the last line back; Enter runs it again.
	typeKeys("\x1b[A")
	waitCount("get /alpha", 2)
	typeKeys("\r")
	waitPrompt(3)
	waitCount("\none\r", 2)

	// Tab after "getA" lists the two commands it may start; after "getAc"
	// it completes getAcl, and after "/al" the path.
	typeKeys("getA\t")
	waitCount("getAcl  getAllChildrenNumber", 1)
	typeKeys("c\t/al\t\r")
	waitPrompt(4)
	waitCount("'world,'anyone", 1)

	typeKeys("\x04") // Ctrl-D on an empty line
	select {
	case status := <-done:
		if status != 0 {
			t.Errorf("exit status %d, want 0", status)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("the shell did not end at Ctrl-D; screen:\n%q", screen)
	}
	done <- 0 // for the cleanup
	if history := sh.history[3]; history != "getAcl /alpha" {
		t.Errorf("the completed line was %q, want %q", history, "getAcl /alpha")
	}
}

// pollable returns f, a terminal, as a file in the runtime's poller.
func pollable(t *testing.T, f *os.File) *os.File {
	t.Helper()
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fd), f.Name())
}
