package recipetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkref"
)

// peerLifetime bounds the whole life of a program: for Java, a JVM that
// compiles the program from source, then everything it does.
const peerLifetime = 90 * time.Second

// log4j keeps Curator's and ZooKeeper's log to warnings, on standard error,
// which a failing test shows.
const log4j = "log4j.rootLogger=WARN, E\n" +
	"log4j.appender.E=org.apache.log4j.ConsoleAppender\n" +
	"log4j.appender.E.Target=System.err\n" +
	"log4j.appender.E.layout=org.apache.log4j.PatternLayout\n" +
	"log4j.appender.E.layout.ConversionPattern=%d{HH:mm:ss,SSS} %-5p %c{1} - %m%n\n"

// Java is a Java program of the test's testdata directory, run in
// source-file mode (java compiles it in memory first) with Apache Curator
// 5.4 and ZooKeeper's client on its class path. Run and Start skip the
// test when Java or Curator is not installed (fail it when CI=true).
type Java struct {
	// Program is the source file's name under testdata.
	Program string
	// Args are the program's arguments.
	Args []string
	// FullJIT runs the JVM with its default compilers and collector, as a
	// production client runs; by default it starts fast instead, which
	// suits a program that lives for seconds.
	FullJIT bool
}

// Run starts the program; wait waits for it to end, fails the test if it
// failed, and returns the lines it printed.
func (j Java) Run(t testing.TB) (wait func() []string) {
	t.Helper()
	cmd, dir := j.command(t)
	var stdout bytes.Buffer
	stderr := createStderr(t, dir)
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		t.Helper()
		err := cmd.Wait()
		stderr.Close()
		if err != nil {
			t.Fatalf("%s: %v; it printed:\n%s%s", j.Program, err, stdout.Bytes(), readLog(stderr.Name()))
		}
		return strings.Split(strings.TrimSpace(stdout.String()), "\n")
	}
}

// Peer is a running Java or Python program driven line by line: every command written
// to its standard input is answered with one line on its standard output.
// It must quit on the command "quit".
type Peer struct {
	program string
	stdin   io.WriteCloser
	answers chan string // closed when the program's output ends
	log     string      // the file that collects its standard error
}

// Start starts the program as a Peer, which quits when the test ends.
func (j Java) Start(t testing.TB) *Peer {
	t.Helper()
	cmd, dir := j.command(t)
	return startPeer(t, cmd, dir, j.Program)
}

// Python is a Python program of the test's testdata directory, run by
// Debian's python3, the one with Kazoo. Start skips the test when Kazoo
// is not installed (fails it when CI=true).
type Python struct {
	// Program is the source file's name under testdata.
	Program string
	// Args are the program's arguments.
	Args []string
}

// Start starts the program as a Peer, which quits when the test ends.
func (p Python) Start(t testing.TB) *Peer {
	t.Helper()
	python, err := zkref.Python()
	zkref.Require(t, err)
	program, err := filepath.Abs(filepath.Join("testdata", p.Program))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), peerLifetime)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, python, slices.Concat([]string{program}, p.Args)...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	cmd.Dir = t.TempDir()
	cmd.WaitDelay = 5 * time.Second
	return startPeer(t, cmd, cmd.Dir, p.Program)
}

// startPeer starts cmd, whose standard error goes to a file in dir, as the
// Peer that runs program.
func startPeer(t testing.TB, cmd *exec.Cmd, dir, program string) *Peer {
	t.Helper()
	stderr := createStderr(t, dir)
	defer stderr.Close() // the child has its own descriptor
	cmd.Stderr = stderr
	p := &Peer{program: program, answers: make(chan string, 1), log: stderr.Name()}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.answers)
		for lines := bufio.NewScanner(stdout); lines.Scan(); {
			p.answers <- lines.Text()
		}
	}()
	t.Cleanup(func() {
		fmt.Fprintln(p.stdin, "quit")
		p.stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s: %v\n%s", p.program, err, readLog(p.log))
		}
	})
	return p
}

// Ask sends command and returns the answer, failing the test when none
// comes within Timeout (and a little more, for the program's own waits of
// up to Timeout).
func (p *Peer) Ask(t testing.TB, command string) string {
	t.Helper()
	if _, err := fmt.Fprintln(p.stdin, command); err != nil {
		t.Fatalf("%s: %s: %v\n%s", p.program, command, err, readLog(p.log))
	}
	timer := time.NewTimer(Timeout + 5*time.Second)
	defer timer.Stop()
	select {
	case got, ok := <-p.answers:
		if !ok {
			t.Fatalf("%s: %s: the program exited\n%s", p.program, command, readLog(p.log))
		}
		return got
	case <-timer.C:
		t.Fatalf("%s: %s: no answer\n%s", p.program, command, readLog(p.log))
		panic("unreachable")
	}
}

// Expect sends command and fails the test unless the answer is want.
func (p *Peer) Expect(t testing.TB, command, want string) {
	t.Helper()
	if got := p.Ask(t, command); got != want {
		t.Fatalf("%s: %s answered %q, want %q\n%s", p.program, command, got, want, readLog(p.log))
	}
}

// command returns the java command that runs the program, and its
// working directory, a fresh one for the test.
func (j Java) command(t testing.TB) (*exec.Cmd, string) {
	t.Helper()
	java, err := zkref.Java()
	zkref.Require(t, err)
	classpath, err := zkref.CuratorClasspath()
	zkref.Require(t, err)
	program, err := filepath.Abs(filepath.Join("testdata", j.Program))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "log4j.properties")
	if err := os.WriteFile(config, []byte(log4j), 0o644); err != nil {
		t.Fatal(err)
	}
	jvm := []string{"-XX:-UsePerfData"}
	if !j.FullJIT {
		jvm = append(jvm, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
	}
	jvm = append(jvm, "-Djava.io.tmpdir="+dir, "-Dlog4j.configuration=file:"+config, "-cp", classpath, program)
	ctx, cancel := context.WithTimeout(context.Background(), peerLifetime)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, java, slices.Concat(jvm, j.Args)...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	return cmd, dir
}

// createStderr creates the file that collects a program's standard error.
func createStderr(t testing.TB, dir string) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// readLog returns what a program wrote on standard error, for messages.
func readLog(path string) string {
	out, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return "its standard error:\n" + string(out)
}
