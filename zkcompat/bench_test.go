//go:build linux

package zkcompat

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/loadgen"
)

// The load comparison runs Collie and ZooKeeper 3.8 side by side on this
// machine, each as its own process, driven by the same client
// (go-zookeeper) from the test process; the pipelined row by Collie's
// client instead, through loadgen, whose pipeline workload keeps many
// requests of a session in flight and checks read-your-writes. It is a benchmark, not a test: it
// runs only when COLLIE_BENCH=1 (scripts/bench.sh sets it) and takes several
// minutes.
//
// Settings, from the environment:
//
//	COLLIE_BENCH=1             run it
//	COLLIE_BENCH_DURATION      measured time of each workload (default 10s)
//	COLLIE_BENCH_WARMUP        unmeasured time before it (default 5s)
//	COLLIE_BENCH_NODES         znodes of the memory and restart part (default 1000000)
//	COLLIE_BENCH_ZK_HEAP       ZooKeeper's -Xmx (default 2g)
//	COLLIE_BENCH_BIN           a collie binary to run (default: build ./cmd/collie)
//	COLLIE_BENCH_REPORT        a file to write the result tables to
const (
	benchDataSize     = 1 << 10 // setData and getData values
	benchNodeDataSize = 100     // values of the many-znodes part
	benchFanout       = 1000    // children per parent in the many-znodes part
	benchLoaders      = 8       // sessions that create the many znodes
	benchTimeout      = 10 * time.Second
	benchStartTimeout = 5 * time.Minute
	// benchProbeInterval bounds how late a restart is seen to have finished.
	benchProbeInterval = 10 * time.Millisecond
	// benchClockTicks is the unit of utime and stime in /proc/<pid>/stat
	// (USER_HZ), 100 on every Linux architecture Go supports.
	benchClockTicks = 100
)

var benchSessions = []int{16, 64}

// The pipelined row: sessions, each with this many requests in flight.
const (
	benchPipelineSessions = 16
	benchPipelineInflight = 16
)

type benchSettings struct {
	duration, warmup time.Duration
	nodes            int
	zkHeap           string
	bin              string
	report           string
}

func benchSettingsFromEnv(t *testing.T) benchSettings {
	t.Helper()
	s := benchSettings{
		duration: 10 * time.Second,
		warmup:   5 * time.Second,
		nodes:    1_000_000,
		zkHeap:   cmp.Or(os.Getenv("COLLIE_BENCH_ZK_HEAP"), "2g"),
		bin:      os.Getenv("COLLIE_BENCH_BIN"),
		report:   os.Getenv("COLLIE_BENCH_REPORT"),
	}
	for name, d := range map[string]*time.Duration{"COLLIE_BENCH_DURATION": &s.duration, "COLLIE_BENCH_WARMUP": &s.warmup} {
		if v := os.Getenv(name); v != "" {
			var err error
			if *d, err = time.ParseDuration(v); err != nil {
				t.Fatalf("%s=%q: %v", name, v, err)
			}
		}
	}
	if v := os.Getenv("COLLIE_BENCH_NODES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < benchFanout || n%benchFanout != 0 {
			t.Fatalf("COLLIE_BENCH_NODES=%q: want a multiple of %d", v, benchFanout)
		}
		s.nodes = n
	}
	return s
}

