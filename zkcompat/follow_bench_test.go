package zkcompat

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
)

// followBenchEnv names how many znodes TestFollowScale puts into
// ZooKeeper before the follower takes them; the test is skipped without
// it.
const followBenchEnv = "COLLIE_FOLLOW_ZNODES"

const (
	// followScaleLimit bounds each catch-up, generously: it is what the
	// test measures, not what it requires.
	followScaleLimit = 15 * time.Minute
	// followScaleSample is how many scale znodes, chosen at random, are
	// compared node by node at the end, besides the root and every parent.
	followScaleSample = 2000
	// followScaleSetBatch is how many setData the writer has in flight.
	followScaleSetBatch = 100
)

// TestFollowScale measures how long `collie server -follow-zookeeper`
// takes to catch up with a 3-server ZooKeeper 3.8 ensemble that holds
// COLLIE_FOLLOW_ZNODES znodes (say 1000000) of 100 bytes under 1000
// parents, and its peak memory (VmHWM): from the process's start until
// isro answers rw. The follower keeps nothing on disk, so every start,
// restarts included, takes the leader's snapshot (SNAP). Three starts:
// the first; a restart after 10% more znodes; a restart while a client
// pipelines setData to the ensemble, after which the follower must reach
// the leader's last zxid. Last, the follower's node count and a sample
// of its nodes, data, ACL and Stat, must be the leader's.
//
// The ZooKeeper servers run with -Xmx2g, a snapCount no load reaches and
// forceSync=no, which make the load faster and change nothing in what the
// leader sends an observer.
func TestFollowScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(followBenchEnv))
	if n <= 0 {
		t.Skipf("set %s to a number of znodes to measure the follower's catch-up", followBenchEnv)
	}
	more := n / 10
	e := zkref.StartEnsemble(t, 3, zkref.WithTickTime(time.Second), zkref.WithObserver(followerID), zkref.WithFullJIT(),
		zkref.WithJVMArgs("-Xmx2g", "-Dzookeeper.snapCount=100000000", "-Dzookeeper.forceSync=no"))
	lead := e.Leader()
	if lead < 0 {
		t.Fatal("no ZooKeeper member leads")
	}
	leader := e.Members()[lead].Addr()
	t.Cleanup(func() {
		if t.Failed() {
			for i, m := range e.Members() {
				t.Logf("end of ZooKeeper server.%d's log:\n%s", i+1, fileTail(m.LogPath(), 40))
			}
		}
	})
	// The writer's member is not the leader, as most clients' is not.
	member := e.Members()[(lead+1)%3].Addr()

	start := time.Now()
	createScaleZnodes(t, leader, 0, n)
	t.Logf("%d znodes made in ZooKeeper in %s", n, time.Since(start).Round(time.Second))
	// mntr, for the node count, besides srvr.
	f := prepareFollower(t, e, followerID, "4lw.commands.whitelist=*")
	var rows []followCatchUp

	first, p := catchUpBySnapshot(t, f, fmt.Sprintf("first start, %d znodes", n))
	rows = append(rows, first)
	p.kill(t)

	start = time.Now()
	createScaleZnodes(t, leader, n, n+more)
	t.Logf("%d more znodes made in ZooKeeper in %s", more, time.Since(start).Round(time.Second))
	restart, p := catchUpBySnapshot(t, f, fmt.Sprintf("restart after %d more znodes", more))
	rows = append(rows, restart)
	p.kill(t)

	ctx, stop := context.WithCancel(t.Context())
	var written atomic.Int64
	var writer sync.WaitGroup
	var writeErr error
	writer.Go(func() { writeErr = setDataLoad(ctx, member, n+more, &written) })
	eventually(t, "the writer's first setData", func() bool { return written.Load() > 0 })
	before := written.Load()
	loaded, p := catchUpBySnapshot(t, f, "restart under setData load")
	loaded.writes = written.Load() - before
	stop()
	writer.Wait()
	if writeErr != nil {
		t.Fatalf("setData load: %v", writeErr)
	}
	stopped := time.Now()
	want := benchZxid(t, leader)
	awaitZxid(t, f.addr, want)
	loaded.lag = time.Since(stopped)
	_, loaded.peakRSS = benchMemory(t, p.cmd.Process.Pid)
	rows = append(rows, loaded)

	compareScaleTrees(t, leader, f.addr, n+more)
	t.Logf("follower catch-up by SNAP from a 3-server ZooKeeper 3.8 ensemble (%d CPUs, load average %s):\n%s",
		runtime.NumCPU(), benchLoadAverage(), followCatchUpTable(rows))
}

