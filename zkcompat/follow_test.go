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

// TestKazooThroughFollower runs `collie server -follow-zookeeper` with a
// ZooKeeper ensemble's zoo.cfg, as that ensemble's observer server.4:
// Kazoo's read-only client reads what was written to ZooKeeper through it
// and cannot write; its read-write client writes through it, and Kazoo's
// Lock recipe works between two sessions of the follower.
func TestKazooThroughFollower(t *testing.T) {
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
	p.waitServing(t, addr, "isro", "rw")
	runKazooScript(t, python, "follower.py", addr, []string{
		"ok: the client's state = 'CONNECTED_RO'",
		"ok: data read in read-only mode = (b'v1', 0, 1)",
		"ok: a read-only client's create raises NotReadOnlyCallError",
		"ok: the read-write client's state = 'CONNECTED'",
		"ok: create again raises NodeExistsError",
		"ok: read after the writes = (b'c', 2, 1)",
	})
	runKazooScript(t, python, "lock.py", addr, []string{
		"ok: b cannot acquire a held lock",
		"ok: release hands the lock to b = True",
		"ok: the holder's session closing hands the lock to a = True",
	})
	entries, err := os.ReadDir(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the follower wrote to its data directory: %v", entries)
	}
}
