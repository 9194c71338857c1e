package zkcompat

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/loadgen"
)

// The ensemble comparison runs a three-server Collie ensemble and a
// three-server ZooKeeper 3.8 ensemble side by side on this machine, every
// server its own process, and drives both with the same client (loadgen,
// on the client package). Like the standalone comparison it is a
// benchmark: it runs only when COLLIE_BENCH_ENSEMBLE=1 (scripts/bench.sh
// --ensemble sets it) and takes several minutes. It reads the settings
// COLLIE_BENCH_DURATION, COLLIE_BENCH_WARMUP, COLLIE_BENCH_NODES,
// COLLIE_BENCH_ZK_HEAP and COLLIE_BENCH_REPORT described in bench_test.go.
const (
	// benchFailovers is how many times each ensemble's leader is killed.
	benchFailovers = 3
	// benchCatchUpSnapCount makes both kinds of server snapshot often in
	// the catch-up part, so that a follower far behind must be sent a
	// snapshot rather than the log.
	benchCatchUpSnapCount = 1000
)

// benchEnsemble is one of the two ensembles under comparison.
type benchEnsemble struct {
	name    string
	addrs   []string
	leader  func() int
	kill    func(i int)
	restart func(i int) // starts server i again, without waiting
}

func (e *benchEnsemble) connect(skip int) string {
	var addrs []string
	for i, a := range e.addrs {
		if i != skip {
			addrs = append(addrs, a)
		}
	}
	return strings.Join(addrs, ",")
}

// startBenchEnsembles starts the two ensembles with the same settings:
// tickTime 2s, initLimit 10, syncLimit 5, fsync on every write, no limit
// on connections per address, and the zoo.cfg lines extra.
func startBenchEnsembles(t *testing.T, settings benchSettings, extra ...string) (collie, zookeeper *benchEnsemble) {
	t.Helper()
	lines := append([]string{"maxClientCnxns=0", "preAllocSize=65536"}, extra...)
	ce := startProcessEnsemble(t, 3, 2*time.Second, lines...)
	collie = &benchEnsemble{
		name:  "Collie",
		addrs: ce.addrs,
		leader: func() int {
			return awaitLeader(t, ce.addrs, -1)
		},
		kill:    func(i int) { ce.procs[i].kill(t) },
		restart: func(i int) { ce.start(t, i) },
	}
	opts := []zkref.Option{zkref.WithFullJIT(), zkref.WithJVMArgs("-Xmx" + settings.zkHeap)}
	for _, l := range lines {
		if k, v, ok := strings.Cut(l, "="); ok && k != "preAllocSize" {
			opts = append(opts, zkref.WithConfig(k, v))
		}
	}
	ze := zkref.StartEnsemble(t, 3, opts...)
	var zaddrs []string
	for _, m := range ze.Members() {
		zaddrs = append(zaddrs, m.Addr())
	}
	zookeeper = &benchEnsemble{
		name:  "ZooKeeper",
		addrs: zaddrs,
		leader: func() int {
			return awaitLeader(t, zaddrs, -1)
		},
		kill:    ze.Kill,
		restart: ze.StartMember,
	}
	return collie, zookeeper
}

// TestEnsembleLoadAgainstZooKeeper measures a three-server Collie ensemble
// against a three-server ZooKeeper 3.8 ensemble: setData and getData
// throughput and latency at 16 and 64 sessions spread over all servers;
// the time from a kill -9 of the leader to the first write served by the
// others; and the time a follower restarted far behind (COLLIE_BENCH_NODES
// znodes and more than either kind of server keeps in its log) takes to
// catch up.
func TestEnsembleLoadAgainstZooKeeper(t *testing.T) {
	if os.Getenv("COLLIE_BENCH_ENSEMBLE") != "1" {
		t.Skip("a benchmark of several minutes: set COLLIE_BENCH_ENSEMBLE=1 or run scripts/bench.sh --ensemble")
	}
	settings := benchSettingsFromEnv(t)
	zkref.Require(t, zkref.Available())
	var report strings.Builder
	fmt.Fprintf(&report, "Ensembles of 3 servers, each server its own process, on one machine. Load average before: %s.\n", benchLoadAverage())
	// Each part starts ensembles of its own, so that it can run alone
	// (-run TestEnsembleLoadAgainstZooKeeper/catch-up) and no part runs
	// on what another left.
	t.Run("load", func(t *testing.T) { benchEnsembleLoad(t, settings, &report) })
	t.Run("failover", func(t *testing.T) { benchEnsembleFailover(t, settings, &report) })
	t.Run("catch-up", func(t *testing.T) { benchEnsembleCatchUp(t, settings, &report) })
	fmt.Fprintf(&report, "\nZooKeeper: JVM -Xmx%s, default collector; both fsync every write. Load average after: %s.\n", settings.zkHeap, benchLoadAverage())

	t.Logf("results:\n%s", report.String())
	if settings.report != "" {
		if err := os.WriteFile(settings.report, []byte(report.String()), 0o644); err != nil {
			t.Errorf("write the report: %v", err)
		}
	}
}

