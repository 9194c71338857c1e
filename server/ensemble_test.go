package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server"
	"github.com/collie-io/collie/server/config"
)

// waitFor polls cond until it holds or 15 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Three voters and an observer: a write through any server is seen on
// every one, each reports its role, and a session moves between servers
// with its ephemeral node.
func TestEnsembleServesClients(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 1)
	servers := e.Servers()
	lead := e.Leader()

	for i, s := range servers {
		c, _ := connect(t, s.Addr())
		if _, err := c.Create(fmt.Sprintf("/from%d", i+1), []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create through server %d: %v", i+1, err)
		}
	}
	for i, s := range servers {
		c, _ := connect(t, s.Addr())
		if _, err := c.Sync("/"); err != nil {
			t.Fatalf("sync on server %d: %v", i+1, err)
		}
		kids, _, err := c.Children("/")
		if err != nil {
			t.Fatal(err)
		}
		for j := range servers {
			if !strings.Contains(strings.Join(kids, ","), fmt.Sprintf("from%d", j+1)) {
				t.Fatalf("server %d lists %v: no from%d", i+1, kids, j+1)
			}
		}
	}
	for i, s := range servers {
		want := "follower"
		switch {
		case i == 3:
			want = "observer"
		case s == lead:
			want = "leader"
		}
		if out := fourLetter(t, s.Addr(), "srvr"); !strings.Contains(out, "Mode: "+want) {
			t.Errorf("server %d srvr: %q, want Mode: %s", i+1, out, want)
		}
	}

	// The leader's mntr counts its synced followers and observer, and
	// each member's lag.
	waitFor(t, "the leader's mntr to show its members", func() bool {
		out := fourLetter(t, lead.Addr(), "mntr")
		return strings.Contains(out, "zk_synced_followers\t2\n") && strings.Contains(out, "zk_synced_observers\t1\n") &&
			strings.Contains(out, "zk_pending_syncs\t0\n") && strings.Contains(out, "collie_member_4_lag\t")
	})
	for i, s := range servers {
		if s != lead && strings.Contains(fourLetter(t, s.Addr(), "mntr"), "zk_synced_followers") {
			t.Errorf("server %d, not the leader, reports synced followers", i+1)
		}
	}

	// A session opened on the observer, with an ephemeral node, moves to
	// the second server and keeps both.
	rc := dialRaw(t, servers[3].Addr(), 6000)
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
	call(t, rc, proto.OpCreate, &proto.CreateRequest{Path: "/eph", ACL: open, Flags: proto.ModeEphemeral}, &proto.CreateResponse{})
	rc.Close()
	rc2 := resume(t, servers[1].Addr(), rc)
	// Reads are served by the server itself, which may not have applied
	// the create yet: sync first, as a client moving between servers would
	// be protected by its last seen zxid.
	call(t, rc2, proto.OpSync, &proto.SyncRequest{Path: "/"}, &proto.SyncResponse{})
	var st proto.ExistsResponse
	if code := call(t, rc2, proto.OpExists, &proto.ExistsRequest{Path: "/eph"}, &st); code != proto.OK || st.Stat.EphemeralOwner != rc.Session {
		t.Fatalf("ephemeral after moving the session: %v %+v", code, st.Stat)
	}
}

