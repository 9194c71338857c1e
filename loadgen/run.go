package loadgen

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
)

// Config describes a run. A zero field means its default where zero would
// make no sense (Clients, Inflight, Duration...); Size and ReadRatio mean
// what they say.
type Config struct {
	// Connect is the connect string of the servers under load,
	// "host:port,host:port[/chroot]". The clients are spread over its
	// servers: client i connects to server i mod n (and keeps to it: a
	// load generator measures servers, not failover).
	Connect string
	// Compare, when set, is a second connect string loaded the same way,
	// in alternating rounds with Connect; see Run.
	Compare string
	// Workload is one of Workloads.
	Workload string
	// Clients is the number of sessions (client.Client) that carry the
	// load. Default 16.
	Clients int
	// Inflight is how many requests each session keeps outstanding
	// (closed loop) or may have outstanding (open loop): each is a worker
	// of its own. Default 1, or DefaultPipelineInflight for pipeline.
	Inflight int
	// Duration is the measured time per connect string. Fill ignores it
	// and runs until its znodes exist. Default 10s.
	Duration time.Duration
	// Warmup is run, unmeasured, before the measurement. Default 0.
	Warmup time.Duration
	// Round is the length of one turn of a comparison. Default 1s.
	Round time.Duration
	// Size is the bytes of data written to each znode (DefaultSize is
	// what the command line uses).
	Size int
	// Nodes is the key space of set, get and mixed (0: one znode per
	// worker), the number of locks of lock (default 1), and the number
	// of znodes fill creates (default 100000).
	Nodes int
	// ReadRatio is the share of reads in mixed and pipeline, in [0, 1]
	// (DefaultReadRatio is what the command line uses).
	ReadRatio float64
	// Rate, when positive, makes the loop open: Rate requests per second
	// in all, each sent when due whatever became of the ones before it,
	// with its latency measured from when it was due. Zero: a closed
	// loop, each worker sending its next request when the last returns.
	Rate float64
	// Prefix is the znode under which each run makes (and removes) a
	// subtree of its own. Default /collie-bench.
	Prefix string
	// Keep leaves the run's subtree in place, for instance to measure a
	// server's memory after fill.
	Keep bool
	// SessionTimeout is asked for by every session. Default 10s.
	SessionTimeout time.Duration
	// TLS, when set, makes every session's connection a TLS one, as
	// client.Config.TLS.
	TLS *tls.Config
	// SASL, when set, authenticates every session's connections, as
	// client.Config.SASL.
	SASL func() client.SASLMechanism
	// Progress receives a line about once a second while the run goes:
	// elapsed time, ops/s over the last second, p99 so far, errors. Nil:
	// none.
	Progress io.Writer
	// Clock measures and paces the run. Default SystemClock.
	Clock Clock
}

// Defaults of Config.
const (
	DefaultClients        = 16
	DefaultDuration       = 10 * time.Second
	DefaultRound          = time.Second
	DefaultWarmup         = 2 * time.Second // the command line's; Run's is none
	DefaultSize           = 1024
	DefaultReadRatio      = 0.9
	DefaultFillNodes      = 100_000
	DefaultPrefix         = "/collie-bench"
	DefaultSessionTimeout = 10 * time.Second
)

const (
	// dialTimeout bounds the connection of one session before the run.
	dialTimeout = 30 * time.Second
	// opGrace is how long an op may still run after its round ends
	// before it fails as timed out.
	opGrace = 30 * time.Second
	// cleanupTimeout bounds the removal of a run's subtree.
	cleanupTimeout = 5 * time.Minute
	// adminMaxPacket lets the setup and cleanup session list parents of
	// many children.
	adminMaxPacket = 64 << 20
)

// withDefaults returns cfg with its defaults filled in, or an error naming
// the first invalid field.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Clients == 0 {
		cfg.Clients = DefaultClients
	}
	if cfg.Inflight == 0 {
		cfg.Inflight = 1
		if cfg.Workload == "pipeline" {
			cfg.Inflight = DefaultPipelineInflight
		}
	}
	if cfg.Duration == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.Round == 0 {
		cfg.Round = DefaultRound
	}
	if cfg.Workload == "fill" && cfg.Nodes == 0 {
		cfg.Nodes = DefaultFillNodes
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	switch {
	case cfg.Connect == "":
		return cfg, errors.New("loadgen: no connect string")
	case !slices.Contains(Workloads, cfg.Workload):
		return cfg, fmt.Errorf("loadgen: unknown workload %q (want one of %s)", cfg.Workload, strings.Join(Workloads, ", "))
	case cfg.Clients < 0, cfg.Inflight < 0, cfg.Size < 0, cfg.Nodes < 0:
		return cfg, errors.New("loadgen: clients, inflight, size and nodes cannot be negative")
	case cfg.Duration < 0, cfg.Warmup < 0, cfg.Round < 0, cfg.SessionTimeout < 0:
		return cfg, errors.New("loadgen: durations cannot be negative")
	case cfg.ReadRatio < 0 || cfg.ReadRatio > 1:
		return cfg, fmt.Errorf("loadgen: read ratio %v is not in [0, 1]", cfg.ReadRatio)
	case cfg.Rate < 0 || math.IsInf(cfg.Rate, 0) || math.IsNaN(cfg.Rate):
		return cfg, fmt.Errorf("loadgen: rate %v is not a number of requests per second", cfg.Rate)
	}
	if err := proto.ValidatePath(cfg.Prefix); err != nil || cfg.Prefix == "/" {
		return cfg, fmt.Errorf("loadgen: prefix %q is not a znode path below the root", cfg.Prefix)
	}
	return cfg, nil
}

