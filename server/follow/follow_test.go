package follow_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/follow"
	"github.com/collie-io/collie/server/tree"
	"github.com/go-zookeeper/zk"
)

// observerID is the id the ensembles list as server.4=...:observer.
const observerID = 4

// tick is the ensembles' tickTime: short enough for a quick election, long
// enough that a loaded machine does not miss a syncLimit.
const tick = time.Second

// waitTimeout bounds each wait of a test once its ensemble runs.
const waitTimeout = 60 * time.Second

// superPassword is the super user's digest input on ZooKeeper and on the
// follower, so that both trees can be read whole.
const superPassword = "super:follow-secret"

func startEnsemble(t *testing.T) *zkref.Ensemble {
	t.Helper()
	return zkref.StartEnsemble(t, 3, zkref.WithTickTime(tick), zkref.WithObserver(observerID),
		zkref.WithJVMArgs("-Xmx128m", "-Dzookeeper.DigestAuthenticationProvider.superDigest="+tree.DigestID(superPassword)))
}

// startFollower runs a follower of e in this process, with the zoo.cfg a
// user would give it, and returns its client address once it serves.
func startFollower(t *testing.T, e *zkref.Ensemble) string {
	t.Helper()
	f, ran, cancel := runFollower(t, e)
	t.Cleanup(func() {
		cancel()
		if err := <-ran; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	})
	return f.Addr().String()
}

// runFollower runs a follower of e in this process and returns it once it
// serves, with the channel that gets what its Run returns and the cancel
// that ends it (at the latest when the test ends).
func runFollower(t *testing.T, e *zkref.Ensemble) (*follow.Server, <-chan error, context.CancelFunc) {
	t.Helper()
	dir := t.TempDir()
	initLimit, syncLimit := e.Limits()
	cfgText := fmt.Sprintf("tickTime=%d\ninitLimit=%d\nsyncLimit=%d\ndataDir=%s\nclientPort=2181\nclientPortAddress=127.0.0.1\n"+
		"4lw.commands.whitelist=*\nDigestAuthenticationProvider.superDigest=%s\n%s\n",
		tick.Milliseconds(), initLimit, syncLimit, dir, tree.DigestID(superPassword), strings.Join(e.ServerLines(), "\n"))
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "myid"), []byte(fmt.Sprint(observerID)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ClientPort = 0 // any free port
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	f, err := follow.New(cfg, follow.Options{Version: "3.8.0-test", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- f.Run(ctx) }()
	t.Cleanup(cancel)
	select {
	case <-f.Ready():
	case err := <-ran:
		t.Fatalf("Run ended before serving: %v", err)
	case <-time.After(waitTimeout):
		t.Fatal("the follower did not sync within the timeout")
	}
	return f, ran, cancel
}

// zkClient connects a ZooKeeper client to every member of e.
func zkClient(t *testing.T, e *zkref.Ensemble) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(strings.Split(e.ConnectString(), ","), 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// session opens a session on the follower as a client that accepts a
// read-only one (which an observer in sync does not give), authenticated
// as the super user when super is set.
func session(t *testing.T, addr string, super bool) *zkwire.Conn {
	t.Helper()
	c, err := zkwire.Handshake(addr, &proto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, proto.PasswordLen), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.TimeOut == 0 {
		t.Fatal("the follower refused a session")
	}
	t.Cleanup(func() { c.Close() })
	if super {
		authSuper(t, c)
	}
	return c
}

func authSuper(t *testing.T, c *zkwire.Conn) {
	t.Helper()
	if hdr, _, err := c.CallXid(-4, proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte(superPassword)}); err != nil || hdr.Err != proto.OK {
		t.Fatalf("addauth super: %v %v", hdr.Err, err)
	}
}

// srvrZxid is the Zxid line of srvr from addr; 0 when it does not answer.
func srvrZxid(addr string) int64 {
	out, err := zkref.FourLetter(addr, "srvr")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Zxid: "); ok {
			var z int64
			fmt.Sscanf(v, "0x%x", &z)
			return z
		}
	}
	return 0
}