// TestLoadAgainstZooKeeper measures Collie against ZooKeeper 3.8 on this
// machine: throughput and latency of setData and getData of 1 KiB at 16 and
// 64 sessions and of a pipelined mix of reads and writes, then the time to
// create many znodes, the server's resident memory holding them, and the
// time from a kill -9 to a client's first read.
func TestLoadAgainstZooKeeper(t *testing.T) {
	if os.Getenv("COLLIE_BENCH") != "1" {
		t.Skip("a benchmark of several minutes: set COLLIE_BENCH=1 or run scripts/bench.sh")
	}
	settings := benchSettingsFromEnv(t)
	zkref.Require(t, zkref.Available())
	bin := settings.bin
	if bin == "" {
		bin = collieBinary(t)
	}
	collie := &benchCollie{bin: bin, dir: t.TempDir(), port: freeLocalPort(t)}
	collie.start(t)
	t.Cleanup(collie.kill)
	zookeeper := &benchZooKeeper{opts: []zkref.Option{
		zkref.WithFullJIT(),
		zkref.WithJVMArgs("-Xmx" + settings.zkHeap),
		// 64 sessions and the probes come from one address.
		zkref.WithConfig("maxClientCnxns", "0"),
	}}
	zookeeper.start(t, "")
	servers := []benchServer{collie, zookeeper}

	var report strings.Builder
	fmt.Fprintf(&report, "Load: %v measured after %v of warm-up per server and row, Collie then ZooKeeper; "+
		"closed loop, one request in flight per session (%d in the pipelined row). Load average before: %s.\n\n",
		settings.duration, settings.warmup, benchPipelineInflight, benchLoadAverage())
	report.WriteString(benchLoadTableHeader)
	setData := func(c *zk.Conn, path string, data []byte) error { _, err := c.Set(path, data, -1); return err }
	getData := func(c *zk.Conn, path string, _ []byte) error { _, _, err := c.Get(path); return err }
	workloads := []struct {
		name string
		op   func(c *zk.Conn, path string, data []byte) error
	}{
		{"setData 1 KiB", setData},
		{"getData 1 KiB", getData},
	}
	conns := make([][]*zk.Conn, len(servers))
	for i, s := range servers {
		conns[i] = benchPrepareSessions(t, s.addr(), slices.Max(benchSessions))
	}
	compare := func(name string, sessions int, op func(*zk.Conn, string, []byte) error) {
		var results [2]benchLoadResult
		for i, s := range servers {
			results[i] = benchRunLoad(t, conns[i][:sessions], s.pid(t), op, settings)
			t.Logf("%s, %s: %s", name, s.name(), results[i])
		}
		report.WriteString(benchLoadTableRow(name, results[0], results[1]))
	}
	for _, w := range workloads {
		for _, n := range benchSessions {
			compare(fmt.Sprintf("%s, %d sessions", w.name, n), n, w.op)
		}
	}
	var piped [2]benchLoadResult
	var checked [2]loadgen.ReadYourWrites
	for i, s := range servers {
		piped[i], checked[i] = benchRunPipeline(t, s, settings)
		t.Logf("pipelined, %s: %s; read-your-writes %+v", s.name(), piped[i], checked[i])
	}
	report.WriteString(benchLoadTableRow(fmt.Sprintf("pipelined %.0f%% reads 1 KiB, %d sessions × %d in flight",
		100*loadgen.DefaultReadRatio, benchPipelineSessions, benchPipelineInflight), piped[0], piped[1]))

	// Then a tree of many znodes: how fast it is built, what it costs in
	// memory, how writes fare while the servers snapshot it, and how long
	// a restart takes to load it.
	var many [2]benchManyResult
	for i, s := range servers {
		many[i] = benchCreateMany(t, s, settings.nodes)
	}
	maxSessions := slices.Max(benchSessions)
	compare(fmt.Sprintf("setData 1 KiB, %d sessions, %d more znodes in the tree", maxSessions, settings.nodes), maxSessions, setData)
	fmt.Fprintf(&report, "\nLoad average after: %s.\n", benchLoadAverage())
	fmt.Fprintf(&report, "\nThe pipelined row is `collie bench -workload pipeline` (Collie's Go client, not go-zookeeper): "+
		"reads are half getData, a quarter each exists and getChildren; writes three in four setData, the fourth a create or "+
		"delete of a child; every session works on znodes of its own. Read-your-writes held on %s of Collie and %s of ZooKeeper.\n",
		benchReadsChecked(checked[0]), benchReadsChecked(checked[1]))
	for _, cs := range conns {
		for _, c := range cs {
			c.Close()
		}
	}
	for i, s := range servers {
		benchRestartMany(t, s, settings.nodes, &many[i])
		t.Logf("%d znodes, %s: %+v", settings.nodes, s.name(), many[i])
	}
	fmt.Fprintf(&report, "\n%d znodes of %d bytes (multis of %d creates from %d sessions), then kill -9 and restart.\n\n",
		settings.nodes, benchNodeDataSize, benchFanout, benchLoaders)
	report.WriteString(benchManyTable(many[0], many[1]))
	fmt.Fprintf(&report, "\nZooKeeper: JVM -Xmx%s, default collector; both servers fsync every write (ZooKeeper forceSync=yes).\n", settings.zkHeap)
	if z := many[1]; z.liveHeap >= 0 {
		fmt.Fprintf(&report, "ZooKeeper with %d znodes, after a full GC (jcmd GC.run): heap in use %.0f MiB, RSS %.0f MiB.\n",
			settings.nodes, float64(z.liveHeap)/(1<<20), float64(z.rssAfterGC)/(1<<20))
	}

	t.Logf("results:\n%s", report.String())
	if settings.report != "" {
		if err := os.WriteFile(settings.report, []byte(report.String()), 0o644); err != nil {
			t.Errorf("write the report: %v", err)
		}
	}
}

