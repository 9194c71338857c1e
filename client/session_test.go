package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
)

// queued returns how many calls wait for a connection.
func (c *Client) queued() int {
	c.queue.mu.Lock()
	defer c.queue.mu.Unlock()
	return len(c.queue.calls)
}

// credentials returns the session's id and password.
func (c *Client) credentials() (int64, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session, append([]byte(nil), c.passwd...)
}

// closeSessionBehindClient ends c's session from another connection, as a
// server would expire it, while c is cut off from the server.
func closeSessionBehindClient(t *testing.T, c *Client, addr string) {
	t.Helper()
	id, passwd := c.credentials()
	w, err := zkwire.Handshake(addr, &proto.ConnectRequest{TimeOut: 8000, SessionID: id, Passwd: passwd})
	if err != nil || w.TimeOut <= 0 {
		t.Fatalf("resume the session from another connection: timeout %v, %v", w, err)
	}
	defer w.Close()
	if hdr, _, err := w.Call(proto.OpCloseSession, nil); err != nil || hdr.Err != proto.OK {
		t.Fatalf("closeSession: %+v, %v", hdr, err)
	}
}

// TestReconnectRearmsWatches cuts a client off, changes what it watches,
// and lets it reconnect: the session and its ephemeral node survive, each
// one-shot watch whose node changed fires once, the others stay armed, and
// persistent watches are told of the disconnection.
func TestReconnectRearmsWatches(t *testing.T) {
	servers(t, func(t *testing.T, addr string) {
		ctx := testCtx(t)
		p := newProxy(t, addr)
		direct := dialT(t, addr, Config{})
		c := dialT(t, p.Addr(), Config{SessionTimeout: 8 * time.Second})
		states := c.StateChanges()
		defer states.Close()
		awaitState(t, states, StateConnected)
		for _, n := range []string{"/a", "/c", "/d", "/f", "/r"} {
			if _, _, err := direct.Create(ctx, n, nil, ModePersistent, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := c.Create(ctx, "/e", nil, ModeEphemeral, nil); err != nil {
			t.Fatal(err)
		}
		_, _, a, _ := c.GetW(ctx, "/a")
		_, _, b, _ := c.ExistsW(ctx, "/b")
		_, _, kids, _ := c.ChildrenW(ctx, "/c")
		_, _, dData, _ := c.GetW(ctx, "/d")
		_, _, dKids, _ := c.ChildrenW(ctx, "/d")
		dStream, _ := c.AddWatch(ctx, "/d", WatchPersistent)
		defer dStream.Close()
		_, _, f, _ := c.ExistsW(ctx, "/f")
		rec, _ := c.AddWatch(ctx, "/r", WatchPersistentRecursive)
		defer rec.Close()
		session := c.SessionID()
		seen := c.lastZxid.Load()

		p.Cut()
		awaitState(t, states, StateDisconnected)
		direct.Set(ctx, "/a", []byte("changed"), AnyVersion)
		direct.Create(ctx, "/b", nil, ModePersistent, nil)
		direct.Create(ctx, "/c/x", nil, ModePersistent, nil)
		direct.Delete(ctx, "/d", AnyVersion)
		direct.Create(ctx, "/r/missed", nil, ModePersistent, nil)
		p.Restore()
		awaitState(t, states, StateReconnected, StateExpired, StateConnected)

		if req := p.lastHandshake(t); req.SessionID != session || req.LastZxidSeen < seen {
			t.Errorf("reconnected with session %x, last zxid %d; want %x, at least %d", req.SessionID, req.LastZxidSeen, session, seen)
		}
		if got := c.SessionID(); got != session {
			t.Errorf("session %x after reconnecting, want %x", got, session)
		}
		want := map[string]Event{
			"/a":        {Type: EventNodeDataChanged, Path: "/a"},
			"/b":        {Type: EventNodeCreated, Path: "/b"},
			"/c":        {Type: EventNodeChildrenChanged, Path: "/c"},
			"/d data":   {Type: EventNodeDeleted, Path: "/d"},
			"/d kids":   {Type: EventNodeDeleted, Path: "/d"},
			"/d stream": {Type: EventNodeDeleted, Path: "/d"},
		}
		got := map[string]Event{
			"/a": recv(t, a, "/a"), "/b": recv(t, b, "/b"), "/c": recv(t, kids, "/c"),
			"/d data": recv(t, dData, "/d data"), "/d kids": recv(t, dKids, "/d kids"),
		}
		for _, st := range []State{StateDisconnected, StateReconnected} {
			if ev := recv(t, dStream.Events(), "/d stream"); ev != (Event{Type: EventSession, State: st}) {
				t.Errorf("/d stream: %v, want session %v", ev, st)
			}
		}
		got["/d stream"] = recv(t, dStream.Events(), "/d stream")
		for k, w := range want {
			if got[k] != w {
				t.Errorf("watch %s: %v, want %v", k, got[k], w)
			}
		}

		// Nothing more is pending: a change now is the next event of each.
		if err := c.Sync(ctx, "/"); err != nil {
			t.Fatal(err)
		}
		noEvent(t, f, "/f, unchanged")
		direct.Set(ctx, "/f", []byte("now"), AnyVersion)
		direct.Create(ctx, "/d", nil, ModePersistent, nil)
		direct.Create(ctx, "/r/after", nil, ModePersistent, nil)
		if ev := recv(t, f, "/f"); ev != (Event{Type: EventNodeDataChanged, Path: "/f"}) {
			t.Errorf("/f after reconnecting: %v", ev)
		}
		if ev := recv(t, dStream.Events(), "/d stream"); ev != (Event{Type: EventNodeCreated, Path: "/d"}) {
			t.Errorf("/d stream after reconnecting: %v (the deletion must come once)", ev)
		}
		var recEvents []Event
		for len(recEvents) < 3 {
			recEvents = append(recEvents, recv(t, rec.Events(), "/r stream"))
		}
		wantRec := []Event{{Type: EventSession, State: StateDisconnected}, {Type: EventSession, State: StateReconnected}, {Type: EventNodeCreated, Path: "/r/after"}}
		if !slices.Equal(recEvents, wantRec) {
			t.Errorf("/r stream: %v, want %v", recEvents, wantRec)
		}
		_, st, err := direct.Get(ctx, "/e")
		if err != nil || st.EphemeralOwner != session {
			t.Errorf("ephemeral after reconnecting: owner %x, %v; want %x", st.EphemeralOwner, err, session)
		}
	})
}

// TestFailover breaks the connection to one server: the client resumes
// its session on the other.
func TestFailover(t *testing.T) {
	srv := startCollie(t)
	p1, p2 := newProxy(t, srv.Addr()), newProxy(t, srv.Addr())
	ctx := testCtx(t)
	c := dialT(t, p1.Addr()+","+p2.Addr(), Config{SessionTimeout: 5 * time.Second})
	states := c.StateChanges()
	defer states.Close()
	eph, _, err := c.Create(ctx, "/eph", nil, ModeEphemeral, nil)
	if err != nil {
		t.Fatal(err)
	}
	session := c.SessionID()
	active, standby := p1, p2
	if p2.Connections() == 1 {
		active, standby = p2, p1
	}
	active.Cut()
	awaitState(t, states, StateDisconnected)
	awaitState(t, states, StateReconnected, StateExpired)
	if standby.Connections() != 1 || c.SessionID() != session {
		t.Errorf("after failover: %d connections to the other server, session %x (want 1, %x)", standby.Connections(), c.SessionID(), session)
	}
	if ok, st, err := c.Exists(ctx, eph); !ok || err != nil || st.EphemeralOwner != session {
		t.Errorf("ephemeral after failover: %v, %v", ok, err)
	}
}

// TestFailoverSkipsServerBehind offers the client a server that has not
// seen what the client has read: that server refuses the session (and
// does not expire it), and the client waits for one that is up to date.
func TestFailoverSkipsServerBehind(t *testing.T) {
	ahead, behind := startCollie(t), startCollie(t)
	pa, pb := newProxy(t, ahead.Addr()), newProxy(t, behind.Addr())
	pb.Cut()
	ctx := testCtx(t)
	c := dialT(t, pa.Addr()+","+pb.Addr(), Config{SessionTimeout: 8 * time.Second})
	states := c.StateChanges()
	defer states.Close()
	for i := range 50 {
		if _, _, err := c.Create(ctx, fmt.Sprint("/n", i), nil, ModePersistent, nil); err != nil {
			t.Fatal(err)
		}
	}
	session := c.SessionID()
	pb.mu.Lock()
	before := len(pb.handshakes)
	pb.mu.Unlock()
	pb.Restore()
	pa.Cut()
	awaitState(t, states, StateDisconnected)
	eventually(t, "an attempt on the server behind", func() bool {
		pb.mu.Lock()
		defer pb.mu.Unlock()
		return len(pb.handshakes) > before
	})
	if req := pb.lastHandshake(t); req.SessionID != session || req.LastZxidSeen == 0 {
		t.Errorf("handshake with the server behind: %+v", req)
	}
	pa.Restore()
	awaitState(t, states, StateReconnected, StateExpired)
	if c.SessionID() != session {
		t.Errorf("session %x, want %x", c.SessionID(), session)
	}
}

// TestExpiryWhenUnreachable keeps the client away from the server for
// longer than the session timeout: it declares the session expired, ends
// its watches, fails requests, and Renew starts a new session.
func TestExpiryWhenUnreachable(t *testing.T) {
	srv := startCollie(t)
	p := newProxy(t, srv.Addr())
	ctx := testCtx(t)
	direct := dialT(t, srv.Addr(), Config{})
	c := dialT(t, p.Addr(), Config{SessionTimeout: 600 * time.Millisecond})
	states := c.StateChanges()
	defer states.Close()
	awaitState(t, states, StateConnected)
	c.Create(ctx, "/gone", nil, ModeEphemeral, nil)
	_, _, w, _ := c.GetW(ctx, "/gone")
	rec, _ := c.AddWatch(ctx, "/", WatchPersistentRecursive)
	_, _, deleted, _ := direct.ExistsW(ctx, "/gone")
	old := c.SessionID()

	p.Cut()
	awaitState(t, states, StateDisconnected)
	awaitState(t, states, StateExpired, StateReconnected)
	if ev := recv(t, w, "one-shot watch"); ev.Type != EventNotWatching || !errors.Is(ev.Err, ErrSessionExpired) || ev.Path != "/gone" {
		t.Errorf("one-shot watch at expiry: %v", ev)
	}
	var last Event
	for ev := range rec.Events() {
		last = ev
	}
	if last.Type != EventNotWatching || !errors.Is(last.Err, ErrSessionExpired) {
		t.Errorf("persistent watch ended with %v", last)
	}
	if _, _, err := c.Get(ctx, "/"); !errors.Is(err, ErrSessionExpired) {
		t.Errorf("Get after expiry: %v, want ErrSessionExpired", err)
	}
	if ev := recv(t, deleted, "ephemeral deleted"); ev.Type != EventNodeDeleted {
		t.Errorf("the server kept the expired session's ephemeral: %v", ev)
	}

	p.Restore()
	if err := c.Renew(ctx); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	awaitState(t, states, StateConnected)
	if c.SessionID() == old || c.SessionID() == 0 {
		t.Errorf("session %x after Renew, old %x", c.SessionID(), old)
	}
	if _, _, err := c.Create(ctx, "/again", nil, ModeEphemeral, nil); err != nil {
		t.Errorf("Create in the new session: %v", err)
	}
}

// TestExpiryToldByServer ends the session while the client is cut off; on
// reconnection the server says it has expired.
func TestExpiryToldByServer(t *testing.T) {
	servers(t, func(t *testing.T, addr string) {
		p := newProxy(t, addr)
		ctx := testCtx(t)
		c := dialT(t, p.Addr(), Config{SessionTimeout: 8 * time.Second})
		states := c.StateChanges()
		defer states.Close()
		_, _, w, _ := c.ExistsW(ctx, "/x")
		p.Cut()
		awaitState(t, states, StateDisconnected)
		closeSessionBehindClient(t, c, addr)
		p.Restore()
		awaitState(t, states, StateExpired, StateReconnected)
		if ev := recv(t, w, "watch"); !errors.Is(ev.Err, ErrSessionExpired) {
			t.Errorf("watch at expiry: %v", ev)
		}
		if _, err := c.Set(ctx, "/", nil, AnyVersion); !errors.Is(err, ErrSessionExpired) {
			t.Errorf("Set after expiry: %v", err)
		}
		if err := c.Renew(ctx); err != nil || c.State() != StateConnected {
			t.Fatalf("Renew: %v, state %v", err, c.State())
		}
	})
}

// TestRenewSession lets the client start a new session by itself.
func TestRenewSession(t *testing.T) {
	srv := startCollie(t)
	p := newProxy(t, srv.Addr())
	ctx := testCtx(t)
	c := dialT(t, p.Addr(), Config{SessionTimeout: 8 * time.Second, RenewSession: true})
	states := c.StateChanges()
	defer states.Close()
	old := c.SessionID()
	p.Cut()
	awaitState(t, states, StateDisconnected)
	closeSessionBehindClient(t, c, srv.Addr())
	p.Restore()
	awaitState(t, states, StateExpired)
	awaitState(t, states, StateConnected)
	if c.SessionID() == old {
		t.Errorf("same session %x after renewal", old)
	}
	if _, _, err := c.Get(ctx, "/"); err != nil {
		t.Errorf("Get in the renewed session: %v", err)
	}
}

// TestConnectionLoss checks what happens to requests when the connection
// breaks: a written one fails with ErrConnectionLoss (its write having
// happened, once), and one made while disconnected waits for the next
// connection, unless its context ends first, in which case it is never
// sent.
func TestConnectionLoss(t *testing.T) {
	srv := startCollie(t)
	p := newProxy(t, srv.Addr())
	ctx := testCtx(t)
	direct := dialT(t, srv.Addr(), Config{})
	c := dialT(t, p.Addr(), Config{SessionTimeout: 8 * time.Second})
	states := c.StateChanges()
	defer states.Close()
	c.Create(ctx, "/x", []byte("0"), ModePersistent, nil)

	p.Blackhole(true)
	lost := make(chan error, 1)
	go func() {
		_, err := c.Set(ctx, "/x", []byte("1"), 0)
		lost <- err
	}()
	eventually(t, "the write applied", func() bool {
		data, _, _ := direct.Get(ctx, "/x")
		return string(data) == "1"
	})
	p.Blackhole(false)
	p.Drop()
	if err := <-lost; !errors.Is(err, ErrConnectionLoss) || !strings.Contains(err.Error(), "/x") {
		t.Errorf("write in flight at connection loss: %v, want ErrConnectionLoss naming /x", err)
	}
	awaitState(t, states, StateReconnected)
	if _, st, _ := c.Get(ctx, "/x"); st.Version != 1 {
		t.Errorf("version %d after one write, want 1 (the client must not resend)", st.Version)
	}

	// A context that ends after its write was sent cannot say whether the
	// write happened.
	p.Blackhole(true)
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := c.Set(short, "/x", []byte("2"), AnyVersion)
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "may have been applied") {
		t.Errorf("Set whose context ended in flight: %v", err)
	}
	p.Blackhole(false)
	p.Drop()
	awaitState(t, states, StateReconnected)

	p.Cut()
	awaitState(t, states, StateDisconnected)
	cctx, cancel := context.WithCancel(ctx)
	never := make(chan error, 1)
	go func() {
		_, _, err := c.Create(cctx, "/never", nil, ModePersistent, nil)
		never <- err
	}()
	waits := make(chan error, 1)
	go func() {
		_, _, err := c.Create(ctx, "/waited", nil, ModePersistent, nil)
		waits <- err
	}()
	eventually(t, "two requests queued", func() bool { return c.queued() == 2 })
	cancel()
	if err := <-never; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while waiting: %v", err)
	}
	p.Restore()
	if err := <-waits; err != nil {
		t.Errorf("request made while disconnected: %v", err)
	}
	if ok, _, _ := c.Exists(ctx, "/never"); ok {
		t.Error("a request cancelled before it was sent was applied")
	}
}

