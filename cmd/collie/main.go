// Command collie is the Collie binary: a ZooKeeper-compatible coordination
// server and its tools.
//
//	collie server [-c zoo.cfg]   run a server
//	collie server -dev-ensemble 3   run a local ensemble of 3, to try one out
//	collie server -zoo-env       run a server configured as the zookeeper Docker image is
//	collie health [-live]        ask a server's admin port whether it is ready (or alive)
//	collie datadir <command>     inspect or repair a stopped server's data directory
//	collie snapshot <command>    back up a running server, restore new servers
//	collie dump FILE|DIR         print a backup file's or a data directory's znodes
//	collie version               print the version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/collie-io/collie/internal/gcfloor"
	"github.com/collie-io/collie/internal/sdnotify"
	"github.com/collie-io/collie/server"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/follow"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: collie <command> [flags]

commands:
  server    run a server (ZooKeeper-compatible; reads a zoo.cfg with -c)
  cli       a shell like zkCli.sh: collie cli -server host:port [cmd args]
  bench     load a ZooKeeper-protocol server and measure it: collie bench -h
  datadir   inspect or repair a stopped server's data directory: collie datadir -h
  import    take over a stopped ZooKeeper server's data: collie import -h
  cutover   turn Collie servers that follow a ZooKeeper ensemble into a Collie
            ensemble: collie cutover -h
  health    exit 0 if a server's admin port says it is ready: collie health -h
  snapshot  back up a running server (save), check a backup (status), make new
            servers from it (restore): collie snapshot -h
  dump      print every znode and session of a backup file or data directory
  version   print the version
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "server":
		return runServer(args[1:], stdout, stderr)
	case "cli":
		return runCLI(args[1:], os.Stdin, stdout, stderr)
	case "bench":
		return runBench(args[1:], stdout, stderr)
	case "datadir":
		return runDatadir(args[1:], stdout, stderr)
	case "cutover":
		return runCutover(args[1:], stdout, stderr)
	case "import":
		return runImport(args[1:], stdout, stderr)
	case "health":
		return runHealth(args[1:], stdout, stderr)
	case "snapshot":
		return runSnapshot(args[1:], stdout, stderr)
	case "dump":
		return runDump(args[1:], stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintf(stdout, "collie %s\n", server.Version)
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "collie: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// gcFloor is the smallest heap goal of the server's garbage collector.
const gcFloor = 32 << 20

func runServer(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collie server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("c", "", "path of a ZooKeeper `zoo.cfg`; without it, built-in defaults (port 2181, data in ./collie-data)")
	port := fs.Int("port", 0, "client port, overriding the configuration")
	adminPort := fs.Int("admin-port", 0, "admin HTTP server port, overriding the configuration; -1 turns the admin server off")
	dataDir := fs.String("data-dir", "", "data directory, overriding the configuration")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to `file` at shutdown (go tool pprof reads it)")
	memProfile := fs.String("memprofile", "", "write a heap profile to `file` at shutdown")
	zooEnv := fs.Bool("zoo-env", false, "configure from the environment as the zookeeper Docker image does: $ZOO_CONF_DIR/zoo.cfg when it exists, else one made from the ZOO_* variables (see README)")
	devEnsemble := fs.Int("dev-ensemble", 0, "run a local ensemble of `n` servers in this process, for trying one out: client ports from -port (2181) up, peer ports 707 above them, data under -data-dir/dev-ensemble")
	followZK := fs.Bool("follow-zookeeper", false, "follow the ZooKeeper ensemble that -c's zoo.cfg describes, as its observer server.<myid>, and serve its clients as the observer does, forwarding writes to its leader; nothing is written to the data directory until collie cutover makes it a member of a Collie ensemble, which it stays")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "collie server: -log-level %q: use debug, info, warn or error\n", *logLevel)
		return 2
	}
	opts := &slog.HandlerOptions{Level: level}
	var handler slog.Handler = slog.NewTextHandler(stderr, opts)
	if *logFormat == "json" {
		handler = slog.NewJSONHandler(stderr, opts)
	}
	logger := slog.New(handler)

	if *zooEnv && *cfgPath != "" {
		fmt.Fprintln(stderr, "collie server: -c and -zoo-env both say where the configuration is: give one")
		return 2
	}
	cfg := config.Default()
	if *cfgPath != "" || *zooEnv {
		var err error
		source := *cfgPath
		if *zooEnv {
			cfg, source, err = loadZooEnv(os.LookupEnv)
		} else {
			cfg, err = config.Load(*cfgPath)
		}
		if err != nil {
			fmt.Fprintf(stderr, "collie server: %v\n", err)
			return 1
		}
		for _, key := range cfg.Unknown {
			logger.Warn("ignoring unknown configuration key", "key", key, "file", source)
		}
		if why := cfg.NoSASLSection(); why != "" {
			logger.Warn("serving without SASL", "reason", why)
		}
	}
	if *port != 0 {
		cfg.ClientPort = *port
	}
	switch {
	case *adminPort < 0:
		cfg.AdminServerEnabled = false
	case *adminPort > 0:
		cfg.AdminServerPort = *adminPort
	}
	if *dataDir != "" {
		cfg.DataDir, cfg.DataLogDir = *dataDir, *dataDir
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "collie server: -cpuprofile: %v\n", err)
			return 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "collie server: -cpuprofile: %v\n", err)
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				logger.Error("write CPU profile", "file", *cpuProfile, "err", err)
			}
		}()
	}
	// A small tree would otherwise be collected dozens of times a second
	// under load, each cycle's pauses landing in requests' latency.
	gcfloor.Start(gcFloor)
	if *devEnsemble != 0 {
		cfgs, err := devEnsembleConfigs(cfg, *devEnsemble)
		if err != nil {
			fmt.Fprintf(stderr, "collie server: %v\n", err)
			return 2
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := runDevEnsemble(ctx, cfgs, logger, stdout); err != nil {
			fmt.Fprintf(stderr, "collie server: %v\n", err)
			return 1
		}
		return 0
	}
	if *followZK {
		if *cfgPath == "" && !*zooEnv {
			fmt.Fprintln(stderr, "collie server: -follow-zookeeper needs the ensemble's zoo.cfg (-c)")
			return 2
		}
		return runFollower(cfg, logger, stderr, *memProfile)
	}
	return serve(cfg, logger, stderr, *memProfile, false)
}

