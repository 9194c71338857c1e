package follow_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
	"github.com/go-zookeeper/zk"
)

// global opens a session of the ensemble on addr, as a client that does
// not accept a read-only one.
func global(t *testing.T, addr string, timeoutMs int32) *zkwire.Conn {
	t.Helper()
	c, err := zkwire.Dial(addr, timeoutMs)
	if err != nil {
		t.Fatal(err)
	}
	if c.TimeOut == 0 {
		t.Fatalf("%s refused a session", addr)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// step is one request of the lockstep comparison, its paths under root.
type step struct {
	op   proto.OpCode
	req  func(root string) proto.Record
	resp func() proto.Record
}

// reply is what a client sees of a step's reply with what differs between
// two txns of the same request removed: the root the paths are under, the
// zxids and times of Stats, and which session owns an ephemeral.
func reply(c *zkwire.Conn, root string, s step) string {
	hdr, body, err := c.Call(s.op, s.req(root))
	if err != nil {
		return "error: " + err.Error()
	}
	out := fmt.Sprint(hdr.Err)
	if hdr.Err == proto.OK && s.resp != nil {
		r := s.resp()
		if err := proto.Unmarshal(body, r); err != nil {
			return out + " undecodable: " + err.Error()
		}
		out += " " + normalizeRecord(r)
	}
	return strings.ReplaceAll(out, root, "<root>")
}

func normalizeRecord(r proto.Record) string {
	norm := func(st *proto.Stat) {
		st.Czxid, st.Mzxid, st.Pzxid, st.Ctime, st.Mtime = 0, 0, 0, 0, 0
		if st.EphemeralOwner != 0 {
			st.EphemeralOwner = 1
		}
	}
	switch r := r.(type) {
	case *proto.Create2Response:
		norm(&r.Stat)
	case *proto.SetDataResponse:
		norm(&r.Stat)
	case *proto.GetDataResponse:
		norm(&r.Stat)
	case *proto.ExistsResponse:
		norm(&r.Stat)
	case *proto.GetACLResponse:
		norm(&r.Stat)
	case *proto.MultiResponse:
		var parts []string
		for _, res := range r.Results {
			p := fmt.Sprintf("%v %v", res.Type, res.Err)
			if res.Resp != nil {
				p += " " + normalizeRecord(res.Resp)
			}
			parts = append(parts, p)
		}
		return "[" + strings.Join(parts, "; ") + "]"
	}
	return fmt.Sprintf("%+v", r)
}

// lockstepSteps are writes of every kind, failing ones among them, with
// reads between them that show what each did.
func lockstepSteps() []step {
	open := zkwire.OpenACL
	create := func(path string, data string, flags proto.CreateMode) step {
		return step{proto.OpCreate2, func(r string) proto.Record {
			return &proto.CreateRequest{Path: r + path, Data: []byte(data), ACL: open, Flags: flags}
		}, func() proto.Record { return new(proto.Create2Response) }}
	}
	setData := func(path, data string, version int32) step {
		return step{proto.OpSetData, func(r string) proto.Record {
			return &proto.SetDataRequest{Path: r + path, Data: []byte(data), Version: version}
		}, func() proto.Record { return new(proto.SetDataResponse) }}
	}
	getData := func(path string) step {
		return step{proto.OpGetData, func(r string) proto.Record { return &proto.GetDataRequest{Path: r + path} },
			func() proto.Record { return new(proto.GetDataResponse) }}
	}
	del := func(path string, version int32) step {
		return step{proto.OpDelete, func(r string) proto.Record { return &proto.DeleteRequest{Path: r + path, Version: version} }, nil}
	}
	multi := func(ops func(r string) []proto.MultiOp) step {
		return step{proto.OpMulti, func(r string) proto.Record { return &proto.MultiRequest{Ops: ops(r)} },
			func() proto.Record { return new(proto.MultiResponse) }}
	}
	return []step{
		create("", "root", 0),
		create("/a", "one", 0),
		create("/a", "again", 0), // NodeExists
		create("/missing/b", "", 0),
		create("/seq-", "s", proto.ModePersistentSequential),
		create("/seq-", "s", proto.ModePersistentSequential),
		create("/eph", "e", proto.ModeEphemeral),
		create("/eph/child", "", 0), // NoChildrenForEphemerals
		setData("/a", "two", 5),     // BadVersion
		setData("/a", "two", 0),
		getData("/a"),
		step{proto.OpSetACL, func(r string) proto.Record {
			return &proto.SetACLRequest{Path: r + "/a", ACL: zkwire.OpenACL, Version: 3}
		}, nil}, // BadVersion
		del("", -1), // NotEmpty
		multi(func(r string) []proto.MultiOp {
			return []proto.MultiOp{
				{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: r + "/m", Data: []byte("m"), ACL: open}},
				{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: r + "/a", Data: []byte("three"), Version: 1}},
				{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: r + "/a", Version: 2}},
			}
		}),
		multi(func(r string) []proto.MultiOp { // fails at its second op
			return []proto.MultiOp{
				{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: r + "/m", Version: -1}},
				{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: r + "/a", ACL: open}},
				{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: r + "/a", Version: -1}},
			}
		}),
		getData("/m"),
		getData(""),
		step{proto.OpSync, func(r string) proto.Record { return &proto.SyncRequest{Path: r} },
			func() proto.Record { return new(proto.SyncResponse) }},
		del("/m", 0),
		del("/m", 0), // NoNode
		del("/a", 7), // BadVersion
		step{proto.OpExists, func(r string) proto.Record { return &proto.ExistsRequest{Path: r + "/m"} }, nil},
		// ACLs: the leader checks them against the identities the
		// follower forwards with each write (ip, and digest from the
		// addauth before the steps).
		step{proto.OpCreate, func(r string) proto.Record {
			return &proto.CreateRequest{Path: r + "/mine", ACL: []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "auth"}}}}
		}, func() proto.Record { return new(proto.CreateResponse) }},
		step{proto.OpGetACL, func(r string) proto.Record { return &proto.GetACLRequest{Path: r + "/mine"} },
			func() proto.Record { return new(proto.GetACLResponse) }},
		setData("/mine", "mine", -1),
		step{proto.OpCreate, func(r string) proto.Record {
			return &proto.CreateRequest{Path: r + "/theirs", ACL: []proto.ACL{{Perms: proto.PermRead, ID: proto.ID{Scheme: "digest", ID: "other:x"}}}}
		}, func() proto.Record { return new(proto.CreateResponse) }},
		setData("/theirs", "no", -1), // NoAuth
		del("/theirs", -1),           // allowed: the parent's ACL decides
		step{proto.OpCreate, func(r string) proto.Record {
			return &proto.CreateRequest{Path: r + "/local", ACL: []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "ip", ID: "127.0.0.1"}}}}
		}, func() proto.Record { return new(proto.CreateResponse) }},
		setData("/local", "ip", -1),
	}
}

