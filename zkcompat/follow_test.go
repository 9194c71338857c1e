package zkcompat

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkref"
)

// TestKazooReadsThroughFollower runs `collie server -follow-zookeeper`
// with a ZooKeeper ensemble's zoo.cfg, as that ensemble's observer
// server.4: Kazoo's read-only client reads what was written to
// ZooKeeper through it, its writes fail with NotReadOnlyCallError, and a
// client that does not accept a read-only session gets none.
func TestKazooReadsThroughFollower(t *testing.T) {
	python, err := zkref.Python()
	zkref.Require(t, err)
	const observerID = 4
	e := zkref.StartEnsemble(t, 3, zkref.WithTickTime(time.Second), zkref.WithObserver(observerID), zkref.WithJVMArgs("-Xmx128m"))
	writeKazooRO(t, strings.Split(e.ConnectString(), ","))

	dir := t.TempDir()
	port := freeLocalPort(t)
	initLimit, syncLimit := e.Limits()
	cfg := fmt.Sprintf("tickTime=1000\ninitLimit=%d\nsyncLimit=%d\ndataDir=data\nclientPort=%d\nclientPortAddress=127.0.0.1\n%s\n",
		initLimit, syncLimit, port, strings.Join(e.ServerLines(), "\n"))
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "myid"), []byte(fmt.Sprint(observerID)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startCollie(t, dir, t.Output(), "server", "-c", "zoo.cfg", "-follow-zookeeper", "-admin-port", "-1")
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p.waitServing(t, addr, "isro", "ro")
	runKazooScript(t, python, "read_only.py", addr, []string{
		"ok: the client's state = 'CONNECTED_RO'",
		"ok: data read in read-only mode = (b'v1', 0, 1)",
		"ok: transaction raises NotReadOnlyCallError",
		"ok: a read-write client's connection raises KazooTimeoutError",
	})
	entries, err := os.ReadDir(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the follower wrote to its data directory: %v", entries)
	}
}
