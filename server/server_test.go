package server_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/session"
)

func connect(t *testing.T, addr string) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 2*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(c.Close)
	waitState(t, events, zk.StateHasSession)
	return c, events
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

func waitState(t *testing.T, events <-chan zk.Event, want zk.State) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v within 10s", want)
		}
	}
}

func waitEvent(t *testing.T, ch <-chan zk.Event) zk.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return zk.Event{}
}

var acl = zk.WorldACL(zk.PermAll)

func TestCRUD(t *testing.T) {
	srv := collietest.Start(t)
	c, _ := connect(t, srv.Addr())

	if p, err := c.Create("/app", []byte("v1"), 0, acl); err != nil || p != "/app" {
		t.Fatalf("create: %q %v", p, err)
	}
	if _, err := c.Create("/app", nil, 0, acl); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("second create: %v, want node exists", err)
	}
	data, st, err := c.Get("/app")
	if err != nil || string(data) != "v1" || st.Version != 0 || st.DataLength != 2 || st.Czxid == 0 || st.Czxid != st.Mzxid {
		t.Fatalf("get: %q %+v %v", data, st, err)
	}
	st2, err := c.Set("/app", []byte("v2"), 0)
	if err != nil || st2.Version != 1 || st2.Mzxid <= st.Mzxid || st2.Czxid != st.Czxid {
		t.Fatalf("set: %+v %v", st2, err)
	}
	if _, err := c.Set("/app", []byte("v3"), 0); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("set with stale version: %v", err)
	}
	for i := range 3 {
		p, err := c.Create("/app/job-", []byte{byte(i)}, zk.FlagSequence, acl)
		if want := fmt.Sprintf("/app/job-%010d", i); err != nil || p != want {
			t.Fatalf("sequential create: %q %v, want %q", p, err, want)
		}
	}
	kids, st, err := c.Children("/app")
	if err != nil || len(kids) != 3 || st.NumChildren != 3 || st.Cversion != 3 {
		t.Fatalf("children: %v %+v %v", kids, st, err)
	}
	if err := c.Delete("/app", -1); !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("delete of a parent: %v", err)
	}
	for _, k := range kids {
		if err := c.Delete("/app/"+k, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete("/app", -1); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c.Exists("/app"); ok || err != nil {
		t.Fatalf("exists after delete: %v %v", ok, err)
	}
	if _, _, err := c.Get("/app"); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("get after delete: %v", err)
	}
}

func TestEphemeralsGoWithTheirSession(t *testing.T) {
	srv := collietest.Start(t)
	owner, _ := connect(t, srv.Addr())
	observer, _ := connect(t, srv.Addr())
	if _, err := owner.Create("/e", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Create("/e/child", nil, 0, acl); !errors.Is(err, zk.ErrNoChildrenForEphemerals) {
		t.Fatalf("child of ephemeral: %v", err)
	}
	ok, st, ch, err := observer.ExistsW("/e")
	if err != nil || !ok || st.EphemeralOwner != owner.SessionID() {
		t.Fatalf("exists: %v %+v %v", ok, st, err)
	}
	owner.Close()
	if ev := waitEvent(t, ch); ev.Type != zk.EventNodeDeleted || ev.Path != "/e" {
		t.Fatalf("event %+v, want NodeDeleted /e", ev)
	}
}

func TestSessionExpiryDeletesEphemerals(t *testing.T) {
	srv := collietest.Start(t)
	observer, _ := connect(t, srv.Addr())
	// A raw client that opens a session, creates an ephemeral node and then
	// goes silent: no pings, so the server must expire it.
	rc := dialRaw(t, srv.Addr(), 400)
	call(t, rc, proto.OpCreate, &proto.CreateRequest{Path: "/gone", ACL: []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}, Flags: proto.ModeEphemeral}, &proto.CreateResponse{})
	ok, _, ch, err := observer.ExistsW("/gone")
	if err != nil || !ok {
		t.Fatalf("exists: %v %v", ok, err)
	}
	if ev := waitEvent(t, ch); ev.Type != zk.EventNodeDeleted {
		t.Fatalf("event %+v, want NodeDeleted", ev)
	}
	// The silent client's connection is closed by the server.
	expectClosed(t, rc)
}