// benchLoadAverage returns the system's load averages over 1, 5 and 15
// minutes: other work on the machine skews the results.
func benchLoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	fields := strings.Fields(string(b))
	if err != nil || len(fields) < 3 {
		return "unknown"
	}
	return strings.Join(fields[:3], " ")
}

// benchServer is one of the two servers under comparison.
type benchServer interface {
	name() string
	addr() string
	pid(t *testing.T) int
	dataDir() string
	// restart kills the server with SIGKILL and starts it again on the
	// same data. It returns once the new process runs, or, if it cannot
	// tell that, once the new process serves.
	restart(t *testing.T)
}

// benchCollie is a Collie server run from its binary, so that its memory
// and CPU are its own.
type benchCollie struct {
	bin, dir string
	port     int
	extra    []string // more zoo.cfg lines

	cmd    *exec.Cmd
	exited chan struct{}
}

func (p *benchCollie) name() string    { return "Collie" }
func (p *benchCollie) addr() string    { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }
func (p *benchCollie) dataDir() string { return filepath.Join(p.dir, "data") }

func (p *benchCollie) pid(*testing.T) int { return p.cmd.Process.Pid }

// start runs the server with ZooKeeper's defaults but for the settings a
// benchmark on one machine needs, and waits until it serves.
func (p *benchCollie) start(t *testing.T) {
	t.Helper()
	cfg := strings.Join([]string{
		"tickTime=2000",
		"dataDir=" + p.dataDir(),
		"clientPort=" + strconv.Itoa(p.port),
		"clientPortAddress=127.0.0.1",
		"maxClientCnxns=0",
		"admin.enableServer=false",
		"4lw.commands.whitelist=*",
	}, "\n") + "\n"
	for _, l := range p.extra {
		cfg += l + "\n"
	}
	cfgPath := filepath.Join(p.dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p.launch(t, cfgPath)
	if err := benchAwaitRead(p.addr(), "/", time.Now().Add(benchStartTimeout)); err != nil {
		t.Fatalf("collie did not serve: %v; its log is %s", err, filepath.Join(p.dir, "collie.log"))
	}
}

func (p *benchCollie) launch(t *testing.T, cfgPath string) {
	t.Helper()
	logFile, err := os.OpenFile(filepath.Join(p.dir, "collie.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(p.bin, "server", "-c", cfgPath)
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The kernel kills the server if the test binary dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start collie: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		// The exit status of a killed server says nothing.
		_ = cmd.Wait()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
}

func (p *benchCollie) kill() {
	if p.cmd == nil {
		return
	}
	// The error only says the process has already exited.
	_ = p.cmd.Process.Kill()
	<-p.exited
}

func (p *benchCollie) restart(t *testing.T) {
	p.kill()
	p.launch(t, filepath.Join(p.dir, "zoo.cfg"))
}

// benchZooKeeper is ZooKeeper 3.8 run by zkref.
type benchZooKeeper struct {
	opts []zkref.Option
	srv  *zkref.Server
}

func (p *benchZooKeeper) name() string    { return "ZooKeeper" }
func (p *benchZooKeeper) addr() string    { return p.srv.Addr() }
func (p *benchZooKeeper) dataDir() string { return p.srv.DataDir() }

// start runs ZooKeeper on dataDir, or on a fresh one if it is "", and
// returns once it serves.
func (p *benchZooKeeper) start(t *testing.T, dataDir string) {
	t.Helper()
	opts := p.opts
	if dataDir != "" {
		opts = append(slices.Clip(opts), zkref.WithDataDir(dataDir))
	}
	p.srv = zkref.Start(t, opts...)
}

// restart waits for ZooKeeper to serve again, unlike Collie's: zkref.Start
// only returns then, polling every 50ms.
func (p *benchZooKeeper) restart(t *testing.T) {
	dir := p.srv.DataDir()
	p.srv.Kill()
	p.start(t, dir)
}

// pid finds the JVM by the temporary directory zkref gives it, which is
// on its command line.
func (p *benchZooKeeper) pid(t *testing.T) int {
	t.Helper()
	want := "-Djava.io.tmpdir=" + filepath.Dir(p.srv.LogPath()) + "\x00"
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), want) {
			return pid
		}
	}
	t.Fatalf("no process with %q on its command line", strings.TrimSuffix(want, "\x00"))
	return 0
}

