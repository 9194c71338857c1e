package zkcompat

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
)

// curatorProgram runs Curator's recipes against one server and prints a
// PASS or FAIL line per scenario; see its class comment.
const curatorProgram = "testdata/curator/CuratorInterop.java"

// curatorScenarios are the scenarios of curatorProgram, in the order it runs
// them.
var curatorScenarios = []string{
	"mutex",             // InterProcessMutex: mutual exclusion, reentrancy, timeouts
	"leaderlatch",       // LeaderLatch: one leader, handover on close and on session loss
	"cache",             // CuratorCache: initial load, every change, content equals the tree
	"transaction",       // transaction().forOperations: results, errors, rollback
	"sharedcount",       // SharedCount: versioned updates and listeners across sessions
	"atomiclong",        // DistributedAtomicLong: concurrent increments
	"persistentwatcher", // PersistentWatcher: addWatch, recursive and not
	"persistentnode",    // PersistentNode: an ephemeral node kept in place
	"ttl",               // PERSISTENT_WITH_TTL nodes and their expiry
	"sessionloss",       // a lock holder's session ends; Curator recovers
	"background",        // pipelined inBackground operations keep the session's order
}

// curatorTimeout bounds one run of curatorProgram: a JVM that compiles the
// program from source, then every scenario.
const curatorTimeout = 90 * time.Second

// curatorLog4j keeps the client libraries' log to warnings and errors, on
// standard error, so that it shows next to the scenario that caused it.
const curatorLog4j = `log4j.rootLogger=WARN, STDERR
log4j.appender.STDERR=org.apache.log4j.ConsoleAppender
log4j.appender.STDERR.Target=System.err
log4j.appender.STDERR.layout=org.apache.log4j.PatternLayout
log4j.appender.STDERR.layout.ConversionPattern=%d{HH:mm:ss,SSS} %-5p [%t:%C{1}@%L] - %m%n
`

// TestCurator runs Apache Curator's recipes (locks, leader election,
// caches, transactions, counters, persistent watches and nodes, TTL nodes)
// against a Collie server and a Collie ensemble, and the same program
// against ZooKeeper 3.8 to show that the program's expectations are
// ZooKeeper's.
func TestCurator(t *testing.T) {
	java, err := zkref.Java()
	zkref.Require(t, err)
	classpath, err := zkref.CuratorClasspath()
	zkref.Require(t, err)
	program, err := filepath.Abs(curatorProgram)
	if err != nil {
		t.Fatal(err)
	}
	servers := []struct {
		name  string
		start func(t *testing.T) string
	}{
		{"zookeeper", func(t *testing.T) string {
			return zkref.Start(t,
				zkref.WithExtendedTypes(),
				// Check TTL nodes every 100ms rather than every minute.
				zkref.WithJVMArgs("-Dznode.container.checkIntervalMs=100"),
			).Addr()
		}},
		// collietest enables TTL nodes and checks them every 100ms.
		{"collie", func(t *testing.T) string { return collietest.Start(t).Addr() }},
		// The same through a connect string naming the three servers of
		// an ensemble.
		{"collie-ensemble", func(t *testing.T) string { return collietest.StartEnsemble(t, 3, 0).ConnectString() }},
		// A follower of a ZooKeeper ensemble, which forwards the writes to
		// the ZooKeeper leader.
		{"follower", func(t *testing.T) string {
			e := zkref.StartEnsemble(t, 3, zkref.WithTickTime(time.Second), zkref.WithObserver(followerID), zkref.WithExtendedTypes(),
				zkref.WithJVMArgs("-Xmx128m", "-Dznode.container.checkIntervalMs=100"))
			addr, _ := startFollowerProcess(t, e, "extendedTypesEnabled=true")
			return addr
		}},
	}
	for _, srv := range servers {
		t.Run("server="+srv.name, func(t *testing.T) {
			t.Parallel()
			addr := srv.start(t)
			out, runErr := runCurator(t, java, classpath, program, addr)
			results := curatorResults(out)
			for _, name := range curatorScenarios {
				t.Run(name, func(t *testing.T) {
					switch line, ok := results[name]; {
					case !ok:
						t.Errorf("%s printed no result for %s", curatorProgram, name)
					case line != "PASS "+name:
						t.Errorf("%s", line)
					}
				})
			}
			if runErr != nil || t.Failed() {
				t.Errorf("%s against %s: %v; its output:\n%s", curatorProgram, srv.name, runErr, out)
			}
		})
	}
}

// runCurator runs curatorProgram with every scenario against the server at
// addr and returns its standard output and error, interleaved.
func runCurator(t *testing.T, java, classpath, program, addr string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), curatorTimeout)
	defer cancel()
	args := curatorArgs(t, dir, classpath, program, addr)
	cmd := exec.CommandContext(ctx, java, slices.Concat(args, curatorScenarios)...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return out.String(), err
}

// curatorArgs returns the java command line, after "java", that runs a
// Curator program from source against addr, with its log4j configuration
// and temporary files in dir.
func curatorArgs(t *testing.T, dir, classpath, program, addr string) []string {
	t.Helper()
	log4j := filepath.Join(dir, "log4j.properties")
	if err := os.WriteFile(log4j, []byte(curatorLog4j), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{
		// The program lives for seconds: start fast rather than run fast.
		"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData",
		"-Djava.io.tmpdir=" + dir,
		"-Dlog4j.configuration=file:" + log4j,
		"-cp", classpath,
		// Source-file mode: java compiles the program in memory first.
		program, addr,
	}
}

// curatorResults maps each scenario to the PASS or FAIL line the program
// printed for it.
func curatorResults(out string) map[string]string {
	results := make(map[string]string)
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		for _, verdict := range []string{"PASS ", "FAIL "} {
			if rest, ok := strings.CutPrefix(line, verdict); ok {
				name, _, _ := strings.Cut(rest, ":")
				results[name] = line
			}
		}
	}
	return results
}
