package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of Run: the settings, one Result per connect
// string, and for a comparison the ratios B/A.
type Report struct {
	Workload  string  `json:"workload"`
	Loop      string  `json:"loop"` // "closed" or "open"
	Rate      float64 `json:"rate,omitempty"`
	Clients   int     `json:"clients"`
	Inflight  int     `json:"inflight"`
	Size      int     `json:"size"`
	Nodes     int     `json:"nodes,omitempty"`
	ReadRatio float64 `json:"read_ratio,omitempty"`
	// DurationS, WarmupS and RoundS are the settings, in seconds.
	DurationS float64  `json:"duration_s"`
	WarmupS   float64  `json:"warmup_s"`
	RoundS    float64  `json:"round_s,omitempty"`
	Results   []Result `json:"results"`
	// Ratio is B's figure over A's, A being Connect (the baseline) and B
	// Compare: an ops/s ratio above 1 and latency ratios below 1 say B
	// did better.
	Ratio *Ratio `json:"ratio_b_over_a,omitempty"`
}

// Result is what was measured on one connect string.
type Result struct {
	Label   string `json:"label,omitempty"` // "A" or "B" in a comparison
	Connect string `json:"connect"`
	// Ops is the number of ops that succeeded: requests, or lock
	// acquisitions, notifications, sessions, fill's transactions.
	Ops int64 `json:"ops"`
	// Errors is the number of ops that failed; FirstError says why the
	// first one did.
	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// Elapsed is the measured time: the rounds, each until its last op
	// ended.
	Elapsed   time.Duration `json:"-"`
	ElapsedS  float64       `json:"elapsed_s"`
	OpsPerSec float64       `json:"ops_per_sec"`
	// Znodes and ZnodesPerSec count fill's znodes.
	Znodes       int64   `json:"znodes,omitempty"`
	ZnodesPerSec float64 `json:"znodes_per_sec,omitempty"`
	Latency      Latency `json:"latency_ms"`
	// ReadYourWrites is what the pipeline workload checked; nil for the
	// other workloads.
	ReadYourWrites *ReadYourWrites `json:"read_your_writes,omitempty"`

	items int64
}

// ReadYourWrites is the check of the pipeline workload: a read shows
// every write of its own session acknowledged before it was sent, and no
// write never sent.
type ReadYourWrites struct {
	// Checked is the number of reads checked (all but those of a key one
	// of whose writes failed).
	Checked int64 `json:"checked"`
	// BehindWrites is how many of them were sent while a write of their
	// session was in progress (its call made, its reply not yet back):
	// reads the server must hold behind that write.
	BehindWrites int64 `json:"behind_writes"`
	// Violations is the number of checked reads that failed the check;
	// each is also counted in Result.Errors. FirstViolation says what
	// the first one showed.
	Violations     int64  `json:"violations"`
	FirstViolation string `json:"first_violation,omitempty"`
}

// BehindShare returns BehindWrites as a share of Checked (0 when none was
// checked).
func (rw *ReadYourWrites) BehindShare() float64 {
	return float64(rw.BehindWrites) / float64(max(rw.Checked, 1))
}

// Latency summarizes the latencies of the ops that succeeded.
type Latency struct {
	Mean, P50, P90, P99, P999, Max time.Duration
}

// MarshalJSON writes the latencies in milliseconds.
func (l Latency) MarshalJSON() ([]byte, error) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return json.Marshal(struct {
		Mean float64 `json:"mean"`
		P50  float64 `json:"p50"`
		P90  float64 `json:"p90"`
		P99  float64 `json:"p99"`
		P999 float64 `json:"p999"`
		Max  float64 `json:"max"`
	}{ms(l.Mean), ms(l.P50), ms(l.P90), ms(l.P99), ms(l.P999), ms(l.Max)})
}

// Ratio holds B's figures over A's; a figure A measured as zero gives 0.
type Ratio struct {
	OpsPerSec float64 `json:"ops_per_sec"`
	P50       float64 `json:"p50"`
	P90       float64 `json:"p90"`
	P99       float64 `json:"p99"`
	P999      float64 `json:"p999"`
	Max       float64 `json:"max"`
}

func newReport(cfg *Config) *Report {
	r := &Report{
		Workload:  cfg.Workload,
		Loop:      "closed",
		Rate:      cfg.Rate,
		Clients:   cfg.Clients,
		Inflight:  cfg.Inflight,
		Size:      cfg.Size,
		Nodes:     cfg.Nodes,
		DurationS: cfg.Duration.Seconds(),
		WarmupS:   cfg.Warmup.Seconds(),
	}
	if cfg.Rate > 0 {
		r.Loop = "open"
	}
	if cfg.Workload == "mixed" || cfg.Workload == "pipeline" {
		r.ReadRatio = cfg.ReadRatio
	}
	if cfg.Compare != "" {
		r.RoundS = cfg.Round.Seconds()
	}
	if cfg.Workload == "fill" {
		r.DurationS, r.WarmupS = 0, 0
	}
	return r
}

