package zkcompat

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
)

// step is one request sent by connection a or b (or c, opened fresh), with
// the record to send.
type step struct {
	conn string
	xid  int32 // 0: the next xid
	op   proto.OpCode
	req  proto.Record
}

var open = zkwire.OpenACL

func digest(userPassword string) string { return tree.DigestID(userPassword) }

// protocolSteps exercise what the random differential test does not: ACLs
// and auth, system nodes, TTL and container nodes, persistent watches,
// setWatches, multiRead, whoAmI, ephemerals listings, invalid paths, and
// opcodes a server may refuse.
func protocolSteps() []step {
	u := digest("u:p")
	return []step{
		{"a", 0, proto.OpGetData, &proto.GetDataRequest{Path: "/"}},
		{"a", 0, proto.OpGetData, &proto.GetDataRequest{Path: "/zookeeper"}},
		{"a", 0, proto.OpGetData, &proto.GetDataRequest{Path: "/zookeeper/quota"}},
		{"a", 0, proto.OpGetData, &proto.GetDataRequest{Path: "/zookeeper/config"}},
		{"a", 0, proto.OpGetACL, &proto.GetACLRequest{Path: "/zookeeper/config"}},
		{"a", 0, proto.OpGetChildren2, &proto.GetChildren2Request{Path: "/zookeeper"}},
		{"a", 0, proto.OpSetData, &proto.SetDataRequest{Path: "/zookeeper/config", Data: []byte("x"), Version: -1}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/zookeeper/mine", ACL: open}},
		{"a", 0, proto.OpDelete, &proto.DeleteRequest{Path: "/zookeeper/mine", Version: -1}},
		{"a", 0, proto.OpDelete, &proto.DeleteRequest{Path: "/zookeeper", Version: -1}},
		{"a", 0, proto.OpDelete, &proto.DeleteRequest{Path: "/", Version: -1}},
		// Data: null, empty and set.
		{"a", 0, proto.OpCreate2, &proto.CreateRequest{Path: "/p", ACL: open}},
		{"a", 0, proto.OpGetData, &proto.GetDataRequest{Path: "/p"}},
		{"a", 0, proto.OpSetData, &proto.SetDataRequest{Path: "/p", Data: []byte{}, Version: 0}},
		{"a", 0, proto.OpGetData, &proto.GetDataRequest{Path: "/p"}},
		{"a", 0, proto.OpCheck, &proto.CheckVersionRequest{Path: "/p", Version: 1}},
		{"a", 0, proto.OpCheck, &proto.CheckVersionRequest{Path: "/p", Version: 5}},
		// Invalid paths, for writes and reads.
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "noslash", ACL: open}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/p/", ACL: open}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/p/../q", ACL: open}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/p/", ACL: open, Flags: proto.ModePersistentSequential}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/", ACL: open}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/bad", ACL: open, Flags: 17}},
		{"a", 0, proto.OpGetData, &proto.GetDataRequest{Path: "noslash"}},
		{"a", 0, proto.OpExists, &proto.ExistsRequest{Path: "/p\x00x"}},
		{"a", 0, proto.OpGetChildren, &proto.GetChildrenRequest{Path: "/p/"}},
		{"a", 0, proto.OpSetData, &proto.SetDataRequest{Path: "p", Version: -1}},
		{"a", 0, proto.OpDelete, &proto.DeleteRequest{Path: "/p/", Version: -1}},
		// ACLs.
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/acl0", ACL: []proto.ACL{}}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/acl1", ACL: []proto.ACL{{Perms: 31, ID: proto.ID{Scheme: "nope", ID: "x"}}}}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/acl2", ACL: []proto.ACL{{Perms: 31, ID: proto.ID{Scheme: "ip", ID: "1.2.3"}}}}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/acl3", ACL: []proto.ACL{{Perms: 31, ID: proto.ID{Scheme: "auth", ID: ""}}}}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/acl4", ACL: []proto.ACL{{Perms: 31, ID: proto.ID{Scheme: "digest", ID: "nocolon"}}}}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/acl5", ACL: []proto.ACL{{Perms: 31, ID: proto.ID{Scheme: "world", ID: "someone"}}}}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/acl6", ACL: []proto.ACL{{Perms: 31, ID: proto.ID{Scheme: "ip", ID: "127.0.0.1"}}, {Perms: 31, ID: proto.ID{Scheme: "ip", ID: "127.0.0.1"}}}}},
		{"a", 0, proto.OpGetACL, &proto.GetACLRequest{Path: "/acl6"}},
		{"b", proto.XidAuth, proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}},
		{"b", 0, proto.OpWhoAmI, nil},
		{"a", 0, proto.OpWhoAmI, nil},
		{"b", 0, proto.OpCreate, &proto.CreateRequest{Path: "/secret", Data: []byte("s"), ACL: []proto.ACL{{Perms: 31, ID: proto.ID{Scheme: "auth", ID: ""}}}}},
		{"b", 0, proto.OpGetACL, &proto.GetACLRequest{Path: "/secret"}},
		{"a", 0, proto.OpGetData, &proto.GetDataRequest{Path: "/secret"}},
		{"a", 0, proto.OpGetACL, &proto.GetACLRequest{Path: "/secret"}},
		{"a", 0, proto.OpExists, &proto.ExistsRequest{Path: "/secret"}},
		{"b", 0, proto.OpCreate, &proto.CreateRequest{Path: "/masked", ACL: []proto.ACL{{Perms: proto.PermRead, ID: proto.ID{Scheme: "world", ID: "anyone"}}, {Perms: 31, ID: proto.ID{Scheme: "digest", ID: u}}}}},
		{"a", 0, proto.OpGetACL, &proto.GetACLRequest{Path: "/masked"}},
		{"b", 0, proto.OpGetACL, &proto.GetACLRequest{Path: "/masked"}},
		{"a", 0, proto.OpSetACL, &proto.SetACLRequest{Path: "/masked", ACL: open, Version: -1}},
		{"b", 0, proto.OpSetACL, &proto.SetACLRequest{Path: "/masked", ACL: open, Version: 3}},
		{"b", 0, proto.OpSetACL, &proto.SetACLRequest{Path: "/masked", ACL: open, Version: 0}},
		{"a", 0, proto.OpGetACL, &proto.GetACLRequest{Path: "/masked"}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/secret/child", ACL: open}},
		{"a", 0, proto.OpDelete, &proto.DeleteRequest{Path: "/secret", Version: -1}},
		{"c", proto.XidAuth, proto.OpAuth, &proto.AuthPacket{Scheme: "nosuchscheme", Auth: []byte("x")}},
		// Containers and TTL nodes.
		{"a", 0, proto.OpCreateContainer, &proto.CreateRequest{Path: "/box", ACL: open, Flags: proto.ModeContainer}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/box/item", ACL: open}},
		{"a", 0, proto.OpExists, &proto.ExistsRequest{Path: "/box"}},
		{"a", 0, proto.OpCreateTTL, &proto.CreateTTLRequest{Path: "/ttl", ACL: open, Flags: proto.ModePersistentWithTTL, TTL: 600000}},
		{"a", 0, proto.OpCreateTTL, &proto.CreateTTLRequest{Path: "/ttl-s", ACL: open, Flags: proto.ModePersistentSequentialWithTTL, TTL: 600000}},
		{"a", 0, proto.OpCreateTTL, &proto.CreateTTLRequest{Path: "/ttl0", ACL: open, Flags: proto.ModePersistentWithTTL, TTL: 0}},
		{"a", 0, proto.OpCreateTTL, &proto.CreateTTLRequest{Path: "/ttlp", ACL: open, Flags: proto.ModePersistent, TTL: 100}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/ttlc", ACL: open, Flags: proto.ModePersistentWithTTL}},
		{"a", 0, proto.OpExists, &proto.ExistsRequest{Path: "/ttl"}},
		// Ephemerals and listings.
		{"b", 0, proto.OpCreate, &proto.CreateRequest{Path: "/p/eb", ACL: open, Flags: proto.ModeEphemeral}},
		{"b", 0, proto.OpCreate, &proto.CreateRequest{Path: "/p/eb-", ACL: open, Flags: proto.ModeEphemeralSequential}},
		{"b", 0, proto.OpCreate, &proto.CreateRequest{Path: "/eb", ACL: open, Flags: proto.ModeEphemeral}},
		{"b", 0, proto.OpGetEphemerals, &proto.GetEphemeralsRequest{PrefixPath: "/"}},
		{"b", 0, proto.OpGetEphemerals, &proto.GetEphemeralsRequest{PrefixPath: "/p"}},
		{"b", 0, proto.OpGetEphemerals, &proto.GetEphemeralsRequest{PrefixPath: "/p/eb-"}},
		{"a", 0, proto.OpGetEphemerals, &proto.GetEphemeralsRequest{PrefixPath: "/"}},
		{"a", 0, proto.OpGetAllChildrenNumber, &proto.GetAllChildrenNumberRequest{Path: "/"}},
		{"a", 0, proto.OpGetAllChildrenNumber, &proto.GetAllChildrenNumberRequest{Path: "/p"}},
		{"a", 0, proto.OpGetAllChildrenNumber, &proto.GetAllChildrenNumberRequest{Path: "/nope"}},
		// multiRead and multi.
		{"a", 0, proto.OpMultiRead, &proto.MultiRequest{Ops: []proto.MultiOp{
			{Type: proto.OpGetData, Req: &proto.GetDataRequest{Path: "/p"}},
			{Type: proto.OpGetChildren, Req: &proto.GetChildrenRequest{Path: "/p"}},
			{Type: proto.OpGetData, Req: &proto.GetDataRequest{Path: "/nope"}},
			{Type: proto.OpGetData, Req: &proto.GetDataRequest{Path: "/secret"}},
		}}},
		{"a", 0, proto.OpMulti, &proto.MultiRequest{Ops: []proto.MultiOp{
			{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/m", ACL: open}},
			{Type: proto.OpCreate2, Req: &proto.CreateRequest{Path: "/m/s-", ACL: open, Flags: proto.ModePersistentSequential}},
			{Type: proto.OpCreateContainer, Req: &proto.CreateRequest{Path: "/m/c", ACL: open, Flags: proto.ModeContainer}},
			{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/m", Data: []byte("d"), Version: -1}},
			{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: "/m", Version: 1}},
			{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/m/c", Version: -1}},
		}}},
		{"a", 0, proto.OpMulti, &proto.MultiRequest{Ops: []proto.MultiOp{
			{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/m2", ACL: open}},
			{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: "/m", Version: 0}},
			{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/m3", ACL: open}},
		}}},
		{"a", 0, proto.OpMulti, &proto.MultiRequest{}},
		{"a", 0, proto.OpExists, &proto.ExistsRequest{Path: "/m2"}},
		// Watches: persistent, recursive, one-shot, and their removal.
		{"a", 0, proto.OpAddWatch, &proto.AddWatchRequest{Path: "/w", Mode: proto.AddWatchPersistent}},
		{"a", 0, proto.OpAddWatch, &proto.AddWatchRequest{Path: "/r", Mode: proto.AddWatchPersistentRecursive}},
		{"a", 0, proto.OpExists, &proto.ExistsRequest{Path: "/x", Watch: true}},
		{"a", 0, proto.OpGetData, &proto.GetDataRequest{Path: "/y", Watch: true}},
		{"b", 0, proto.OpCreate, &proto.CreateRequest{Path: "/w", ACL: open}},
		{"b", 0, proto.OpCreate, &proto.CreateRequest{Path: "/w/k", ACL: open}},
		{"b", 0, proto.OpSetData, &proto.SetDataRequest{Path: "/w", Data: []byte("1"), Version: -1}},
		{"b", 0, proto.OpCreate, &proto.CreateRequest{Path: "/r", ACL: open}},
		{"b", 0, proto.OpCreate, &proto.CreateRequest{Path: "/r/k", ACL: open}},
		{"b", 0, proto.OpCreate, &proto.CreateRequest{Path: "/r/k/deep", ACL: open}},
		{"b", 0, proto.OpSetData, &proto.SetDataRequest{Path: "/r/k/deep", Version: -1}},
		{"b", 0, proto.OpDelete, &proto.DeleteRequest{Path: "/r/k/deep", Version: -1}},
		{"b", 0, proto.OpCreate, &proto.CreateRequest{Path: "/x", ACL: open}},
		{"b", 0, proto.OpCreate, &proto.CreateRequest{Path: "/y", ACL: open}},
		{"a", 0, proto.OpSync, &proto.SyncRequest{Path: "/"}},
		{"a", 0, proto.OpCheckWatches, &proto.CheckWatchesRequest{Path: "/w", Type: proto.WatcherAny}},
		{"a", 0, proto.OpCheckWatches, &proto.CheckWatchesRequest{Path: "/x", Type: proto.WatcherData}},
		{"a", 0, proto.OpRemoveWatches, &proto.RemoveWatchesRequest{Path: "/w", Type: proto.WatcherAny}},
		{"a", 0, proto.OpRemoveWatches, &proto.RemoveWatchesRequest{Path: "/w", Type: proto.WatcherAny}},
		{"a", 0, proto.OpGetChildren, &proto.GetChildrenRequest{Path: "/p", Watch: true}},
		{"a", 0, proto.OpRemoveWatches, &proto.RemoveWatchesRequest{Path: "/p", Type: proto.WatcherData}},
		{"a", 0, proto.OpRemoveWatches, &proto.RemoveWatchesRequest{Path: "/p", Type: proto.WatcherChildren}},
		{"a", 0, proto.OpAddWatch, &proto.AddWatchRequest{Path: "/w", Mode: 5}},
		// setWatches as a reconnecting client sends it: relative zxid 0 makes
		// every existing node look changed.
		{"a", proto.XidSetWatches, proto.OpSetWatches, &proto.SetWatches{RelativeZxid: 0,
			DataWatches: []string{"/p", "/gone"}, ExistWatches: []string{"/p", "/gone2"}, ChildWatches: []string{"/p", "/gone3"}}},
		{"b", 0, proto.OpCreate, &proto.CreateRequest{Path: "/gone2", ACL: open}},
		{"a", 0, proto.OpSync, &proto.SyncRequest{Path: "/"}},
		// b goes away: its ephemerals go with it.
		{"a", 0, proto.OpExists, &proto.ExistsRequest{Path: "/eb", Watch: true}},
		{"b", 0, proto.OpCloseSession, nil},
		{"a", 0, proto.OpGetChildren, &proto.GetChildrenRequest{Path: "/p"}},
		// Requests a server may refuse.
		{"a", 0, proto.OpReconfig, &proto.ReconfigRequest{JoiningServers: "server.2=127.0.0.1:1:2;3", CurConfigID: -1}},
		{"a", 0, proto.OpDeleteContainer, &proto.DeleteRequest{Path: "/box", Version: -1}},
		{"a", proto.XidPing, proto.OpPing, nil},
		// Watch events for a node the watcher may not read.
		{"d", proto.XidAuth, proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}},
		{"a", 0, proto.OpGetChildren, &proto.GetChildrenRequest{Path: "/r", Watch: true}},
		{"d", 0, proto.OpCreate, &proto.CreateRequest{Path: "/r/hidden", ACL: []proto.ACL{{Perms: 31, ID: proto.ID{Scheme: "digest", ID: u}}}}},
		{"d", 0, proto.OpSetData, &proto.SetDataRequest{Path: "/r/hidden", Data: []byte("x"), Version: -1}},
		{"d", 0, proto.OpDelete, &proto.DeleteRequest{Path: "/r/hidden", Version: -1}},
		{"a", 0, proto.OpSync, &proto.SyncRequest{Path: "/"}},
		{"a", 0, proto.OpGetData, &proto.GetDataRequest{Path: "/p"}},
	}
}

var updateGolden = flag.Bool("update-golden", false, "write ZooKeeper's replies to proto/testdata/golden")

func TestProtocolAgainstZooKeeper(t *testing.T) {
	ref := zkref.Start(t, zkref.WithExtendedTypes())
	col := collietest.Start(t)
	var golden func(i int, op proto.OpCode, frame []byte)
	if *updateGolden {
		dir := filepath.Join("..", "proto", "testdata", "golden")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		golden = func(i int, op proto.OpCode, frame []byte) {
			name := filepath.Join(dir, fmt.Sprintf("%03d-%s.bin", i, op))
			if err := os.WriteFile(name, frame, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := runSteps(t, ref.Addr(), protocolSteps(), golden)
	got := runSteps(t, col.Addr(), protocolSteps(), nil)
	compareSteps(t, want, got)
}

// compareSteps reports each line of ZooKeeper's replies, want, that Collie's,
// got, does not match.
func compareSteps(t *testing.T, want, got []string) {
	t.Helper()
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("step %d:\nZooKeeper: %s\nCollie:    %s", i, w, g)
		}
	}
}

// runSteps runs steps against a server and returns one line per step;
// golden, if set, receives each reply body with its header.
func runSteps(t *testing.T, addr string, steps []step, golden func(int, proto.OpCode, []byte)) []string {
	r := newWireRunner(t, addr, 30000)
	r.golden = golden
	r.conn("a")
	r.conn("b")
	var out []string
	for i, s := range steps {
		out = append(out, r.run(i, s))
	}
	return out
}

// wireRunner sends steps to one server through named connections, each
// opened with a new session on first use.
type wireRunner struct {
	t         *testing.T
	addr      string
	timeoutMs int32 // the session timeout asked for
	conns     map[string]*zkwire.Conn
	// golden, if set, receives each successful reply body with its header.
	golden func(int, proto.OpCode, []byte)
	// replies, if set, receives every reply: its request's opcode, its
	// header and its body.
	replies func(proto.OpCode, proto.ReplyHeader, []byte)
}

func newWireRunner(t *testing.T, addr string, timeoutMs int32) *wireRunner {
	return &wireRunner{t: t, addr: addr, timeoutMs: timeoutMs, conns: map[string]*zkwire.Conn{}}
}

func (r *wireRunner) conn(name string) *zkwire.Conn {
	if c := r.conns[name]; c != nil {
		return c
	}
	c, err := zkwire.Dial(r.addr, r.timeoutMs)
	if err != nil {
		r.t.Fatalf("dial %s: %v", r.addr, err)
	}
	r.t.Cleanup(func() { c.Close() })
	r.conns[name] = c
	return c
}

// sessions names the sessions of the open connections, for the ephemeral
// owners of Stats.
func (r *wireRunner) sessions() map[int64]string {
	m := map[int64]string{}
	for name, c := range r.conns {
		m[c.Session] = name
	}
	return m
}

// run sends step i and returns a line that shows the request and the
// reply without what differs between servers by design.
func (r *wireRunner) run(i int, s step) string {
	c := r.conn(s.conn)
	before := len(c.Events)
	var hdr proto.ReplyHeader
	var body []byte
	var err error
	if s.xid != 0 {
		hdr, body, err = c.CallXid(s.xid, s.op, s.req)
	} else {
		hdr, body, err = c.Call(s.op, s.req)
	}
	line := fmt.Sprintf("%d %s %s %v:", i, s.conn, s.op, describeReq(s.req))
	if err != nil {
		line += " connection closed"
		c.Close()
		delete(r.conns, s.conn)
	} else {
		if r.replies != nil {
			r.replies(s.op, hdr, body)
		}
		if r.golden != nil && len(body) > 0 && hdr.Err == proto.OK {
			r.golden(i, s.op, body)
		}
		line += fmt.Sprintf(" err=%d %s", hdr.Err, describeReply(s.op, hdr.Err, body, r.sessions()))
	}
	if evs := c.Events[before:]; len(evs) > 0 {
		line += fmt.Sprintf(" events=%v", evs)
	}
	if s.op == proto.OpCloseSession && err == nil {
		// The server closes the connection after its reply.
		c.Close()
		delete(r.conns, s.conn)
	}
	return line
}

func describeReq(r proto.Record) string {
	if r == nil {
		return "{}"
	}
	if m, ok := r.(*proto.MultiRequest); ok {
		var ops []string
		for _, op := range m.Ops {
			ops = append(ops, fmt.Sprintf("%s%+v", op.Type, op.Req))
		}
		return "[" + strings.Join(ops, " ") + "]"
	}
	return strings.ReplaceAll(fmt.Sprintf("%+v", r), "\x00", "\\0")
}

// describeReply decodes a reply body and prints it without what differs
// between servers by design: zxids, times, session ids (shown by
// connection name).
func describeReply(op proto.OpCode, code proto.Code, body []byte, sessions map[int64]string) string {
	r := newResponse(op)
	if r == nil || len(body) == 0 {
		return fmt.Sprintf("body=%d bytes", len(body))
	}
	if err := proto.Unmarshal(body, r); err != nil {
		return fmt.Sprintf("undecodable body %x", body)
	}
	// Our encoding of what we decoded must be ZooKeeper's bytes exactly.
	if again := proto.Marshal(r); !bytes.Equal(again, body) {
		return fmt.Sprintf("re-encoded %x, received %x", again, body)
	}
	return normalize(r, sessions)
}

// newResponse returns a record for the body of a reply to op, or nil for
// a reply without one.
func newResponse(op proto.OpCode) proto.Record {
	var r proto.Record
	switch op {
	case proto.OpCreate:
		r = &proto.CreateResponse{}
	case proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL:
		r = &proto.Create2Response{}
	case proto.OpGetData:
		r = &proto.GetDataResponse{}
	case proto.OpSetData, proto.OpCheck:
		r = &proto.SetDataResponse{}
	case proto.OpExists:
		r = &proto.ExistsResponse{}
	case proto.OpGetChildren:
		r = &proto.GetChildrenResponse{}
	case proto.OpGetChildren2:
		r = &proto.GetChildren2Response{}
	case proto.OpGetACL:
		r = &proto.GetACLResponse{}
	case proto.OpSetACL:
		r = &proto.SetACLResponse{}
	case proto.OpGetEphemerals:
		r = &proto.GetEphemeralsResponse{}
	case proto.OpGetAllChildrenNumber:
		r = &proto.GetAllChildrenNumberResponse{}
	case proto.OpWhoAmI:
		r = &proto.WhoAmIResponse{}
	case proto.OpSync:
		r = &proto.SyncResponse{}
	case proto.OpMulti, proto.OpMultiRead:
		r = &proto.MultiResponse{}
	case proto.OpAddWatch:
		r = &proto.ErrorResponse{}
	}
	return r
}

func normalize(r proto.Record, sessions map[int64]string) string {
	st := func(s proto.Stat) string {
		owner := fmt.Sprintf("%#x", uint64(s.EphemeralOwner))
		if name, ok := sessions[s.EphemeralOwner]; ok && s.EphemeralOwner != 0 {
			owner = "session:" + name
		}
		return fmt.Sprintf("{v=%d cv=%d av=%d owner=%s len=%d kids=%d}", s.Version, s.Cversion, s.Aversion, owner, s.DataLength, s.NumChildren)
	}
	switch r := r.(type) {
	case *proto.Create2Response:
		return fmt.Sprintf("path=%s stat=%s", r.Path, st(r.Stat))
	case *proto.GetDataResponse:
		data := "null"
		if r.Data != nil {
			data = fmt.Sprintf("%q", r.Data)
		}
		return fmt.Sprintf("data=%s stat=%s", data, st(r.Stat))
	case *proto.SetDataResponse:
		return "stat=" + st(r.Stat)
	case *proto.ExistsResponse:
		return "stat=" + st(r.Stat)
	case *proto.GetChildren2Response:
		return fmt.Sprintf("children=%v stat=%s", sortedCopy(r.Children), st(r.Stat))
	case *proto.GetChildrenResponse:
		return fmt.Sprintf("children=%v", sortedCopy(r.Children))
	case *proto.GetACLResponse:
		return fmt.Sprintf("acl=%v stat=%s", r.ACL, st(r.Stat))
	case *proto.SetACLResponse:
		return "stat=" + st(r.Stat)
	case *proto.GetEphemeralsResponse:
		return fmt.Sprintf("ephemerals=%v", sortedCopy(r.Ephemerals))
	case *proto.WhoAmIResponse:
		return fmt.Sprintf("%v", r.ClientInfo)
	case *proto.MultiResponse:
		var parts []string
		for _, res := range r.Results {
			p := fmt.Sprintf("%s/%d", res.Type, res.Err)
			if res.Resp != nil {
				p += " " + normalize(res.Resp, sessions)
			}
			parts = append(parts, "{"+p+"}")
		}
		return "results=" + strings.Join(parts, " ")
	}
	return fmt.Sprintf("%+v", r)
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