// Run loads the servers of cfg.Connect with cfg.Workload and reports
// throughput, latency and errors.
//
// It first prepares the workload's subtree under cfg.Prefix and connects
// the sessions, then runs the warm-up, then measures for cfg.Duration,
// and finally closes the sessions and removes the subtree, also when it
// fails or ctx ends (it then reports what it measured, with ctx's error).
//
// With cfg.Compare, both connect strings are prepared and warmed up, then
// measured in alternating rounds of cfg.Round (A, B, A, B...) until each has
// had cfg.Duration, so that whatever else the machine does hits both
// alike. A is Connect and B is Compare; the ratios of the report are B/A,
// A being the baseline.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	connects := []string{cfg.Connect}
	labels := []string{""}
	if cfg.Compare != "" {
		connects = append(connects, cfg.Compare)
		labels = []string{"A", "B"}
	}
	var targets []*target
	defer func() {
		for _, t := range targets {
			t.close(ctx)
		}
	}()
	for i, connect := range connects {
		t, err := prepare(ctx, &cfg, labels[i], connect)
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
	}

	progress := newProgress(cfg.Progress)
	defer progress.stop()
	if cfg.Warmup > 0 && cfg.Workload != "fill" {
		for _, t := range targets {
			progress.begin(t, "warm-up", 0)
			t.phase(ctx, &cfg, cfg.Warmup)
			progress.end(t)
			t.forget()
			progress.forget(t)
		}
	}
	for {
		ran := false
		for _, t := range targets {
			if ctx.Err() != nil || t.done.Load() {
				continue
			}
			round, ok := t.nextRound(&cfg, len(targets) > 1)
			if !ok {
				continue
			}
			progress.begin(t, "", t.elapsed)
			t.elapsed += t.phase(ctx, &cfg, round)
			progress.end(t)
			t.scheduled += round
			ran = true
		}
		if !ran {
			break
		}
	}
	progress.stop()

	report := newReport(&cfg)
	for _, t := range targets {
		report.Results = append(report.Results, t.result(cfg.Workload))
	}
	if len(report.Results) == 2 {
		report.Ratio = ratio(&report.Results[0], &report.Results[1])
	}
	for _, t := range targets {
		if err := t.close(ctx); err != nil {
			return report, err
		}
	}
	return report, ctx.Err()
}

// target is one connect string under load, with its sessions and workers.
type target struct {
	label   string
	connect string
	servers []string // host:port, chroot appended
	root    string   // the run's subtree
	keep    bool
	admin   *client.Client // setup and cleanup
	clients []*client.Client
	workers []*worker
	load    workload

	// Owned by Run's goroutine.
	scheduled time.Duration // nominal measured time, the sum of the rounds
	elapsed   time.Duration // measured time, until each round's last op ended
	closed    bool
	closeErr  error

	done atomic.Bool // the workload has nothing left to do
}

// prepare connects the sessions of one connect string and lays out the
// workload's subtree.
func prepare(ctx context.Context, cfg *Config, label, connect string) (_ *target, err error) {
	var suffix [4]byte
	_, _ = rand.Read(suffix[:]) // never fails
	t := &target{
		label:   label,
		connect: connect,
		servers: spread(connect),
		root:    cfg.Prefix + "/" + cfg.Workload + "-" + hex.EncodeToString(suffix[:]),
		keep:    cfg.Keep,
	}
	defer func() {
		if err != nil {
			t.close(ctx)
		}
	}()
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	t.admin, err = client.Dial(dctx, connect, client.Config{SessionTimeout: cfg.SessionTimeout, MaxPacket: adminMaxPacket, TLS: cfg.TLS, SASL: cfg.SASL})
	if err != nil {
		return nil, err
	}
	if t.load, err = newWorkload(cfg, t.root); err != nil {
		return nil, err
	}
	if cfg.Workload != "sessions" {
		if t.clients, err = dialAll(dctx, t.servers, cfg.Clients, client.Config{SessionTimeout: cfg.SessionTimeout, TLS: cfg.TLS, SASL: cfg.SASL}); err != nil {
			return nil, err
		}
	}
	for i := range cfg.Clients * cfg.Inflight {
		w := &worker{id: i, clk: cfg.Clock, rng: mrand.New(mrand.NewPCG(uint64(i), mrand.Uint64()))}
		if t.clients != nil {
			w.c = t.clients[i%cfg.Clients]
			w.peer = t.clients[(i+1)%cfg.Clients]
		}
		t.workers = append(t.workers, w)
	}
	if err := ensurePath(ctx, t.admin, cfg.Prefix); err != nil {
		return nil, fmt.Errorf("loadgen: create %s on %s: %w", cfg.Prefix, connect, err)
	}
	if _, _, err := t.admin.Create(ctx, t.root, nil, client.ModePersistent, nil); err != nil {
		return nil, fmt.Errorf("loadgen: create %s on %s: %w", t.root, connect, err)
	}
	if err := t.load.setup(ctx, t); err != nil {
		return nil, fmt.Errorf("loadgen: prepare %s on %s: %w", cfg.Workload, connect, err)
	}
	return t, nil
}

