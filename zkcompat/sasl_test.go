//go:build linux

package zkcompat

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/server/config"
)

// saslJAAS is the JAAS file of the SASL tests: the server's users (super,
// bob, carol, alice, and empty with an empty password), the Java client's
// Client section (bob) and BadClient (bob with a wrong password).
const saslJAAS = "testdata/sasl/jaas.conf"

// saslZooCfg are the zoo.cfg lines both servers of the SASL tests run
// with, after the JAAS file's.
var saslZooCfg = [][2]string{
	{"authProvider.1", config.SASLAuthenticationProvider},
	{"superUser", "alice"},
}

// startSASLServers starts ZooKeeper 3.8 and Collie with SASL from the
// same JAAS file and zoo.cfg lines, and extra lines after those.
func startSASLServers(t *testing.T, extra ...[2]string) (zookeeper, collie interopServer) {
	t.Helper()
	jaas, err := filepath.Abs(saslJAAS)
	if err != nil {
		t.Fatal(err)
	}
	lines := slices.Concat(saslZooCfg, extra)
	opts := []zkref.Option{zkref.WithJVMArgs("-Djava.security.auth.login.config=" + jaas)}
	for _, kv := range lines {
		opts = append(opts, zkref.WithConfig(kv[0], kv[1]))
	}
	ref := zkref.Start(t, opts...)

	// Collie reads the same lines, the JAAS file named among them, as a
	// zoo.cfg.
	dir := t.TempDir()
	text := "dataDir=" + dir + "\nclientPort=2181\njava.security.auth.login.config=" + jaas + "\n"
	for _, kv := range lines {
		text += kv[0] + "=" + kv[1] + "\n"
	}
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	col := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
		c.MaxSessionTimeout = 40 * time.Second
		c.JAASConfigFile = loaded.JAASConfigFile
		c.SASLUsers = loaded.SASLUsers
		c.SASLAuthProvider = loaded.SASLAuthProvider
		c.SASLSuperUsers = loaded.SASLSuperUsers
		c.SASLSuperPassword = loaded.SASLSuperPassword
		c.AllowSASLFailedClients = loaded.AllowSASLFailedClients
		c.EnforceAuthSchemes = loaded.EnforceAuthSchemes
	}))
	return interopServer{"ZooKeeper", ref.Addr()}, interopServer{"Collie", col.Addr()}
}

// runKazooTranscript runs a Kazoo script against addr and returns what it
// printed; it fails t unless the script ends with DONE.
func runKazooTranscript(t *testing.T, python, script, addr string) []string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", "kazoo", script))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*kazooScriptTimeout)
	defer cancel()
	p := startInteropProcess(ctx, t, false, []string{"PYTHONDONTWRITEBYTECODE=1"}, python, path, addr)
	exit, err := p.wait()
	lines := p.out.Lines()
	if exit != 0 || err != nil || len(lines) == 0 || lines[len(lines)-1] != "DONE" {
		t.Fatalf("%s against %s: exit code %d (%v)\noutput:\n%s", script, addr, exit, err, p.out)
	}
	return lines
}

// outcomes keeps the lines of a transcript that report an outcome, which
// start with "> ", dropping the client's own log lines.
func outcomes(lines []string) []string {
	var out []string
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, "> "); ok {
			out = append(out, rest)
		}
	}
	return out
}

// TestSASLKazoo runs Kazoo with DIGEST-MD5 against ZooKeeper 3.8 and
// Collie started from the same JAAS file and zoo.cfg lines: the same
// users authenticate, the same sasl ACLs let the same users in, the same
// credentials are refused, with the same errors.
func TestSASLKazoo(t *testing.T) {
	python, err := zkref.Python()
	zkref.Require(t, err)
	zookeeper, collie := startSASLServers(t)
	want := outcomes(runKazooTranscript(t, python, "sasl.py", zookeeper.addr))
	rawCollie := runKazooTranscript(t, python, "sasl.py", collie.addr)
	got := outcomes(rawCollie)
	if !slices.Equal(got, want) {
		t.Errorf("Collie's outcomes differ from ZooKeeper's\nCollie:\n%s\nZooKeeper:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, line := range []string{
		"bob reads it: ok b'b'",
		"carol reads it: NoAuthError",
		"alice, a superUser, writes it: ok 'version 1'",
		"the sasl user super reads it: ok b'a'",
		"bob again, with a wrong password: start: ok, then states ['CONNECTED', 'LOST']",
	} {
		if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, line) }) {
			t.Errorf("Collie's outcomes lack %q", line)
		}
	}
	t.Logf("outcomes on both servers:\n%s", strings.Join(want, "\n"))
	if t.Failed() {
		t.Logf("Collie transcript:\n%s", strings.Join(rawCollie, "\n"))
	}
}

// runZkCliSASL runs zkCli.sh with args against addr as a SASL client of
// the JAAS file's section named section, and returns its exit code and
// what it printed, without the greeting and logging.
func runZkCliSASL(t *testing.T, addr, section string, args ...string) (int, []string) {
	t.Helper()
	jaas, err := filepath.Abs(saslJAAS)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), zkCliTimeout)
	defer cancel()
	env := []string{
		"CLIENT_JVMFLAGS=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData -Xshare:auto" +
			" -Djava.security.auth.login.config=" + jaas + " -Dzookeeper.sasl.clientconfig=" + section,
		"TZ=UTC",
	}
	p := startInteropProcess(ctx, t, false, env, zkCliPath, append([]string{"-server", addr}, args...)...)
	exit, err := p.wait()
	if err != nil {
		t.Fatalf("zkCli.sh %s against %s: %v\noutput:\n%s", strings.Join(args, " "), addr, err, p.out)
	}
	var out []string
	for _, line := range p.out.Lines() {
		if !isZkCliNoise(line) && !strings.HasPrefix(line, "Connecting to ") && !strings.Contains(line, " - ") {
			out = append(out, line)
		}
	}
	return exit, out
}

// TestSASLJavaClient authenticates ZooKeeper's Java client, through
// zkCli.sh with a JAAS Client section in CLIENT_JVMFLAGS, against
// ZooKeeper 3.8 and Collie from the same JAAS file and zoo.cfg lines:
// whoami shows the sasl identity, and a wrong password is refused alike.
func TestSASLJavaClient(t *testing.T) {
	requireClientTool(t, zkCliPath, "zookeeper")
	zookeeper, collie := startSASLServers(t)
	for _, tt := range []struct {
		section string
		args    []string
		want    string // a line both must print
	}{
		{"Client", []string{"whoami"}, "sasl: bob"},
		{"BadClient", []string{"whoami"}, "WatchedEvent state:AuthFailed type:None path:null"},
	} {
		t.Run(tt.section, func(t *testing.T) {
			zkExit, zkOut := runZkCliSASL(t, zookeeper.addr, tt.section, tt.args...)
			colExit, colOut := runZkCliSASL(t, collie.addr, tt.section, tt.args...)
			if zkExit != colExit || !slices.Equal(zkOut, colOut) {
				t.Errorf("zkCli.sh %s differs\nZooKeeper (exit %d):\n%s\nCollie (exit %d):\n%s",
					strings.Join(tt.args, " "), zkExit, strings.Join(zkOut, "\n"), colExit, strings.Join(colOut, "\n"))
			}
			if !slices.Contains(colOut, tt.want) {
				t.Errorf("Collie: no line %q in\n%s", tt.want, strings.Join(colOut, "\n"))
			}
			t.Logf("ZooKeeper (exit %d):\n%s", zkExit, strings.Join(zkOut, "\n"))
		})
	}
}
