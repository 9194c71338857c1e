//go:build linux

package zkcompat

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/internal/zkref"
)

// The passwords of the JAAS files below: distinctive, so that a test can
// tell they never reach a log.
const (
	quorumPassword = "q-secret-7f3a"
	wrongPassword  = "q-wrong-91c2"
)

// quorumJAAS is the JAAS file of ZooKeeper's documentation for SASL
// between servers, with the password the QuorumLearner section gives.
func quorumJAAS(learnerPassword string) string {
	return fmt.Sprintf(`QuorumServer {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_test=%q;
};
QuorumLearner {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       username="test"
       password=%q;
};
`, quorumPassword, learnerPassword)
}

// saslEnsemble prepares three servers on 127.0.0.1, each with a JAAS file
// of the quorum sections beside its zoo.cfg, and the zoo.cfg lines extra
// (the same on every server); it starts none of them.
func saslEnsemble(t *testing.T, extra ...string) (*processEnsemble, []*syncBuffer) {
	t.Helper()
	e := ensembleOf(t, 3, func(self int, peer, election []int) []string {
		var lines []string
		for i := range 3 {
			lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i+1, peer[i], election[i]))
		}
		return lines
	}, func(int) []string {
		return append([]string{"java.security.auth.login.config=jaas.conf"}, extra...)
	})
	for i := range 3 {
		writeJAAS(t, e.dirs[i], quorumPassword)
	}
	return e, make([]*syncBuffer, 3)
}

