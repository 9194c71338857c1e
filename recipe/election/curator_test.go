package election_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/recipe/election"
)

// peerProgram is a Curator participant driven line by line; see its class
// comment for the commands.
const peerProgram = "testdata/ElectionPeer.java"

// peerTimeout bounds the whole life of the peer: a JVM that compiles the
// program from source, then every command.
const peerTimeout = 90 * time.Second

// peerLog4j keeps Curator's and ZooKeeper's log to warnings, on standard
// error, which the test shows when it fails.
const peerLog4j = "log4j.rootLogger=WARN, E\n" +
	"log4j.appender.E=org.apache.log4j.ConsoleAppender\n" +
	"log4j.appender.E.Target=System.err\n" +
	"log4j.appender.E.layout=org.apache.log4j.PatternLayout\n" +
	"log4j.appender.E.layout.ConversionPattern=%d{HH:mm:ss,SSS} %-5p %c{1} - %m%n\n"

// TestCuratorInterop runs Apache Curator 5.4's LeaderLatch and
// LeaderSelector against a Latch and a Selector on the same paths of a
// Collie server: one leader between them at every step, leadership moving
// from one to the other as each gives it up, and each listing the other
// among the participants.
func TestCuratorInterop(t *testing.T) {
	java, err := zkref.Java()
	zkref.Require(t, err)
	classpath, err := zkref.CuratorClasspath()
	zkref.Require(t, err)
	addr := collietest.Start(t).Addr()
	peer := startPeer(t, java, classpath, addr)
	t.Run("latch", func(t *testing.T) { testCuratorLatch(newEnv(t, addr), peer) })
	t.Run("selector", func(t *testing.T) { testCuratorSelector(newEnv(t, addr), peer) })
}

// testCuratorLatch hands leadership from a Curator LeaderLatch to a Latch
// and back.
func testCuratorLatch(e *env, peer *curatorPeer) {
	path := "/interop/latch"
	peer.expect(e, "latch "+path+" curator", "ok")
	peer.expect(e, "await", "leader")

	l := e.startLatch(e.client(client.Config{}), path, "collie")
	e.agree(peer, "latch", l.Participants, "curator*,collie")
	if l.IsLeader() {
		e.Error("Latch leads beside Curator's leader")
	}

	peer.expect(e, "close", "ok")
	term := e.await(l)
	peer.expect(e, "latch "+path+" curator-again", "ok")
	e.agree(peer, "latch", l.Participants, "collie*,curator-again")
	peer.expect(e, "leader latch", "false")

	e.close(l)
	if open(term.Lost()) {
		e.Error("term not ended by Close")
	}
	peer.expect(e, "await", "leader")
	e.agree(peer, "latch", l.Participants, "curator-again*")
	peer.expect(e, "close", "ok")
	e.until("every node to go", func() bool { return len(e.nodes(path)) == 0 })
}

// testCuratorSelector hands leadership from a Curator LeaderSelector to a
// Selector and back.
func testCuratorSelector(e *env, peer *curatorPeer) {
	path := "/interop/selector"
	peer.expect(e, "select "+path+" curator", "ok")
	peer.expect(e, "selected", "selected")

	s := election.NewSelector(e.client(client.Config{}), path, "collie")
	leading := make(chan *election.Term, 1)
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Lead(e.ctx, func(ctx context.Context, term *election.Term) error {
			leading <- term
			<-release
			return nil
		})
	}()
	e.agree(peer, "selector", s.Participants, "curator*,collie")
	if s.IsLeader() {
		e.Error("Selector leads beside Curator's leader")
	}

	peer.expect(e, "release", "ok")
	if term := next(e, leading); !curatorLockNode.MatchString(term.Node()) {
		e.Errorf("node %s is not named as Curator names it", term.Node())
	}
	peer.expect(e, "requeue", "ok")
	e.agree(peer, "selector", s.Participants, "collie*,curator")
	peer.expect(e, "leader selector", "false")

	close(release)
	if err := next(e, done); err != nil {
		e.Fatal(err)
	}
	peer.expect(e, "selected", "selected")
	peer.expect(e, "leader selector", "true")
	e.agree(peer, "selector", s.Participants, "curator*")
	peer.expect(e, "release", "ok")
	e.until("every node to go", func() bool { return len(e.nodes(path)) == 0 })
}

// agree waits until list describes the participants as want does (ids in
// line order, the leader's marked with a star), then checks that the
// peer's recipe of that kind lists them so too.
func (e *env) agree(peer *curatorPeer, kind string, list func(context.Context) ([]election.Participant, error), want string) {
	e.Helper()
	var got string
	e.until("participants "+want, func() bool {
		all, err := list(e.ctx)
		if err != nil {
			e.Fatal(err)
		}
		var ids []string
		for _, p := range all {
			if p.Leader {
				p.ID += "*"
			}
			ids = append(ids, p.ID)
		}
		got = strings.Join(ids, ",")
		return got == want
	})
	peer.expect(e, "participants "+kind, want)
}

// curatorPeer is a running peerProgram.
type curatorPeer struct {
	stdin   io.WriteCloser
	answers chan string // closed when the program's output ends
	stderr  string      // the file that collects the program's log
}

// startPeer starts peerProgram against addr; it quits when the test ends.
func startPeer(t *testing.T, java, classpath, addr string) *curatorPeer {
	t.Helper()
	program, err := filepath.Abs(peerProgram)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log4j := filepath.Join(dir, "log4j.properties")
	if err := os.WriteFile(log4j, []byte(peerLog4j), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &curatorPeer{answers: make(chan string, 1), stderr: filepath.Join(dir, "stderr")}
	logFile, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
	cmd := exec.CommandContext(ctx, java,
		// The program lives for seconds: start fast rather than run fast.
		"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData",
		"-Djava.io.tmpdir="+dir,
		"-Dlog4j.configuration=file:"+log4j,
		"-cp", classpath,
		// Source-file mode: java compiles the program in memory first.
		program, addr)
	cmd.Dir = dir
	cmd.Stderr = logFile
	cmd.WaitDelay = 5 * time.Second
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer close(p.answers)
		for lines := bufio.NewScanner(stdout); lines.Scan(); {
			p.answers <- lines.Text()
		}
	}()
	t.Cleanup(func() {
		defer cancel()
		fmt.Fprintln(p.stdin, "quit")
		p.stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s: %v\n%s", peerProgram, err, p.log())
		}
	})
	return p
}

// expect sends command and checks the answer.
func (p *curatorPeer) expect(e *env, command, want string) {
	e.Helper()
	if _, err := fmt.Fprintln(p.stdin, command); err != nil {
		e.Fatalf("%s: %v\n%s", command, err, p.log())
	}
	timer := time.NewTimer(testTimeout + 5*time.Second) // the program's own waits take up to testTimeout
	defer timer.Stop()
	select {
	case got, ok := <-p.answers:
		switch {
		case !ok:
			e.Fatalf("%s: the program exited\n%s", command, p.log())
		case got != want:
			e.Fatalf("%s answered %q, want %q\n%s", command, got, want, p.log())
		}
	case <-timer.C:
		e.Fatalf("%s: no answer\n%s", command, p.log())
	}
}

// log returns what the program wrote on standard error so far.
func (p *curatorPeer) log() string {
	out, err := os.ReadFile(p.stderr)
	if err != nil {
		return err.Error()
	}
	return "standard error of " + peerProgram + ":\n" + string(out)
}