// awaitLeader returns the address of the member that leads.
func awaitLeader(t *testing.T, e *zkref.Ensemble) string {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		if i := e.Leader(); i >= 0 {
			return e.Members()[i].Addr()
		}
		if time.Now().After(deadline) {
			t.Fatal("no ZooKeeper member leads")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// compareWithLeader waits until the follower has the leader's last zxid,
// then checks that the trees are the same, node by node: data, ACL and
// Stat. /zookeeper/config is ZooKeeper's list of its own servers, which
// the follower does not pass on.
func compareWithLeader(t *testing.T, e *zkref.Ensemble, followerAddr string) {
	t.Helper()
	leader := awaitLeader(t, e)
	// Opened first, opening a session being a txn of its own; closed at
	// the end, as a session left to expire closes while a later
	// comparison reads.
	lc, fc := superSession(t, leader), superSession(t, followerAddr)
	defer endSession(lc)
	defer endSession(fc)
	deadline := time.Now().Add(waitTimeout)
	for {
		want := srvrZxid(leader)
		for got := srvrZxid(followerAddr); got < want; got = srvrZxid(followerAddr) {
			if time.Now().After(deadline) {
				t.Fatalf("the follower is at zxid %#x, the leader at %#x", got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
		wantTree, err := lc.Tree(tree.ConfigPath)
		if err != nil {
			t.Fatal(err)
		}
		gotTree, err := fc.Tree(tree.ConfigPath)
		if err != nil {
			t.Fatal(err)
		}
		// Both trees are of want only if neither server moved on while
		// they were read: another session of the test may expire, say.
		lz, fz := srvrZxid(leader), srvrZxid(followerAddr)
		if lz == want && fz == want {
			if d := zkwire.DiffTrees(wantTree, gotTree); d != "" {
				t.Errorf("at zxid %#x: %s", want, d)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no quiet moment to compare: the leader moved on from %#x to %#x, the follower to %#x, while read", want, lz, fz)
		}
	}
}

// superSession opens a session of the ensemble on addr as the super
// user.
func superSession(t *testing.T, addr string) *zkwire.Conn {
	t.Helper()
	c := global(t, addr, 30000)
	authSuper(t, c)
	return c
}

// endSession closes c's session and its connection. A session that does
// not close here expires later, which the comparisons tolerate.
func endSession(c *zkwire.Conn) {
	c.Do(proto.OpCloseSession, nil, nil)
	c.Close()
}

// workload makes every kind of change under root through c: nodes with
// data and ACLs, sequential and ephemeral nodes, setData, setACL, deletes
// and a multi.
func workload(t *testing.T, c *zk.Conn, root string, n int) {
	t.Helper()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	open := zk.WorldACL(zk.PermAll)
	must(c.Create(root, []byte("root"), 0, open))
	for i := range n {
		p := fmt.Sprintf("%s/n%d", root, i)
		must(c.Create(p, []byte(fmt.Sprint("v", i)), 0, open))
		must(c.Create(p+"/seq-", nil, zk.FlagSequence, open))
		must(c.Create(p+"/eph", []byte("e"), zk.FlagEphemeral, open))
		must(c.Set(p, []byte(fmt.Sprint("w", i)), 0))
		if i%3 == 0 {
			must(c.Create(p+"/secret", []byte("s"), 0, zk.DigestACL(zk.PermRead, "user", "pw")))
			must(c.SetACL(p, zk.WorldACL(zk.PermRead|zk.PermWrite|zk.PermCreate|zk.PermDelete), 0))
		}
		if i%4 == 1 {
			must(nil, c.Delete(p+"/eph", 0))
		}
	}
	must(c.Multi(
		&zk.CreateRequest{Path: root + "/multi", Data: []byte("m"), Acl: open},
		&zk.SetDataRequest{Path: root, Data: []byte("root2"), Version: 0},
	))
}

// TestFollowerMatchesZooKeeper follows a ZooKeeper ensemble that has data
// already, then while a client writes: the follower's tree is the
// leader's at every zxid compared, its watches fire before its reads show
// a change.
func TestFollowerMatchesZooKeeper(t *testing.T) {
	e := startEnsemble(t)
	zc := zkClient(t, e)
	workload(t, zc, "/before", 12) // taken from the leader's snapshot
	addr := startFollower(t, e)
	compareWithLeader(t, e, addr)
	for round := range 3 { // txns the leader sends one by one
		workload(t, zc, fmt.Sprintf("/round%d", round), 8)
		compareWithLeader(t, e, addr)
	}

	t.Run("watch fires before the read shows the change", func(t *testing.T) {
		if _, err := zc.Create("/watched", []byte("old"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		// zc's own write: its member has it, whichever one that is (the
		// leader itself may not have applied it yet).
		_, created, err := zc.Exists("/watched")
		if err != nil {
			t.Fatal(err)
		}
		c := session(t, addr, false)
		// The session sees the node once the follower has its creation.
		deadline := time.Now().Add(waitTimeout)
		for srvrZxid(addr) < created.Czxid {
			if time.Now().After(deadline) {
				t.Fatal("the follower does not catch up")
			}
			time.Sleep(10 * time.Millisecond)
		}
		var data proto.GetDataResponse
		if code, err := c.Do(proto.OpGetData, &proto.GetDataRequest{Path: "/watched", Watch: true}, &data); err != nil || code != proto.OK {
			t.Fatalf("getData with a watch: %v %v", code, err)
		}
		if _, err := zc.Set("/watched", []byte("new"), -1); err != nil {
			t.Fatal(err)
		}
		for string(data.Data) != "new" {
			if time.Now().After(deadline) {
				t.Fatal("the follower's read never showed the change")
			}
			if code, err := c.Do(proto.OpGetData, &proto.GetDataRequest{Path: "/watched"}, &data); err != nil || code != proto.OK {
				t.Fatalf("getData: %v %v", code, err)
			}
			if string(data.Data) == "new" && len(c.Events) == 0 {
				t.Fatal("the read shows the change before the watch fired")
			}
		}
		want := proto.WatcherEvent{Type: proto.EventNodeDataChanged, State: proto.StateSyncConnected, Path: "/watched"}
		if len(c.Events) != 1 || c.Events[0] != want {
			t.Fatalf("events %+v, want one %+v", c.Events, want)
		}
	})

	t.Run("a client that accepts a read-only session can write", func(t *testing.T) {
		// As on a ZooKeeper observer: its session is the ensemble's.
		c := session(t, addr, true)
		for _, req := range []struct {
			op  proto.OpCode
			req proto.Record
		}{
			{proto.OpCreate, &proto.CreateRequest{Path: "/from-ro-client", ACL: zkwire.OpenACL}},
			{proto.OpSetData, &proto.SetDataRequest{Path: "/watched", Data: []byte("x"), Version: -1}},
			{proto.OpSync, &proto.SyncRequest{Path: "/"}},
		} {
			if code, err := c.Do(req.op, req.req, nil); err != nil || code != proto.OK {
				t.Errorf("%v: %v %v, want OK", req.op, code, err)
			}
		}
	})

	t.Run("resumed sessions", func(t *testing.T) {
		// A session of the ensemble without its password has expired,
		// as ZooKeeper's observer answers.
		wrong := &zkwire.Conn{Session: zc.SessionID(), Passwd: make([]byte, proto.PasswordLen), TimeOut: 30000}
		if n, err := wrong.Resume(addr, 0); err != nil || n.TimeOut != 0 {
			t.Errorf("resuming a session of the ensemble with a wrong password: %v, want it expired", err)
		}
		// So has one nobody knows: the client starts a new one.
		unknown := &zkwire.Conn{Session: 0x4000000001234, Passwd: make([]byte, proto.PasswordLen), TimeOut: 30000}
		if n, err := unknown.Resume(addr, 0); err != nil || n.TimeOut != 0 {
			t.Errorf("resuming an unknown session: %v, want it expired", err)
		}
	})

	t.Run("four-letter words", func(t *testing.T) {
		out, err := zkref.FourLetter(addr, "srvr")
		if err != nil || !strings.Contains(out, "\nMode: observer\n") || strings.Contains(out, "READ-ONLY mode") {
			t.Errorf("srvr: %q %v", out, err)
		}
		if out, err := zkref.FourLetter(addr, "isro"); err != nil || out != "rw" {
			t.Errorf("isro: %q %v", out, err)
		}
		out, err = zkref.FourLetter(addr, "mntr")
		if err != nil || !strings.Contains(out, "zk_server_state\tobserver\n") || !strings.Contains(out, "zk_version\t3.8.0-test\n") {
			t.Errorf("mntr: %q %v", out, err)
		}
		leaderMntr, err := zkref.FourLetter(awaitLeader(t, e), "mntr")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := mntrValue(out, "zk_znode_count"), mntrValue(leaderMntr, "zk_znode_count"); got == "" || got != want {
			t.Errorf("zk_znode_count %q, the leader's %q", got, want)
		}
	})
}

func mntrValue(out, key string) string {
	for line := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(line, key+"\t"); ok {
			return v
		}
	}
	return ""
}

// TestFollowerSurvivesLeaderKill kills the ZooKeeper leader while a client
// writes: the follower closes its clients, syncs with the new leader and
// has its tree again; a session resumes through it with its ephemeral
// node, and re-arms its watch, which fires for the change made while it
// was away.
func TestFollowerSurvivesLeaderKill(t *testing.T) {
	e := startEnsemble(t)
	zc := zkClient(t, e)
	workload(t, zc, "/before", 6)
	if _, err := zc.Create("/gap", []byte("old"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	addr := startFollower(t, e)
	compareWithLeader(t, e, addr)

	c := session(t, addr, false)
	var data proto.GetDataResponse
	if code, err := c.Do(proto.OpGetData, &proto.GetDataRequest{Path: "/gap", Watch: true}, &data); err != nil || code != proto.OK {
		t.Fatalf("getData with a watch: %v %v", code, err)
	}
	lastSeen := data.Stat.Mzxid
	mustCreate(t, c, "/eph", proto.ModeEphemeral)

	// A writer that goes on through the election, through any member.
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var written atomic.Int64
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			if _, err := zc.Create(fmt.Sprintf("/load-%d", i), []byte("x"), 0, zk.WorldACL(zk.PermAll)); err == nil {
				written.Add(1)
			}
		}
	})
	defer func() { stop(); wg.Wait() }()
	deadline := time.Now().Add(waitTimeout)
	for written.Load() < 20 {
		if time.Now().After(deadline) {
			t.Fatal("the writer does not write")
		}
		time.Sleep(5 * time.Millisecond)
	}

	e.Kill(e.Leader())
	// The follower drops its clients when it loses the leader.
	if _, err := c.ExpectClosed(); err != nil {
		t.Fatalf("the follower kept its client after losing the leader: %v", err)
	}
	var changed *zk.Stat
	for {
		var err error
		if changed, err = zc.Set("/gap", []byte("changed in the gap"), -1); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no write succeeded after the leader was killed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The follower has the change before the client is back: its watch
	// fires from SetWatches, for a change it did not see happen.
	for srvrZxid(addr) < changed.Mzxid {
		if time.Now().After(deadline) {
			t.Fatalf("the follower does not get the change at %#x", changed.Mzxid)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The session resumes with the new leader, with the last zxid it saw,
	// and sets its watch again.
	back, err := c.Resume(addr, lastSeen)
	if err != nil || back.TimeOut == 0 {
		t.Fatalf("resuming the session after the election: %v", err)
	}
	defer back.Close()
	if hdr, _, err := back.CallXid(-8, proto.OpSetWatches, &proto.SetWatches{RelativeZxid: lastSeen, DataWatches: []string{"/gap"}}); err != nil || hdr.Err != proto.OK {
		t.Fatalf("setWatches: %v %v", hdr.Err, err)
	}
	want := proto.WatcherEvent{Type: proto.EventNodeDataChanged, State: proto.StateSyncConnected, Path: "/gap"}
	if len(back.Events) != 1 || back.Events[0] != want {
		t.Errorf("events before the setWatches reply %+v, want one %+v", back.Events, want)
	}
	if code, err := back.Do(proto.OpExists, &proto.ExistsRequest{Path: "/eph"}, nil); err != nil || code != proto.OK {
		t.Errorf("exists of the session's ephemeral after the election: %v %v", code, err)
	}

	stop()
	wg.Wait()
	compareWithLeader(t, e, addr)
}
