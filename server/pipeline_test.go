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

// pipelinedRound writes one batch of requests at once and returns what
// came back, a line a frame.
func pipelinedRound(t *testing.T, c *zkwire.Conn, path string) string {
	t.Helper()
	reqs := []struct {
		op  proto.OpCode
		req proto.Record
	}{
		{proto.OpExists, &proto.ExistsRequest{Path: path, Watch: true}},
		{proto.OpCreate, &proto.CreateRequest{Path: path, Data: []byte("x"), ACL: zkwire.OpenACL}},
		{proto.OpGetData, &proto.GetDataRequest{Path: path, Watch: true}},
		{proto.OpSetData, &proto.SetDataRequest{Path: path, Data: []byte("y"), Version: -1}},
		{proto.OpSetData, &proto.SetDataRequest{Path: path, Data: []byte("z"), Version: 0}},
		{proto.OpExists, &proto.ExistsRequest{Path: path}},
		{proto.OpSync, &proto.SyncRequest{Path: path}},
		{proto.OpGetData, &proto.GetDataRequest{Path: path}},
		{proto.OpDelete, &proto.DeleteRequest{Path: path, Version: -1}},
		{proto.OpExists, &proto.ExistsRequest{Path: path}},
	}
	var batch []byte
	for i, r := range reqs {
		e := proto.NewEncoder(nil)
		(&proto.RequestHeader{Xid: int32(i + 1), Type: r.op}).Encode(e)
		r.req.Encode(e)
		frame := e.Bytes()
		batch = append(batch, byte(len(frame)>>24), byte(len(frame)>>16), byte(len(frame)>>8), byte(len(frame)))
		batch = append(batch, frame...)
	}
	if _, err := c.NC.Write(batch); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for replies := 0; replies < len(reqs); {
		b, err := c.ReadFrame()
		if err != nil {
			t.Fatalf("after %d replies: %v", replies, err)
		}
		d := proto.NewDecoder(b)
		var h proto.ReplyHeader
		h.Decode(d)
		if h.Xid == proto.XidNotification {
			var ev proto.WatcherEvent
			ev.Decode(d)
			lines = append(lines, fmt.Sprintf("event %d %s", ev.Type, ev.Path))
			continue
		}
		replies++
		line := fmt.Sprintf("%d %v", h.Xid, h.Err)
		if h.Err == proto.OK {
			switch reqs[h.Xid-1].op {
			case proto.OpGetData:
				var r proto.GetDataResponse
				r.Decode(d)
				line += fmt.Sprintf(" data=%s version=%d", r.Data, r.Stat.Version)
			case proto.OpExists:
				var r proto.ExistsResponse
				r.Decode(d)
				line += fmt.Sprintf(" version=%d", r.Stat.Version)
			}
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
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
