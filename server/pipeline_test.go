package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
)

// TestPipelinedRequestsKeepSessionOrder sends a session's requests back to
// back without waiting, as asynchronous clients do, and checks the whole
// stream the server writes back against ZooKeeper's: each reply shows the
// session's earlier requests and none of its later ones, a watch a request
// sets is fired by the session's next write, and the event comes before
// that write's reply. On a standalone server, through a follower and an
// observer of an ensemble, and with linearizable reads; the expected
// stream is checked against ZooKeeper 3.8 first.
func TestPipelinedRequestsKeepSessionOrder(t *testing.T) {
	rounds := 30
	if testing.Short() {
		rounds = 5
	}
	run := func(t *testing.T, addr string) {
		c, err := zkwire.Dial(addr, 10000)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for i := range rounds {
			path := fmt.Sprintf("/pipelined-%d", i)
			if got, want := pipelinedRound(t, c, path), expectedRound(path); got != want {
				t.Fatalf("round %d:\ngot:\n%s\nwant (ZooKeeper's order):\n%s", i, got, want)
			}
		}
	}
	t.Run("zookeeper", func(t *testing.T) {
		// The expectation is ZooKeeper's own answer.
		run(t, zkref.Start(t).Addr())
	})
	t.Run("standalone", func(t *testing.T) {
		run(t, collietest.Start(t).Addr())
	})
	t.Run("ensemble", func(t *testing.T) {
		e := collietest.StartEnsemble(t, 3, 1)
		for i, s := range e.Servers() {
			role := "follower"
			switch {
			case s == e.Leader():
				role = "leader"
			case i == 3:
				role = "observer"
			}
			t.Run(role, func(t *testing.T) { run(t, s.Addr()) })
		}
	})
	t.Run("linearizable", func(t *testing.T) {
		e := collietest.StartEnsemble(t, 3, 0, collietest.WithConfig(func(c *config.Config) { c.LinearizableReads = true }))
		for _, s := range e.Servers() {
			if s != e.Leader() {
				run(t, s.Addr())
				return
			}
		}
	})
}

// pipelinedRound pipelines one batch of requests on c: exists and getData
// that set watches, writes that fire them, a write with a wrong version,
// sync, delete. It returns what came back, a line a frame.
func pipelinedRound(t *testing.T, c *zkwire.Conn, path string) string {
	t.Helper()
	return describeFrames(t, c, []zkwire.Request{
		{Op: proto.OpExists, Req: &proto.ExistsRequest{Path: path, Watch: true}},
		{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: path, Data: []byte("x"), ACL: zkwire.OpenACL}},
		{Op: proto.OpGetData, Req: &proto.GetDataRequest{Path: path, Watch: true}},
		{Op: proto.OpSetData, Req: &proto.SetDataRequest{Path: path, Data: []byte("y"), Version: -1}},
		{Op: proto.OpSetData, Req: &proto.SetDataRequest{Path: path, Data: []byte("z"), Version: 0}},
		{Op: proto.OpExists, Req: &proto.ExistsRequest{Path: path}},
		{Op: proto.OpSync, Req: &proto.SyncRequest{Path: path}},
		{Op: proto.OpGetData, Req: &proto.GetDataRequest{Path: path}},
		{Op: proto.OpDelete, Req: &proto.DeleteRequest{Path: path, Version: -1}},
		{Op: proto.OpExists, Req: &proto.ExistsRequest{Path: path}},
	})
}