// TestRetryIdempotent resends a read that was in flight when the
// connection broke.
func TestRetryIdempotent(t *testing.T) {
	srv := startCollie(t)
	p := newProxy(t, srv.Addr())
	ctx := testCtx(t)
	c := dialT(t, p.Addr(), Config{SessionTimeout: 8 * time.Second, Retry: RetryForever(time.Millisecond)})
	c.Create(ctx, "/r", []byte("data"), ModePersistent, nil)
	p.Blackhole(true)
	done := make(chan error, 1)
	go func() {
		data, _, err := c.Get(ctx, "/r")
		if err == nil && string(data) != "data" {
			err = fmt.Errorf("got %q", data)
		}
		done <- err
	}()
	eventually(t, "the read sent", func() bool {
		c.queue.mu.Lock()
		defer c.queue.mu.Unlock()
		return len(c.queue.calls) == 0 && c.xid.Load() >= 2
	})
	p.Blackhole(false)
	p.Drop()
	if err := <-done; err != nil {
		t.Errorf("retried read: %v", err)
	}
}

// TestCreateProtectedFindsLostCreate loses the reply of a sequential
// create: CreateProtected finds the node instead of making a second one.
func TestCreateProtectedFindsLostCreate(t *testing.T) {
	srv := startCollie(t)
	p := newProxy(t, srv.Addr())
	ctx := testCtx(t)
	direct := dialT(t, srv.Addr(), Config{})
	c := dialT(t, p.Addr(), Config{SessionTimeout: 8 * time.Second})
	direct.Create(ctx, "/locks", nil, ModePersistent, nil)
	p.Blackhole(true)
	type result struct {
		path string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		path, _, err := c.CreateProtected(ctx, "/locks/lock-", nil, ModeEphemeralSequential, nil)
		done <- result{path, err}
	}()
	var kids []string
	eventually(t, "the create applied", func() bool {
		kids, _, _ = direct.Children(ctx, "/locks")
		return len(kids) == 1
	})
	p.Blackhole(false)
	p.Drop()
	r := <-done
	if r.err != nil || r.path != "/locks/"+kids[0] {
		t.Fatalf("CreateProtected = %q, %v; want /locks/%s", r.path, r.err, kids[0])
	}
	rest, ok := IsProtected(kids[0])
	if !ok || !strings.HasPrefix(rest, "lock-") {
		t.Errorf("name %q: protected %v, rest %q", kids[0], ok, rest)
	}
	if kids, _, _ := direct.Children(ctx, "/locks"); len(kids) != 1 {
		t.Errorf("children after recovery: %v, want one", kids)
	}
}