// benchEnsembleLoad compares setData and getData at 16 and 64 sessions.
func benchEnsembleLoad(t *testing.T, settings benchSettings, report *strings.Builder) {
	collie, zookeeper := startBenchEnsembles(t, settings)
	fmt.Fprintf(report, "\nLoad: %v measured per ensemble after %v of warm-up, in alternating 1 s rounds; closed loop, "+
		"one request in flight per session, sessions spread over the 3 servers; ratios are Collie / ZooKeeper.\n\n", settings.duration, settings.warmup)
	report.WriteString("| workload | sessions | ZooKeeper ops/s | Collie ops/s | ratio | ZooKeeper p99 | Collie p99 | ratio |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, w := range []string{"set", "get"} {
		for _, n := range benchSessions {
			rep, err := loadgen.Run(t.Context(), loadgen.Config{
				Connect:  strings.Join(zookeeper.addrs, ","),
				Compare:  strings.Join(collie.addrs, ","),
				Workload: w, Clients: n, Size: benchDataSize,
				Duration: settings.duration, Warmup: settings.warmup,
			})
			if err != nil {
				t.Fatalf("%s, %d sessions: %v", w, n, err)
			}
			z, c := rep.Results[0], rep.Results[1]
			for _, r := range rep.Results {
				if r.Errors > 0 {
					t.Errorf("%s, %d sessions, %s: %d errors, the first: %s", w, n, r.Connect, r.Errors, r.FirstError)
				}
			}
			fmt.Fprintf(report, "| %s 1 KiB | %d | %.0f | %.0f | **%.2f** | %s | %s | **%.2f** |\n", w, n,
				z.OpsPerSec, c.OpsPerSec, rep.Ratio.OpsPerSec, benchMillis(z.Latency.P99), benchMillis(c.Latency.P99), rep.Ratio.P99)
			t.Logf("%s, %d sessions: ZooKeeper %.0f ops/s p99 %v; Collie %.0f ops/s p99 %v", w, n, z.OpsPerSec, z.Latency.P99, c.OpsPerSec, c.Latency.P99)
		}
	}
}

// benchEnsembleFailover kills each ensemble's leader benchFailovers times.
func benchEnsembleFailover(t *testing.T, settings benchSettings, report *strings.Builder) {
	collie, zookeeper := startBenchEnsembles(t, settings)
	fmt.Fprintf(report, "\nLeader killed with SIGKILL, %d times each: time until a write through another server succeeds "+
		"(a new session per attempt, every 10 ms, on each other server in turn).\n\n", benchFailovers)
	report.WriteString("| ensemble | each kill | median |\n|---|---|---:|\n")
	for _, e := range []*benchEnsemble{zookeeper, collie} {
		var took []time.Duration
		for range benchFailovers {
			took = append(took, benchFailover(t, e))
		}
		var each []string
		for _, d := range took {
			each = append(each, benchMillis(d))
		}
		slices.Sort(took)
		fmt.Fprintf(report, "| %s | %s | **%s** |\n", e.name, strings.Join(each, ", "), benchMillis(took[len(took)/2]))
	}
}

// benchEnsembleCatchUp measures how long a follower far behind takes to
// catch up, on ensembles that snapshot often.
func benchEnsembleCatchUp(t *testing.T, settings benchSettings, report *strings.Builder) {
	collie, zookeeper := startBenchEnsembles(t, settings, fmt.Sprintf("snapCount=%d", benchCatchUpSnapCount))
	fmt.Fprintf(report, "\nA follower killed, then %d znodes of %d bytes written (multis) and %v of setData from 16 sessions, "+
		"with snapCount=%d on both so that the follower is sent a snapshot; then the follower starts again: "+
		"time from its start until it has the leader's last zxid.\n\n", settings.nodes, benchNodeDataSize, settings.duration, benchCatchUpSnapCount)
	report.WriteString("| ensemble | catch-up | of which serving again |\n|---|---:|---:|\n")
	for _, e := range []*benchEnsemble{zookeeper, collie} {
		total, serving := benchCatchUp(t, e, settings)
		fmt.Fprintf(report, "| %s | **%s** | %s |\n", e.name, benchMillis(total), benchMillis(serving))
	}
}

