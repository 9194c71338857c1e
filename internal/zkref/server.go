package zkref

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/freeport"
)

const (
	// startTimeout bounds how long Start waits for ZooKeeper to serve, a
	// JVM start on a loaded two-core machine and port retries included.
	// At a load average of 20 on two cores, the four JVMs a test starts
	// at once (a standalone server and an ensemble) took more than a
	// minute.
	startTimeout = 3 * time.Minute
	// pollInterval is how often Start asks a starting server whether it serves.
	pollInterval = 50 * time.Millisecond
	// portAttempts is how many free ports Start tries: between picking a port
	// and the JVM binding it, another process may take it.
	portAttempts = 3
	// mainClass runs one standalone server from a zoo.cfg file.
	mainClass = "org.apache.zookeeper.server.ZooKeeperServerMain"
	// quorumMainClass runs one member of an ensemble from a zoo.cfg file
	// with server.N lines and a myid file in dataDir.
	quorumMainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
)

// errPortTaken says the server could not bind its client port.
var errPortTaken = errors.New("client port already in use")

// pickPort chooses the client port of each launch; tests replace it.
var pickPort = freeport.Take

// An Option changes how Start configures and runs ZooKeeper.
type Option func(*options)

type options struct {
	tickTime      time.Duration
	extendedTypes bool
	fullJIT       bool
	dataDir       string
	settings      []setting // extra zoo.cfg lines, in the order given
	jvmArgs       []string
	adminServer   bool
	adminPort     int      // the admin port of one launch; 0 when adminServer is off
	observers     []int    // ids of observers StartEnsemble lists but does not run
	classpath     []string // added to the server's class path
}

type setting struct{ key, value string }

// WithTickTime sets ZooKeeper's tickTime, its basic time unit (2s by
// default). Session timeouts are negotiated into [2, 20] ticks.
func WithTickTime(d time.Duration) Option {
	return func(o *options) { o.tickTime = d }
}

// WithExtendedTypes sets extendedTypesEnabled=true, which ZooKeeper needs
// before it creates TTL nodes.
func WithExtendedTypes() Option {
	return func(o *options) { o.extendedTypes = true }
}

// WithConfig adds the line key=value to zoo.cfg after the ones Start writes,
// so it overrides them (ZooKeeper keeps the last value of a key). Keys that
// zoo.cfg does not know become Java system properties named "zookeeper."+key.
func WithConfig(key, value string) Option {
	return func(o *options) { o.settings = append(o.settings, setting{key, value}) }
}

// WithJVMArgs adds arguments to the java command line, before the main
// class, such as "-Djute.maxbuffer=4194304".
func WithJVMArgs(args ...string) Option {
	return func(o *options) { o.jvmArgs = append(o.jvmArgs, args...) }
}

// WithObserver makes StartEnsemble list server.id as an observer on free
// ports of 127.0.0.1 without running it, for an observer the test runs
// itself. Start ignores it.
func WithObserver(id int) Option {
	return func(o *options) { o.observers = append(o.observers, id) }
}

// WithClasspath adds directories or jars to the server's class path, for
// classes a zoo.cfg line names (metricsProvider.className, an
// authProvider).
func WithClasspath(paths ...string) Option {
	return func(o *options) { o.classpath = append(o.classpath, paths...) }
}

// WithAdminServer enables ZooKeeper's AdminServer (Jetty) on a free port on
// 127.0.0.1; Server.AdminAddr returns its address.
func WithAdminServer() Option {
	return func(o *options) { o.adminServer = true }
}

// adminJar is the servlet API the AdminServer needs and zookeeper.jar's
// manifest does not name.
const adminJar = "servlet-api.jar"

// WithFullJIT runs the JVM with its default compilers and garbage collector,
// as a production ZooKeeper runs. The JVM then starts more slowly; use it for
// benchmarks, not for correctness tests.
func WithFullJIT() Option {
	return func(o *options) { o.fullJIT = true }
}

// WithDataDir keeps ZooKeeper's snapshots and transaction log in dir instead
// of a fresh directory, so that a server started after another was killed
// recovers the other's data.
func WithDataDir(dir string) Option {
	return func(o *options) { o.dataDir = dir }
}