func TestWatchFiresBeforeTheData(t *testing.T) {
	srv := collietest.Start(t)
	c, _ := connect(t, srv.Addr())
	w, _ := connect(t, srv.Addr())
	if _, err := c.Create("/w", []byte("0"), 0, acl); err != nil {
		t.Fatal(err)
	}
	_, _, dataCh, err := w.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	_, _, childCh, err := w.ChildrenW("/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/w", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	// The watcher's next read shows the new data; its event must already
	// be there.
	data, _, err := w.Get("/w")
	if err != nil || string(data) != "1" {
		t.Fatalf("get: %q %v", data, err)
	}
	select {
	case ev := <-dataCh:
		if ev.Type != zk.EventNodeDataChanged || ev.Path != "/w" {
			t.Fatalf("event %+v", ev)
		}
	default:
		t.Fatal("reply with new data arrived before the watch event")
	}
	if _, err := c.Create("/w/k", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, childCh); ev.Type != zk.EventNodeChildrenChanged || ev.Path != "/w" {
		t.Fatalf("child event %+v", ev)
	}
}

func TestMulti(t *testing.T) {
	srv := collietest.Start(t)
	c, _ := connect(t, srv.Addr())
	res, err := c.Multi(
		&zk.CreateRequest{Path: "/m", Data: []byte("x"), Acl: acl},
		&zk.CreateRequest{Path: "/m/a", Acl: acl},
		&zk.SetDataRequest{Path: "/m", Data: []byte("y"), Version: 0},
		&zk.CheckVersionRequest{Path: "/m", Version: 1},
	)
	if err != nil || len(res) != 4 || res[0].String != "/m" || res[2].Stat.Version != 1 {
		t.Fatalf("multi: %+v %v", res, err)
	}
	res, err = c.Multi(
		&zk.CreateRequest{Path: "/m/b", Acl: acl},
		&zk.DeleteRequest{Path: "/nope", Version: -1},
	)
	if err == nil || res[1].Error == nil || !errors.Is(res[1].Error, zk.ErrNoNode) {
		t.Fatalf("failing multi: %+v %v", res, err)
	}
	if ok, _, _ := c.Exists("/m/b"); ok {
		t.Fatal("a failed multi left /m/b behind")
	}
}

func TestRestartKeepsDataAndSessions(t *testing.T) {
	srv := collietest.Start(t)
	rc := dialRaw(t, srv.Addr(), 10000)
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
	for i := range 50 {
		call(t, rc, proto.OpCreate, &proto.CreateRequest{Path: fmt.Sprintf("/k%d", i), Data: []byte("v"), ACL: open}, &proto.CreateResponse{})
	}
	call(t, rc, proto.OpCreate, &proto.CreateRequest{Path: "/eph", ACL: open, Flags: proto.ModeEphemeral}, &proto.CreateResponse{})
	rc.Close()
	srv.Restart()

	// The session is still valid: reconnecting with its id and password
	// works and its ephemeral node is still there.
	rc2 := redialRaw(t, srv.Addr(), rc)
	var st proto.ExistsResponse
	if code := call(t, rc2, proto.OpExists, &proto.ExistsRequest{Path: "/eph"}, &st); code != proto.OK || st.Stat.EphemeralOwner != rc.Session {
		t.Fatalf("ephemeral after restart: %v %+v", code, st.Stat)
	}
	c, _ := connect(t, srv.Addr())
	kids, _, err := c.Children("/")
	if err != nil || len(kids) != 52 {
		t.Fatalf("children after restart: %d %v", len(kids), err)
	}
}

func TestFourLetterWords(t *testing.T) {
	srv := collietest.Start(t)
	for cmd, want := range map[string]string{
		"ruok": "imok", "srvr": "Mode: standalone", "stat": "Clients:", "mntr": "zk_znode_count\t",
		"isro": "rw", "conf": "clientPort=", "envi": "Environment:", "wchs": "Total watches:0",
		"dump": "SessionTracker dump:", "dirs": "datadir_size:",
	} {
		if got := fourLetter(t, srv.Addr(), cmd); !strings.Contains(got, want) {
			t.Errorf("%s: %q does not contain %q", cmd, got, want)
		}
	}
}

func TestFourLetterWhitelist(t *testing.T) {
	srv := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
		c.FourLetterWhitelist = map[string]bool{"srvr": true}
	}))
	if got := fourLetter(t, srv.Addr(), "ruok"); !strings.Contains(got, "not in the whitelist") {
		t.Fatalf("ruok when not allowed: %q", got)
	}
}

