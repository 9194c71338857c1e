// Package metrics owns the metrics a Collie server exports in Prometheus's
// text format: ZooKeeper 3.8's, under the names, types and labels its
// PrometheusMetricsProvider gives them, so that ZooKeeper's dashboards and
// alert rules work unchanged, and Collie's own under a collie_ prefix.
//
// ZooKeeper's provider maps its kinds of metric so:
//
//	Counter            counter, no label
//	CounterSet         counter with a "key" label
//	Summary BASIC      summary with quantile 0.5, _sum and _count
//	Summary ADVANCED   summary with quantiles 0.5, 0.9, 0.99, _sum and _count
//	SummarySet         as Summary, with a "key" label
//	Gauge              gauge, no label
//	GaugeSet           gauge with a "key" label
//
// and every metric's help text is its name. A Registry declares every
// counter, summary and set ZooKeeper registers on all servers, even those
// of machinery Collie does not have, which then keep zero observations; a
// family without a sample yet is still declared with its HELP and TYPE
// lines, as ZooKeeper's provider declares it. Gauges are read from the
// server at each scrape through Values, so that a role's gauges (the
// leader's learners, quorum_size) appear and go with the role, as
// ZooKeeper registers and unregisters them.
package metrics

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
)

// keyLabel is the label of ZooKeeper's sets.
const keyLabel = "key"

// Objectives of ZooKeeper's summaries, quantile to tolerated error.
var (
	basicObjectives    = map[float64]float64{0.5: 0.05}
	advancedObjectives = map[float64]float64{0.5: 0.05, 0.9: 0.01, 0.99: 0.001}
)

// Values are the server's gauges at the moment of a scrape.
type Values struct {
	// Gauges are ZooKeeper's gauges that the server's role registers,
	// by name (znode_count, learners, quorum_size...).
	Gauges map[string]float64
	// GaugeSets are ZooKeeper's gauge sets (the quota gauges), by name,
	// then by key.
	GaugeSets map[string]map[string]float64
	// Collie are Collie's own metrics.
	Collie []Sample
}

// Sample is one of Collie's own metrics: a gauge or a counter, whose
// name starts with collie_.
type Sample struct {
	Name    string
	Help    string
	Counter bool
	Value   float64
	// Labels are added to the member label every collie_ metric has.
	Labels []Label
}

// Label is a label name and value.
type Label struct{ Name, Value string }

// Options configure a Registry.
type Options struct {
	// Member is this server's id, the value of the member label of
	// Collie's own metrics.
	Member string
	// Read returns the gauges at each scrape. It is called from the
	// scraping goroutine, may be called concurrently, and must not block
	// for long.
	Read func() Values
	// Counters read counters kept elsewhere at each scrape, by ZooKeeper
	// name, instead of the registry's own.
	Counters map[string]func() float64
	// Runtime adds the Go runtime's and the process's metrics (go_*,
	// process_*), Collie's counterpart of ZooKeeper's exportJvmInfo.
	Runtime bool
}

// Registry holds a server's metrics. Its methods may be called from any
// goroutine.
type Registry struct {
	reg         *prometheus.Registry
	counters    map[string]prometheus.Counter
	counterSets map[string]*prometheus.CounterVec
	summaries   map[string]prometheus.Summary
	summarySets map[string]*prometheus.SummaryVec
	// declared are the families every scrape declares, with or without
	// samples: ZooKeeper's, by name, to their TYPE.
	declared map[string]string
}

