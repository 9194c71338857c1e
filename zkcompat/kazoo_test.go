//go:build linux

package zkcompat

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkref"
)

// kazooScriptTimeout bounds one Kazoo script; each wait inside a script is
// bounded by 10 s, and a script runs in about a second.
const kazooScriptTimeout = 60 * time.Second

// TestKazoo runs the Kazoo scripts of testdata/kazoo against ZooKeeper 3.8,
// which shows that the scripts hold ZooKeeper's behaviour, and then against
// Collie. Each script checks its own results, prints a line per check and
// exits with 0 after its last check, 1 when a check fails and 2 on any other
// error.
func TestKazoo(t *testing.T) {
	python, err := zkref.Python()
	zkref.Require(t, err)
	zookeeper, collie := startInteropServers(t)
	tests := []struct {
		script string
		// want are lines the script must print: the checks that matter most.
		want []string
	}{
		{"crud.py", []string{
			"ok: sequential names = ['/kazoo-crud/seq-0000000003', '/kazoo-crud/seq-0000000004', '/kazoo-crud/eseq-0000000005']",
			"ok: ephemeral gone with its session = None",
		}},
		{"watches.py", []string{
			"ok: a data watch fires once = [('CHANGED', '/kazoo-watches/once'), ('CHANGED', '/kazoo-watches/barrier')]",
		}},
		{"transactions.py", []string{
			"ok: every operation has the same zxid",
			"ok: failed transactions fire no watch = ('CHANGED', '/kazoo-txn/barrier')",
		}},
		{"watch_order.py", []string{
			"ok: last write = b'999'",
		}},
		{"lock.py", []string{
			"ok: release hands the lock to b = True",
			"ok: no increment lost under the lock = 30",
		}},
		{"election.py", []string{
			"ok: the leader's session closes: the next contender leads = 'a'",
		}},
		{"counter.py", []string{
			"ok: concurrent increments all counted = 203",
		}},
		{"pipelined.py", []string{
			"ok: 200 pipelined rounds gave the same record",
		}},
		{"queue_recipes.py", []string{
			"ok: Queue delivers every item exactly once (40 items)",
			"ok: LockingQueue delivers every item exactly once (40 items)",
		}},
	}
	for _, srv := range []interopServer{zookeeper, collie} {
		for _, tt := range tests {
			t.Run(srv.name+"/"+strings.TrimSuffix(tt.script, ".py"), func(t *testing.T) {
				runKazooScript(t, python, tt.script, srv.addr, tt.want)
			})
		}
	}
}

// runKazooScript runs testdata/kazoo/script against addr and checks that it
// passes and prints every line of want.
func runKazooScript(t *testing.T, python, script, addr string, want []string) {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", "kazoo", script))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), kazooScriptTimeout)
	defer cancel()
	// No __pycache__ beside the scripts.
	env := []string{"PYTHONDONTWRITEBYTECODE=1"}
	p := startInteropProcess(ctx, t, false, env, python, path, addr)
	exit, err := p.wait()
	lines := p.out.Lines()
	if exit != 0 || err != nil {
		t.Fatalf("%s: exit code %d (%v)\noutput:\n%s", script, exit, err, p.out)
	}
	if len(lines) == 0 || lines[len(lines)-1] != "PASS" {
		t.Fatalf("%s: exited without PASS\noutput:\n%s", script, p.out)
	}
	for _, w := range want {
		if !slices.Contains(lines, w) {
			t.Errorf("%s did not print %q\noutput:\n%s", script, w, p.out)
		}
	}
}
