package metrics

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// scrape writes r and parses it back.
func scrape(t *testing.T, r *Registry) map[string]*Family {
	t.Helper()
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	families, err := Parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	return families
}

func TestZooKeeperKinds(t *testing.T) {
	r := New(Options{Member: "3", Read: func() Values {
		return Values{
			Gauges:    map[string]float64{"znode_count": 5, UnsuccessfulHandshake: 9},
			GaugeSets: map[string]map[string]float64{QuotaCountLimitPerNamespace: {"app": 10}},
			Collie:    []Sample{{Name: "collie_raft_term", Help: "term", Value: 2}, {Name: "collie_member_lag", Help: "lag", Value: 1, Labels: []Label{{"peer", "2"}}}},
		}
	}})
	r.Summary(ReadLatency).Observe(3)
	r.Summary(FsyncTime).Observe(1)
	r.SummarySet(WritePerNamespace).WithLabelValues("app").Observe(20)
	r.Counter(CommitCount).Add(4)
	f := scrape(t, r)

	tests := []struct {
		name   string
		typ    string
		labels []string
		sample string   // the sample checked
		with   []string // its labels
		value  float64
	}{
		{ReadLatency, "summary", []string{"quantile"}, ReadLatency + "_count", nil, 1},
		{ReadLatency, "summary", []string{"quantile"}, ReadLatency, []string{"quantile", "0.99"}, 3},
		{FsyncTime, "summary", []string{"quantile"}, FsyncTime, []string{"quantile", "0.5"}, 1},
		{WritePerNamespace, "summary", []string{"key", "quantile"}, WritePerNamespace + "_sum", []string{"key", "app"}, 20},
		{CommitCount, "counter", nil, CommitCount, nil, 4},
		// A gauge of Values by the name of a counter stays the counter.
		{UnsuccessfulHandshake, "counter", nil, UnsuccessfulHandshake, nil, 0},
		{"znode_count", "gauge", nil, "znode_count", nil, 5},
		{QuotaCountLimitPerNamespace, "gauge", []string{"key"}, QuotaCountLimitPerNamespace, []string{"key", "app"}, 10},
		{"collie_raft_term", "gauge", []string{"member"}, "collie_raft_term", []string{"member", "3"}, 2},
		{"collie_member_lag", "gauge", []string{"member", "peer"}, "collie_member_lag", []string{"member", "3", "peer", "2"}, 1},
	}
	for _, tt := range tests {
		fam := f[tt.name]
		if fam == nil {
			t.Errorf("%s missing", tt.name)
			continue
		}
		v, ok := fam.Value(tt.sample, tt.with...)
		if fam.Type != tt.typ || !slices.Equal(fam.LabelNames(), tt.labels) || !ok || v != tt.value {
			t.Errorf("%s: %s labels %v, %s%v = %v %v; want %s %v %v", tt.name, fam.Type, fam.LabelNames(), tt.sample, tt.with, v, ok, tt.typ, tt.labels, tt.value)
		}
	}
	// FsyncTime is a basic summary: the median only.
	if _, ok := f[FsyncTime].Value(FsyncTime, "quantile", "0.9"); ok {
		t.Error("fsynctime has a 0.9 quantile; ZooKeeper's basic summaries have the median only")
	}
	// Sets without a sample yet are declared all the same, as ZooKeeper's
	// provider declares them.
	for _, name := range []string{ReadPerNamespace, QuotaExceededErrorPerNamespace, QuotaBytesUsagePerNamespace, "ack_latency"} {
		if fam := f[name]; fam == nil || len(fam.Points) != 0 {
			t.Errorf("%s: %v, want a family without samples", name, fam)
		}
	}
	for _, m := range zookeeperMetrics {
		if f[m.name] == nil {
			t.Errorf("%s is not served", m.name)
		}
	}
	if f["go_goroutines"] != nil {
		t.Error("Go runtime metrics without Options.Runtime")
	}
}

func TestRuntime(t *testing.T) {
	f := scrape(t, New(Options{Runtime: true}))
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if f[name] == nil {
			t.Errorf("%s missing with Options.Runtime", name)
		}
	}
}

func TestCountersReadElsewhere(t *testing.T) {
	n := 0.0
	r := New(Options{Counters: map[string]func() float64{SnapCount: func() float64 { n++; return n }}})
	for want := 1.0; want <= 2; want++ {
		if got, _ := scrape(t, r)[SnapCount].Value(SnapCount); got != want {
			t.Errorf("scrape %v: snap_count %v", want, got)
		}
	}
}