// liveHeap forces a full collection in the JVM and returns the heap it
// still uses: what the data needs, which -Xmx must leave room above. It
// returns -1 when the JDK's jcmd is not installed.
func (p *benchZooKeeper) liveHeap(t *testing.T) int64 {
	t.Helper()
	jcmd, err := exec.LookPath("jcmd")
	if err != nil {
		return -1
	}
	pid := strconv.Itoa(p.pid(t))
	if out, err := exec.Command(jcmd, pid, "GC.run").CombinedOutput(); err != nil {
		t.Fatalf("jcmd GC.run: %v\n%s", err, out)
	}
	out, err := exec.Command(jcmd, pid, "GC.heap_info").CombinedOutput()
	if err != nil {
		t.Fatalf("jcmd GC.heap_info: %v\n%s", err, out)
	}
	// The first line of the heap is like "garbage-first heap   total
	// 2097152K, used 412345K [0x...".
	for line := range strings.Lines(string(out)) {
		_, used, ok := strings.Cut(line, " used ")
		if !ok || !strings.Contains(line, " total ") {
			continue
		}
		used, _, _ = strings.Cut(used, "K")
		kb, err := strconv.ParseInt(used, 10, 64)
		if err != nil {
			t.Fatalf("jcmd GC.heap_info: %q: %v", line, err)
		}
		return kb << 10
	}
	t.Fatalf("jcmd GC.heap_info: no heap usage in\n%s", out)
	return 0
}

// benchAwaitRead polls addr until a new session reads path, or deadline passes.
func benchAwaitRead(addr, path string, deadline time.Time) error {
	for {
		err := benchReadOnce(addr, path)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(benchProbeInterval)
	}
}

// benchReadOnce opens a session and reads path. It gives up at the first sign
// that the server does not serve yet, rather than let the client back off
// for a second before it retries.
func benchReadOnce(addr, path string) error {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	nc.Close()
	c, events, err := zk.Connect([]string{addr}, benchTimeout, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		return err
	}
	defer c.Close()
	timer := time.NewTimer(benchTimeout)
	defer timer.Stop()
	for {
		select {
		case ev := <-events:
			switch ev.State {
			case zk.StateHasSession:
				_, _, err := c.Get(path)
				return err
			case zk.StateDisconnected, zk.StateExpired, zk.StateAuthFailed:
				return fmt.Errorf("no session with %s: %v", addr, ev.State)
			}
		case <-timer.C:
			return fmt.Errorf("no session with %s in %v", addr, benchTimeout)
		}
	}
}

func benchSessionPath(i int) string { return fmt.Sprintf("/bench/s%02d", i) }

// benchPrepareSessions opens n sessions and creates the node of each, holding
// 1 KiB.
func benchPrepareSessions(t *testing.T, addr string, n int) []*zk.Conn {
	t.Helper()
	conns := make([]*zk.Conn, n)
	for i := range conns {
		conns[i] = dial(t, addr)
	}
	data := make([]byte, benchDataSize)
	if _, err := conns[0].Create("/bench", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create /bench on %s: %v", addr, err)
	}
	for i := range conns {
		if _, err := conns[0].Create(benchSessionPath(i), data, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s on %s: %v", benchSessionPath(i), addr, err)
		}
	}
	return conns
}

type benchLoadResult struct {
	ops           int
	elapsed       time.Duration
	p50, p99, max time.Duration
	// serverCPU and clientCPU are the CPU time of the server's process and
	// of the test process over the measured interval.
	serverCPU, clientCPU time.Duration
}

func (r benchLoadResult) opsPerSec() float64 { return float64(r.ops) / r.elapsed.Seconds() }

// cpuPerOp is the server's CPU time per operation in microseconds.
func (r benchLoadResult) cpuPerOp() float64 {
	return float64(r.serverCPU.Microseconds()) / float64(max(r.ops, 1))
}