// followCatchUp is one measured start of the follower.
type followCatchUp struct {
	what    string
	nodes   int           // the nodes the follower's log says the snapshot held
	serving time.Duration // from the process's start until isro answers rw
	// The parts of serving, from the follower's log: until the leader's
	// SNAP began, reading and converting the snapshot, then applying what
	// the leader committed meanwhile until it said UPTODATE.
	toSnap, snapshot, toUpToDate time.Duration
	// applied is how many txns the follower applied after the snapshot
	// before UPTODATE (zxids of one epoch count up by one).
	applied int64
	peakRSS int64
	// writes is the setData acknowledged while the follower caught up,
	// and lag how long it took, once they stopped, to reach the leader's
	// last zxid; both zero without a writer.
	writes int64
	lag    time.Duration
}

// snapshotLoaded is the follower's log line for a snapshot it took.
var snapshotLoaded = regexp.MustCompile(`took the leader's snapshot.* nodes=(\d+)`)

// logLine returns the time and the zxid attribute of the follower's first
// log line that says msg.
func logLine(t *testing.T, log, msg string) (time.Time, int64) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^time=(\S+) .*msg="` + regexp.QuoteMeta(msg) + `".* zxid=0x([0-9a-f]+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("the follower did not log %q with a zxid; its output:\n%s", msg, log)
	}
	at, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		t.Fatalf("the time of %q: %v", msg, err)
	}
	zxid, err := strconv.ParseInt(m[2], 16, 64)
	if err != nil {
		t.Fatalf("the zxid of %q: %v", msg, err)
	}
	return at, zxid
}

// catchUpBySnapshot starts the follower and measures its catch-up: it
// must have taken the leader's snapshot to serve. The process runs on.
func catchUpBySnapshot(t *testing.T, f *followerProcess, what string) (followCatchUp, *serverProcess) {
	t.Helper()
	var out syncBuffer
	f.start(t, &out)
	p := f.serverProcess
	m := followCatchUp{what: what}
	m.serving = p.waitServingWithin(t, f.addr, "isro", "rw", followScaleLimit)
	_, m.peakRSS = benchMemory(t, p.cmd.Process.Pid)
	loaded := snapshotLoaded.FindStringSubmatch(out.String())
	if loaded == nil {
		t.Fatalf("%s: the follower serves without having taken the leader's snapshot; its output:\n%s", what, out.String())
	}
	m.nodes, _ = strconv.Atoi(loaded[1])
	snap, _ := logLine(t, out.String(), "sync by snapshot")
	took, snapZxid := logLine(t, out.String(), "took the leader's snapshot")
	upToDate, upToDateZxid := logLine(t, out.String(), "in sync with the ZooKeeper leader: serving clients")
	m.toSnap, m.snapshot, m.toUpToDate = snap.Sub(p.started), took.Sub(snap), upToDate.Sub(took)
	m.applied = upToDateZxid - snapZxid
	t.Logf("%s: serving after %v, %d nodes, peak RSS %d MiB", what, m.serving.Round(time.Millisecond), m.nodes, m.peakRSS>>20)
	return m, p
}