// A Server is a running ZooKeeper standalone server started by Start.
type Server struct {
	addr      string
	adminAddr string // "" without WithAdminServer
	dir       string // holds zoo.cfg, the log and, by default, the data
	dataDir   string
	logPath   string
	cmd       *exec.Cmd

	procs    sync.WaitGroup // the goroutine that waits for the JVM
	exited   chan struct{}  // closed when the JVM has exited
	waitErr  error          // the JVM's exit status; read only after exited is closed
	killOnce sync.Once
}

// Start runs a ZooKeeper 3.8 standalone server on a free loopback port and
// returns once it serves clients. The server is killed when t ends. Start
// skips t when Java or ZooKeeper is not installed (fails it when CI=true) and
// fails t when the server does not serve within 60 seconds.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	Require(t, Available())
	o := options{tickTime: 2 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	dir := t.TempDir()
	if o.dataDir == "" {
		o.dataDir = filepath.Join(dir, "data")
	}
	deadline := time.Now().Add(startTimeout)
	for attempt := 1; ; attempt++ {
		port, err := pickPort()
		if err != nil {
			t.Fatalf("zkref: %v", err)
		}
		s, err := launch(dir, o, port, zooCfg(port, o), mainClass)
		if err != nil {
			t.Fatalf("zkref: %v", err)
		}
		t.Cleanup(s.Kill)
		err = s.awaitServing(deadline)
		if err == nil {
			return s
		}
		s.Kill()
		if errors.Is(err, errPortTaken) && attempt < portAttempts {
			continue
		}
		t.Fatalf("zkref: ZooKeeper did not start: %v\nend of %s:\n%s", err, s.logPath, logTail(s.logPath))
	}
}

// Addr returns the client address, 127.0.0.1:port.
func (s *Server) Addr() string { return s.addr }

// AdminAddr returns the AdminServer's address, 127.0.0.1:port, or "" when
// Start was not given WithAdminServer.
func (s *Server) AdminAddr() string { return s.adminAddr }

// Dir returns the server's working directory, which holds its zoo.cfg
// and log, and what classes it runs write relative to it.
func (s *Server) Dir() string { return s.dir }

// LogPath returns the file that holds the server's log and the JVM's output.
func (s *Server) LogPath() string { return s.logPath }

// DataDir returns the directory of the server's snapshots and transaction
// log, for WithDataDir.
func (s *Server) DataDir() string { return s.dataDir }

// Kill kills the server with SIGKILL, as a crash would, and waits until the
// process has exited. Calling it again does nothing.
func (s *Server) Kill() {
	s.killOnce.Do(func() {
		// The error only says the process has already exited.
		_ = s.cmd.Process.Kill()
		s.procs.Wait()
	})
}

// Pause freezes the server with SIGSTOP, as a machine that hangs: its
// connections stay open and nothing on them is answered. Continue thaws
// it; Kill kills a paused server too.
func (s *Server) Pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Continue lets a paused server run again.
func (s *Server) Continue() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// launch writes the configuration cfg into dir and starts the JVM running
// main, a server whose client port is port, without waiting for it to
// serve.
func launch(dir string, o options, port int, cfg, main string) (*Server, error) {
	java, err := Java()
	if err != nil {
		return nil, err
	}
	classpath, err := Classpath()
	if err != nil {
		return nil, err
	}
	s := &Server{
		addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:     dir,
		dataDir: o.dataDir,
		logPath: filepath.Join(dir, "zookeeper.log"),
		exited:  make(chan struct{}),
	}
	for _, p := range o.classpath {
		classpath += string(os.PathListSeparator) + p
	}
	if o.adminServer {
		if o.adminPort, err = pickPort(); err != nil {
			return nil, err
		}
		s.adminAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(o.adminPort))
		classpath += string(os.PathListSeparator) + filepath.Join(debianJavaDir, adminJar)
	}
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if o.adminPort != 0 {
		cfg += fmt.Sprintf("admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=%d\n", o.adminPort)
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("write zoo.cfg: %w", err)
	}
	log4jPath := filepath.Join(dir, "log4j.properties")
	if err := os.WriteFile(log4jPath, []byte(log4jProperties), 0o644); err != nil {
		return nil, fmt.Errorf("write log4j.properties: %w", err)
	}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return nil, fmt.Errorf("create server log: %w", err)
	}
	// The child gets its own descriptor of logFile, so ours can close now.
	defer logFile.Close()

	cmd := exec.Command(java, jvmArgs(dir, log4jPath, classpath, cfgPath, main, o)...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", java, err)
	}
	s.cmd = cmd
	s.procs.Go(func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	})
	return s, nil
}