func TestQuotas(t *testing.T) {
	tree := map[string]struct {
		data     string
		children []string
	}{
		"/zookeeper/quota":                          {"", []string{"app", "other", "junk"}},
		"/zookeeper/quota/app":                      {"", []string{"zookeeper_limits", "zookeeper_stats", "sub"}},
		"/zookeeper/quota/app/zookeeper_limits":     {"count=10,bytes=-1", nil},
		"/zookeeper/quota/app/zookeeper_stats":      {"count=3,bytes=40", nil},
		"/zookeeper/quota/app/sub":                  {"", []string{"zookeeper_limits", "zookeeper_stats"}},
		"/zookeeper/quota/app/sub/zookeeper_limits": {"count=-1,bytes=100,countHardLimit=5,byteHardLimit=-1", nil},
		"/zookeeper/quota/app/sub/zookeeper_stats":  {"count=1,bytes=7", nil},
		"/zookeeper/quota/other":                    {"", []string{"zookeeper_limits"}},
		"/zookeeper/quota/other/zookeeper_limits":   {"count=2;bytes=", nil},
		"/zookeeper/quota/junk":                     {"", []string{"zookeeper_stats"}},
		"/zookeeper/quota/junk/zookeeper_stats":     {"count=x,,bytes=9,=", nil},
	}
	got := Quotas(func(path string) ([]byte, []string, bool) {
		n, ok := tree[path]
		return []byte(n.data), n.children, ok
	})
	want := map[string]map[string]float64{
		QuotaCountLimitPerNamespace: {"app": 10 + 5, "other": 2},
		QuotaBytesLimitPerNamespace: {"app": -1 + 100, "other": -1},
		QuotaCountUsagePerNamespace: {"app": 3 + 1, "junk": -1},
		QuotaBytesUsagePerNamespace: {"app": 40 + 7, "junk": 9},
	}
	for name, w := range want {
		if !maps.Equal(got[name], w) {
			t.Errorf("%s = %v, want %v", name, got[name], w)
		}
	}
	if got := Quotas(func(string) ([]byte, []string, bool) { return nil, nil, false }); len(got[QuotaCountLimitPerNamespace]) != 0 {
		t.Errorf("without /zookeeper/quota: %v", got)
	}
}

func TestNamespace(t *testing.T) {
	for path, want := range map[string]string{"/a/b/c": "a", "/a": "a", "/": "", "": ""} {
		if got := Namespace(path); got != want {
			t.Errorf("Namespace(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, text := range []string{
		"x 1\n",
		"# TYPE x gauge\n# TYPE x gauge\n",
		"# TYPE x gauge\nx{a=\"1\" 1\n",
		"# TYPE x gauge\nx{a=\"1\",a=\"2\"} 1\n",
		"# TYPE x gauge\nx one\n",
		"# TYPE x nosuch\n",
		"# TYPE 9x gauge\n",
	} {
		if _, err := Parse(strings.NewReader(text)); err == nil {
			t.Errorf("Parse(%q) took it", text)
		}
	}
	f, err := Parse(strings.NewReader("# TYPE x summary\nx{key=\"a\\\"b,c\",quantile=\"0.5\"} 2 123\nx_count{key=\"a\\\"b,c\"} 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := f["x"].Value("x", "key", `a"b,c`, "quantile", "0.5"); !ok || v != 2 {
		t.Errorf("x = %v %v", v, ok)
	}
}

// FuzzParse feeds Parse anything: it never panics, and what it accepts is
// consistent: every sample belongs to a typed family by its name or the
// name with a summary's suffix.
func FuzzParse(f *testing.F) {
	var b strings.Builder
	r := New(Options{Read: func() Values {
		return Values{Gauges: map[string]float64{"znode_count": 5}, GaugeSets: map[string]map[string]float64{QuotaCountLimitPerNamespace: {`a"b\c`: 1}}}
	}})
	r.SummarySet(WritePerNamespace).WithLabelValues("app").Observe(3)
	if err := r.Write(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.String())
	f.Add("# TYPE x summary\nx{quantile=\"0.5\"} NaN\nx_count 0\n")
	f.Add("# TYPE x gauge\nx{a=\"\\\"\\n\"} +Inf 17\n")
	f.Fuzz(func(t *testing.T, text string) {
		families, err := Parse(strings.NewReader(text))
		if err != nil {
			return
		}
		for name, fam := range families {
			for _, p := range fam.Points {
				if p.Name != name && p.Name != name+"_sum" && p.Name != name+"_count" && p.Name != name+"_bucket" {
					t.Errorf("sample %s in family %s", p.Name, name)
				}
			}
			fam.LabelNames()
		}
	})
}