func fourLetter(t *testing.T, addr, cmd string) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	nc.Write([]byte(cmd))
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return string(b)
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	srv := collietest.Start(t)
	good, _ := connect(t, srv.Addr())
	if _, err := good.Create("/alive", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(t *testing.T){
		"frame larger than jute.maxbuffer": func(t *testing.T) {
			rc := dialRaw(t, srv.Addr(), 4000)
			send(t, rc, []byte{0x7f, 0xff, 0xff, 0xff})
			expectClosed(t, rc)
		},
		"negative length": func(t *testing.T) {
			rc := dialRaw(t, srv.Addr(), 4000)
			send(t, rc, []byte{0xff, 0xff, 0xff, 0xf0})
			expectClosed(t, rc)
		},
		"truncated body": func(t *testing.T) {
			rc := dialRaw(t, srv.Addr(), 4000)
			send(t, rc, []byte{0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0}) // getData with half a path length
			expectClosed(t, rc)
		},
		"garbage instead of a connect request": func(t *testing.T) {
			nc, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.Write([]byte{0, 0, 0, 3, 1, 2, 3})
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			if b, err := io.ReadAll(nc); err != nil || len(b) != 0 {
				t.Fatalf("read %d bytes, %v; want a closed connection", len(b), err)
			}
		},
		"unknown opcode": func(t *testing.T) {
			rc := dialRaw(t, srv.Addr(), 4000)
			if code := call(t, rc, proto.OpCode(77), &proto.SyncRequest{Path: "/"}, nil); code != proto.ErrUnimplemented {
				t.Fatalf("unknown opcode: %v", code)
			}
			// The connection still works.
			if code := call(t, rc, proto.OpExists, &proto.ExistsRequest{Path: "/alive"}, &proto.ExistsResponse{}); code != proto.OK {
				t.Fatalf("exists after unknown opcode: %v", code)
			}
		},
		"invalid path": func(t *testing.T) {
			rc := dialRaw(t, srv.Addr(), 4000)
			if code := call(t, rc, proto.OpCreate, &proto.CreateRequest{Path: "noslash", ACL: []proto.ACL{{Perms: 31, ID: proto.ID{Scheme: "world", ID: "anyone"}}}}, &proto.CreateResponse{}); code != proto.ErrBadArguments {
				t.Fatalf("create with invalid path: %v", code)
			}
		},
		"request before the handshake": func(t *testing.T) {
			nc, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			e := proto.NewEncoder(nil)
			(&proto.RequestHeader{Xid: 1, Type: proto.OpGetData}).Encode(e)
			(&proto.GetDataRequest{Path: "/alive"}).Encode(e)
			writeFrame(t, nc, e.Bytes())
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			if b, err := io.ReadAll(nc); err != nil || len(b) != 0 {
				t.Fatalf("read %d bytes, %v; want a closed connection", len(b), err)
			}
		},
		"slowloris before the handshake": func(t *testing.T) {
			nc, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.Write([]byte{0, 0, 0}) // a third of a length, then nothing
			nc.SetReadDeadline(time.Now().Add(20 * time.Second))
			if b, err := io.ReadAll(nc); err != nil || len(b) != 0 {
				t.Fatalf("read %d bytes, %v; want the server to close the connection", len(b), err)
			}
		},
		"slowloris after the handshake": func(t *testing.T) {
			rc := dialRaw(t, srv.Addr(), 400)
			send(t, rc, []byte{0, 0, 0, 20, 0, 0}) // half a request, then nothing
			expectClosed(t, rc)
		},
		"client that has seen the future": func(t *testing.T) {
			nc, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			writeFrame(t, nc, proto.Marshal(&proto.ConnectRequest{LastZxidSeen: 1 << 40, TimeOut: 4000, Passwd: make([]byte, 16)}))
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			if b, err := io.ReadAll(nc); err != nil || len(b) != 0 {
				t.Fatalf("read %d bytes, %v; want a refused connection", len(b), err)
			}
		},
	}
	for name, f := range cases {
		t.Run(name, f)
	}
	if _, _, err := good.Get("/alive"); err != nil {
		t.Fatalf("the good client lost service: %v", err)
	}
}

