//go:build linux

package zkcompat

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/logbuf"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/shell"
)

// quotaScript sets, lists and deletes quotas with zkCli.sh's commands and
// writes under them: past soft limits, which both servers allow, and past
// hard ones, which they refuse when they enforce quotas. It ends with an
// ephemeral and a sequential node under a quota, stats a client rewrote,
// a stats node of the root (which counts the whole tree), and a quota on
// /zookeeper, which counts the quota nodes themselves.
var quotaScript = []string{
	"create /q",
	"create /q/app",
	"create /q/app/a 12345",
	"setquota -n 3 /q/app",
	"listquota /q/app",
	"get -s /zookeeper/quota/q/app/zookeeper_stats",
	"create /q/app/b x",
	"create /q/app/c",
	"create /q/app/d",
	"listquota /q/app",
	"setquota -N 5 /q/app",
	"create /q/app/e",
	"create /q/app/f",
	"set /q/app/a 1",
	"setquota -B 12 /q/app",
	"set /q/app/a 0123456789abcdef",
	"create /q/app/g 0123456789abcdef",
	"delquota -N /q/app",
	"create /q/app/h 0123456789abcdef",
	"create /q/app/h 0123",
	"listquota /q/app",
	"delete /q/app/b",
	"set /q/app/c shrink",
	"create /q/app/sub",
	"create /q/app/sub/x xx",
	"setquota -n 2 /q/app/sub",
	"setquota -n 2 /q",
	"create /q/other",
	"setquota -b 5 /q/other",
	"create /q/other/y 123456",
	"listquota /q/other",
	"create -e /q/app/eph abc",
	"create -s /q/app/seq- ab",
	"listquota /q/app",
	"delquota -B /q/app",
	"delquota -b /q/other",
	"listquota /q/other",
	"get -s /zookeeper/quota/q/app/zookeeper_stats",
	"get -s /zookeeper/quota/q/app/zookeeper_limits",
	"set /zookeeper/quota/q/other/zookeeper_stats foo=1;count=7",
	"create /q/other/z 1",
	"get /zookeeper/quota/q/other/zookeeper_stats",
	"create /zookeeper/quota/zookeeper_stats",
	"get /zookeeper/quota/zookeeper_stats",
	"delete /zookeeper/quota/zookeeper_stats",
	"setquota -n 100 /zookeeper",
	"listquota /zookeeper",
	"create /zookeeper/extra abc",
	"listquota /zookeeper",
	"delquota /zookeeper",
	"listquota /zookeeper",
	"delquota /q/none",
	"ls -R /zookeeper/quota",
}

// TestQuotaDifferential runs quotaScript through zkCli.sh against
// ZooKeeper 3.8 and Collie, each enforcing quotas (zookeeper.enforceQuota)
// or not, and compares what the shell prints; then every node under
// /zookeeper/quota, data and Stat, as a client reads it; then a multi
// whose creates together go past a hard limit, which ZooKeeper checks op
// by op against the tree as it was before the multi. collie cli runs the
// same script against both servers and must print what zkCli.sh printed.
func TestQuotaDifferential(t *testing.T) {
	requireClientTool(t, zkCliPath, "zookeeper")
	for _, enforce := range []bool{false, true} {
		t.Run(fmt.Sprintf("enforceQuota=%v", enforce), func(t *testing.T) {
			servers := startQuotaServers(t, enforce)
			var runs [2]zkCliRun
			for i, srv := range servers {
				runs[i] = runZkCliScript(t, srv.addr, quotaScript)
			}
			compareQuotaRuns(t, "zkCli.sh", servers, runs)
			if enforce {
				want := "Quota has exceeded : /q/app/f"
				if got := runs[0].steps[slices.Index(quotaScript, "create /q/app/f")]; !slices.Equal(got, []string{want}) {
					t.Errorf("create /q/app/f on ZooKeeper enforcing quotas printed %q, want %q", got, want)
				}
			}

			var trees [2][]string
			for i, srv := range servers {
				trees[i] = quotaNodes(t, srv.addr)
			}
			compareClientOutput(t, "the nodes under /zookeeper/quota", servers[0].name, trees[0], servers[1].name, trees[1])

			var multis [2][]string
			for i, srv := range servers {
				multis[i] = quotaMulti(t, srv.addr)
			}
			compareClientOutput(t, "a multi under a hard count limit", servers[0].name, multis[0], servers[1].name, multis[1])

			// collie cli, against a fresh pair of servers.
			fresh := startQuotaServers(t, enforce)
			var cli [2]zkCliRun
			for i, srv := range fresh {
				cli[i] = runCollieCliScript(t, srv.addr, quotaScript)
			}
			compareQuotaRuns(t, "", []interopServer{{"zkCli.sh on ZooKeeper", ""}, {"collie cli on ZooKeeper", ""}}, [2]zkCliRun{runs[0], cli[0]})
			compareQuotaRuns(t, "", []interopServer{{"collie cli on ZooKeeper", ""}, {"collie cli on Collie", ""}}, cli)
		})
	}
}

