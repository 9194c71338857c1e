package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
)

// runMainEnv, set to 1 in its environment, makes this test binary run
// main instead of the tests, so that a test can start it as the collie
// binary and see its exit status and output.
const runMainEnv = "COLLIE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// collieCommand prepares the collie binary to run with args in dir.
func collieCommand(ctx context.Context, t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	return cmd
}

// writeZooCfg writes a zoo.cfg for a standalone server on a free local
// port, with data in dir/data, followed by extra, and returns the port.
func writeZooCfg(t *testing.T, dir, extra string) int {
	t.Helper()
	port := collietest.FreePort(t)
	cfg := fmt.Sprintf("tickTime=2000\ndataDir=data\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n%s", port, extra)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return port
}

// An operator who asked for TLS must not get a plaintext server: the
// server stops before it listens or touches its data directory, naming the
// key and its line.
func TestServerRefusesKeyAskingForTLS(t *testing.T) {
	dir := t.TempDir()
	writeZooCfg(t, dir, "ssl.crl=true\n")
	// The deadline only ends a server that started by mistake.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := collieCommand(ctx, t, dir, "server", "-c", "zoo.cfg").CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("collie server still running after a minute; output:\n%s", out)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("collie server -c zoo.cfg: %v, want a non-zero exit status", err)
	}
	for _, want := range []string{
		"collie server: config: zoo.cfg: Collie does not implement yet",
		"line 6: ssl.crl=true asks for a TLS setting Collie does not implement",
		"remove these keys",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused server created its data directory (%v)", err)
	}
}

// A switch left at its "off" value asks for nothing: the server starts,
// warns about the key it ignores, and exits cleanly when told to stop.
func TestServerStartsWithTLSSwitchedOff(t *testing.T) {
	dir := t.TempDir()
	writeZooCfg(t, dir, "ssl.crl=false\n")
	// The deadline only ends a server that hangs.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := collieCommand(ctx, t, dir, "server", "-c", "zoo.cfg")
	lines, out := startServing(t, cmd)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for line := range lines {
		out.WriteString(line + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("collie server after SIGTERM: %v (deadline: %v), want exit status 0; output:\n%s", err, ctx.Err(), out)
	}
	if !strings.Contains(out.String(), `msg="ignoring unknown configuration key" key=ssl.crl`) {
		t.Errorf("no warning about ssl.crl; output:\n%s", out.String())
	}
}

// startServing starts a collie server command and waits until it logs that
// it serves clients. It returns the rest of its log lines, which the
// caller must drain, and a copy of all of them.
func startServing(t *testing.T, cmd *exec.Cmd) (<-chan string, *strings.Builder) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	out := &strings.Builder{}
	for line := range lines {
		out.WriteString(line + "\n")
		if strings.Contains(line, `msg="serving clients"`) {
			return lines, out
		}
	}
	err = cmd.Wait()
	t.Fatalf("%s exited before serving clients (%v); output:\n%s", cmd, err, out)
	return nil, nil
}

// Started by systemd as a Type=notify service, the server says READY=1
// once it serves clients and STOPPING=1 when told to stop.
func TestServerNotifiesSystemd(t *testing.T) {
	dir := t.TempDir()
	port := writeZooCfg(t, dir, "")
	socket := filepath.Join(dir, "notify")
	systemd, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer systemd.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := collieCommand(ctx, t, dir, "server", "-c", "zoo.cfg")
	cmd.Env = append(cmd.Env, "NOTIFY_SOCKET="+socket)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	receive := func() string {
		systemd.SetReadDeadline(time.Now().Add(time.Minute))
		buf := make([]byte, 4096)
		n, err := systemd.Read(buf)
		if err != nil {
			t.Errorf("waiting for the server's notification: %v", err)
		}
		return string(buf[:n])
	}
	if got := receive(); got != "READY=1\nSTATUS=serving clients" {
		t.Errorf("first notification %q, want READY=1 and a status", got)
	}
	// Ready means listening: a client gets an answer at once.
	if got := fourLetterWord(t, "127.0.0.1:"+strconv.Itoa(port), "srvr"); !strings.Contains(got, "Mode: standalone") {
		t.Errorf("srvr after READY=1: %q", got)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := receive(); got != "STOPPING=1" {
		t.Errorf("notification after SIGTERM %q, want STOPPING=1", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("collie server after SIGTERM: %v", err)
	}
}