// New returns a Registry with every metric of ZooKeeper's and Collie's.
func New(opts Options) *Registry {
	r := &Registry{
		reg:         prometheus.NewRegistry(),
		counters:    map[string]prometheus.Counter{},
		counterSets: map[string]*prometheus.CounterVec{},
		summaries:   map[string]prometheus.Summary{},
		summarySets: map[string]*prometheus.SummaryVec{},
		declared:    map[string]string{},
	}
	for _, m := range zookeeperMetrics {
		po := prometheus.Opts{Name: m.name, Help: m.name}
		var c prometheus.Collector
		switch m.kind {
		case counter:
			r.declared[m.name] = "counter"
			if f, ok := opts.Counters[m.name]; ok {
				c = prometheus.NewCounterFunc(prometheus.CounterOpts(po), f)
			} else {
				r.counters[m.name] = prometheus.NewCounter(prometheus.CounterOpts(po))
				c = r.counters[m.name]
			}
		case counterSet:
			r.declared[m.name] = "counter"
			r.counterSets[m.name] = prometheus.NewCounterVec(prometheus.CounterOpts(po), []string{keyLabel})
			c = r.counterSets[m.name]
		case summaryBasic, summaryAdvanced:
			r.declared[m.name] = "summary"
			r.summaries[m.name] = prometheus.NewSummary(summaryOpts(m.name, m.kind == summaryAdvanced))
			c = r.summaries[m.name]
		case summarySetBasic, summarySetAdvanced:
			r.declared[m.name] = "summary"
			r.summarySets[m.name] = prometheus.NewSummaryVec(summaryOpts(m.name, m.kind == summarySetAdvanced), []string{keyLabel})
			c = r.summarySets[m.name]
		case gaugeSet:
			// Read at each scrape, by the gauge collector.
			r.declared[m.name] = "gauge"
			continue
		}
		r.reg.MustRegister(c)
	}
	if opts.Read != nil {
		r.reg.MustRegister(&gauges{read: opts.Read, member: opts.Member, declared: r.declared})
	}
	if opts.Runtime {
		r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return r
}

func summaryOpts(name string, advanced bool) prometheus.SummaryOpts {
	so := prometheus.SummaryOpts{Name: name, Help: name, Objectives: basicObjectives}
	if advanced {
		so.Objectives = advancedObjectives
	}
	return so
}

// Counter returns ZooKeeper's counter name. It panics for a name that is
// not one of ZooKeeper's counters, or one read through Options.Counters.
func (r *Registry) Counter(name string) prometheus.Counter {
	return must(r.counters, name)
}

// CounterSet returns ZooKeeper's counter set name.
func (r *Registry) CounterSet(name string) *prometheus.CounterVec {
	return must(r.counterSets, name)
}

// Summary returns ZooKeeper's summary name.
func (r *Registry) Summary(name string) prometheus.Summary {
	return must(r.summaries, name)
}

// SummarySet returns ZooKeeper's summary set name.
func (r *Registry) SummarySet(name string) *prometheus.SummaryVec {
	return must(r.summarySets, name)
}

func must[T any](m map[string]T, name string) T {
	v, ok := m[name]
	if !ok {
		panic(fmt.Sprintf("metrics: %q is not a metric of that kind", name))
	}
	return v
}

// Write writes every metric in Prometheus's text format (version 0.0.4),
// by name.
func (r *Registry) Write(w io.Writer) error {
	families, err := r.reg.Gather()
	if err != nil {
		return fmt.Errorf("metrics: gather: %w", err)
	}
	bw := bufio.NewWriter(w)
	seen := map[string]bool{}
	for _, f := range families {
		seen[f.GetName()] = true
	}
	var empty []string
	for name := range r.declared {
		if !seen[name] {
			empty = append(empty, name)
		}
	}
	slices.Sort(empty)
	for _, f := range families {
		for len(empty) > 0 && empty[0] < f.GetName() {
			r.declare(bw, empty[0])
			empty = empty[1:]
		}
		if _, err := expfmt.MetricFamilyToText(bw, f); err != nil {
			return fmt.Errorf("metrics: write %s: %w", f.GetName(), err)
		}
	}
	for _, name := range empty {
		r.declare(bw, name)
	}
	return bw.Flush()
}

// declare writes the HELP and TYPE lines of a family without samples.
func (r *Registry) declare(w io.Writer, name string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, name, name, r.declared[name])
}

// ContentType is the content type of what Write writes.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Serve answers a request for the metrics.
func (r *Registry) Serve(w http.ResponseWriter) {
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ContentType)
	io.WriteString(w, b.String())
}

// gauges collects the gauges Values returns at each scrape.
type gauges struct {
	read   func() Values
	member string
	// declared are the registry's own families: a gauge of Values by
	// one of their names (mntr's unsuccessful_handshake, a counter here)
	// is left out.
	declared map[string]string
}

// Describe sends nothing: the gauges come and go with the server's role,
// which makes this an unchecked collector.
func (g *gauges) Describe(chan<- *prometheus.Desc) {}

func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	v := g.read()
	for name, value := range v.Gauges {
		if _, ok := g.declared[name]; ok {
			continue
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, name, nil, nil), prometheus.GaugeValue, value)
	}
	for name, set := range v.GaugeSets {
		desc := prometheus.NewDesc(name, name, []string{keyLabel}, nil)
		for key, value := range set {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, value, key)
		}
	}
	for _, s := range v.Collie {
		names, values := []string{"member"}, []string{g.member}
		for _, l := range s.Labels {
			names, values = append(names, l.Name), append(values, l.Value)
		}
		typ := prometheus.GaugeValue
		if s.Counter {
			typ = prometheus.CounterValue
		}
		m, err := prometheus.NewConstMetric(prometheus.NewDesc(s.Name, s.Help, names, nil), typ, s.Value, values...)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(prometheus.NewDesc(s.Name, s.Help, nil, nil), err)
			continue
		}
		ch <- m
	}
}