func (r benchLoadResult) String() string {
	return fmt.Sprintf("%.0f ops/s, p50 %v, p99 %v, max %v, server CPU %.1f µs/op (%.0f%% of a core), client CPU %.0f%% of a core",
		r.opsPerSec(), r.p50, r.p99, r.max, r.cpuPerOp(),
		100*r.serverCPU.Seconds()/r.elapsed.Seconds(), 100*r.clientCPU.Seconds()/r.elapsed.Seconds())
}

// Phases of a load run.
const (
	benchPhaseWarmup int32 = iota
	benchPhaseMeasure
	benchPhaseStop
)

// benchRunLoad runs op in a closed loop, one goroutine per session, each on its
// own node; only operations that start and end within the measured
// interval count.
func benchRunLoad(t *testing.T, conns []*zk.Conn, pid int, op func(*zk.Conn, string, []byte) error, s benchSettings) benchLoadResult {
	t.Helper()
	data := make([]byte, benchDataSize)
	return benchClosedLoop(t, pid, s, len(conns), func(i int) error {
		path := benchSessionPath(i)
		if err := op(conns[i], path, data); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}

// benchClosedLoop runs op in a closed loop in each of workers goroutines
// (op gets the worker's number), for s.warmup and then s.duration, while
// measuring the CPU time of the process pid and of the test. Only
// operations that start and end within the measured interval count; an
// error fails the test.
func benchClosedLoop(t *testing.T, pid int, s benchSettings, workers int, op func(worker int) error) benchLoadResult {
	t.Helper()
	var phase atomic.Int32
	latencies := make([][]time.Duration, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 1<<16)
			for {
				p := phase.Load()
				if p == benchPhaseStop {
					break
				}
				start := time.Now()
				if err := op(i); err != nil {
					errs[i] = err
					break
				}
				took := time.Since(start)
				if p == benchPhaseMeasure && phase.Load() == benchPhaseMeasure {
					lat = append(lat, took)
				}
			}
			latencies[i] = lat
		})
	}
	time.Sleep(s.warmup)
	serverBefore, clientBefore := benchProcessCPU(t, pid), benchSelfCPU(t)
	start := time.Now()
	phase.Store(benchPhaseMeasure)
	time.Sleep(s.duration)
	phase.Store(benchPhaseStop)
	elapsed := time.Since(start)
	serverAfter, clientAfter := benchProcessCPU(t, pid), benchSelfCPU(t)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	all := slices.Concat(latencies...)
	slices.Sort(all)
	if len(all) == 0 {
		t.Fatal("no operation completed in the measured interval")
	}
	return benchLoadResult{
		ops: len(all), elapsed: elapsed,
		p50: all[len(all)*50/100], p99: all[len(all)*99/100], max: all[len(all)-1],
		serverCPU: serverAfter - serverBefore, clientCPU: clientAfter - clientBefore,
	}
}

// benchRunPipeline runs loadgen's pipeline workload against s: an
// unmeasured run as the warm-up, then the measured one, with the CPU time
// of the server and of the test process taken around it (which thus
// includes connecting and making and removing the run's few hundred
// znodes). It returns what was measured and what the read-your-writes
// check saw; an error or a violation fails the test.
func benchRunPipeline(t *testing.T, s benchServer, settings benchSettings) (benchLoadResult, loadgen.ReadYourWrites) {
	t.Helper()
	cfg := loadgen.Config{
		Connect:        s.addr(),
		Workload:       "pipeline",
		Clients:        benchPipelineSessions,
		Inflight:       benchPipelineInflight,
		Size:           benchDataSize,
		ReadRatio:      loadgen.DefaultReadRatio,
		Prefix:         "/bench-pipeline",
		SessionTimeout: benchTimeout,
	}
	run := func(d time.Duration) loadgen.Result {
		cfg.Duration = d
		report, err := loadgen.Run(t.Context(), cfg)
		if err != nil {
			t.Fatalf("%s: pipelined load: %v", s.name(), err)
		}
		res := report.Results[0]
		if rw := res.ReadYourWrites; res.Errors > 0 || rw == nil || rw.Violations > 0 {
			t.Fatalf("%s: pipelined load: %d errors (first: %s), read-your-writes %+v", s.name(), res.Errors, res.FirstError, rw)
		}
		return res
	}
	if settings.warmup > 0 {
		run(settings.warmup)
	}
	pid := s.pid(t)
	serverBefore, clientBefore := benchProcessCPU(t, pid), benchSelfCPU(t)
	res := run(settings.duration)
	serverAfter, clientAfter := benchProcessCPU(t, pid), benchSelfCPU(t)
	return benchLoadResult{
		ops: int(res.Ops), elapsed: res.Elapsed,
		p50: res.Latency.P50, p99: res.Latency.P99, max: res.Latency.Max,
		serverCPU: serverAfter - serverBefore, clientCPU: clientAfter - clientBefore,
	}, *res.ReadYourWrites
}