func dialRaw(t *testing.T, addr string, timeoutMs int32) *zkwire.Conn {
	t.Helper()
	c, err := zkwire.Dial(addr, timeoutMs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c.TimeOut <= 0 {
		t.Fatalf("session refused")
	}
	return c
}

func redialRaw(t *testing.T, addr string, old *zkwire.Conn) *zkwire.Conn {
	t.Helper()
	c, err := zkwire.Handshake(addr, &proto.ConnectRequest{TimeOut: 10000, SessionID: old.Session, Passwd: old.Passwd})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c.TimeOut <= 0 {
		t.Fatalf("session %#x refused after restart", old.Session)
	}
	return c
}

func writeFrame(t *testing.T, w io.Writer, b []byte) {
	t.Helper()
	buf := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	if _, err := w.Write(append(buf, b...)); err != nil {
		t.Fatal(err)
	}
}

// call sends one request and returns the reply's error code, decoding the
// body into resp when the call succeeded.
func call(t *testing.T, c *zkwire.Conn, op proto.OpCode, req, resp proto.Record) proto.Code {
	t.Helper()
	code, err := c.Do(op, req, resp)
	if err != nil {
		t.Fatalf("%v: %v", op, err)
	}
	return code
}

func send(t *testing.T, c *zkwire.Conn, b []byte) {
	t.Helper()
	if _, err := c.NC.Write(b); err != nil {
		t.Fatal(err)
	}
}

func expectClosed(t *testing.T, c *zkwire.Conn) {
	t.Helper()
	if _, err := c.ExpectClosed(); err != nil {
		t.Fatalf("connection not closed: %v", err)
	}
}

// TestStatResetKeepsServing is a regression test: srst reset the latency
// counters by overwriting them, lock included, while holding the lock,
// and the unlock that followed killed the process.
func TestStatResetKeepsServing(t *testing.T) {
	srv := collietest.Start(t)
	c, _ := connect(t, srv.Addr())
	if _, err := c.Create("/before", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	out, ok := srv.Server().FourLetter("srst", nil)
	if !ok || !strings.Contains(out, "Server stats reset.") {
		t.Fatalf("srst answered %q, %v", out, ok)
	}
	if _, _, err := c.Get("/before"); err != nil {
		t.Fatalf("get after srst: %v", err)
	}
	out, _ = srv.Server().FourLetter("srvr", nil)
	if !strings.Contains(out, "Received: 1") && !strings.Contains(out, "Received: 2") {
		t.Fatalf("srvr after srst and one request counts from zero again:\n%s", out)
	}
}

// A data directory from before the session secret was replicated keeps
// its secret: the sessions its server handed out stay valid.
func TestLegacySessionSecretIsAdopted(t *testing.T) {
	cfg := collietest.Config(t)
	legacy := bytes.Repeat([]byte{0x5a}, fsm.SecretLen)
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "secret"), legacy, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := collietest.StartConfig(t, cfg)
	rc := dialRaw(t, srv.Addr(), 10000)
	if want := session.Password(legacy, session.ID(rc.Session)); !bytes.Equal(rc.Passwd, want) {
		t.Fatalf("password %x, want %x from the secret file", rc.Passwd, want)
	}
	// A password made from another secret is refused.
	forged := session.Password(bytes.Repeat([]byte{1}, fsm.SecretLen), session.ID(rc.Session))
	c, err := zkwire.Handshake(srv.Addr(), &proto.ConnectRequest{TimeOut: 10000, SessionID: rc.Session, Passwd: forged})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.TimeOut > 0 {
		t.Fatal("a forged password was accepted")
	}
}
