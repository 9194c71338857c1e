package zkref

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// An Ensemble is a ZooKeeper 3.8 ensemble of server processes on
// 127.0.0.1, each with its own directory, myid file and zoo.cfg listing
// every member, as an operator would run it. Its members are killed when
// the test ends.
type Ensemble struct {
	t       testing.TB
	o       options
	members []*Server
	ports   []memberPorts
	dirs    []string
	// observers are the server.N lines of observers that zoo.cfg lists but
	// the Ensemble does not run (WithObserver).
	observers []observerLine
}

type observerLine struct {
	id    int
	ports memberPorts
}

// Ensemble timing that zoo.cfg gets besides tickTime.
const (
	ensembleInitLimit = 10
	ensembleSyncLimit = 5
)

// memberPorts are a member's client, quorum and election ports.
type memberPorts struct{ client, peer, election int }

// StartEnsemble runs an ensemble of n voting members (3, 5, ...) and
// returns once every member serves clients, which takes a leader. The
// options apply to every member; WithDataDir is ignored (each member has
// its own). Like Start, it skips t when Java or ZooKeeper is missing (fails
// it when CI=true).
func StartEnsemble(t testing.TB, n int, opts ...Option) *Ensemble {
	t.Helper()
	Require(t, Available())
	o := options{tickTime: 2 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	e := &Ensemble{t: t, o: o, members: make([]*Server, n), ports: make([]memberPorts, n), dirs: make([]string, n)}
	for _, id := range o.observers {
		ports, err := pickMemberPorts()
		if err != nil {
			t.Fatalf("zkref: %v", err)
		}
		e.observers = append(e.observers, observerLine{id: id, ports: ports})
	}
	root := t.TempDir()
	for i := range n {
		var err error
		if e.ports[i], err = pickMemberPorts(); err != nil {
			t.Fatalf("zkref: %v", err)
		}
		e.dirs[i] = filepath.Join(root, strconv.Itoa(i+1))
		data := filepath.Join(e.dirs[i], "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		e.start(i)
	}
	deadline := time.Now().Add(startTimeout)
	for i := range n {
		e.await(i, deadline)
	}
	return e
}

// pickMemberPorts returns three ports that were free a moment ago. Another
// process may take one before the JVM binds it; the ensemble then fails to
// start and the test says why.
func pickMemberPorts() (memberPorts, error) {
	var p [3]int
	for i := range p {
		port, err := pickPort()
		if err != nil {
			return memberPorts{}, err
		}
		p[i] = port
	}
	return memberPorts{client: p[0], peer: p[1], election: p[2]}, nil
}

// start launches member i from its directory, without waiting.
func (e *Ensemble) start(i int) {
	e.t.Helper()
	o := e.o
	o.dataDir = filepath.Join(e.dirs[i], "data")
	var b strings.Builder
	b.WriteString(zooCfg(e.ports[i].client, o))
	fmt.Fprintf(&b, "initLimit=%d\nsyncLimit=%d\n", ensembleInitLimit, ensembleSyncLimit)
	for _, line := range e.ServerLines() {
		b.WriteString(line + "\n")
	}
	s, err := launch(e.dirs[i], o, e.ports[i].client, b.String(), quorumMainClass)
	if err != nil {
		e.t.Fatalf("zkref: member %d: %v", i+1, err)
	}
	e.t.Cleanup(s.Kill)
	e.members[i] = s
}

// await waits until member i serves clients.
func (e *Ensemble) await(i int, deadline time.Time) {
	e.t.Helper()
	s := e.members[i]
	if err := s.awaitServing(deadline); err != nil {
		e.t.Fatalf("zkref: member %d did not serve: %v\nend of %s:\n%s", i+1, err, s.logPath, logTail(s.logPath))
	}
}

// Members returns the running members, in the order of their ids
// (server.1 first).
func (e *Ensemble) Members() []*Server { return e.members }

// ConnectString returns the client addresses of every member, as a
// client's connect string.
func (e *Ensemble) ConnectString() string {
	addrs := make([]string, len(e.ports))
	for i, p := range e.ports {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p.client))
	}
	return strings.Join(addrs, ",")
}

// QuorumAddrs returns each member's quorum address (the first port of its
// server.N line, where a leader accepts followers and observers), in the
// order of their ids.
func (e *Ensemble) QuorumAddrs() []string {
	addrs := make([]string, len(e.ports))
	for i, p := range e.ports {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p.peer))
	}
	return addrs
}

// ServerLines returns the zoo.cfg lines that list the ensemble's servers,
// the observers WithObserver adds included: what a zoo.cfg of an observer
// the test runs itself lists.
func (e *Ensemble) ServerLines() []string {
	var lines []string
	for j, p := range e.ports {
		lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", j+1, p.peer, p.election))
	}
	for _, obs := range e.observers {
		lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d:observer", obs.id, obs.ports.peer, obs.ports.election))
	}
	return lines
}

// Limits returns the initLimit and syncLimit of the members' zoo.cfg, in
// ticks.
func (e *Ensemble) Limits() (initLimit, syncLimit int) {
	return ensembleInitLimit, ensembleSyncLimit
}

// Leader returns the index of the member whose srvr says it leads, or -1
// when none does.
func (e *Ensemble) Leader() int {
	for i, s := range e.members {
		if out, err := FourLetter(s.addr, "srvr"); err == nil && strings.Contains(out, "\nMode: leader\n") {
			return i
		}
	}
	return -1
}

// Kill kills member i with SIGKILL and waits until it has exited.
func (e *Ensemble) Kill(i int) { e.members[i].Kill() }

// Restart starts member i again, after Kill, from the data it had, and
// returns once it serves, which takes a quorum of running members.
func (e *Ensemble) Restart(i int) {
	e.t.Helper()
	e.StartMember(i)
	e.await(i, time.Now().Add(startTimeout))
}

// StartMember starts member i again from the data it had, killing it first
// if it runs, and returns at once.
func (e *Ensemble) StartMember(i int) {
	e.t.Helper()
	e.members[i].Kill()
	e.start(i)
}