// TestWritesThroughFollower sends the same requests to the follower and to
// a ZooKeeper member, one at a time, each under a root of its own: the
// follower forwards them to the leader, and every reply is the member's.
func TestWritesThroughFollower(t *testing.T) {
	e := startEnsemble(t)
	addr := startFollower(t, e)
	fc := global(t, addr, 30000)
	if sid := uint64(fc.Session) >> 56; sid != observerID {
		t.Errorf("session %#x does not carry the follower's id %d in its top byte", fc.Session, observerID)
	}
	zc := global(t, e.Members()[0].Addr(), 30000)
	for _, c := range []*zkwire.Conn{fc, zc} {
		if hdr, _, err := c.CallXid(-4, proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte("alice:secret")}); err != nil || hdr.Err != proto.OK {
			t.Fatalf("addauth: %v %v", hdr.Err, err)
		}
	}
	for i, s := range lockstepSteps() {
		want, got := reply(zc, "/via-zookeeper", s), reply(fc, "/via-follower", s)
		if want != got {
			t.Fatalf("step %d (%v):\nZooKeeper: %s\nfollower:  %s", i, s.op, want, got)
		}
	}
	// The leader has what the follower's client wrote.
	zkc := zkClient(t, e)
	if _, err := zkc.Sync("/via-follower/a"); err != nil {
		t.Fatal(err)
	}
	if data, _, err := zkc.Get("/via-follower/a"); err != nil || string(data) != "three" {
		t.Errorf("the ensemble has /via-follower/a = %q, %v", data, err)
	}
	compareWithLeader(t, e, addr)
}