// spread returns the servers of a connect string, each with the chroot,
// as connect strings of their own.
func spread(connect string) []string {
	hosts, chroot, _ := strings.Cut(connect, "/")
	if chroot != "" {
		chroot = "/" + chroot
	}
	var servers []string
	for h := range strings.SplitSeq(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			servers = append(servers, h+chroot)
		}
	}
	if len(servers) == 0 {
		servers = []string{connect} // for client.Dial to explain
	}
	return servers
}

// dialAll connects n sessions with ccfg, session i to servers[i mod
// len(servers)].
func dialAll(ctx context.Context, servers []string, n int, ccfg client.Config) ([]*client.Client, error) {
	clients := make([]*client.Client, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			clients[i], errs[i] = client.Dial(ctx, servers[i%len(servers)], ccfg)
		})
	}
	wg.Wait()
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			first = cmp.Or(first, err)
		}
	}
	if failed == 0 {
		return clients, nil
	}
	for _, c := range clients {
		if c != nil {
			c.Close()
		}
	}
	return nil, fmt.Errorf("loadgen: %d of %d sessions did not connect (a server's maxClientCnxns limits the sessions from one address): %w",
		failed, n, first)
}

// nextRound returns how long t's next round lasts (0: until the workload
// is done), and false when t has had its time.
func (t *target) nextRound(cfg *Config, alternate bool) (time.Duration, bool) {
	if cfg.Workload == "fill" {
		if alternate {
			return cfg.Round, true
		}
		return 0, true
	}
	left := cfg.Duration - t.scheduled
	if left <= 0 {
		return 0, false
	}
	if alternate {
		return min(cfg.Round, left), true
	}
	return left, true
}

// forget drops what the workers measured so far, after the warm-up.
func (t *target) forget() {
	for _, w := range t.workers {
		w.mu.Lock()
		w.hist.Reset()
		w.ops, w.items, w.errs, w.firstErr = 0, 0, 0, nil
		w.checks, w.behind, w.violations, w.firstViolation = 0, 0, 0, nil
		w.mu.Unlock()
	}
}

// phase runs the workers for d (0: until the workload is done) and returns
// the time until the last op ended.
func (t *target) phase(ctx context.Context, cfg *Config, d time.Duration) time.Duration {
	return runPhase(ctx, phaseSpec{
		workers: t.workers,
		op:      t.load.op,
		clk:     cfg.Clock,
		d:       d,
		rate:    cfg.Rate,
		done:    &t.done,
	})
}

// result sums up what the workers measured.
func (t *target) result(workload string) Result {
	var hist Histogram
	r := Result{Label: t.label, Connect: t.connect, Elapsed: t.elapsed}
	var rw ReadYourWrites
	for _, w := range t.workers {
		w.mu.Lock()
		hist.Merge(&w.hist)
		r.Ops += w.ops
		r.items += w.items
		r.Errors += w.errs
		if r.FirstError == "" && w.firstErr != nil {
			r.FirstError = w.firstErr.Error()
		}
		rw.Checked += w.checks
		rw.BehindWrites += w.behind
		rw.Violations += w.violations
		if rw.FirstViolation == "" && w.firstViolation != nil {
			rw.FirstViolation = w.firstViolation.Error()
		}
		w.mu.Unlock()
	}
	if workload == "pipeline" {
		r.ReadYourWrites = &rw
	}
	r.finish(workload, &hist)
	return r
}

// close closes the sessions, then removes the subtree unless it is to be
// kept; only the first call does anything.
func (t *target) close(ctx context.Context) error {
	if t.closed {
		return t.closeErr
	}
	t.closed = true
	for _, c := range t.clients {
		c.Close()
	}
	if t.admin == nil {
		return nil
	}
	defer t.admin.Close()
	if t.keep {
		return nil
	}
	// The subtree goes even when the run was interrupted.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := deleteTree(cctx, t.admin, t.root); err != nil {
		t.closeErr = fmt.Errorf("loadgen: remove %s from %s: %w", t.root, t.connect, err)
		return t.closeErr
	}
	// The prefix goes too when no other run uses it.
	prefix := t.root[:strings.LastIndexByte(t.root, '/')]
	if err := t.admin.Delete(cctx, prefix, client.AnyVersion); err != nil &&
		!errors.Is(err, client.ErrNotEmpty) && !errors.Is(err, client.ErrNoNode) {
		t.closeErr = fmt.Errorf("loadgen: remove %s from %s: %w", prefix, t.connect, err)
	}
	return t.closeErr
}
