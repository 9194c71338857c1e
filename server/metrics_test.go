package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/metrics"
)

// The metrics port is opened only for ZooKeeper's Prometheus provider,
// serves the Go runtime's metrics only with metricsProvider.exportJvmInfo,
// and reads the server's values: znode_count follows creates.
func TestMetricsPort(t *testing.T) {
	if s := collietest.Start(t); s.Server().MetricsAddr() != nil {
		t.Errorf("a metrics port without metricsProvider.className: %v", s.Server().MetricsAddr())
	}
	for _, jvm := range []bool{true, false} {
		s := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
			c.PrometheusMetrics = true
			c.MetricsProviderHTTPHost = "127.0.0.1"
			c.MetricsProviderHTTPPort = collietest.FreePort(t)
			c.MetricsProviderExportJVM = jvm
		}))
		addr := s.Server().MetricsAddr()
		if addr == nil {
			t.Fatal("no metrics port")
		}
		scrape := func() map[string]*metrics.Family {
			t.Helper()
			hc := http.Client{Timeout: 10 * time.Second}
			resp, err := hc.Get("http://" + addr.String() + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			f, err := metrics.Parse(strings.NewReader(string(body)))
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %v\n%s", resp.StatusCode, err, body)
			}
			return f
		}
		before := scrape()
		if (before["go_goroutines"] != nil) != jvm {
			t.Errorf("exportJvmInfo=%v: go_goroutines served %v", jvm, before["go_goroutines"] != nil)
		}
		c, _ := connect(t, s.Addr())
		for _, p := range []string{"/a", "/a/b", "/c"} {
			if _, err := c.Create(p, []byte("x"), 0, acl); err != nil {
				t.Fatal(err)
			}
		}
		after := scrape()
		b, _ := before["znode_count"].Value("znode_count")
		a, _ := after["znode_count"].Value("znode_count")
		if a-b != 3 {
			t.Errorf("znode_count %v then %v after 3 creates", b, a)
		}
		if v, ok := after["write_per_namespace"].Value("write_per_namespace_count", "key", "a"); !ok || v != 2 {
			t.Errorf("write_per_namespace_count{key=\"a\"} = %v %v, want 2", v, ok)
		}
		if v, ok := after["collie_raft_applied_index"].Value("collie_raft_applied_index", "member", "1"); !ok || v < 3 {
			t.Errorf("collie_raft_applied_index = %v %v", v, ok)
		}
	}
}