func writeJAAS(t *testing.T, dir, learnerPassword string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "jaas.conf"), []byte(quorumJAAS(learnerPassword)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startLogged starts server i with its log kept in logs[i], after that of
// its earlier runs (and shown with the test's output).
func startLogged(t *testing.T, e *processEnsemble, logs []*syncBuffer, i int) {
	t.Helper()
	if logs[i] == nil {
		logs[i] = &syncBuffer{}
	}
	e.procs[i] = startCollie(t, e.dirs[i], io.MultiWriter(logs[i], t.Output()), "server", "-c", "zoo.cfg", "-log-level", "warn")
}

// waitMember waits until server i serves as a member of the ensemble: as
// its leader or a follower.
func waitMember(t *testing.T, e *processEnsemble, i int) {
	t.Helper()
	e.procs[i].waitServing(t, e.addrs[i], "srvr", "Zookeeper version: ")
	eventually(t, fmt.Sprintf("server %d to lead or follow", i+1), func() bool {
		m := modes(t, e.addrs[i:i+1])[0]
		return m == "leader" || m == "follower"
	})
}

// syncedChildren returns the children of path on the server at addr once
// it has caught up with what was committed before.
func syncedChildren(t *testing.T, addr, path string) []string {
	t.Helper()
	s := connectSession(t, addr, 4*time.Second)
	defer s.Close()
	if _, err := s.Sync(path); err != nil {
		t.Fatalf("sync %s on %s: %v", path, addr, err)
	}
	kids, _, err := s.Children(path)
	if err != nil {
		t.Fatalf("children of %s on %s: %v", path, addr, err)
	}
	return kids
}

// checkNoPassword fails if a log shows a password of the JAAS files.
func checkNoPassword(t *testing.T, logs []*syncBuffer) {
	t.Helper()
	for i, l := range logs {
		if l == nil {
			continue
		}
		if s := l.String(); strings.Contains(s, quorumPassword) || strings.Contains(s, wrongPassword) {
			t.Errorf("server %d's log shows a password:\n%s", i+1, s)
		}
	}
}

// anyLogSays reports whether the log of one of servers says s.
func anyLogSays(logs []*syncBuffer, s string, servers ...int) bool {
	for _, i := range servers {
		if logs[i] != nil && strings.Contains(logs[i].String(), s) {
			return true
		}
	}
	return false
}

// notServing checks that server i does not serve: it knows no leader.
func notServing(t *testing.T, e *processEnsemble, i int) {
	t.Helper()
	if out, err := fourLetterWord(e.addrs[i], "srvr"); err == nil && strings.HasPrefix(out, "Zookeeper version: ") {
		t.Errorf("server %d serves although it cannot authenticate:\n%s", i+1, out)
	}
}

// TestQuorumSASLRequired: three servers that require SASL between them,
// from ZooKeeper's zoo.cfg keys and JAAS file, serve writes. A server
// whose QuorumLearner password is wrong cannot join: the others refuse
// it, saying why, and serve on without it, and it serves no client; once
// its password is right it joins and has every write. So does a server
// that runs without SASL between servers: the others refuse it.
func TestQuorumSASLRequired(t *testing.T) {
	e, logs := saslEnsemble(t, "quorum.auth.enableSasl=true", "quorum.auth.learnerRequireSasl=true", "quorum.auth.serverRequireSasl=true")
	for i := range 3 {
		startLogged(t, e, logs, i)
	}
	for i := range 3 {
		waitMember(t, e, i)
	}
	writeNode(t, e.addrs[0], "/formed", "yes")

	// Server 3 with the wrong password.
	e.procs[2].stop(t)
	writeJAAS(t, e.dirs[2], wrongPassword)
	startLogged(t, e, logs, 2)
	eventually(t, "the others to refuse server 3, and server 3 to say so", func() bool {
		return anyLogSays(logs, "refused the SASL authentication of server 3", 0, 1) &&
			anyLogSays(logs, "cannot authenticate to peer", 2) && anyLogSays(logs, "QuorumLearner section", 2)
	})
	notServing(t, e, 2)
	writeNode(t, e.addrs[1], "/without3", "yes")
	if got := syncedChildren(t, e.addrs[0], "/"); !slices.Contains(got, "without3") {
		t.Fatalf("server 1 lists %v without /without3", got)
	}
	notServing(t, e, 2)

	// Set right, it joins and has the write made without it.
	e.procs[2].stop(t)
	writeJAAS(t, e.dirs[2], quorumPassword)
	startLogged(t, e, logs, 2)
	waitMember(t, e, 2)
	if got := syncedChildren(t, e.addrs[2], "/"); !slices.Contains(got, "without3") {
		t.Fatalf("server 3, rejoined, lists %v without /without3", got)
	}

	// Without SASL between servers, it is refused again.
	e.procs[2].stop(t)
	appendConfig(t, e.dirs[2], "quorum.auth.serverRequireSasl=false", "quorum.auth.learnerRequireSasl=false", "quorum.auth.enableSasl=false")
	startLogged(t, e, logs, 2)
	eventually(t, "the others to refuse server 3 without SASL", func() bool {
		return anyLogSays(logs, "requires the servers that connect to it to authenticate (quorum.auth.serverRequireSasl=true), and server 3 did not", 0, 1) &&
			anyLogSays(logs, "does not authenticate its peers", 0, 1)
	})
	notServing(t, e, 2)
	checkNoPassword(t, logs)
}

// TestQuorumSASLRollingEnable turns SASL between servers on in
// ZooKeeper's three steps, restarting the servers one at a time at each:
// quorum.auth.enableSasl=true, then quorum.auth.learnerRequireSasl=true,
// then quorum.auth.serverRequireSasl=true. A client writes all along;
// writes go on through every restart, and every write acknowledged is on
// every server at the end.
func TestQuorumSASLRollingEnable(t *testing.T) {
	e, logs := saslEnsemble(t)
	for i := range 3 {
		startLogged(t, e, logs, i)
	}
	for i := range 3 {
		waitMember(t, e, i)
	}
	writeNode(t, e.addrs[0], "/roll", "")

	c, _, err := zk.Connect(e.addrs, 6*time.Second, zk.WithLogInfo(false), zk.WithLogger(discardZKLog{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var (
		mu    sync.Mutex
		acked []string
		stop  = make(chan struct{})
		done  = make(chan struct{})
	)
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			// A write that fails (its server restarting) may or may not
			// have happened: only the acknowledged ones are checked.
			if p, err := c.Create("/roll/w-", []byte("x"), zk.FlagSequence, openACL); err == nil {
				mu.Lock()
				acked = append(acked, strings.TrimPrefix(p, "/roll/"))
				mu.Unlock()
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()

	for _, step := range []string{"quorum.auth.enableSasl=true", "quorum.auth.learnerRequireSasl=true", "quorum.auth.serverRequireSasl=true"} {
		for i := range 3 {
			e.procs[i].stop(t)
			appendConfig(t, e.dirs[i], step)
			startLogged(t, e, logs, i)
			waitMember(t, e, i)
			before := count()
			eventually(t, fmt.Sprintf("writes after server %d restarted with %s", i+1, step), func() bool { return count() > before+10 })
		}
	}
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	for i := range 3 {
		got := syncedChildren(t, e.addrs[i], "/roll")
		var lost []string
		for _, w := range acked {
			if !slices.Contains(got, w) {
				lost = append(lost, w)
			}
		}
		if len(lost) > 0 {
			t.Errorf("server %d lacks %d of %d acknowledged writes: %v", i+1, len(lost), len(acked), lost)
		}
	}
	t.Logf("%d writes acknowledged across 9 restarts", len(acked))
	// At each step, every server can talk with those of the step before.
	for _, refusal := range []string{"peer connection refused", "cannot authenticate to peer"} {
		if anyLogSays(logs, refusal, 0, 1, 2) {
			t.Errorf("a server was refused during the rolling enable: a log says %q", refusal)
		}
	}
	checkNoPassword(t, logs)
}

// TestQuorumSASLZooKeeper runs ZooKeeper 3.8 with the quorum.auth lines
// and the JAAS file the tests above give Collie: its servers authenticate
// to each other with them and serve, so these are the files of a
// ZooKeeper ensemble that moves to Collie.
func TestQuorumSASLZooKeeper(t *testing.T) {
	jaas := filepath.Join(t.TempDir(), "jaas.conf")
	if err := os.WriteFile(jaas, []byte(quorumJAAS(quorumPassword)), 0o600); err != nil {
		t.Fatal(err)
	}
	e := zkref.StartEnsemble(t, 3, zkref.WithTickTime(200*time.Millisecond),
		zkref.WithConfig("quorum.auth.enableSasl", "true"),
		zkref.WithConfig("quorum.auth.learnerRequireSasl", "true"),
		zkref.WithConfig("quorum.auth.serverRequireSasl", "true"),
		zkref.WithJVMArgs("-Djava.security.auth.login.config="+jaas))
	members := e.Members()
	writeNode(t, members[0].Addr(), "/formed", "yes")
	if got := syncedChildren(t, members[2].Addr(), "/"); !slices.Contains(got, "formed") {
		t.Fatalf("ZooKeeper's third server lists %v without /formed", got)
	}
	authenticated := 0
	for _, m := range members {
		log, err := os.ReadFile(m.LogPath())
		if err != nil {
			t.Fatal(err)
		}
		authenticated += strings.Count(string(log), "Successfully completed the authentication using SASL")
	}
	if authenticated == 0 {
		t.Error("no ZooKeeper server logged a SASL authentication of another")
	}
}
