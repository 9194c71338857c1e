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
	f := writeFollowerConfig(t, e, extra...)
	p := f.start(t, t.Output())
	p.waitServing(t, f.addr, "isro", "rw")
	return f.addr, f.dataDir
}

// followerConfig is the directory of a follower of a ZooKeeper ensemble:
// its zoo.cfg and its data directory with myid.
type followerConfig struct {
	dir     string // where zoo.cfg is, the working directory
	dataDir string
	addr    string // the client address
}

// writeFollowerConfig writes the zoo.cfg of e's observer server.4 with the
// lines extra, and its myid.
func writeFollowerConfig(t *testing.T, e *zkref.Ensemble, extra ...string) followerConfig {
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
	if err := os.WriteFile(filepath.Join(dataDir, "myid"), []byte(fmt.Sprint(followerID)), 0o644); err != nil {
		t.Fatal(err)
	}
	return followerConfig{dir: dir, dataDir: dataDir, addr: fmt.Sprintf("127.0.0.1:%d", port)}
}

// start runs `collie server -follow-zookeeper` from f, its output going to
// out, without waiting for it to serve.
func (f followerConfig) start(t *testing.T, out io.Writer) *serverProcess {
	t.Helper()
	return startCollie(t, f.dir, out, "server", "-c", "zoo.cfg", "-follow-zookeeper", "-admin-port", "-1")
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
