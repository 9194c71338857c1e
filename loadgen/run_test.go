package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
)

// shortConfig is a run of a second or less with a few sessions.
func shortConfig(connect, workload, prefix string) Config {
	cfg := Config{
		Connect:  connect,
		Workload: workload,
		Clients:  3,
		Duration: 500 * time.Millisecond,
		Warmup:   100 * time.Millisecond,
		Size:     100,
		Prefix:   prefix,
	}
	switch workload {
	case "get", "mixed":
		cfg.Nodes = 20
		cfg.ReadRatio = 0.5
	case "pipeline":
		cfg.ReadRatio = 0.7 // with the default 16 in flight per session
	case "lock":
		cfg.Inflight = 2 // six contenders for one lock
	case "fill":
		cfg.Nodes = 2500
	}
	return cfg
}

// runChecked runs cfg and checks what every run must give: ops done, no
// errors, a report that encodes to JSON and back, and no subtree left.
func runChecked(t *testing.T, cfg Config) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	report, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, res := range report.Results {
		if res.Ops == 0 || res.Errors != 0 || res.Latency.P50 <= 0 || res.Latency.Max < res.Latency.P99 {
			t.Errorf("%s on %s: %d ops, %d errors (%s), p50 %v, p99 %v, max %v",
				cfg.Workload, res.Connect, res.Ops, res.Errors, res.FirstError, res.Latency.P50, res.Latency.P99, res.Latency.Max)
		}
		checkRemoved(t, res.Connect, cfg.Prefix)
	}
	checkJSON(t, report)
	var text bytes.Buffer
	if err := report.WriteText(&text); err != nil || !strings.Contains(text.String(), "ops/s") {
		t.Errorf("text report %q, %v", text.String(), err)
	}
	return report
}

// checkRemoved checks that a run left nothing under prefix on connect.
func checkRemoved(t *testing.T, connect, prefix string) {
	t.Helper()
	c, err := client.Dial(t.Context(), connect, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, _, err := c.Exists(t.Context(), prefix); err != nil || ok {
		children, _, _ := c.Children(t.Context(), prefix)
		t.Errorf("%s still exists on %s (%v), with %v", prefix, connect, err, children)
	}
}

// checkJSON checks that the JSON report parses and says what Report says.
func checkJSON(t *testing.T, report *Report) {
	t.Helper()
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Workload string
		Results  []struct {
			Ops       int64   `json:"ops"`
			OpsPerSec float64 `json:"ops_per_sec"`
			Latency   struct {
				P50, P99, Max float64
			} `json:"latency_ms"`
		}
		Ratio *Ratio `json:"ratio_b_over_a"`
	}
	if err := json.Unmarshal(buf.Bytes(), &parsed); err != nil {
		t.Fatalf("JSON report does not parse: %v\n%s", err, buf.String())
	}
	if parsed.Workload != report.Workload || len(parsed.Results) != len(report.Results) || (parsed.Ratio == nil) != (report.Ratio == nil) {
		t.Fatalf("JSON report %s does not match %+v", buf.String(), report)
	}
	for i, res := range parsed.Results {
		want := report.Results[i]
		if res.Ops != want.Ops || res.OpsPerSec != want.OpsPerSec || res.Latency.P99 != float64(want.Latency.P99)/1e6 {
			t.Errorf("JSON result %+v does not match %+v", res, want)
		}
	}
}

// checkNoLeaks waits until no goroutine of the client or of this package
// is left but the tests'.
func checkNoLeaks(t *testing.T) {
	t.Helper()
	var leaked []string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		leaked = leaked[:0]
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, "testing.tRunner") || strings.Contains(g, "testing.(*T).Run") {
				continue
			}
			if strings.Contains(g, "collie/loadgen.") || strings.Contains(g, "collie/client.") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%d goroutines left after the runs:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
}

// runEveryWorkload runs each workload briefly against connect, then an
// open loop.
func runEveryWorkload(t *testing.T, connect string) {
	for _, workload := range Workloads {
		t.Run(workload, func(t *testing.T) {
			report := runChecked(t, shortConfig(connect, workload, "/bench-"+workload))
			res := report.Results[0]
			if workload == "fill" && res.Znodes != 2500 {
				t.Errorf("fill made %d znodes, want 2500", res.Znodes)
			}
			if rw := res.ReadYourWrites; (workload == "pipeline") != (rw != nil) || (rw != nil && (rw.Checked == 0 || rw.Violations != 0)) {
				t.Errorf("%s: read-your-writes %+v", workload, rw)
			}
			if workload == "pipeline" && report.Inflight != DefaultPipelineInflight {
				t.Errorf("pipeline ran with %d in flight per session, want %d by default", report.Inflight, DefaultPipelineInflight)
			}
		})
	}
	t.Run("open loop", func(t *testing.T) {
		cfg := shortConfig(connect, "set", "/bench-open")
		cfg.Rate = 200
		cfg.Duration = time.Second
		res := runChecked(t, cfg).Results[0]
		// 200 due in the second: all are sent, however late.
		if res.Ops != 200 {
			t.Errorf("open loop at 200/s for 1s did %d ops, want 200", res.Ops)
		}
	})
	checkNoLeaks(t)
}