// awaitGone waits until the ensemble no longer has path.
func awaitGone(t *testing.T, zkc *zk.Conn, path string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, err := syncedExists(zkc, path)
		if err == nil && !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still there (%v)", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncedExists says whether the ensemble has path, as of a sync through
// zkc: the member zkc reads from answers from its own copy, which may not
// have yet what another server committed a moment ago (ZooKeeper promises
// a client its own writes, another's only after a sync). Without it, an
// ephemeral just created through the follower can look gone while its
// session lives.
func syncedExists(zkc *zk.Conn, path string) (bool, error) {
	if _, err := zkc.Sync(path); err != nil {
		return false, err
	}
	ok, _, err := zkc.Exists(path)
	return ok, err
}

func mustCreate(t *testing.T, c *zkwire.Conn, path string, flags proto.CreateMode) {
	t.Helper()
	if code, err := c.Do(proto.OpCreate, &proto.CreateRequest{Path: path, ACL: zkwire.OpenACL, Flags: flags}, nil); err != nil || code != proto.OK {
		t.Fatalf("create %s: %v %v", path, code, err)
	}
}

// TestSessionsThroughFollower: the ephemerals of a session opened on the
// follower go when it closes or expires on the leader; a session the
// leader closes loses its connection to the follower, and so does one that
// connects to the follower again; a session moves
// from a ZooKeeper member to the follower and back; pings on the follower
// keep a session alive on the leader.
func TestSessionsThroughFollower(t *testing.T) {
	e := startEnsemble(t)
	addr := startFollower(t, e)
	zkc := zkClient(t, e)
	member := e.Members()[0].Addr()

	t.Run("closed", func(t *testing.T) {
		c := global(t, addr, 30000)
		mustCreate(t, c, "/closed", proto.ModeEphemeral)
		if code, err := c.Do(proto.OpCloseSession, nil, nil); err != nil || code != proto.OK {
			t.Fatalf("closeSession: %v %v", code, err)
		}
		if _, err := c.ExpectClosed(); err != nil {
			t.Errorf("the connection stays open after closeSession: %v", err)
		}
		awaitGone(t, zkc, "/closed")
	})

	t.Run("closed elsewhere", func(t *testing.T) {
		// The session's client closes it through a ZooKeeper member while
		// its connection to the follower is still open: the leader's
		// closeSession ends that connection too.
		c := global(t, addr, 30000)
		mustCreate(t, c, "/closed-elsewhere", proto.ModeEphemeral)
		n, err := c.Resume(member, 0)
		if err != nil || n.TimeOut == 0 {
			t.Fatalf("resuming on a member: %v", err)
		}
		defer n.Close()
		if code, err := n.Do(proto.OpCloseSession, nil, nil); err != nil || code != proto.OK {
			t.Fatalf("closeSession on the member: %v %v", code, err)
		}
		if _, err := c.ExpectClosed(); err != nil {
			t.Errorf("the follower keeps the connection of a session the leader closed: %v", err)
		}
		awaitGone(t, zkc, "/closed-elsewhere")
	})

	t.Run("reconnected here", func(t *testing.T) {
		// A second connection of the session ends the first, as ZooKeeper
		// ends it; the second goes on.
		c := global(t, addr, 30000)
		n, err := c.Resume(addr, 0)
		if err != nil || n.TimeOut == 0 {
			t.Fatalf("resuming on the follower: %v", err)
		}
		defer n.Close()
		if _, err := c.ExpectClosed(); err != nil {
			t.Errorf("the first connection stays open: %v", err)
		}
		mustCreate(t, n, "/reconnected", 0)
	})

	t.Run("expired", func(t *testing.T) {
		// The shortest timeout the servers grant: two ticks.
		c := global(t, addr, 1)
		mustCreate(t, c, "/expired", proto.ModeEphemeral)
		c.Close()
		awaitGone(t, zkc, "/expired")
		if n, err := c.Resume(addr, 0); err != nil || n.TimeOut != 0 {
			t.Errorf("resuming the expired session: %v, want it expired", err)
		}
	})

	t.Run("kept alive by pings", func(t *testing.T) {
		c := global(t, addr, 1)
		mustCreate(t, c, "/pinged", proto.ModeEphemeral)
		timeout := time.Duration(c.TimeOut) * time.Millisecond
		// Pings for three timeouts: the leader hears of each through the
		// follower's answers to its own pings.
		for end := time.Now().Add(3 * timeout); time.Now().Before(end); time.Sleep(timeout / 4) {
			if hdr, _, err := c.CallXid(-2, proto.OpPing, nil); err != nil || hdr.Err != proto.OK {
				t.Fatalf("ping: %v %v", hdr.Err, err)
			}
		}
		if ok, err := syncedExists(zkc, "/pinged"); err != nil || !ok {
			t.Fatalf("the session's ephemeral is gone while it pinged: %v", err)
		}
	})

	t.Run("moves from a member to the follower", func(t *testing.T) {
		n := moveSession(t, member, addr, "/moved")
		if code, err := n.Do(proto.OpSetData, &proto.SetDataRequest{Path: "/moved", Data: []byte("x"), Version: 0}, nil); err != nil || code != proto.OK {
			t.Fatalf("setData through the resumed session: %v %v", code, err)
		}
		wrong := &zkwire.Conn{Session: n.Session, Passwd: make([]byte, proto.PasswordLen), TimeOut: 30000}
		if w, err := wrong.Resume(addr, 0); err != nil || w.TimeOut != 0 {
			t.Errorf("resuming with a wrong password: %v, want it expired", err)
		}
	})

	t.Run("moves from the follower to a member", func(t *testing.T) {
		n := moveSession(t, addr, member, "/back")
		if code, err := n.Do(proto.OpDelete, &proto.DeleteRequest{Path: "/back", Version: -1}, nil); err != nil || code != proto.OK {
			t.Fatalf("delete through the resumed session: %v %v", code, err)
		}
	})
}

// moveSession opens a session on from, creates an ephemeral node at path
// with it, and resumes it on to, as a client does that loses its server.
func moveSession(t *testing.T, from, to, path string) *zkwire.Conn {
	t.Helper()
	c := global(t, from, 30000)
	mustCreate(t, c, path, proto.ModeEphemeral)
	c.Close()
	n, err := c.Resume(to, 0)
	if err != nil {
		t.Fatalf("resuming the session of %s on %s: %v", from, to, err)
	}
	t.Cleanup(func() { n.Close() })
	if n.TimeOut == 0 {
		t.Fatalf("%s says the session of %s expired", to, from)
	}
	return n
}

// TestPipelinedWritesAndReads sends writes and reads back to back on one
// session of the follower: the replies come in the order sent, and each
// read shows every write sent before it.
func TestPipelinedWritesAndReads(t *testing.T) {
	e := startEnsemble(t)
	addr := startFollower(t, e)
	c := global(t, addr, 30000)
	var reqs []zkwire.Request
	add := func(op proto.OpCode, r proto.Record) {
		reqs = append(reqs, zkwire.Request{Xid: c.NextXid(), Op: op, Req: r})
	}
	add(proto.OpCreate, &proto.CreateRequest{Path: "/p", Data: []byte("0"), ACL: zkwire.OpenACL})
	for i := 1; i <= 20; i++ {
		add(proto.OpSetData, &proto.SetDataRequest{Path: "/p", Data: []byte(fmt.Sprint(i)), Version: -1})
		add(proto.OpGetData, &proto.GetDataRequest{Path: "/p"})
	}
	add(proto.OpDelete, &proto.DeleteRequest{Path: "/p", Version: -1})
	add(proto.OpExists, &proto.ExistsRequest{Path: "/p"})
	frames, err := c.Pipeline(reqs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != len(reqs) {
		t.Fatalf("%d frames for %d requests", len(frames), len(reqs))
	}
	for i, f := range frames {
		if f.Header.Xid != reqs[i].Xid {
			t.Fatalf("reply %d has xid %d, want %d", i, f.Header.Xid, reqs[i].Xid)
		}
	}
	for i := 1; i <= 20; i++ {
		f := frames[2*i]
		var data proto.GetDataResponse
		if err := proto.Unmarshal(f.Body, &data); err != nil || f.Header.Err != proto.OK {
			t.Fatalf("getData %d: %v %v", i, f.Header.Err, err)
		}
		if string(data.Data) != fmt.Sprint(i) || data.Stat.Version != int32(i) {
			t.Errorf("getData after setData %d read %q at version %d", i, data.Data, data.Stat.Version)
		}
	}
	if last := frames[len(frames)-1]; last.Header.Err != proto.ErrNoNode {
		t.Errorf("exists after delete: %v, want NONODE", last.Header.Err)
	}
}

// TestWriteInFlightWhenLeaderHangs freezes the ZooKeeper leader while a
// write through the follower waits for its txn: the follower gives up on
// the leader, and the client's connection closes without an answer, its
// write's outcome unknown, as a ZooKeeper observer that loses its leader
// leaves it. The session resumes through the follower once it follows
// the new leader.
func TestWriteInFlightWhenLeaderHangs(t *testing.T) {
	e := startEnsemble(t)
	addr := startFollower(t, e)
	c := global(t, addr, 30000)
	mustCreate(t, c, "/before", 0)

	leader := e.Members()[e.Leader()]
	if err := leader.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { leader.Continue() })
	if err := c.Send(zkwire.Request{Xid: c.NextXid(), Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/in-flight", ACL: zkwire.OpenACL}}); err != nil {
		t.Fatal(err)
	}
	if n, err := c.ExpectClosed(); err != nil || n != 0 {
		t.Fatalf("the connection of a write in flight: %d bytes (%v), want it closed without an answer", n, err)
	}

	deadline := time.Now().Add(waitTimeout)
	for {
		n, err := c.Resume(addr, 0)
		if err == nil {
			defer n.Close()
			if n.TimeOut == 0 {
				t.Fatal("the session expired while the leader hung")
			}
			if code, err := n.Do(proto.OpExists, &proto.ExistsRequest{Path: "/before"}, nil); err != nil || code != proto.OK {
				t.Fatalf("exists after the new leader: %v %v", code, err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session does not resume through the follower: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
