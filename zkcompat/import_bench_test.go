package zkcompat

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
)

// importBenchEnv names how many znodes TestImportScale puts into
// ZooKeeper before importing them; the test is skipped without it.
const importBenchEnv = "COLLIE_IMPORT_ZNODES"

// TestImportScale measures collie import on a ZooKeeper data directory of
// many znodes (COLLIE_IMPORT_ZNODES, say 1000000): the time it takes and
// its peak memory (the maximum resident set GNU time reports), with the
// size of ZooKeeper's snapshot and logs. The znodes are 100-byte nodes
// under 1000 parents, made through pipelined creates.
func TestImportScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(importBenchEnv))
	if n <= 0 {
		t.Skipf("set %s to a number of znodes to measure collie import", importBenchEnv)
	}
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		t.Skip("GNU time (/usr/bin/time) is needed for the peak memory")
	}
	zkDir := filepath.Join(t.TempDir(), "zk")
	// COLLIE_IMPORT_SNAPCOUNT is ZooKeeper's snapCount: by default none
	// is reached, and the import replays every create from the log; a
	// smaller one has it start from a snapshot.
	snapCount := os.Getenv("COLLIE_IMPORT_SNAPCOUNT")
	if snapCount == "" {
		snapCount = "2000000"
	}
	ref := zkref.Start(t, zkref.WithDataDir(zkDir), zkref.WithJVMArgs("-Xmx4g", "-Dzookeeper.snapCount="+snapCount))
	start := time.Now()
	createScaleZnodes(t, ref.Addr(), 0, n)
	t.Logf("%d znodes made in ZooKeeper in %s", n, time.Since(start).Round(time.Second))
	ref.Kill()
	var zkBytes int64
	filepath.Walk(zkDir, func(_ string, info os.FileInfo, _ error) error {
		if info != nil && !info.IsDir() {
			zkBytes += info.Size()
		}
		return nil
	})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	os.WriteFile(cfg, []byte(fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\n", filepath.Join(dir, "data"), freeLocalPort(t))), 0o644)
	cmd := exec.Command("/usr/bin/time", "-v", collieBinary(t), "import", "-c", cfg, "-zk-data-dir", zkDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("collie import: %v\n%s", err, out)
	}
	rss := regexp.MustCompile(`Maximum resident set size \(kbytes\): (\d+)`).FindSubmatch(out)
	wall := regexp.MustCompile(`Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)`).FindSubmatch(out)
	if rss == nil || wall == nil {
		t.Fatalf("no measurements in:\n%s", out)
	}
	kb, _ := strconv.Atoi(string(rss[1]))
	t.Logf("collie import of %d znodes (ZooKeeper's files: %d MiB): %s wall clock, peak RSS %d MiB", n, zkBytes>>20, wall[1], kb>>10)
}

// The znodes of the scale measurements: 100 bytes each, spread over
// scaleParents parents, /p<i mod scaleParents>/n<i> for the i-th.
const (
	scaleParents  = 1000
	scaleDataSize = 100
	// scaleBatch is how many creates one session has in flight at once.
	scaleBatch = 500
)

func scalePath(i int) string { return fmt.Sprintf("/p%d/n%d", i%scaleParents, i) }

// dialScale opens a session for the scale measurements, which wait longer
// than usual for a reply: ZooKeeper with a large tree, on a loaded
// machine, has been seen silent for more than zkwire.Timeout.
func dialScale(addr string) (*zkwire.Conn, error) {
	c, err := zkwire.Dial(addr, 30000)
	if err != nil {
		return nil, err
	}
	c.IOTimeout = time.Minute
	return c, nil
}

// createScaleZnodes creates the scale znodes numbered from to to-1 on the
// server at addr, and their parents first when from is 0, pipelining
// scaleBatch creates at a time on one session. Every create must succeed.
func createScaleZnodes(t *testing.T, addr string, from, to int) {
	t.Helper()
	c, err := dialScale(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(reqs []zkwire.Request) {
		t.Helper()
		frames, err := c.Pipeline(reqs...)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames {
			if f.Header.Err != proto.OK {
				t.Fatalf("create (xid %d): %v", f.Header.Xid, f.Header.Err)
			}
		}
	}
	var reqs []zkwire.Request
	if from == 0 {
		for i := range scaleParents {
			reqs = append(reqs, zkwire.Request{Xid: c.NextXid(), Op: proto.OpCreate, Req: &proto.CreateRequest{Path: fmt.Sprintf("/p%d", i), ACL: tree.OpenACL}})
		}
		send(reqs)
	}
	data := make([]byte, scaleDataSize)
	for i := from; i < to; {
		reqs = reqs[:0]
		for ; len(reqs) < scaleBatch && i < to; i++ {
			reqs = append(reqs, zkwire.Request{Xid: c.NextXid(), Op: proto.OpCreate, Req: &proto.CreateRequest{Path: scalePath(i), Data: data, ACL: tree.OpenACL}})
		}
		send(reqs)
	}
	if err := c.CloseSession(); err != nil {
		t.Fatalf("close the session: %v", err)
	}
}