// finish computes the figures that follow from what was counted.
func (r *Result) finish(workload string, hist *Histogram) {
	r.ElapsedS = r.Elapsed.Seconds()
	if r.Elapsed > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Elapsed.Seconds()
	}
	if workload == "fill" {
		r.Znodes = r.items
		if r.Elapsed > 0 {
			r.ZnodesPerSec = float64(r.items) / r.Elapsed.Seconds()
		}
	}
	r.Latency = Latency{
		Mean: hist.Mean(),
		P50:  hist.Quantile(0.5),
		P90:  hist.Quantile(0.9),
		P99:  hist.Quantile(0.99),
		P999: hist.Quantile(0.999),
		Max:  hist.Max(),
	}
}

func ratio(a, b *Result) *Ratio {
	div := func(x, y float64) float64 {
		if y == 0 {
			return 0
		}
		return x / y
	}
	dur := func(x, y time.Duration) float64 { return div(float64(x), float64(y)) }
	return &Ratio{
		OpsPerSec: div(b.OpsPerSec, a.OpsPerSec),
		P50:       dur(b.Latency.P50, a.Latency.P50),
		P90:       dur(b.Latency.P90, a.Latency.P90),
		P99:       dur(b.Latency.P99, a.Latency.P99),
		P999:      dur(b.Latency.P999, a.Latency.P999),
		Max:       dur(b.Latency.Max, a.Latency.Max),
	}
}

// WriteJSON writes r as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r as a table, a row per connect string and one of
// ratios for a comparison, then the first error of each that had any.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	b.WriteString(r.settings() + "\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tserver\tops/s\tp50\tp90\tp99\tp99.9\tmax\tops\terrors\t")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n", res.Label, res.Connect, res.OpsPerSec,
			formatLatency(res.Latency.P50), formatLatency(res.Latency.P90), formatLatency(res.Latency.P99),
			formatLatency(res.Latency.P999), formatLatency(res.Latency.Max), res.Ops, res.Errors)
	}
	if q := r.Ratio; q != nil {
		fmt.Fprintf(tw, "B/A\t\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t\t\t\n", q.OpsPerSec, q.P50, q.P90, q.P99, q.P999, q.Max)
	}
	tw.Flush()
	for _, res := range r.Results {
		if res.Znodes > 0 {
			fmt.Fprintf(&b, "%s%d znodes in %.2fs: %.0f znodes/s\n", labelPrefix(res.Label), res.Znodes, res.ElapsedS, res.ZnodesPerSec)
		}
		if rw := res.ReadYourWrites; rw != nil {
			behind := fmt.Sprintf("%d reads checked (%.0f%% sent behind a write of their session in progress)",
				rw.Checked, 100*rw.BehindShare())
			if rw.Violations == 0 {
				fmt.Fprintf(&b, "%sread-your-writes: %s, no violation\n", labelPrefix(res.Label), behind)
			} else {
				fmt.Fprintf(&b, "%sread-your-writes VIOLATED by %d of %s; first: %s\n",
					labelPrefix(res.Label), rw.Violations, behind, rw.FirstViolation)
			}
		}
		if res.FirstError != "" {
			fmt.Fprintf(&b, "%sfirst error: %s\n", labelPrefix(res.Label), res.FirstError)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func labelPrefix(label string) string {
	if label == "" {
		return ""
	}
	return label + ": "
}

// settings describes the run in one line.
func (r *Report) settings() string {
	var parts []string
	what := r.Workload
	if r.Workload == "mixed" || r.Workload == "pipeline" {
		what += fmt.Sprintf(" (%.0f%% reads)", 100*r.ReadRatio)
	}
	parts = append(parts, what, fmt.Sprintf("%d clients × %d in flight", r.Clients, r.Inflight))
	if r.Loop == "open" {
		parts = append(parts, fmt.Sprintf("open loop at %.0f/s", r.Rate))
	} else {
		parts = append(parts, "closed loop")
	}
	parts = append(parts, fmt.Sprintf("%d-byte values", r.Size))
	if r.Nodes > 0 {
		parts = append(parts, fmt.Sprintf("%d nodes", r.Nodes))
	}
	if r.DurationS > 0 {
		parts = append(parts, fmt.Sprintf("%gs measured after %gs of warm-up", r.DurationS, r.WarmupS))
	}
	if r.RoundS > 0 {
		parts = append(parts, fmt.Sprintf("alternating rounds of %gs", r.RoundS))
	}
	return strings.Join(parts, ", ")
}

// formatLatency writes d with three significant digits.
func formatLatency(d time.Duration) string {
	// Rounded first, so that 999.7µs becomes 1ms and not 1e+03µs.
	unit := time.Duration(1)
	for d/unit >= 1000 {
		unit *= 10
	}
	d = (d + unit/2) / unit * unit
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d)
	case d < time.Millisecond:
		return fmt.Sprintf("%.3gµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.3gms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.3gs", d.Seconds())
}