// benchReadsChecked says how many reads were checked and how many of
// them were sent behind a write of their session in progress.
func benchReadsChecked(rw loadgen.ReadYourWrites) string {
	return fmt.Sprintf("%d reads (%.0f%% of them sent behind a write of their session in progress)",
		rw.Checked, 100*rw.BehindShare())
}

// benchProcessCPU returns the user and system CPU time a process has used.
func benchProcessCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces; the fields after
	// it start with the state (field 3), so utime and stime (fields 14
	// and 15) are the 12th and 13th.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(fields) < 13 {
		t.Fatalf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatalf("/proc/%d/stat: %v", pid, err)
	}
	return time.Duration(utime+stime) * time.Second / benchClockTicks
}

func benchSelfCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchMemory returns a process's resident set size and its peak, in bytes.
func benchMemory(t *testing.T, pid int) (rss, peak int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		key, value, _ := strings.Cut(line, ":")
		var dst *int64
		switch key {
		case "VmRSS":
			dst = &rss
		case "VmHWM":
			dst = &peak
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/status: %s: %v", pid, strings.TrimSpace(line), err)
		}
		*dst = kb << 10
	}
	return rss, peak
}

// benchDirSize returns the disk space the files under dir take, as du
// counts it.
func benchDirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var size int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		// Blocks, not lengths: both servers preallocate log files, and
		// ZooKeeper's preallocation leaves them sparse.
		size += info.Sys().(*syscall.Stat_t).Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return size
}

type benchManyResult struct {
	createTime         time.Duration
	rss, peakRSS, disk int64
	// rssAfterWrites is the RSS after the setData run on the many znodes,
	// which makes both servers snapshot them.
	rssAfterWrites int64
	// liveHeap and rssAfterGC are the JVM's heap in use after a full
	// collection and its RSS then; liveHeap is -1 for Collie and when jcmd
	// is not installed.
	liveHeap, rssAfterGC int64
	restarts             [2]time.Duration
	rssAfterRestart      int64
}

func benchManyParent(i int) string { return fmt.Sprintf("/many/p%03d", i) }

// benchCreateMany creates nodes znodes of 100 bytes under nodes/1000
// parents, each parent's children in one multi, from a few sessions at
// once, and measures the server's memory and disk then.
func benchCreateMany(t *testing.T, s benchServer, nodes int) benchManyResult {
	t.Helper()
	parents := nodes / benchFanout
	var res benchManyResult
	{
		c := dial(t, s.addr())
		defer c.Close()
		if _, err := c.Create("/many", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("%s: create /many: %v", s.name(), err)
		}
	}
	conns := make([]*zk.Conn, benchLoaders)
	for i := range conns {
		conns[i] = dial(t, s.addr())
	}
	data := make([]byte, benchNodeDataSize)
	var next atomic.Int64
	errs := make([]error, len(conns))
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			for {
				p := int(next.Add(1)) - 1
				if p >= parents {
					return
				}
				ops := make([]any, 0, benchFanout+1)
				ops = append(ops, &zk.CreateRequest{Path: benchManyParent(p), Data: data, Acl: zk.WorldACL(zk.PermAll)})
				for k := range benchFanout - 1 {
					ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/c%03d", benchManyParent(p), k), Data: data, Acl: zk.WorldACL(zk.PermAll)})
				}
				if _, err := c.Multi(ops...); err != nil {
					errs[i] = fmt.Errorf("multi under %s: %w", benchManyParent(p), err)
					return
				}
			}
		})
	}
	wg.Wait()
	res.createTime = time.Since(start)
	for _, c := range conns {
		c.Close()
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("%s: %v", s.name(), err)
	}
	res.rss, res.peakRSS = benchMemory(t, s.pid(t))
	res.disk = benchDirSize(t, s.dataDir())
	return res
}

