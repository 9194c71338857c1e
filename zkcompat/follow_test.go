package zkcompat

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/server/tree"
)

// followerID is the id the ensembles of these tests list as
// server.4=...:observer, for the follower.
const followerID = 4

// startFollowerProcess runs `collie server -follow-zookeeper` with e's
// zoo.cfg, as e's observer server.4, and the zoo.cfg lines extra; it
// returns the follower's client address once it serves, and its data
// directory.
func startFollowerProcess(t *testing.T, e *zkref.Ensemble, extra ...string) (addr, dataDir string) {
	t.Helper()
	f := startFollowerAs(t, e, followerID, t.Output(), extra...)
	return f.addr, f.dataDir
}

// followerProcess is a `collie server -follow-zookeeper` process.
type followerProcess struct {
	*serverProcess
	id            int
	dir           string // its working directory, which holds zoo.cfg
	addr, dataDir string
}

// startFollowerAs is startFollowerProcess for observer server.id, its
// output going to out.
func startFollowerAs(t *testing.T, e *zkref.Ensemble, id int, out io.Writer, extra ...string) *followerProcess {
	t.Helper()
	f := prepareFollower(t, e, id, extra...)
	f.start(t, out)
	// Minutes for the large trees of the measurements: a follower takes
	// the leader's snapshot before it serves.
	f.waitServingWithin(t, f.addr, "isro", "rw", 3*time.Minute)
	return f
}

// prepareFollower writes the zoo.cfg and myid of observer server.id.
func prepareFollower(t *testing.T, e *zkref.Ensemble, id int, extra ...string) *followerProcess {
	t.Helper()
	dir := t.TempDir()
	port := freeLocalPort(t)
	initLimit, syncLimit := e.Limits()
	cfg := fmt.Sprintf("tickTime=1000\ninitLimit=%d\nsyncLimit=%d\ndataDir=data\nclientPort=%d\nclientPortAddress=127.0.0.1\n%s\n%s\n",
		initLimit, syncLimit, port, strings.Join(e.ServerLines(), "\n"), strings.Join(extra, "\n"))
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "myid"), []byte(fmt.Sprint(id)), 0o644); err != nil {
		t.Fatal(err)
	}
	return &followerProcess{id: id, dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", port), dataDir: dataDir}
}

// start runs the process (again), with the same command line.
func (f *followerProcess) start(t *testing.T, out io.Writer) {
	t.Helper()
	f.serverProcess = startCollie(t, f.dir, out, "server", "-c", "zoo.cfg", "-follow-zookeeper", "-admin-port", "-1")
}

// TestKazooThroughFollower runs `collie server -follow-zookeeper` with a
// ZooKeeper ensemble's zoo.cfg, as that ensemble's observer server.4:
// Kazoo's client, one that accepts a read-only session too, gets a session
// of the ensemble, reads what was written to ZooKeeper and writes through
// the follower; Kazoo's Lock recipe works between two of its sessions.
func TestKazooThroughFollower(t *testing.T) {
	python, err := zkref.Python()
	zkref.Require(t, err)
	e := zkref.StartEnsemble(t, 3, zkref.WithTickTime(time.Second), zkref.WithObserver(followerID), zkref.WithJVMArgs("-Xmx128m"))
	writeKazooRO(t, strings.Split(e.ConnectString(), ","))
	addr, dataDir := startFollowerProcess(t, e)
	runKazooScript(t, python, "follower.py", addr, []string{
		"ok: the state of a client that accepts read-only = 'CONNECTED'",
		"ok: data the ensemble has = (b'v1', 0, 1)",
		"ok: create again raises NodeExistsError",
		"ok: read after the writes = (b'c', 2, 1)",
	})
	runKazooScript(t, python, "lock.py", addr, []string{
		"ok: b cannot acquire a held lock",
		"ok: release hands the lock to b = True",
		"ok: the holder's session closing hands the lock to a = True",
	})
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the follower wrote to its data directory: %v", entries)
	}
}

// TestRandomThroughFollower sends TestRandomAgainstZooKeeper's requests
// in lockstep to a standalone ZooKeeper 3.8 and to a follower of a
// 3-server ZooKeeper ensemble, which forwards the writes to its leader:
// every reply must be the same. Requests on /zookeeper/config are left
// out: a standalone server's lists no servers, an ensemble's does.
func TestRandomThroughFollower(t *testing.T) {
	n := envInt(t, randomStepsEnv, 500)
	seed := envInt(t, randomSeedEnv, 1)
	superDigest := digest(superPassword)
	jvmArgs := []string{"-Xmx128m", "-Dzookeeper.DigestAuthenticationProvider.superDigest=" + superDigest,
		"-Dznode.container.checkIntervalMs=3600000", "-Dfile.encoding=UTF-8"}
	settings := []zkref.Option{zkref.WithExtendedTypes(), zkref.WithConfig("maxSessionTimeout", "3600000"), zkref.WithJVMArgs(jvmArgs...)}
	ref := zkref.Start(t, settings...)
	e := zkref.StartEnsemble(t, 3, append(settings, zkref.WithTickTime(time.Second), zkref.WithObserver(followerID))...)
	addr, _ := startFollowerProcess(t, e, "extendedTypesEnabled=true", "maxSessionTimeout=3600000",
		"DigestAuthenticationProvider.superDigest="+superDigest)
	const timeoutMs = 3600000
	randomLockstep(t, seed, n, newWireRunner(t, ref.Addr(), timeoutMs), newWireRunner(t, addr, timeoutMs), func(s step) bool {
		return strings.Contains(describeReq(s.req), tree.ConfigPath)
	})
}