// zooCfg returns the zoo.cfg of a standalone server on 127.0.0.1:port.
// launch adds the admin server's lines, which come last and so override
// the admin.enableServer=false written here.
func zooCfg(port int, o options) string {
	var b strings.Builder
	line := func(key, value string) { fmt.Fprintf(&b, "%s=%s\n", key, value) }
	line("tickTime", strconv.FormatInt(o.tickTime.Milliseconds(), 10))
	line("dataDir", o.dataDir)
	line("clientPort", strconv.Itoa(port))
	line("clientPortAddress", "127.0.0.1")
	line("admin.enableServer", "false")
	line("4lw.commands.whitelist", "*")
	if o.extendedTypes {
		line("extendedTypesEnabled", "true")
	}
	for _, s := range o.settings {
		line(s.key, s.value)
	}
	return b.String()
}

// log4jProperties sends the server's log to standard output, which Start
// sends to the log file; nothing is written outside the test's directory.
const log4jProperties = `log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
`

// jvmArgs returns the java command line after "java".
func jvmArgs(dir, log4jPath, classpath, cfgPath, main string, o options) []string {
	args := []string{"-Xmx512m", "-XX:-UsePerfData"}
	if !o.fullJIT {
		// A test server lives for seconds: compile quickly, collect simply.
		args = append(args, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
	}
	args = append(args,
		"-Djava.io.tmpdir="+dir,
		"-Dzookeeper.log.dir="+dir,
		"-Dzookeeper.log.file=zookeeper.log",
		"-Dzookeeper.root.logger=INFO,CONSOLE",
		"-Dlog4j.configuration=file:"+log4jPath,
		"-Dzookeeper.jmx.log4j.disable=true",
		"-cp", classpath,
	)
	args = append(args, o.jvmArgs...)
	return append(args, main, cfgPath)
}

// awaitServing polls the server until it serves, its JVM exits, or deadline
// passes.
func (s *Server) awaitServing(deadline time.Time) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.exited:
			if strings.Contains(logTail(s.logPath), "Address already in use") {
				return fmt.Errorf("%s: %w", s.addr, errPortTaken)
			}
			return fmt.Errorf("java exited: %v", s.waitErr)
		default:
		}
		if s.serving() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not serving on %s after %v", s.addr, startTimeout)
		}
		select {
		case <-s.exited:
		case <-tick.C:
		}
	}
}

// serving reports whether this server answers requests on its port. ZooKeeper
// answers "ruok" as soon as it listens, before it has loaded its data, so
// "srvr" tells whether it serves. A server that answers may also be another
// one that took the port first: "envi" shows the temporary directory, which
// is ours alone.
func (s *Server) serving() bool {
	if reply, err := FourLetter(s.addr, "ruok"); err != nil || reply != "imok" {
		return false
	}
	env, err := FourLetter(s.addr, "envi")
	if err != nil || !strings.Contains(env, "\njava.io.tmpdir="+s.dir+"\n") {
		return false
	}
	stat, err := FourLetter(s.addr, "srvr")
	return err == nil && strings.HasPrefix(stat, "Zookeeper version:")
}

// logTail returns the end of the log at path, for error messages.
func logTail(path string) string {
	const limit = 8 << 10
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read the log: %v)", err)
	}
	if len(data) > limit {
		data = data[len(data)-limit:]
		if i := strings.IndexByte(string(data), '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return string(data)
}