// describeFrames pipelines reqs, numbered from 1, and describes every
// frame that comes back in arrival order. An auth packet is answered at
// once, ahead of the replies still due, by ZooKeeper as by Collie: its
// reply is described last, apart from the order.
func describeFrames(t *testing.T, c *zkwire.Conn, reqs []zkwire.Request) string {
	t.Helper()
	for i := range reqs {
		reqs[i].Xid = int32(i + 1)
	}
	frames, err := c.Pipeline(reqs...)
	if err != nil {
		t.Fatalf("after %d frames: %v", len(frames), err)
	}
	var lines, auth []string
	for _, f := range frames {
		h := f.Header
		if h.Xid == proto.XidNotification {
			lines = append(lines, fmt.Sprintf("event %d %s", f.Event.Type, f.Event.Path))
			continue
		}
		op := reqs[h.Xid-1].Op
		line := fmt.Sprintf("%d %v", h.Xid, h.Err)
		if op == proto.OpAuth {
			auth = append(auth, line)
			continue
		}
		if h.Err == proto.OK {
			d := proto.NewDecoder(f.Body)
			switch op {
			case proto.OpGetData:
				var r proto.GetDataResponse
				r.Decode(d)
				line += fmt.Sprintf(" data=%s version=%d", r.Data, r.Stat.Version)
			case proto.OpExists:
				var r proto.ExistsResponse
				r.Decode(d)
				line += fmt.Sprintf(" version=%d", r.Stat.Version)
			case proto.OpGetACL:
				var r proto.GetACLResponse
				r.Decode(d)
				line += fmt.Sprintf(" acl=%v", r.ACL)
			case proto.OpWhoAmI:
				var r proto.WhoAmIResponse
				r.Decode(d)
				line += fmt.Sprintf(" ids=%v", r.ClientInfo)
			}
		}
		lines = append(lines, line)
	}
	return strings.Join(append(lines, auth...), "\n")
}

// expectedRound is what ZooKeeper 3.8 answers to pipelinedRound.
func expectedRound(path string) string {
	return strings.Join([]string{
		fmt.Sprintf("1 %v", proto.ErrNoNode),
		fmt.Sprintf("event %d %s", proto.EventNodeCreated, path),
		fmt.Sprintf("2 %v", proto.OK),
		fmt.Sprintf("3 %v data=x version=0", proto.OK),
		fmt.Sprintf("event %d %s", proto.EventNodeDataChanged, path),
		fmt.Sprintf("4 %v", proto.OK),
		fmt.Sprintf("5 %v", proto.ErrBadVersion),
		fmt.Sprintf("6 %v version=1", proto.OK),
		fmt.Sprintf("7 %v", proto.OK),
		fmt.Sprintf("8 %v data=y version=1", proto.OK),
		fmt.Sprintf("9 %v", proto.OK),
		fmt.Sprintf("10 %v", proto.ErrNoNode),
	}, "\n")
}

// TestPipelinedAuthTakesItsPlace pipelines an auth packet between
// requests, as a client that adds credentials without waiting does: the
// identity counts for the requests sent after it and not for those sent
// before, whether these are answered before the auth or after. Checked
// against ZooKeeper 3.8 first.
func TestPipelinedAuthTakesItsPlace(t *testing.T) {
	authACL := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "auth"}}}
	round := func(t *testing.T, addr string) {
		c, err := zkwire.Dial(addr, 10000)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := describeFrames(t, c, []zkwire.Request{
			{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/authed", ACL: authACL}},
			{Op: proto.OpWhoAmI},
			{Op: proto.OpAuth, Req: &proto.AuthPacket{Scheme: "digest", Auth: []byte("user:secret")}},
			{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/authed", ACL: authACL}},
			{Op: proto.OpGetACL, Req: &proto.GetACLRequest{Path: "/authed"}},
			{Op: proto.OpWhoAmI},
			{Op: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/authed", Version: -1}},
		})
		want := strings.Join([]string{
			fmt.Sprintf("1 %v", proto.ErrInvalidACL),
			fmt.Sprintf("2 %v ids=[{ip 127.0.0.1}]", proto.OK),
			fmt.Sprintf("4 %v", proto.OK),
			fmt.Sprintf("5 %v acl=[{31 {digest user:5w9W4eL3797Y4Wq8AcKUPPk8ha4=}}]", proto.OK),
			fmt.Sprintf("6 %v ids=[{ip 127.0.0.1} {digest user}]", proto.OK),
			fmt.Sprintf("7 %v", proto.OK),
			fmt.Sprintf("3 %v", proto.OK),
		}, "\n")
		if got != want {
			t.Fatalf("got:\n%s\nwant (ZooKeeper's, the auth reply last):\n%s", got, want)
		}
	}
	t.Run("zookeeper", func(t *testing.T) { round(t, zkref.Start(t).Addr()) })
	t.Run("collie", func(t *testing.T) { round(t, collietest.Start(t).Addr()) })
}