func TestWorkloadsOnCollie(t *testing.T) {
	srv := collietest.Start(t)
	runEveryWorkload(t, srv.Addr())
}

func TestWorkloadsOnZooKeeper(t *testing.T) {
	zk := zkref.Start(t)
	runEveryWorkload(t, zk.Addr())
}

func TestCompareCollieWithZooKeeper(t *testing.T) {
	zk := zkref.Start(t)
	collie := collietest.Start(t)
	cfg := shortConfig(zk.Addr(), "set", "/bench-compare")
	cfg.Compare = collie.Addr()
	cfg.Duration = 1200 * time.Millisecond
	cfg.Round = 300 * time.Millisecond
	var progress bytes.Buffer
	cfg.Progress = &progress
	report := runChecked(t, cfg)
	if len(report.Results) != 2 || report.Ratio == nil || report.Ratio.OpsPerSec <= 0 {
		t.Fatalf("comparison gave %+v", report)
	}
	a, b := report.Results[0], report.Results[1]
	if a.Label != "A" || a.Connect != zk.Addr() || b.Label != "B" || b.Connect != collie.Addr() {
		t.Errorf("results %s %s, %s %s; want A the first connect string, B the second", a.Label, a.Connect, b.Label, b.Connect)
	}
	// Each had four rounds of 300ms, each round until its last op ended.
	for _, res := range report.Results {
		if res.Elapsed < cfg.Duration || res.Elapsed > 2*cfg.Duration {
			t.Errorf("%s measured for %v, want about %v", res.Label, res.Elapsed, cfg.Duration)
		}
	}
	if got, want := report.Ratio.OpsPerSec, b.OpsPerSec/a.OpsPerSec; got != want {
		t.Errorf("ops/s ratio %v, want B/A = %v", got, want)
	}
	// The run lasts over two seconds: the progress line has been written.
	if !strings.Contains(progress.String(), "ops/s") || !slices.ContainsFunc(strings.Split(progress.String(), "\n"), func(l string) bool {
		return strings.HasPrefix(l, "A ") || strings.HasPrefix(l, "B ")
	}) {
		t.Errorf("progress: %q", progress.String())
	}
	checkNoLeaks(t)
}

func TestChrootAndSpread(t *testing.T) {
	for connect, want := range map[string][]string{
		"a:1":              {"a:1"},
		"a:1, b:2,c:3":     {"a:1", "b:2", "c:3"},
		"a:1,b:2/app/x":    {"a:1/app/x", "b:2/app/x"},
		"a:1,,b:2/":        {"a:1", "b:2"},
		"[::1]:2181/chroo": {"[::1]:2181/chroo"},
	} {
		if got := spread(connect); !slices.Equal(got, want) {
			t.Errorf("spread(%q) = %q, want %q", connect, got, want)
		}
	}

	// Runs below a chroot stay inside it.
	srv := collietest.Start(t)
	c, err := client.Dial(t.Context(), srv.Addr(), client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.Create(t.Context(), "/app", nil, client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	for _, workload := range []string{"create", "lock"} {
		runChecked(t, shortConfig(srv.Addr()+"/app", workload, "/bench"))
	}
	if children, _, err := c.Children(t.Context(), "/"); err != nil || slices.Contains(children, "bench") {
		t.Errorf("children of / after a run below /app: %v, %v", children, err)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no connect string": {Workload: "set"},
		"unknown workload":  {Connect: "a:1", Workload: "nap"},
		"read ratio":        {Connect: "a:1", Workload: "mixed", ReadRatio: 1.5},
		"prefix":            {Connect: "a:1", Workload: "set", Prefix: "bench"},
		"root prefix":       {Connect: "a:1", Workload: "set", Prefix: "/"},
		"negative clients":  {Connect: "a:1", Workload: "set", Clients: -1},
		"negative rate":     {Connect: "a:1", Workload: "set", Rate: -1},
	} {
		if _, err := Run(t.Context(), cfg); err == nil {
			t.Errorf("%s: Run accepted %+v", name, cfg)
		}
	}
}