// TestReadTimeout makes the server fall silent: the client notices within
// the read timeout and reconnects.
func TestReadTimeout(t *testing.T) {
	srv := startCollie(t)
	p := newProxy(t, srv.Addr())
	c := dialT(t, p.Addr(), Config{SessionTimeout: 2 * time.Second})
	states := c.StateChanges()
	defer states.Close()
	awaitState(t, states, StateConnected)
	session := c.SessionID()
	p.Blackhole(true)
	awaitState(t, states, StateDisconnected)
	p.Blackhole(false)
	p.Drop()
	awaitState(t, states, StateReconnected, StateExpired)
	if c.SessionID() != session {
		t.Errorf("session %x, want %x", c.SessionID(), session)
	}
}

// TestPingsKeepSessionAlive leaves a client idle for several session
// timeouts; its pings keep the session.
func TestPingsKeepSessionAlive(t *testing.T) {
	srv := startCollie(t)
	ctx := testCtx(t)
	c := dialT(t, srv.Addr(), Config{SessionTimeout: 300 * time.Millisecond})
	states := c.StateChanges()
	defer states.Close()
	awaitState(t, states, StateConnected)
	session := c.SessionID()
	idle := time.After(1200 * time.Millisecond)
	select {
	case st := <-states.Events():
		t.Fatalf("state %v while idle", st)
	case <-idle:
	}
	if _, _, err := c.Get(ctx, "/"); err != nil || c.SessionID() != session {
		t.Errorf("after idling: %v, session %x want %x", err, c.SessionID(), session)
	}
}

