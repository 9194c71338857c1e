package zkcompat

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/server/metrics"
)

// metricsExclusions are the metrics ZooKeeper 3.8 serves through its
// Prometheus provider that Collie does not, each with the reason. The
// comparison checks that each is still served by ZooKeeper and not by
// Collie, so the list cannot go stale.
var metricsExclusions = map[string]string{}

// compileMetricsProvider compiles the test's MetricsProvider for
// ZooKeeper, which stands in for the Prometheus provider Debian's
// ZooKeeper lacks, and returns the directory of its classes.
func compileMetricsProvider(t *testing.T) string {
	t.Helper()
	zkref.Require(t, zkref.Available())
	javac, err := exec.LookPath("javac")
	zkref.Require(t, err)
	classpath, err := zkref.Classpath()
	zkref.Require(t, err)
	dir := t.TempDir()
	out, err := exec.Command(javac, "-cp", classpath, "-d", dir, filepath.Join("testdata", "metrics", "RecordingMetricsProvider.java")).CombinedOutput()
	if err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return dir
}

// zkMetricsOptions run ZooKeeper with the test's provider, on a free port
// it writes to metrics.port in the server's directory.
func zkMetricsOptions(classes string) []zkref.Option {
	return []zkref.Option{
		zkref.WithClasspath(classes),
		zkref.WithConfig("metricsProvider.className", "RecordingMetricsProvider"),
		zkref.WithConfig("metricsProvider.httpHost", "127.0.0.1"),
		zkref.WithConfig("metricsProvider.httpPort", "0"),
		zkref.WithConfig("metricsProvider.portFile", "metrics.port"),
	}
}

// zkMetricsAddr waits for the port file of the ZooKeeper server in dir.
func zkMetricsAddr(t *testing.T, dir string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "metrics.port"))
		if err == nil {
			return "127.0.0.1:" + strings.TrimSpace(string(b))
		}
		if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			t.Fatalf("ZooKeeper's metrics port: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// collieMetricsLines are the zoo.cfg lines that serve Collie's metrics
// as ZooKeeper's Prometheus provider would, on port.
func collieMetricsLines(port int) []string {
	return []string{
		"metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider",
		"metricsProvider.httpHost=127.0.0.1",
		"metricsProvider.httpPort=" + strconv.Itoa(port),
	}
}

// scrapeMetrics reads the metrics at addr.
func scrapeMetrics(t *testing.T, addr string) map[string]*metrics.Family {
	t.Helper()
	hc := http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/metrics: %d %v\n%s", addr, resp.StatusCode, err, body)
	}
	f, err := metrics.Parse(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("%s/metrics: %v", addr, err)
	}
	return f
}