// startQuotaServers starts ZooKeeper 3.8 and Collie, enforcing quotas or
// not.
func startQuotaServers(t *testing.T, enforce bool) []interopServer {
	t.Helper()
	var opts []zkref.Option
	if enforce {
		opts = append(opts, zkref.WithConfig("enforceQuota", "true"))
	}
	ref := zkref.Start(t, opts...)
	col := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
		c.MaxSessionTimeout = 40 * time.Second
		c.EnforceQuota = enforce
	}))
	return []interopServer{{"ZooKeeper", ref.Addr()}, {"Collie", col.Addr()}}
}

func compareQuotaRuns(t *testing.T, tool string, servers []interopServer, runs [2]zkCliRun) {
	t.Helper()
	for i, cmd := range quotaScript {
		compareClientOutput(t, strings.TrimSpace(tool+" "+cmd), servers[0].name, runs[0].steps[i], servers[1].name, runs[1].steps[i])
	}
}

// quotaNodes reads every node under /zookeeper/quota at addr: its path,
// data and Stat, with zxids named in order of appearance and times left
// out.
func quotaNodes(t *testing.T, addr string) []string {
	t.Helper()
	c := dialInterop(t, addr)
	zxids := newInteropRenamer("zxid")
	var out []string
	var walk func(path string)
	walk = func(path string) {
		data, st, err := c.Get(path)
		if err != nil {
			t.Fatalf("get %s at %s: %v", path, addr, err)
		}
		out = append(out, fmt.Sprintf("%s data=%q czxid=%s mzxid=%s pzxid=%s version=%d cversion=%d aversion=%d owner=%d len=%d children=%d",
			path, data, zxids.name(fmt.Sprint(st.Czxid)), zxids.name(fmt.Sprint(st.Mzxid)), zxids.name(fmt.Sprint(st.Pzxid)),
			st.Version, st.Cversion, st.Aversion, st.EphemeralOwner, st.DataLength, st.NumChildren))
		children, _, err := c.Children(path)
		if err != nil {
			t.Fatalf("children of %s at %s: %v", path, addr, err)
		}
		slices.Sort(children)
		for _, child := range children {
			walk(path + "/" + child)
		}
	}
	walk("/zookeeper/quota")
	return out
}

// quotaMulti sets a hard count limit one above the count under /q/app and
// sends a multi of three creates under it, then a create alone, and
// returns the outcomes and the stats that follow.
func quotaMulti(t *testing.T, addr string) []string {
	t.Helper()
	c := dialInterop(t, addr)
	stats, _, err := c.Get("/zookeeper/quota/q/app/zookeeper_stats")
	if err != nil {
		t.Fatalf("stats at %s: %v", addr, err)
	}
	var count int
	if _, err := fmt.Sscanf(string(stats), "count=%d,", &count); err != nil {
		t.Fatalf("stats at %s: %q: %v", addr, stats, err)
	}
	limits := fmt.Sprintf("count=-1,bytes=-1=;countHardLimit=%d", count+1)
	if _, err := c.Set("/zookeeper/quota/q/app/zookeeper_limits", []byte(limits), -1); err != nil {
		t.Fatalf("set limits at %s: %v", addr, err)
	}
	var out []string
	res, err := c.Multi(
		&zk.CreateRequest{Path: "/q/app/m1", Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: "/q/app/m2", Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: "/q/app/m3", Data: []byte("m3"), Acl: zk.WorldACL(zk.PermAll)},
	)
	out = append(out, fmt.Sprintf("multi: %v", err))
	for _, r := range res {
		out = append(out, fmt.Sprintf("  %s %v", r.String, r.Error))
	}
	_, err = c.Create("/q/app/m4", nil, 0, zk.WorldACL(zk.PermAll))
	out = append(out, fmt.Sprintf("create /q/app/m4: %v", err))
	_, err = c.Set("/q/app/m3", []byte("more"), 7)
	out = append(out, fmt.Sprintf("set /q/app/m3 version 7: %v", err))
	stats, _, err = c.Get("/zookeeper/quota/q/app/zookeeper_stats")
	out = append(out, fmt.Sprintf("stats %q %v", stats, err))
	return out
}

// runCollieCliScript runs cmds through collie cli, in process, in one
// session against addr, as runZkCliScript runs them through zkCli.sh.
func runCollieCliScript(t *testing.T, addr string, cmds []string) zkCliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), zkCliTimeout)
	defer cancel()
	var out logbuf.Buffer
	sh := shell.New(shell.Config{Server: addr, Stdout: &out, Stderr: &out})
	if status := sh.Run(ctx, strings.NewReader(zkCliScriptInput(cmds))); status != 0 {
		t.Fatalf("collie cli against %s: exit status %d\noutput:\n%s", addr, status, out.String())
	}
	return splitZkCliRun(t, "collie cli against "+addr, strings.Split(out.String(), "\n"), len(cmds))
}