// setDataLoad sets the data of random scale znodes among the first
// nodes, on the server at addr, followScaleSetBatch at a time, counting
// the acknowledged ones in written, until ctx ends.
func setDataLoad(ctx context.Context, addr string, nodes int, written *atomic.Int64) error {
	c, err := dialScale(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	data := make([]byte, scaleDataSize)
	reqs := make([]zkwire.Request, followScaleSetBatch)
	for ctx.Err() == nil {
		for i := range reqs {
			reqs[i] = zkwire.Request{Xid: c.NextXid(), Op: proto.OpSetData, Req: &proto.SetDataRequest{Path: scalePath(rng.IntN(nodes)), Data: data, Version: -1}}
		}
		frames, err := c.Pipeline(reqs...)
		if err != nil {
			return err
		}
		for _, f := range frames {
			if f.Header.Err != proto.OK {
				return fmt.Errorf("setData (xid %d): %w", f.Header.Xid, f.Header.Err)
			}
		}
		written.Add(int64(len(reqs)))
	}
	return c.CloseSession()
}

// compareScaleTrees checks, once nothing writes any more, that the
// follower at followerAddr counts as many znodes as the leader and has
// the same root, parents and a random sample of the first nodes scale
// znodes: data, ACL and Stat.
func compareScaleTrees(t *testing.T, leaderAddr, followerAddr string, nodes int) {
	t.Helper()
	paths := []string{"/"}
	for i := range scaleParents {
		paths = append(paths, fmt.Sprintf("/p%d", i))
	}
	rng := rand.New(rand.NewPCG(2, 2))
	paths = append(paths, scalePath(0), scalePath(nodes-1))
	for range followScaleSample {
		paths = append(paths, scalePath(rng.IntN(nodes)))
	}
	// Each side is read through a session opened just before, which its
	// reads keep alive: an idle one expires, a txn of the leader's. The
	// sessions' own txns change no node.
	lc, err := dialScale(leaderAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	// The leader informs its observers of a txn before it has applied the
	// txn itself: the follower may be ahead of it for a moment.
	var want int64
	eventually(t, "the leader and the follower at the same zxid", func() bool {
		leaderZxid, errL := benchSrvrZxid(leaderAddr)
		followerZxid, errF := benchSrvrZxid(followerAddr)
		want = leaderZxid
		return errL == nil && errF == nil && leaderZxid == followerZxid
	})
	wantCount, gotCount := mntrValue(t, leaderAddr, "zk_znode_count"), mntrValue(t, followerAddr, "zk_znode_count")
	if gotCount != wantCount || wantCount < nodes+scaleParents {
		t.Errorf("zk_znode_count: the follower counts %d, the leader %d, of which %d scale znodes and parents", gotCount, wantCount, nodes+scaleParents)
	}
	wantNodes, err := lc.Nodes(paths...)
	if err != nil {
		t.Fatalf("leader: %v", err)
	}
	if z := benchZxid(t, leaderAddr); z != want {
		t.Fatalf("the leader moved on from %#x to %#x while read", want, z)
	}
	if err := lc.CloseSession(); err != nil {
		t.Fatalf("close the session: %v", err)
	}
	fc, err := dialScale(followerAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	gotNodes, err := fc.Nodes(paths...)
	if err != nil {
		t.Fatalf("follower: %v", err)
	}
	if err := fc.CloseSession(); err != nil {
		t.Fatalf("close the session: %v", err)
	}
	diffTrees(t, wantNodes, gotNodes)
	t.Logf("the follower at zxid %#x counts %d znodes as the leader does; %d of them compared", want, gotCount, len(wantNodes))
}

// awaitZxid waits until the server at addr has applied the txn zxid.
func awaitZxid(t *testing.T, addr string, zxid int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s at zxid %#x", addr, zxid), func() bool {
		z, err := benchSrvrZxid(addr)
		return err == nil && z >= zxid
	})
}

func followCatchUpTable(rows []followCatchUp) string {
	var b strings.Builder
	b.WriteString("| start | nodes in the snapshot | start → serving | of which: until SNAP | reading SNAP | until UPTODATE (txns applied) | peak RSS | setData during catch-up | after writes stop, at the leader's zxid in |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		writes, lag := "-", "-"
		if r.writes > 0 {
			writes = fmt.Sprintf("%d (%.0f/s)", r.writes, float64(r.writes)/r.serving.Seconds())
			lag = r.lag.Round(time.Millisecond).String()
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f s | %.1f s | %.1f s | %.1f s (%d) | %d MiB | %s | %s |\n",
			r.what, r.nodes, r.serving.Seconds(), r.toSnap.Seconds(), r.snapshot.Seconds(), r.toUpToDate.Seconds(), r.applied, r.peakRSS>>20, writes, lag)
	}
	return b.String()
}

// fileTail returns the last lines of the file at path, or why not.
func fileTail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