// benchRestartMany measures the memory of a server that holds the many
// znodes and has served writes since, then, twice, the time from kill -9
// to the first read of a new session. The first restart recovers from
// what the load left on disk; the second from what the first restart left
// (for ZooKeeper, the snapshot it takes when it starts). Last, it checks
// that no acknowledged create was lost.
func benchRestartMany(t *testing.T, s benchServer, nodes int, res *benchManyResult) {
	t.Helper()
	res.rssAfterWrites, _ = benchMemory(t, s.pid(t))
	res.liveHeap = -1
	if z, ok := s.(*benchZooKeeper); ok {
		res.liveHeap = z.liveHeap(t)
		res.rssAfterGC, _ = benchMemory(t, s.pid(t))
	}
	parents := nodes / benchFanout
	lastChild := fmt.Sprintf("%s/c%03d", benchManyParent(parents-1), benchFanout-2)
	for i := range res.restarts {
		start := time.Now()
		s.restart(t)
		if err := benchAwaitRead(s.addr(), lastChild, start.Add(benchStartTimeout)); err != nil {
			t.Fatalf("%s: no read after restart: %v", s.name(), err)
		}
		res.restarts[i] = time.Since(start)
	}
	res.rssAfterRestart, _ = benchMemory(t, s.pid(t))
	c := dial(t, s.addr())
	defer c.Close()
	_, stat, err := c.Exists("/many")
	if err != nil {
		t.Fatalf("%s: exists /many after restart: %v", s.name(), err)
	}
	children := stat.NumChildren
	_, stat, err = c.Exists(benchManyParent(parents - 1))
	if err != nil {
		t.Fatalf("%s: exists %s after restart: %v", s.name(), benchManyParent(parents-1), err)
	}
	if int(children) != parents || stat.NumChildren != benchFanout-1 {
		t.Errorf("%s lost acknowledged creates in a kill -9: /many has %d children, want %d; %s has %d, want %d",
			s.name(), children, parents, benchManyParent(parents-1), stat.NumChildren, benchFanout-1)
	}
}

const benchLoadTableHeader = `| workload | Collie ops/s | ZooKeeper ops/s | ratio | Collie p50 | ZooKeeper p50 | ratio | Collie p99 | ZooKeeper p99 | ratio | max Collie / ZooKeeper | server CPU µs/op Collie / ZooKeeper |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
`

func benchLoadTableRow(name string, c, z benchLoadResult) string {
	return fmt.Sprintf("| %s | %.0f | %.0f | %.2f | %s | %s | %.2f | %s | %s | %.2f | %s / %s | %.0f / %.0f |\n",
		name, c.opsPerSec(), z.opsPerSec(), c.opsPerSec()/z.opsPerSec(),
		benchMillis(c.p50), benchMillis(z.p50), c.p50.Seconds()/z.p50.Seconds(),
		benchMillis(c.p99), benchMillis(z.p99), c.p99.Seconds()/z.p99.Seconds(),
		benchMillis(c.max), benchMillis(z.max), c.cpuPerOp(), z.cpuPerOp())
}

func benchMillis(d time.Duration) string { return fmt.Sprintf("%.2f ms", d.Seconds()*1000) }

func benchManyTable(c, z benchManyResult) string {
	var b strings.Builder
	b.WriteString("| measure | Collie | ZooKeeper | Collie/ZooKeeper |\n|---|---:|---:|---:|\n")
	row := func(name string, cv, zv float64, format string) {
		fmt.Fprintf(&b, "| %s | "+format+" | "+format+" | %.2f |\n", name, cv, zv, cv/zv)
	}
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	row("create time (s)", c.createTime.Seconds(), z.createTime.Seconds(), "%.1f")
	row("RSS after creating (MiB)", mib(c.rss), mib(z.rss), "%.0f")
	row("peak RSS while creating (MiB)", mib(c.peakRSS), mib(z.peakRSS), "%.0f")
	row("data directory on disk (MiB, as du counts)", mib(c.disk), mib(z.disk), "%.0f")
	row("RSS after the setData run on them (MiB)", mib(c.rssAfterWrites), mib(z.rssAfterWrites), "%.0f")
	row("restart after kill -9, to first read (s)", c.restarts[0].Seconds(), z.restarts[0].Seconds(), "%.2f")
	row("second restart after kill -9 (s)", c.restarts[1].Seconds(), z.restarts[1].Seconds(), "%.2f")
	row("RSS after the restarts (MiB)", mib(c.rssAfterRestart), mib(z.rssAfterRestart), "%.0f")
	return b.String()
}
