package zkcompat

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
)

// TestDifferential runs the same seeded random sequences of operations
// against ZooKeeper 3.8 and Collie and compares every result: error codes,
// names, data, versions, child counts and lists, and the watch events each
// operation fires. Zxids and times differ by design and are left out;
// ephemeral owners are compared as "owned by this session or not".
func TestDifferential(t *testing.T) {
	ref := zkref.Start(t)
	col := collietest.Start(t)
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	ops := 300
	if testing.Short() {
		seeds, ops = seeds[:2], 100
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			root := fmt.Sprintf("/diff%d", seed)
			want := runSequence(t, ref.Addr(), root, seed, ops)
			got := runSequence(t, col.Addr(), root, seed, ops)
			for i := range max(len(want), len(got)) {
				var w, g string
				if i < len(want) {
					w = want[i]
				}
				if i < len(got) {
					g = got[i]
				}
				if w != g {
					t.Fatalf("step %d differs (seed %d):\nZooKeeper: %s\nCollie:    %s\nearlier steps:\n%s",
						i, seed, w, g, strings.Join(want[max(0, i-8):i], "\n"))
				}
			}
		})
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func dial(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	return dialWith(t, addr, nil)
}

// dialWith is dial through dialer (a TLS one), or go-zookeeper's own when
// it is nil.
func dialWith(t *testing.T, addr string, dialer zk.Dialer) *zk.Conn {
	t.Helper()
	if dialer == nil {
		dialer = net.DialTimeout
	}
	c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}), zk.WithDialer(dialer))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c
			}
		case <-deadline:
			c.Close()
			t.Fatalf("no session with %s", addr)
		}
	}
}

// runSequence performs a seeded sequence and returns one line per step.
func runSequence(t *testing.T, addr, root string, seed uint64, n int) []string {
	c := dial(t, addr)
	defer c.Close()
	other := dial(t, addr)
	defer other.Close()
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	var log []string
	var watches []<-chan zk.Event
	record := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		// Every event fired by this step has reached its channel before
		// the reply (ZooKeeper's ordering guarantee), so a non-blocking
		// drain sees exactly this step's events.
		var evs []string
		kept := watches[:0]
		for _, ch := range watches {
			select {
			case ev := <-ch:
				evs = append(evs, fmt.Sprintf("%s %s", ev.Type, ev.Path))
			default:
				kept = append(kept, ch)
			}
		}
		watches = kept
		slices.Sort(evs)
		if len(evs) > 0 {
			line += " events=" + strings.Join(evs, ",")
		}
		log = append(log, line)
	}
	if _, err := c.Create(root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", root, err)
	}
	names := []string{"a", "b", "c", "a/x", "a/y", "b/x", "a/x/deep", "s-", "a/s-"}
	path := func() string { return root + "/" + names[rng.IntN(len(names))] }
	data := func() []byte { return []byte(fmt.Sprintf("d%d", rng.IntN(5))) }
	version := func() int32 { return int32(rng.IntN(4)) - 1 }
	modes := []int32{0, 0, 0, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeral | zk.FlagSequence}
	acl := zk.WorldACL(zk.PermAll)
	for i := range n {
		switch op := rng.IntN(14); op {
		case 0, 1, 2:
			p, mode := path(), modes[rng.IntN(len(modes))]
			conn := c
			if rng.IntN(4) == 0 {
				conn = other
			}
			name, err := conn.Create(p, data(), mode, acl)
			if conn == other {
				// Events for c's watches reach c before the reply to a
				// later request of c.
				c.Sync(root)
			}
			record("%d create %s mode=%d -> %q %s", i, p, mode, name, code(err))
		case 3:
			p, v := path(), version()
			err := c.Delete(p, v)
			record("%d delete %s v=%d -> %s", i, p, v, code(err))
		case 4, 5:
			p, v, d := path(), version(), data()
			st, err := c.Set(p, d, v)
			record("%d set %s v=%d -> %s %s", i, p, v, stat(st, c), code(err))
		case 6:
			p := path()
			d, st, err := c.Get(p)
			record("%d get %s -> %q %s %s", i, p, d, stat(st, c), code(err))
		case 7:
			p := path()
			kids, st, err := c.Children(p)
			slices.Sort(kids)
			record("%d children %s -> %v %s %s", i, p, kids, stat(st, c), code(err))
		case 8:
			p := path()
			ok, st, err := c.Exists(p)
			record("%d exists %s -> %v %s %s", i, p, ok, stat(st, c), code(err))
		case 9:
			p := path()
			_, _, ch, err := c.GetW(p)
			if err == nil {
				watches = append(watches, ch)
			}
			record("%d getw %s -> %s", i, p, code(err))
		case 10:
			p := path()
			_, _, ch, err := c.ChildrenW(p)
			if err == nil {
				watches = append(watches, ch)
			}
			record("%d childrenw %s -> %s", i, p, code(err))
		case 11:
			p := path()
			_, _, ch, err := c.ExistsW(p)
			if err == nil {
				watches = append(watches, ch)
			}
			record("%d existsw %s -> %s", i, p, code(err))
		case 12:
			var ops []any
			var desc []string
			for range 1 + rng.IntN(3) {
				p := path()
				switch rng.IntN(4) {
				case 0:
					ops = append(ops, &zk.CreateRequest{Path: p, Data: data(), Acl: acl, Flags: modes[rng.IntN(3)]})
					desc = append(desc, "create "+p)
				case 1:
					v := version()
					ops = append(ops, &zk.DeleteRequest{Path: p, Version: v})
					desc = append(desc, fmt.Sprintf("delete %s v=%d", p, v))
				case 2:
					v := version()
					ops = append(ops, &zk.SetDataRequest{Path: p, Data: data(), Version: v})
					desc = append(desc, fmt.Sprintf("set %s v=%d", p, v))
				case 3:
					v := version()
					ops = append(ops, &zk.CheckVersionRequest{Path: p, Version: v})
					desc = append(desc, fmt.Sprintf("check %s v=%d", p, v))
				}
			}
			res, err := c.Multi(ops...)
			var rs []string
			for _, r := range res {
				rs = append(rs, fmt.Sprintf("{%q %s %s}", r.String, stat(r.Stat, c), code(r.Error)))
			}
			record("%d multi [%s] -> %v %s", i, strings.Join(desc, "; "), rs, code(err))
		case 13:
			if rng.IntN(4) == 0 {
				// The other session goes away: its ephemerals go too.
				other.Close()
				other = dial(t, addr)
				_, err := c.Sync(root)
				record("%d close-other-session -> %s", i, code(err))
			} else {
				p := path()
				acls, st, err := c.GetACL(p)
				record("%d getacl %s -> %v %s %s", i, p, acls, stat(st, c), code(err))
			}
		}
	}
	return log
}

func code(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func stat(st *zk.Stat, own *zk.Conn) string {
	if st == nil {
		return "nostat"
	}
	owner := "none"
	switch {
	case st.EphemeralOwner == own.SessionID():
		owner = "self"
	case st.EphemeralOwner != 0:
		owner = "other"
	}
	return fmt.Sprintf("{v=%d cv=%d av=%d len=%d kids=%d owner=%s}", st.Version, st.Cversion, st.Aversion, st.DataLength, st.NumChildren, owner)
}