// benchFailover kills e's leader, measures how long until a write through
// one of the other servers succeeds, then starts the killed server again
// and waits until it serves.
func benchFailover(t *testing.T, e *benchEnsemble) time.Duration {
	t.Helper()
	lead := e.leader()
	var others []string
	for i, a := range e.addrs {
		if i != lead {
			others = append(others, a)
		}
	}
	path := fmt.Sprintf("/failover-%d", time.Now().UnixNano())
	killed := time.Now()
	e.kill(lead)
	deadline := killed.Add(time.Minute)
	var took time.Duration
	for i := 0; ; i++ {
		if zkwire.TryCreate(others[i%len(others)], path) {
			took = time.Since(killed)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no write served within a minute of the leader's kill", e.name)
		}
		time.Sleep(benchProbeInterval)
	}
	t.Logf("%s: leader %d killed; a write served after %v", e.name, lead+1, took)
	e.restart(lead)
	if err := benchAwaitRead(e.addrs[lead], "/", time.Now().Add(benchStartTimeout)); err != nil {
		t.Fatalf("%s: server %d did not serve again: %v", e.name, lead+1, err)
	}
	return took
}

// benchCatchUp kills a follower of e, writes settings.nodes znodes and a
// stretch of setData through the others, starts the follower again and
// returns how long it took to reach the leader's zxid, and to serve.
func benchCatchUp(t *testing.T, e *benchEnsemble, settings benchSettings) (total, serving time.Duration) {
	t.Helper()
	ctx := t.Context()
	lead := e.leader()
	follower := (lead + 1) % len(e.addrs)
	e.kill(follower)
	if _, err := loadgen.Run(ctx, loadgen.Config{
		Connect: e.connect(follower), Workload: "fill", Clients: benchLoaders,
		Size: benchNodeDataSize, Nodes: settings.nodes, Keep: true, Prefix: "/catch-up",
	}); err != nil {
		t.Fatalf("%s: fill: %v", e.name, err)
	}
	if _, err := loadgen.Run(ctx, loadgen.Config{
		Connect: e.connect(follower), Workload: "set", Clients: 16, Size: benchNodeDataSize,
		Duration: settings.duration, Prefix: "/catch-up-set",
	}); err != nil {
		t.Fatalf("%s: set: %v", e.name, err)
	}
	want := benchZxid(t, e.addrs[lead])
	t.Logf("%s: follower %d down; leader at zxid %#x", e.name, follower+1, want)
	started := time.Now()
	e.restart(follower)
	deadline := started.Add(benchStartTimeout)
	for {
		if serving == 0 && benchReadOnce(e.addrs[follower], "/") == nil {
			serving = time.Since(started)
		}
		if z, err := benchSrvrZxid(e.addrs[follower]); err == nil && z >= want {
			total = time.Since(started)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: follower %d did not catch up within %v", e.name, follower+1, benchStartTimeout)
		}
		time.Sleep(benchProbeInterval)
	}
	if serving == 0 {
		serving = total
	}
	t.Logf("%s: follower %d caught up in %v (serving after %v)", e.name, follower+1, total, serving)
	return total, serving
}

// benchZxid returns the zxid addr's srvr reports, failing t if it cannot.
func benchZxid(t *testing.T, addr string) int64 {
	t.Helper()
	z, err := benchSrvrZxid(addr)
	if err != nil {
		t.Fatalf("srvr of %s: %v", addr, err)
	}
	return z
}

func benchSrvrZxid(addr string) (int64, error) {
	reply, err := fourLetterWord(addr, "srvr")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(reply, "\n") {
		if v, ok := strings.CutPrefix(line, "Zxid: "); ok {
			var z int64
			_, err := fmt.Sscanf(v, "0x%x", &z)
			return z, err
		}
	}
	return 0, fmt.Errorf("no Zxid line in %q", reply)
}