// metricsWorkload creates n nodes under a new top-level node named after
// the server, reads and changes them with watches set, and ends an
// ephemeral node's session.
func metricsWorkload(t *testing.T, addr, top string, n int) {
	t.Helper()
	c := connectSession(t, addr, 10*time.Second)
	if _, err := c.Create(top, []byte("top"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	for i := range n - 1 {
		if _, err := c.Create(fmt.Sprintf("%s/n%d", top, i), []byte("data"), 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	path := top + "/n0"
	_, _, events, err := c.GetW(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.ChildrenW(top); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(path, []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("event %v, want NodeDataChanged", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
	if _, _, err := c.Exists(top + "/none"); err != nil {
		t.Fatal(err)
	}
	e := connectSession(t, addr, 10*time.Second)
	if _, err := e.Create(top+"/ephemeral", nil, zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	e.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, _, err := c.Exists(top + "/ephemeral")
		if err == nil && !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ephemeral node is still there: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// compareMetrics checks that every metric of ZooKeeper's scrape is in
// Collie's with the same type and label names (those of samples both
// have), but for metricsExclusions.
func compareMetrics(t *testing.T, role string, zkf, collie map[string]*metrics.Family) {
	t.Helper()
	// ServerMetrics alone registers well over a hundred.
	if len(zkf) < 100 {
		t.Fatalf("%s: ZooKeeper serves %d metrics; its provider is not recording them", role, len(zkf))
	}
	names := make([]string, 0, len(zkf))
	for name := range zkf {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		want, got := zkf[name], collie[name]
		if reason, excluded := metricsExclusions[name]; excluded {
			if got != nil {
				t.Errorf("%s: Collie serves %s, listed as excluded (%s)", role, name, reason)
			}
			continue
		}
		switch {
		case got == nil:
			t.Errorf("%s: ZooKeeper's %s (%s %v) is missing from Collie", role, name, want.Type, want.LabelNames())
		case got.Type != want.Type:
			t.Errorf("%s: %s is a %s in Collie, a %s in ZooKeeper", role, name, got.Type, want.Type)
		case len(got.Points) > 0 && len(want.Points) > 0 && !slices.Equal(got.LabelNames(), want.LabelNames()):
			t.Errorf("%s: %s has labels %v in Collie, %v in ZooKeeper", role, name, got.LabelNames(), want.LabelNames())
		case want.Type == "summary" && len(got.Points) > 0 && len(want.Points) > 0 && !slices.Equal(quantiles(got), quantiles(want)):
			t.Errorf("%s: %s has quantiles %v in Collie, %v in ZooKeeper", role, name, quantiles(got), quantiles(want))
		}
	}
	for name, reason := range metricsExclusions {
		if zkf[name] == nil {
			t.Errorf("%s: %s is listed as excluded (%s) but ZooKeeper does not serve it", role, name, reason)
		}
	}
}

// quantiles returns the quantile labels of a summary's samples.
func quantiles(f *metrics.Family) []string {
	var qs []string
	for _, p := range f.Points {
		if q, ok := p.Labels["quantile"]; ok && !slices.Contains(qs, q) {
			qs = append(qs, q)
		}
	}
	slices.Sort(qs)
	return qs
}

// value returns a sample's value from a scrape: a family's own, or a
// summary's name_count or name_sum.
func value(t *testing.T, f map[string]*metrics.Family, name string) float64 {
	t.Helper()
	family := f[name]
	for _, suffix := range []string{"_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && family == nil {
			family = f[base]
		}
	}
	v, ok := family.Value(name)
	if !ok {
		t.Fatalf("no sample %s", name)
	}
	return v
}

// checkWorkloadValues checks what the workload of n nodes changed between
// two scrapes of one server.
func checkWorkloadValues(t *testing.T, who string, before, after map[string]*metrics.Family, n int) {
	t.Helper()
	if d := value(t, after, "znode_count") - value(t, before, "znode_count"); d != float64(n) {
		t.Errorf("%s: znode_count grew by %v after %d creates, want %d", who, d, n, n)
	}
	for _, counter := range []string{"bytes_received_count", "updatelatency_count", "readlatency_count", "connection_request_count"} {
		if value(t, after, counter) <= value(t, before, counter) {
			t.Errorf("%s: %s did not grow with the workload: %v then %v", who, counter, value(t, before, counter), value(t, after, counter))
		}
	}
	if v, ok := after["write_per_namespace"].Value("write_per_namespace_count", "key", "m"); !ok || v < float64(n) {
		t.Errorf("%s: write_per_namespace_count{key=\"m\"} = %v %v, want at least %d", who, v, ok, n)
	}
}

func TestMetricsMatchZooKeeperStandalone(t *testing.T) {
	classes := compileMetricsProvider(t)
	zks := zkref.Start(t, zkMetricsOptions(classes)...)
	zkAddr := zkMetricsAddr(t, zks.Dir())

	dir := t.TempDir()
	port, metricsPort := freeLocalPort(t), freeLocalPort(t)
	cfg := fmt.Sprintf("dataDir=data\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\npreAllocSize=1024\n%s\n",
		port, strings.Join(collieMetricsLines(metricsPort), "\n"))
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startCollie(t, dir, t.Output(), "server", "-c", "zoo.cfg", "-log-level", "warn")
	collieAddr := "127.0.0.1:" + strconv.Itoa(port)
	p.waitServing(t, collieAddr, "ruok", "imok")
	collieMetrics := "127.0.0.1:" + strconv.Itoa(metricsPort)

	const n = 20
	zkBefore, collieBefore := scrapeMetrics(t, zkAddr), scrapeMetrics(t, collieMetrics)
	metricsWorkload(t, zks.Addr(), "/m", n)
	metricsWorkload(t, collieAddr, "/m", n)
	zkAfter, collieAfter := scrapeMetrics(t, zkAddr), scrapeMetrics(t, collieMetrics)
	compareMetrics(t, "standalone", zkAfter, collieAfter)
	checkWorkloadValues(t, "ZooKeeper", zkBefore, zkAfter, n)
	checkWorkloadValues(t, "Collie", collieBefore, collieAfter, n)
	// The workload's two sessions came without TLS from the loopback
	// address (ZooKeeper counts these with its Netty server only).
	if d := value(t, collieAfter, "non_mtls_local_conn_count") - value(t, collieBefore, "non_mtls_local_conn_count"); d < 2 {
		t.Errorf("Collie: non_mtls_local_conn_count grew by %v with two plaintext connections", d)
	}
	for _, name := range []string{"learners", "quorum_size", "synced_observers"} {
		if zkAfter[name] != nil || collieAfter[name] != nil {
			t.Errorf("a standalone server serves %s: ZooKeeper %v, Collie %v", name, zkAfter[name] != nil, collieAfter[name] != nil)
		}
	}
}

func TestMetricsMatchZooKeeperEnsemble(t *testing.T) {
	classes := compileMetricsProvider(t)
	zke := zkref.StartEnsemble(t, 3, zkMetricsOptions(classes)...)
	metricsPorts := []int{freeLocalPort(t), freeLocalPort(t), freeLocalPort(t)}
	ce := startProcessEnsembleEach(t, 3, 500*time.Millisecond, func(i int) []string { return collieMetricsLines(metricsPorts[i]) })

	zkLeader := zke.Leader()
	collieLeader := awaitLeader(t, ce.addrs, -1)
	zkFollower, collieFollower := (zkLeader+1)%3, (collieLeader+1)%3
	const n = 20
	collieBefore := scrapeMetrics(t, "127.0.0.1:"+strconv.Itoa(metricsPorts[collieLeader]))
	metricsWorkload(t, zke.Members()[zkFollower].Addr(), "/m", n)
	metricsWorkload(t, ce.addrs[collieFollower], "/m", n)

	for _, role := range []struct {
		name       string
		zk, collie int
	}{{"leader", zkLeader, collieLeader}, {"follower", zkFollower, collieFollower}} {
		zkf := scrapeMetrics(t, zkMetricsAddr(t, zke.Members()[role.zk].Dir()))
		collie := scrapeMetrics(t, "127.0.0.1:"+strconv.Itoa(metricsPorts[role.collie]))
		compareMetrics(t, role.name, zkf, collie)
		for _, name := range []string{"learners", "synced_followers", "leader_uptime", "quorum_size"} {
			if (zkf[name] != nil) != (collie[name] != nil) {
				t.Errorf("%s: %s served by ZooKeeper %v, by Collie %v", role.name, name, zkf[name] != nil, collie[name] != nil)
			}
		}
		if role.name != "leader" {
			continue
		}
		if v := value(t, collie, "quorum_size"); v != 3 {
			t.Errorf("Collie's leader: quorum_size %v, want 3", v)
		}
		if v := value(t, collie, "synced_followers"); v != 2 {
			t.Errorf("Collie's leader: synced_followers %v, want 2", v)
		}
		if d := value(t, collie, "commit_count") - value(t, collieBefore, "commit_count"); d < n {
			t.Errorf("Collie's leader: commit_count grew by %v with %d writes and more", d, n)
		}
	}
}

// getReady fetches /ready at addr and returns its status code and body.
func getReady(addr string) (int, string, error) {
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + addr + "/ready")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// awaitReady waits, at most 30 seconds, until /ready at addr answers code.
func awaitReady(t *testing.T, addr string, code int) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, body, err := getReady(addr)
		if err == nil && got == code {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("/ready at %s: %d %q %v; want %d within 30s", addr, got, body, err, code)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A member of a three-server ensemble is ready while it has a quorum: two
// members stopped, it says it is not, and why; one back, it is again. Its
// /live answers all along.
func TestReadyDuringQuorumLoss(t *testing.T) {
	adminPorts := []int{freeLocalPort(t), freeLocalPort(t), freeLocalPort(t)}
	metricsPorts := []int{freeLocalPort(t), freeLocalPort(t), freeLocalPort(t)}
	e := startProcessEnsembleEach(t, 3, 500*time.Millisecond, func(i int) []string {
		return append(collieMetricsLines(metricsPorts[i]),
			"admin.enableServer=true", "admin.serverAddress=127.0.0.1", "admin.serverPort="+strconv.Itoa(adminPorts[i]))
	})
	admin := func(i int) string { return "127.0.0.1:" + strconv.Itoa(adminPorts[i]) }
	for i := range 3 {
		awaitReady(t, admin(i), http.StatusOK)
		awaitReady(t, "127.0.0.1:"+strconv.Itoa(metricsPorts[i]), http.StatusOK)
	}
	e.procs[1].stop(t)
	e.procs[2].stop(t)
	body := awaitReady(t, admin(0), http.StatusServiceUnavailable)
	if !strings.Contains(body, `"reason": "no leader"`) {
		t.Errorf("/ready without a quorum: %s", body)
	}
	awaitReady(t, "127.0.0.1:"+strconv.Itoa(metricsPorts[0]), http.StatusServiceUnavailable)
	if code, _, err := getReady(admin(0)); err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("/ready again: %d %v", code, err)
	}
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + admin(0) + "/live")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/live without a quorum: %v %v", resp, err)
	}
	resp.Body.Close()
	if v, ok := scrapeMetrics(t, "127.0.0.1:"+strconv.Itoa(metricsPorts[0]))["collie_ready"].Value("collie_ready", "member", "1"); !ok || v != 0 {
		t.Errorf("collie_ready %v %v without a quorum, want 0", v, ok)
	}
	e.restart(t, 1)
	awaitReady(t, admin(0), http.StatusOK)
	awaitReady(t, admin(1), http.StatusOK)
}
