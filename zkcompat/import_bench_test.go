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
	c, err := zkwire.Dial(ref.Addr(), 30000)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 100)
	const parents = 1000
	start := time.Now()
	var reqs []zkwire.Request
	for i := 0; i < parents; i++ {
		reqs = append(reqs, zkwire.Request{Xid: c.NextXid(), Op: proto.OpCreate, Req: &proto.CreateRequest{Path: fmt.Sprintf("/p%d", i), ACL: tree.OpenACL}})
	}
	if _, err := c.Pipeline(reqs...); err != nil {
		t.Fatal(err)
	}
	for made := 0; made < n; {
		reqs = reqs[:0]
		for k := 0; k < 500 && made < n; k++ {
			reqs = append(reqs, zkwire.Request{Xid: c.NextXid(), Op: proto.OpCreate, Req: &proto.CreateRequest{Path: fmt.Sprintf("/p%d/n%d", made%parents, made), Data: data, ACL: tree.OpenACL}})
			made++
		}
		if _, err := c.Pipeline(reqs...); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d znodes made in ZooKeeper in %s", n, time.Since(start).Round(time.Second))
	c.Close()
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
