package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/collie-io/collie/loadgen"
)

const benchUsage = `usage: collie bench [flags]

Loads a ZooKeeper-protocol server (Collie or Apache ZooKeeper) with one
workload and reports ops/s, latency percentiles and errors. Each run works
in a subtree of its own under -prefix and removes it at the end.

Workloads:
  create    create new znodes (removed at the end)
  set       setData: one znode per worker, or -nodes keys picked at random
  get       getData, on the same key space as set
  mixed     get and set, -read-ratio of them reads
  pipeline  -inflight requests in flight per session (default 16), sharing
            its connection; -read-ratio of them reads (half getData, a
            quarter each exists and getChildren), the others writes (three
            in four setData, the fourth a create or a delete of a child,
            in turn), all on znodes the session's own workers write, so
            that reads queue behind writes of their session. Checks
            read-your-writes as it goes: a read must show every write of
            its session acknowledged before it was sent; a read that does
            not is counted as a violation and an error
  lock      acquire and release an exclusive lock (-nodes locks, default 1);
            an op is one acquisition
  watch     set a watch, change the node from another session, measure
            until the notification arrives
  sessions  open and close sessions
  fill      create -nodes znodes of -size bytes in multis, as fast as
            possible, then stop (-keep leaves them, for memory tests)

By default the loop is closed: each worker sends its next request when the
last returns. With -rate the loop is open: requests are sent on schedule
and latency counts from when a request was due, so queueing shows.

With -compare, both connect strings are loaded in alternating rounds (A is
-server, B is -compare) and the ratios printed are B/A: ops/s above 1 and
latencies below 1 say B did better.

Exit status: 0 when every op succeeded, 1 when the run failed or an op did
(a pipeline read that violated read-your-writes included), 2 for bad flags.

Flags:
`

func runBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collie bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, benchUsage)
		fs.PrintDefaults()
	}
	var cfg loadgen.Config
	fs.StringVar(&cfg.Connect, "server", "127.0.0.1:2181", "connect `string`, host:port[,host:port...][/chroot]; the clients are spread over its servers")
	fs.StringVar(&cfg.Compare, "compare", "", "a second connect string to load in alternation with -server, reported as B")
	fs.StringVar(&cfg.Workload, "workload", "set", "workload: "+strings.Join(loadgen.Workloads, ", "))
	fs.IntVar(&cfg.Clients, "clients", loadgen.DefaultClients, "sessions carrying the load")
	fs.IntVar(&cfg.Inflight, "inflight", 0, fmt.Sprintf("requests each session keeps outstanding, each from a worker of its own (0: 1, or %d for pipeline)", loadgen.DefaultPipelineInflight))
	fs.DurationVar(&cfg.Duration, "duration", loadgen.DefaultDuration, "measured time per server (fill ignores it)")
	fs.DurationVar(&cfg.Warmup, "warmup", loadgen.DefaultWarmup, "unmeasured time per server before the measurement")
	fs.DurationVar(&cfg.Round, "round", loadgen.DefaultRound, "length of one turn with -compare")
	fs.IntVar(&cfg.Size, "size", loadgen.DefaultSize, "bytes of data per znode")
	fs.IntVar(&cfg.Nodes, "nodes", 0, "key space of set, get and mixed (0: one znode per worker), locks of lock (0: one), znodes of fill (0: 100000)")
	fs.Float64Var(&cfg.ReadRatio, "read-ratio", loadgen.DefaultReadRatio, "share of reads in mixed and pipeline, 0 to 1")
	fs.Float64Var(&cfg.Rate, "rate", 0, "requests per second in all, in an open loop (0: closed loop)")
	fs.StringVar(&cfg.Prefix, "prefix", loadgen.DefaultPrefix, "znode under which each run makes its subtree")
	fs.BoolVar(&cfg.Keep, "keep", false, "leave the run's znodes in place")
	fs.DurationVar(&cfg.SessionTimeout, "session-timeout", loadgen.DefaultSessionTimeout, "session timeout to ask for")
	var tf tlsFlags
	tf.register(fs)
	var sf saslFlags
	sf.register(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	quiet := fs.Bool("quiet", false, "no progress line on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "collie bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if !slices.Contains(loadgen.Workloads, cfg.Workload) {
		fmt.Fprintf(stderr, "collie bench: unknown workload %q; use one of %s\n", cfg.Workload, strings.Join(loadgen.Workloads, ", "))
		return 2
	}
	if !*quiet {
		cfg.Progress = stderr
	}
	tlsConfig, err := tf.config()
	if err != nil {
		fmt.Fprintf(stderr, "collie bench: %v\n", err)
		return 2
	}
	cfg.TLS = tlsConfig
	var closeSASL func()
	if cfg.SASL, closeSASL, err = sf.mechanism(os.Getenv, stderr); err != nil {
		fmt.Fprintf(stderr, "collie bench: %v\n", err)
		return 2
	}
	defer closeSASL()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report, err := loadgen.Run(ctx, cfg)
	if report != nil {
		write := report.WriteText
		if *asJSON {
			write = report.WriteJSON
		}
		if werr := write(stdout); werr != nil {
			fmt.Fprintf(stderr, "collie bench: %v\n", werr)
			return 1
		}
	}
	if err != nil && ctx.Err() != nil {
		fmt.Fprintln(stderr, "collie bench: interrupted; the report covers what was measured until then")
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "collie bench: %v\n", err)
		return 1
	}
	for _, res := range report.Results {
		if res.Errors > 0 {
			return 1
		}
	}
	return 0
}