// serve runs a Collie server with cfg until a signal stops it. With
// electFirst, it calls an election as soon as it is connected to a quorum
// (ElectWhenConnected).
func serve(cfg config.Config, logger *slog.Logger, stderr io.Writer, memProfile string, electFirst bool) int {
	srv, err := server.New(cfg, logger)
	if err != nil {
		fmt.Fprintf(stderr, "collie server: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if electFirst {
		srv.ElectWhenConnected(ctx)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Run(ctx) }()
	ready := srv.Ready()
	for running := true; running; {
		select {
		case <-ready:
			ready = nil
			notifySystemd(logger, sdnotify.Ready, sdnotify.Status("serving clients"))
		case err = <-errc:
			running = false
		case <-ctx.Done():
			logger.Info("shutting down")
			running = false
		}
	}
	notifySystemd(logger, sdnotify.Stopping)
	if memProfile != "" {
		// Before shutdown, while the state is still in use.
		writeHeapProfile(memProfile, logger)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		logger.Error("shutdown", "err", serr)
	}
	if err != nil && !errors.Is(err, server.ErrServerClosed) && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "collie server: %v\n", err)
		return 1
	}
	return 0
}

// runFollower runs a follower of a ZooKeeper ensemble until a signal
// stops it, or until the cut-over, after which the server goes on as a
// member of the Collie ensemble, as it does when it starts again.
func runFollower(cfg config.Config, logger *slog.Logger, stderr io.Writer, memProfile string) int {
	done, err := follow.LoadCutOver(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "collie server: %v\n", err)
		return 1
	}
	if done != nil {
		logger.Info("this server was cut over from ZooKeeper: serving as a member of the Collie ensemble; -follow-zookeeper and the ZooKeeper servers' lines in zoo.cfg are no longer needed",
			"zxid", fmt.Sprintf("0x%x", done.Zxid), "members", fmt.Sprint(done.Members))
		return serve(done.Config, logger, stderr, memProfile, false)
	}
	f, err := follow.New(cfg, follow.Options{Version: server.VersionLine(), Logger: logger})
	if err != nil {
		fmt.Fprintf(stderr, "collie server: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger.Info("following the ZooKeeper ensemble", "clientAddr", f.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- f.Run(ctx) }()
	ready := f.Ready()
	for {
		select {
		case <-ready:
			ready = nil
			notifySystemd(logger, sdnotify.Ready, sdnotify.Status("serving clients as an observer of a ZooKeeper ensemble"))
		case err := <-errc:
			if done := f.CutOver(); err == nil && done != nil {
				stop()
				notifySystemd(logger, sdnotify.Status("cut over from ZooKeeper: starting as a member of the Collie ensemble"))
				// One member calls the election, so that the others
				// do not split their votes.
				return serve(done.Config, logger, stderr, memProfile, done.Config.ServerID == slices.Min(done.Members))
			}
			notifySystemd(logger, sdnotify.Stopping)
			if err != nil && !errors.Is(err, context.Canceled) {
				fmt.Fprintf(stderr, "collie server: %v\n", err)
				return 1
			}
			return 0
		}
	}
}

// notifySystemd tells systemd, when it started the server as a Type=notify
// service, how the server is doing.
func notifySystemd(logger *slog.Logger, states ...string) {
	if err := sdnotify.Send(os.Getenv("NOTIFY_SOCKET"), states...); err != nil {
		logger.Warn("cannot tell systemd how the server is doing", "err", err)
	}
}

// writeHeapProfile writes the live heap, as of a fresh collection, to path.
func writeHeapProfile(path string, logger *slog.Logger) {
	f, err := os.Create(path)
	if err != nil {
		logger.Error("write heap profile", "err", err)
		return
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		logger.Error("write heap profile", "file", path, "err", err)
	}
	if err := f.Close(); err != nil {
		logger.Error("write heap profile", "file", path, "err", err)
	}
}