// TestClose ends the session at once and leaves no goroutine behind.
func TestClose(t *testing.T) {
	srv := startCollie(t)
	p := newProxy(t, srv.Addr())
	ctx := testCtx(t)
	direct := dialT(t, srv.Addr(), Config{})
	// A round trip has the other client's reader and writer running, so
	// they count in before as they will after.
	direct.Sync(ctx, "/")
	before := clientGoroutines()

	c, err := Dial(ctx, p.Addr(), Config{SessionTimeout: 5 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	states := c.StateChanges()
	eph, _, _ := c.Create(ctx, "/eph", nil, ModeEphemeral, nil)
	_, _, w, _ := c.GetW(ctx, eph)
	rec, _ := c.AddWatch(ctx, "/", WatchPersistentRecursive)
	unread, _ := c.AddWatch(ctx, eph, WatchPersistent)
	direct.Set(ctx, eph, []byte("never read"), AnyVersion)
	p.Drop()
	awaitState(t, states, StateReconnected, StateExpired)
	if got := clientGoroutines(); got <= before {
		t.Fatalf("%d client goroutines running, %d before Dial", got, before)
	}

	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if ok, _, _ := direct.Exists(ctx, eph); ok {
		t.Error("ephemeral node still there after Close")
	}
	if ev := recv(t, w, "watch"); ev.Type != EventNodeDataChanged {
		t.Errorf("one-shot watch: %v", ev)
	}
	for range rec.Events() {
	}
	for range unread.Events() {
	}
	for range states.Events() {
	}
	if _, _, err := c.Get(ctx, "/"); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
	if c.State() != StateClosed {
		t.Errorf("state %v after Close", c.State())
	}
	eventually(t, "the client's goroutines gone", func() bool { return clientGoroutines() == before })
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if s := c.StateChanges(); recv(t, s.Events(), "state after Close") != StateClosed {
		t.Error("StateChanges after Close does not say Closed")
	}
}

// TestDialFails gives up when no server answers within the context.
func TestDialFails(t *testing.T) {
	p := newProxy(t, "127.0.0.1:1")
	p.Cut()
	before := clientGoroutines()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := Dial(ctx, p.Addr(), Config{Logger: testLogger(t)})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Dial with no server: %v", err)
	}
	eventually(t, "the client's goroutines gone", func() bool { return clientGoroutines() == before })
}

// TestRefusedConfigAuth starts with credentials the server refuses: the
// client drops them and goes on with the session rather than reconnecting
// in a loop.
func TestRefusedConfigAuth(t *testing.T) {
	srv := startCollie(t)
	ctx := testCtx(t)
	c := dialT(t, srv.Addr(), Config{SessionTimeout: 5 * time.Second, Auth: []Auth{{"nosuchscheme", []byte("x")}}})
	states := c.StateChanges()
	defer states.Close()
	awaitState(t, states, StateReconnected, StateExpired)
	if _, _, err := c.Get(ctx, "/"); err != nil {
		t.Errorf("Get after the refused credentials were dropped: %v", err)
	}
	if who, err := c.WhoAmI(ctx); err != nil || slices.ContainsFunc(who, func(i ClientInfo) bool { return i.AuthScheme == "nosuchscheme" }) {
		t.Errorf("WhoAmI = %v, %v", who, err)
	}
}

// TestReconnectOneShotOnly re-arms one-shot watches alone, which goes
// through the setWatches request that servers before 3.6 know.
func TestReconnectOneShotOnly(t *testing.T) {
	servers(t, func(t *testing.T, addr string) {
		ctx := testCtx(t)
		p := newProxy(t, addr)
		direct := dialT(t, addr, Config{})
		c := dialT(t, p.Addr(), Config{SessionTimeout: 8 * time.Second})
		states := c.StateChanges()
		defer states.Close()
		direct.Create(ctx, "/one", nil, ModePersistent, nil)
		_, _, changed, _ := c.GetW(ctx, "/one")
		_, _, created, _ := c.ExistsW(ctx, "/two")
		if recs := c.watches.rearm(0); len(recs) != 1 {
			t.Fatalf("%d setWatches packets", len(recs))
		} else if _, ok := recs[0].(*proto.SetWatches); !ok {
			t.Fatalf("re-armed with %T, want the old setWatches", recs[0])
		}
		p.Cut()
		awaitState(t, states, StateDisconnected)
		direct.Set(ctx, "/one", []byte("x"), AnyVersion)
		direct.Create(ctx, "/two", nil, ModePersistent, nil)
		p.Restore()
		if ev := recv(t, changed, "/one"); ev != (Event{Type: EventNodeDataChanged, Path: "/one"}) {
			t.Errorf("/one: %v", ev)
		}
		if ev := recv(t, created, "/two"); ev != (Event{Type: EventNodeCreated, Path: "/two"}) {
			t.Errorf("/two: %v", ev)
		}
	})
}

// A watch-setting read whose caller gave up after it was sent still sets
// the server's watch: the client must know of it, so RemoveWatches removes
// it at the server, and an abandoned addWatch must not leave a persistent
// watch at the server that nobody reads.
func TestAbandonedWatchCallsStayKnown(t *testing.T) {
	servers(t, func(t *testing.T, addr string) {
		ctx := testCtx(t)
		p := newProxy(t, addr)
		direct := dialT(t, addr, Config{})
		c := dialT(t, p.Addr(), Config{SessionTimeout: 8 * time.Second})
		if _, _, err := direct.Create(ctx, "/w", nil, ModePersistent, nil); err != nil {
			t.Fatal(err)
		}
		// watches is the server's count of watches: "Total watches:N".
		watches := func() string {
			out := fourLetterWord(t, addr, "wchs")
			return out[strings.LastIndex(out, ":")+1:]
		}
		before := watches()

		// abandon sends call while the proxy holds the server's replies,
		// waits until the server has set a watch, gives up, and lets the
		// reply through.
		abandon := func(call func(ctx context.Context) error) {
			t.Helper()
			p.Hold(true)
			callCtx, cancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() { errc <- call(callCtx) }()
			eventually(t, "the server sets the watch", func() bool { return watches() != before })
			cancel()
			if err := recv(t, errc, "the abandoned call"); !errors.Is(err, context.Canceled) {
				t.Fatalf("abandoned call: %v, want context.Canceled", err)
			}
			p.Hold(false)
		}

		abandon(func(ctx context.Context) error { _, _, _, err := c.ExistsW(ctx, "/w"); return err })
		// The reply has arrived once a later request on the connection
		// is answered.
		if _, _, err := c.Exists(ctx, "/"); err != nil {
			t.Fatal(err)
		}
		if err := c.RemoveWatches(ctx, "/w", WatchData); err != nil {
			t.Fatalf("RemoveWatches of the abandoned watch: %v", err)
		}
		eventually(t, "the server's watch is removed", func() bool { return watches() == before })

		abandon(func(ctx context.Context) error { _, err := c.AddWatch(ctx, "/w", WatchPersistent); return err })
		if _, _, err := c.Exists(ctx, "/"); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the abandoned persistent watch is removed", func() bool { return watches() == before })
	})
}

// fourLetterWord sends a four-letter word to addr and returns the answer.
func fourLetterWord(t testing.TB, addr, word string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write([]byte(word)); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