// When the leader stops, the others elect a new one and keep serving
// writes; a session on a follower stays alive throughout, kept alive by
// the follower's reports to whichever server leads.
func TestEnsembleSurvivesLeaderLoss(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	old := e.Leader()
	_, follower := followerOf(t, e)
	rc := dialRaw(t, follower.Addr(), 4000)
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
	call(t, rc, proto.OpCreate, &proto.CreateRequest{Path: "/eph", ACL: open, Flags: proto.ModeEphemeral}, &proto.CreateResponse{})
	old.Stop()
	lead := e.Leader()
	if lead == old {
		t.Fatal("a stopped server leads")
	}
	// The session moves to the server that does not lead now, if it is
	// not on it, so that its activity reaches the leader only as reports.
	on := follower
	for _, s := range e.Servers() {
		if s != old && s != lead && s != follower {
			on = s
			rc = resume(t, on.Addr(), rc)
		}
	}
	// Keep the session busy for longer than its timeout: its activity on
	// a follower must reach the new leader. A server that learns of the
	// new leader late ends the connections with requests in flight, as
	// ZooKeeper's followers do; the client reconnects with its session,
	// which resume checks is still valid.
	deadline := time.Now().Add(3 * time.Duration(rc.TimeOut) * time.Millisecond)
	for i := 0; time.Now().Before(deadline); i++ {
		code, err := rc.Do(proto.OpCreate, &proto.CreateRequest{Path: fmt.Sprintf("/after%d", i), ACL: open}, &proto.CreateResponse{})
		if err != nil {
			rc = resume(t, on.Addr(), rc)
			continue
		}
		if code != proto.OK {
			t.Fatalf("create after the leader's loss: %v", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var st proto.ExistsResponse
	if code := call(t, rc, proto.OpExists, &proto.ExistsRequest{Path: "/eph"}, &st); code != proto.OK {
		t.Fatalf("ephemeral of a live session after the leader's loss: %v", code)
	}
}

// A session that stops sending expires, and its ephemeral node is gone
// from every server.
func TestEnsembleExpiryRemovesEphemeralsEverywhere(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	servers := e.Servers()
	rc := dialRaw(t, servers[2].Addr(), 400)
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
	call(t, rc, proto.OpCreate, &proto.CreateRequest{Path: "/eph", ACL: open, Flags: proto.ModeEphemeral}, &proto.CreateResponse{})
	rc.NC.Close() // no close request: the session must expire
	for i, s := range servers {
		c, _ := connect(t, s.Addr())
		waitFor(t, fmt.Sprintf("ephemeral gone on server %d", i+1), func() bool {
			ok, _, err := c.Exists("/eph")
			return err == nil && !ok
		})
	}
}

// With linearizableReads, a read through any server sees every write
// acknowledged before it was sent, even one made through another server
// (without it, a follower may not have applied the write yet).
func TestEnsembleLinearizableReads(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0, collietest.WithConfig(func(c *config.Config) { c.LinearizableReads = true }))
	lead := e.Leader()
	var other *collietest.Server
	for _, s := range e.Servers() {
		if s != lead {
			other = s
		}
	}
	w, _ := connect(t, lead.Addr())
	r, _ := connect(t, other.Addr())
	if _, err := w.Create("/x", []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 200; i++ {
		want := fmt.Sprint(i)
		if _, err := w.Set("/x", []byte(want), -1); err != nil {
			t.Fatal(err)
		}
		got, _, err := r.Get("/x")
		if err != nil || string(got) != want {
			t.Fatalf("read %d through a follower: %q, %v; want %q", i, got, err, want)
		}
	}
}

// A session that reconnects to another server belongs to that one: a write
// sent through its old connection is refused with SessionMoved, which, as
// in ZooKeeper, closes that connection rather than answer it; writes
// through the new one succeed.
func TestEnsembleSessionMoved(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	servers := e.Servers()
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
	old := dialRaw(t, servers[0].Addr(), 6000)
	call(t, old, proto.OpCreate, &proto.CreateRequest{Path: "/before", ACL: open}, &proto.CreateResponse{})
	moved := resume(t, servers[1].Addr(), old)
	if code := call(t, moved, proto.OpCreate, &proto.CreateRequest{Path: "/through-new", ACL: open}, &proto.CreateResponse{}); code != proto.OK {
		t.Fatalf("create through the new server: %v", code)
	}
	// As ZooKeeper's: the old connection is closed, not answered.
	if code, err := old.Do(proto.OpCreate, &proto.CreateRequest{Path: "/through-old", ACL: open}, &proto.CreateResponse{}); err == nil {
		t.Fatalf("create through the old connection answered %v; want the connection closed", code)
	}
	var st proto.ExistsResponse
	if code := call(t, moved, proto.OpExists, &proto.ExistsRequest{Path: "/through-old"}, &st); code != proto.ErrNoNode {
		t.Fatalf("the write through the old connection: exists says %v, want NoNode", code)
	}
}

// A leader cut off from the others stops serving writes, the majority
// elects another and goes on, and once the partition heals the old leader
// has the majority's writes and none of its own refused ones.
func TestEnsemblePartitionedLeader(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	servers := e.Servers()
	old := e.Leader()
	oldIndex, other := 0, servers[0]
	for i, s := range servers {
		if s == old {
			oldIndex = i
		} else {
			other = s
		}
	}
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
	cut := dialRaw(t, old.Addr(), 6000)
	e.Isolate(oldIndex)

	// The write through the isolated leader never succeeds: raft cannot
	// commit it, and the server ends the connection when it steps down.
	code, err := cut.Do(proto.OpCreate, &proto.CreateRequest{Path: "/minority", ACL: open}, &proto.CreateResponse{})
	if err == nil && code == proto.OK {
		t.Fatal("a write through the isolated leader was acknowledged")
	}

	// While the majority elects a new leader, opening a session or writing
	// may end the connection: try again.
	waitFor(t, "a write through the majority", func() bool {
		return zkwire.TryCreate(other.Addr(), "/majority")
	})
	// Raft's check-quorum makes a leader that hears from no majority step
	// down.
	waitFor(t, "the isolated leader to step down", func() bool { return !old.Server().IsLeader() })

	e.Heal(oldIndex)
	healed, _ := connect(t, old.Addr())
	waitFor(t, "the old leader to catch up", func() bool {
		if _, err := healed.Sync("/"); err != nil {
			return false
		}
		ok, _, err := healed.Exists("/majority")
		return err == nil && ok
	})
	if ok, _, err := healed.Exists("/minority"); err != nil || ok {
		t.Fatalf("the refused write is on the old leader: %v, %v", ok, err)
	}
}

// A client whose server goes away reconnects to another server of the
// ensemble with its session; the one-shot watch it had set there is set
// again, and fires exactly once for the change made while it was away.
func TestEnsembleWatchesMoveWithTheSession(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	// The client starts on a follower and moves to the other one; the
	// writer works through the leader, which stays.
	lead := e.Leader()
	servers := []*collietest.Server{}
	for _, s := range e.Servers() {
		if s != lead {
			servers = append(servers, s)
		}
	}
	servers = append(servers, lead)
	ctx := t.Context()
	// The client dials whichever server target names, whatever address it
	// asks for: first one follower, then, once that one is gone, the
	// other.
	var target atomic.Value
	target.Store(servers[0].Addr())
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, target.Load().(string))
	}
	c, err := client.Dial(ctx, "127.0.0.1:1", client.Config{SessionTimeout: 2 * time.Second, Dial: dial})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	writer, err := client.Dial(ctx, servers[2].Addr(), client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, _, err := writer.Create(ctx, "/w", []byte("0"), client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctx, "/w"); err != nil {
		t.Fatal(err)
	}
	_, _, events, err := c.GetW(ctx, "/w")
	if err != nil {
		t.Fatal(err)
	}
	session := c.SessionID()

	servers[0].Stop()
	if _, err := writer.Set(ctx, "/w", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	target.Store(servers[1].Addr())
	select {
	case ev := <-events:
		if ev.Type != client.EventNodeDataChanged || ev.Path != "/w" {
			t.Fatalf("event %+v, want a data change of /w", ev)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no event for the change made while the client was away")
	}
	if c.SessionID() != session {
		t.Fatalf("session %#x after the move, want %#x", c.SessionID(), session)
	}
	// One-shot: the next change fires nothing on that watch.
	if _, err := writer.Set(ctx, "/w", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctx, "/w"); err != nil {
		t.Fatal(err)
	}
	select {
	case ev, ok := <-events:
		if ok {
			t.Fatalf("a second event on a one-shot watch: %+v", ev)
		}
	default:
	}
}

// Without a quorum no write is acknowledged; with one back, writes go on.
func TestEnsembleQuorumLossStopsWrites(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	servers := e.Servers()
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
	c := dialRaw(t, servers[0].Addr(), 6000)
	call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/before", ACL: open}, &proto.CreateResponse{})
	servers[1].Stop()
	servers[2].Stop()
	waitFor(t, "server 1 to lose its leader", func() bool { return !servers[0].Server().IsLeader() })
	code, err := c.Do(proto.OpCreate, &proto.CreateRequest{Path: "/alone", ACL: open}, &proto.CreateResponse{})
	if err == nil && code == proto.OK {
		t.Fatal("a write was acknowledged by one server of three")
	}
	servers[1].Restart()
	waitFor(t, "a write with a quorum back", func() bool { return zkwire.TryCreate(servers[1].Addr(), "/after") })
}

// resume reconnects the session of old to addr. While a leader is being
// elected the server may end the connection before answering (it cannot
// yet record the session's move): that is tried again; a session the
// server says has expired fails the test.
func resume(t *testing.T, addr string, old *zkwire.Conn) *zkwire.Conn {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := zkwire.Handshake(addr, &proto.ConnectRequest{TimeOut: old.TimeOut, SessionID: old.Session, Passwd: old.Passwd})
		if err == nil {
			t.Cleanup(func() { c.Close() })
			if c.TimeOut <= 0 {
				t.Fatalf("session %#x expired on moving to %s", old.Session, addr)
			}
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %#x not resumed on %s within 15s: %v", old.Session, addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A follower cut off from the others stops serving clients once it has
// known no leader for the shortest session timeout: its connections close,
// new sessions are refused, isro says null; once healed, it serves again.
func TestEnsembleLeaderlessServerStopsServing(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	fi, f := followerOf(t, e)
	rc := dialRaw(t, f.Addr(), 6000)
	if out := fourLetter(t, f.Addr(), "isro"); out != "rw" {
		t.Fatalf("isro on a follower with a leader: %q", out)
	}
	e.Isolate(fi)
	waitFor(t, "the cut-off follower to stop serving", func() bool { return fourLetter(t, f.Addr(), "isro") == "null" })
	expectClosed(t, rc)
	if c, err := zkwire.Dial(f.Addr(), 6000); err == nil {
		c.Close()
		if c.TimeOut > 0 {
			t.Fatal("a server without a leader opened a session")
		}
	}
	e.Heal(fi)
	waitFor(t, "the healed follower to serve again", func() bool { return fourLetter(t, f.Addr(), "isro") == "rw" })
	waitFor(t, "a write through the healed follower", func() bool { return zkwire.TryCreate(f.Addr(), "/back") })
}

// A server without a leader, which serves no clients, says so as
// ZooKeeper's does: srvr, stat, mntr and the other four-letter words
// answer only "not currently serving", ruok and envi still answer, and so
// do the admin server's commands; healed, it reports its role again.
func TestEnsembleLeaderlessServerSaysNotServing(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0, collietest.WithAdminServer())
	fi, f := followerOf(t, e)
	const notServing = "This ZooKeeper instance is not currently serving requests\n"
	e.Isolate(fi)
	waitFor(t, "the cut-off follower to stop serving", func() bool { return fourLetter(t, f.Addr(), "isro") == "null" })
	for _, cmd := range []string{"srvr", "stat", "mntr", "cons", "conf", "wchs", "wchc", "wchp", "dump", "dirs", "srst", "crst"} {
		if out := fourLetter(t, f.Addr(), cmd); out != notServing {
			t.Errorf("%s without a leader: %q, want %q", cmd, out, notServing)
		}
	}
	if out := fourLetter(t, f.Addr(), "ruok"); out != "imok" {
		t.Errorf("ruok without a leader: %q", out)
	}
	if out := fourLetter(t, f.Addr(), "envi"); !strings.HasPrefix(out, "Environment:\n") {
		t.Errorf("envi without a leader: %q", out)
	}
	for cmd, serving := range map[string]bool{"srvr": false, "monitor": false, "ruok": false, "is_read_only": false, "environment": true, "zabstate": true} {
		m := adminCommand(t, f.AdminAddr(), cmd)
		if got := m["error"] != strings.TrimSuffix(notServing, "\n"); got != serving {
			t.Errorf("admin %s without a leader: %v", cmd, m)
		}
	}
	e.Heal(fi)
	waitFor(t, "the healed follower to serve again", func() bool { return fourLetter(t, f.Addr(), "isro") == "rw" })
	if out := fourLetter(t, f.Addr(), "srvr"); !strings.Contains(out, "Mode: follower\n") {
		t.Errorf("srvr once healed: %q", out)
	}
	if m := adminCommand(t, f.AdminAddr(), "srvr"); m["error"] != nil {
		t.Errorf("admin srvr once healed: %v", m)
	}
}

// A member of an ensemble started before the others listens at once, as a
// ZooKeeper server does, and says it is not serving until it has a leader:
// ruok answers imok, isro null, srvr and the admin commands "not currently
// serving", and sessions are refused. Once the others are up it serves.
func TestEnsembleMemberStartedAloneSaysNotServing(t *testing.T) {
	cfgs := make([]config.Config, 3)
	members := make([]config.Server, 3)
	for i := range cfgs {
		cfgs[i] = collietest.Config(t)
		cfgs[i].AdminServerEnabled, cfgs[i].AdminServerAddress, cfgs[i].AdminServerPort = true, "127.0.0.1", collietest.FreePort(t)
		members[i] = config.Server{ID: uint64(i + 1), Host: "127.0.0.1", PeerPort: collietest.FreePort(t), ElectionPort: collietest.FreePort(t),
			ClientAddress: "127.0.0.1", ClientPort: cfgs[i].ClientPort}
	}
	run := func(i int) *server.Server {
		cfg := cfgs[i]
		cfg.ServerID, cfg.Servers, cfg.Standalone = uint64(i+1), members, false
		srv, err := server.New(cfg, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.Run(ctx)
		}()
		t.Cleanup(func() {
			sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer scancel()
			srv.Shutdown(sctx)
			cancel()
			<-done
		})
		return srv
	}
	first := run(0)
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(cfgs[0].ClientPort))
	admin := net.JoinHostPort("127.0.0.1", fmt.Sprint(cfgs[0].AdminServerPort))
	waitFor(t, "the lone member to answer ruok", func() bool { return tryFourLetter(addr, "ruok") == "imok" })
	const notServing = "This ZooKeeper instance is not currently serving requests"
	if out := fourLetter(t, addr, "srvr"); out != notServing+"\n" {
		t.Errorf("srvr of a member without a leader: %q", out)
	}
	if out := fourLetter(t, addr, "isro"); out != "null" {
		t.Errorf("isro of a member without a leader: %q", out)
	}
	waitFor(t, "the lone member's admin server", func() bool { return tryAdmin(admin) })
	if m := adminCommand(t, admin, "srvr"); m["error"] != notServing {
		t.Errorf("admin srvr of a member without a leader: %v", m)
	}
	if c, err := zkwire.Dial(addr, 6000); err == nil {
		c.Close()
		if c.TimeOut > 0 {
			t.Fatal("a member without a leader opened a session")
		}
	}
	run(1)
	run(2)
	select {
	case <-first.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the first member does not serve 30s after the others started")
	}
	if out := fourLetter(t, addr, "srvr"); !strings.Contains(out, "\nMode: ") {
		t.Errorf("srvr once serving: %q", out)
	}
	dialRaw(t, addr, 6000)
}

// tryFourLetter returns a four-letter word's answer, or "" when the server
// does not answer.
func tryFourLetter(addr, cmd string) string {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	nc.Write([]byte(cmd))
	b, _ := io.ReadAll(nc)
	return string(b)
}

// tryAdmin reports whether an admin server answers.
func tryAdmin(addr string) bool {
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get("http://" + addr + "/commands/ruok")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

// adminCommand runs an admin server's command and decodes its answer.
func adminCommand(t *testing.T, addr, name string) map[string]any {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get("http://" + addr + "/commands/" + name)
	if err != nil {
		t.Fatalf("admin %s: %v", name, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("admin %s: %d %v", name, resp.StatusCode, err)
	}
	return m
}

// startReadOnlyEnsemble starts three voters with readonlymode.enabled and
// returns them, the leader, and a follower with its index.
func startReadOnlyEnsemble(t *testing.T) (e *collietest.Ensemble, lead *collietest.Server, fi int, f *collietest.Server) {
	t.Helper()
	e = collietest.StartEnsemble(t, 3, 0, collietest.WithConfig(func(c *config.Config) { c.ReadOnlyMode = true }))
	fi, f = followerOf(t, e)
	return e, e.Leader(), fi, f
}

// A server with readonlymode.enabled turns read-only after ZooKeeper's
// grace period without a leader, max(2 s, tickTime), whatever the
// shortest session timeout (the wait of a server without it), and its
// admin server says it is read-only; a client
// that resumes its session there is refused, as ZooKeeper refuses a
// global session's reconnection in read-only mode.
func TestEnsembleReadOnlyModeAfterGracePeriod(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0, collietest.WithAdminServer(), collietest.WithConfig(func(c *config.Config) {
		c.ReadOnlyMode = true
		c.MinSessionTimeout, c.MaxSessionTimeout = time.Minute, 2*time.Minute
	}))
	fi, f := followerOf(t, e)
	rc := dialRaw(t, f.Addr(), 60000)
	if m := adminCommand(t, f.AdminAddr(), "is_read_only"); m["read_only"] != false {
		t.Errorf("admin is_read_only with a leader: %v", m)
	}
	e.Isolate(fi)
	waitFor(t, "the cut-off follower to enter read-only mode", func() bool { return fourLetter(t, f.Addr(), "isro") == "ro" })
	expectClosed(t, rc)
	// The admin server says so too, as ZooKeeper's read-only server.
	if m := adminCommand(t, f.AdminAddr(), "is_read_only"); m["read_only"] != true || m["error"] != nil {
		t.Errorf("admin is_read_only in read-only mode: %v", m)
	}
	if m := adminCommand(t, f.AdminAddr(), "server_stats"); m["read_only"] != true || m["error"] != nil {
		t.Errorf("admin server_stats in read-only mode: %v", m)
	}
	c, err := zkwire.Handshake(f.Addr(), &proto.ConnectRequest{TimeOut: rc.TimeOut, SessionID: rc.Session, Passwd: rc.Passwd, ReadOnly: true})
	if err == nil {
		c.Close()
		t.Fatalf("a session resumed in read-only mode (timeout %d); want the connection refused", c.TimeOut)
	}
}

// With readonlymode.enabled, a server cut off from its leader serves
// reads to clients that ask for a read-only session, refuses the others,
// and answers writes and syncs with NOTREADONLY, as ZooKeeper's read-only
// server does. When the leader is back, the read-only client gets an
// ordinary session there, and its watch fires for what changed meanwhile.
func TestEnsembleReadOnlyMode(t *testing.T) {
	e, lead, fi, f := startReadOnlyEnsemble(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	writer := dialClient(t, lead.Addr(), client.Config{})
	if _, _, err := writer.Create(ctx, "/ro", []byte("v1"), client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to apply /ro", func() bool { return tryGet(f.Addr(), "/ro") == "v1" })

	e.Isolate(fi)
	waitFor(t, "the cut-off follower to enter read-only mode", func() bool { return fourLetter(t, f.Addr(), "isro") == "ro" })
	if out := fourLetter(t, f.Addr(), "srvr"); !strings.Contains(out, "Mode: read-only\n") {
		t.Errorf("srvr in read-only mode:\n%s", out)
	}
	if c, err := zkwire.Dial(f.Addr(), 6000); err == nil {
		c.Close()
		if c.TimeOut > 0 {
			t.Fatal("a server in read-only mode opened a session for a client that did not ask for a read-only one")
		}
	}

	ro := dialClient(t, f.Addr(), client.Config{ReadOnly: true, SessionTimeout: 4 * time.Second})
	states := ro.StateChanges()
	defer states.Close()
	if st := ro.State(); st != client.StateReadOnly {
		t.Fatalf("state %v, want ReadOnly", st)
	}
	data, _, ch, err := ro.GetW(ctx, "/ro")
	if err != nil || string(data) != "v1" {
		t.Fatalf("read in read-only mode: %q, %v", data, err)
	}
	if _, _, err := ro.Create(ctx, "/nope", nil, client.ModePersistent, nil); !errors.Is(err, client.ErrNotReadOnly) {
		t.Errorf("create in read-only mode: %v, want ErrNotReadOnly", err)
	}
	if _, err := ro.Multi(ctx, client.SetOp("/ro", []byte("x"), client.AnyVersion)); !errors.Is(err, client.ErrNotReadOnly) {
		t.Errorf("multi in read-only mode: %v, want ErrNotReadOnly", err)
	}
	if err := ro.Sync(ctx, "/ro"); !errors.Is(err, client.ErrNotReadOnly) {
		t.Errorf("sync in read-only mode: %v, want ErrNotReadOnly", err)
	}
	if _, err := writer.Set(ctx, "/ro", []byte("v2"), client.AnyVersion); err != nil {
		t.Fatalf("write through the majority: %v", err)
	}

	e.Heal(fi)
	awaitState(t, ctx, states, client.StateReconnected)
	select {
	case ev := <-ch:
		if ev.Type != client.EventNodeDataChanged || ev.Path != "/ro" {
			t.Errorf("watch after leaving read-only mode: %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("the watch set in read-only mode did not fire for the change made meanwhile")
	}
	if data, _, err := ro.Get(ctx, "/ro"); err != nil || string(data) != "v2" {
		t.Errorf("read after leaving read-only mode: %q, %v", data, err)
	}
	if _, _, err := ro.Create(ctx, "/yes", nil, client.ModeEphemeral, nil); err != nil {
		t.Errorf("create after leaving read-only mode: %v", err)
	}
}

// A client connected to a read-only server looks for a server with a
// leader (isro answers "rw") and moves to the first it finds.
func TestEnsembleReadOnlyClientFindsLeader(t *testing.T) {
	e, lead, fi, f := startReadOnlyEnsemble(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.Isolate(fi)
	waitFor(t, "the cut-off follower to enter read-only mode", func() bool { return fourLetter(t, f.Addr(), "isro") == "ro" })

	// Until told, the client cannot reach the leader: it settles for the
	// read-only server.
	var reachable atomic.Bool
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == lead.Addr() && !reachable.Load() {
			return nil, errors.New("unreachable for now")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	ro := dialClient(t, f.Addr()+","+lead.Addr(), client.Config{ReadOnly: true, SessionTimeout: 4 * time.Second, Dial: dial})
	if st := ro.State(); st != client.StateReadOnly {
		t.Fatalf("state %v, want ReadOnly", st)
	}
	states := ro.StateChanges()
	defer states.Close()
	reachable.Store(true)
	awaitState(t, ctx, states, client.StateReconnected)
	if _, _, err := ro.Create(ctx, "/moved", nil, client.ModePersistent, nil); err != nil {
		t.Errorf("create after moving to the leader: %v", err)
	}
}

// dialClient connects a client that closes with the test.
func dialClient(t *testing.T, connect string, cfg client.Config) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, connect, cfg)
	if err != nil {
		t.Fatalf("dial %s: %v", connect, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// tryGet reads path through a new session on addr; "" when it cannot.
func tryGet(addr, path string) string {
	c, err := zkwire.Dial(addr, 6000)
	if err != nil {
		return ""
	}
	defer c.Close()
	var resp proto.GetDataResponse
	if code, err := c.Do(proto.OpGetData, &proto.GetDataRequest{Path: path}, &resp); err != nil || code != proto.OK {
		return ""
	}
	return string(resp.Data)
}

// awaitState reads states until want comes, failing the test when ctx ends
// first.
func awaitState(t *testing.T, ctx context.Context, states *client.Stream[client.State], want client.State) {
	t.Helper()
	for {
		select {
		case st, ok := <-states.Events():
			if !ok {
				t.Fatalf("state stream ended before %v", want)
			}
			if st == want {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no %v state", want)
		}
	}
}

// A follower that was down while the others wrote more than the leader
// keeps in its log is sent a snapshot, streamed to its disk through the
// peer transport, and then serves everything written, also after a
// restart from what it stored.
func TestEnsembleFollowerCatchesUpBySnapshot(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0, collietest.WithConfig(func(c *config.Config) { c.SnapCount = 10 }))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, f := followerOf(t, e)
	f.Stop()
	var running []string
	for _, s := range e.Servers() {
		if s != f {
			running = append(running, s.Addr())
		}
	}
	writer := dialClient(t, strings.Join(running, ","), client.Config{RenewSession: true})
	// More bytes than the leader keeps in its log past a snapshot, from
	// a few writers at once, so that the leader syncs them in groups: one
	// at a time, they take a minute on a loaded machine.
	const nodes, writers = 48, 4
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			data := make([]byte, 512<<10)
			for i := w; i < nodes; i += writers {
				data[0] = byte(i)
				path := fmt.Sprintf("/big%02d", i)
				// Two servers of a loaded test machine on a 100 ms tick
				// may change leaders, and a 2 s session may expire (the
				// writer renews it): a create whose outcome was lost is
				// sent again.
				for {
					_, _, err := writer.Create(ctx, path, data, client.ModePersistent, nil)
					if err == nil || errors.Is(err, client.ErrNodeExists) {
						break
					}
					if !errors.Is(err, client.ErrConnectionLoss) && !errors.Is(err, client.ErrSessionExpired) {
						errs <- fmt.Errorf("create %s: %w", path, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	data := make([]byte, 512<<10)
	f.Restart()
	last := fmt.Sprintf("/big%02d", nodes-1)
	waitFor(t, "the follower to serve the last write", func() bool { return len(tryGet(f.Addr(), last)) == len(data) })
	if got := mntrValue(t, f.Addr(), "collie_snapshots_received"); got == "0" {
		t.Fatal("the follower caught up without a snapshot")
	}
	// Sent by whichever server led then: on a loaded machine the
	// leadership may have moved meanwhile.
	sent := false
	for _, s := range e.Servers() {
		if s != f && mntrValue(t, s.Addr(), "collie_snapshots_sent") != "0" {
			sent = true
		}
	}
	if !sent {
		t.Fatal("no server reports a snapshot sent")
	}
	f.Restart()
	waitFor(t, "the follower to serve the first write after its restart", func() bool {
		v := tryGet(f.Addr(), "/big00")
		return len(v) == len(data) && v[0] == 0
	})
}

// mntrValue returns the value of key in addr's mntr.
func mntrValue(t *testing.T, addr, key string) string {
	t.Helper()
	for _, line := range strings.Split(fourLetter(t, addr, "mntr"), "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok && k == key {
			return v
		}
	}
	t.Fatalf("no %s in the mntr of %s", key, addr)
	return ""
}

// followerOf returns the first server of e that does not lead, and its
// index.
func followerOf(t *testing.T, e *collietest.Ensemble) (int, *collietest.Server) {
	t.Helper()
	lead := e.Leader()
	for i, s := range e.Servers() {
		if s != lead {
			return i, s
		}
	}
	t.Fatal("no follower")
	return 0, nil
}

// A session resumed on a server that has not yet applied its creation
// (the server was cut off when the session was opened through another)
// is not taken for expired: the server catches up with the leader before
// it answers, as a ZooKeeper follower asks its leader.
func TestEnsembleSessionResumedOnALaggingServer(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	lead := e.Leader()
	li, fi := -1, -1
	for i, s := range e.Servers() {
		switch {
		case s == lead:
			li = i
		case fi < 0:
			fi = i
		}
	}
	e.Isolate(fi)
	rc := dialRaw(t, e.Servers()[li].Addr(), 6000)
	e.Heal(fi)
	moved := resume(t, e.Servers()[fi].Addr(), rc)
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
	if code := call(t, moved, proto.OpCreate, &proto.CreateRequest{Path: "/resumed", ACL: open}, &proto.CreateResponse{}); code != proto.OK {
		t.Fatalf("create through the server the session moved to: %v", code)
	}
}

// A resume with a wrong password is refused as an expired session, on a
// server that knows the session and on one that does not know it yet;
// the right password still resumes it.
func TestEnsembleResumeWithWrongPassword(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	servers := e.Servers()
	rc := dialRaw(t, servers[0].Addr(), 6000)
	wrong := bytes.Clone(rc.Passwd)
	wrong[0] ^= 1
	for _, s := range servers {
		c, err := zkwire.Handshake(s.Addr(), &proto.ConnectRequest{TimeOut: rc.TimeOut, SessionID: rc.Session, Passwd: wrong})
		if err != nil {
			t.Fatalf("server %s: no answer to a resume with a wrong password: %v", s.Addr(), err)
		}
		c.Close()
		if c.TimeOut > 0 {
			t.Fatalf("server %s resumed session %#x with a wrong password", s.Addr(), rc.Session)
		}
	}
	resume(t, servers[1].Addr(), rc)
}

// A follower whose messages to its leader are lost, while it still hears
// the leader, ends the connections of the requests it forwarded: raft
// never sends a lost proposal or ReadIndex again, so a write or a sync
// would otherwise wait for as long as the leader stays, the follower
// seeing no leader change. Once the link is back, writes through the
// follower go on.
func TestEnsembleLostForwardEndsConnection(t *testing.T) {
	// Sessions that outlive the test: only the lost messages may end them.
	e := collietest.StartEnsemble(t, 3, 0, collietest.WithConfig(func(c *config.Config) { c.MaxSessionTimeout = time.Minute }))
	lead := e.Leader()
	li := slices.Index(e.Servers(), lead)
	fi, f := followerOf(t, e)
	for _, op := range []struct {
		name string
		code proto.OpCode
		req  proto.Record
	}{
		{"create", proto.OpCreate, &proto.CreateRequest{Path: "/lost", ACL: zkwire.OpenACL}},
		{"sync", proto.OpSync, &proto.SyncRequest{Path: "/"}},
	} {
		t.Run(op.name, func(t *testing.T) {
			rc := dialRaw(t, f.Addr(), 60000)
			e.CutLink(fi, li)
			hdr, _, err := rc.Call(op.code, op.req)
			if err == nil {
				t.Fatalf("answered (%v) though the follower's messages to the leader are lost", hdr.Err)
			}
			if !errors.Is(err, io.EOF) {
				t.Fatalf("%v; want the connection closed", err)
			}
			if e.Leader() != lead {
				t.Fatal("the leader changed: the request did not end for the lost message")
			}
			e.HealLink(fi, li)
			waitFor(t, "a write through the follower", func() bool { return zkwire.TryCreate(f.Addr(), "/after-"+op.name) })
		})
	}
}

// A sync waiting on a follower for its leader's answer ends its
// connection when the follower stops following that leader: here the
// leader's messages to the follower are lost, the answer among them, and
// the follower gives the leader up after an election timeout. No other
// leader would answer, so the sync would otherwise wait until the client
// gave up.
func TestEnsembleReadEndsWhenLeaderChanges(t *testing.T) {
	// A server without a leader closes its client connections after the
	// shortest session timeout: long here, so that only the change of
	// leader may end the sync.
	e := collietest.StartEnsemble(t, 3, 0, collietest.WithConfig(func(c *config.Config) {
		c.MinSessionTimeout, c.MaxSessionTimeout = 30*time.Second, time.Minute
	}))
	li := slices.Index(e.Servers(), e.Leader())
	fi, f := followerOf(t, e)
	rc := dialRaw(t, f.Addr(), 60000)
	e.CutLink(li, fi)
	hdr, _, err := rc.Call(proto.OpSync, &proto.SyncRequest{Path: "/"})
	if err == nil {
		t.Fatalf("answered (%v) though the leader's messages to the follower are lost", hdr.Err)
	}
	if !errors.Is(err, io.EOF) {
		t.Fatalf("%v; want the connection closed", err)
	}
	e.HealLink(li, fi)
	waitFor(t, "a write through the follower", func() bool { return zkwire.TryCreate(f.Addr(), "/after") })
}

// A client whose server was the leader, and died, reconnects to a survivor
// before the survivors have elected a new leader: the resume needs one to
// record the session's move, and waits for the election rather than end
// the connection. The session lives on, its ephemeral node with it. Here
// the survivors cannot elect one until their link is healed, once the
// resume waits.
func TestEnsembleResumeDuringElection(t *testing.T) {
	waiting := make(chan struct{}, 1)
	server.SetAwaitLeaderHook(t, func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	})
	// A server stops serving once it has known no leader for the shortest
	// session timeout: long here, so that only the election ends the wait.
	e := collietest.StartEnsemble(t, 3, 0, collietest.WithConfig(func(c *config.Config) {
		c.MinSessionTimeout, c.MaxSessionTimeout = 10*time.Second, 20*time.Second
	}))
	lead := e.Leader()
	var survivors []int
	for i, s := range e.Servers() {
		if s != lead {
			survivors = append(survivors, i)
		}
	}
	a, b := survivors[0], survivors[1]
	rc := dialRaw(t, lead.Addr(), 10000)
	call(t, rc, proto.OpCreate, &proto.CreateRequest{Path: "/eph", ACL: zkwire.OpenACL, Flags: proto.ModeEphemeral}, &proto.CreateResponse{})

	e.CutLink(a, b)
	e.CutLink(b, a)
	lead.Stop()
	type result struct {
		c   *zkwire.Conn
		err error
	}
	resumed := make(chan result, 1)
	go func() {
		c, err := zkwire.Handshake(e.Servers()[a].Addr(), &proto.ConnectRequest{TimeOut: rc.TimeOut, SessionID: rc.Session, Passwd: rc.Passwd})
		resumed <- result{c, err}
	}()
	select {
	case <-waiting:
	case r := <-resumed:
		if r.err != nil {
			t.Fatalf("resume without a leader: %v; want it to wait for the election", r.err)
		}
		r.c.Close()
		t.Fatalf("resume answered without a leader (timeout %d); want it to wait for the election", r.c.TimeOut)
	case <-time.After(15 * time.Second):
		t.Fatal("resume neither answered nor waited for a leader within 15s")
	}
	e.HealLink(a, b)
	e.HealLink(b, a)
	r := <-resumed
	if r.err != nil {
		t.Fatalf("resume during the election: %v", r.err)
	}
	t.Cleanup(func() { r.c.Close() })
	if r.c.TimeOut <= 0 {
		t.Fatalf("session %#x expired on resuming during the election", rc.Session)
	}
	var st proto.ExistsResponse
	if code := call(t, r.c, proto.OpExists, &proto.ExistsRequest{Path: "/eph"}, &st); code != proto.OK || st.Stat.EphemeralOwner != rc.Session {
		t.Fatalf("ephemeral after resuming during the election: %v %+v", code, st.Stat)
	}
}
