package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
	"github.com/collie-io/collie/server/zkdata"
)

var zkTypes = map[string]proto.OpCode{
	"create": proto.OpCreate, "create2": proto.OpCreate2, "createTTL": proto.OpCreateTTL,
	"createContainer": proto.OpCreateContainer, "delete": proto.OpDelete, "deleteContainer": proto.OpDeleteContainer,
	"set": proto.OpSetData, "reconfig": proto.OpReconfig, "setacl": proto.OpSetACL, "check": proto.OpCheck,
	"error": proto.OpError, "createSession": proto.OpCreateSession, "closeSession": proto.OpCloseSession,
	"multi": proto.OpMulti,
}

// zkRecord builds the record of a ZooKeeper transaction of type typ from
// command arguments: path, data, acl, eph, pcv (the parent's cversion),
// ttl, version, err, timeout, paths (a closeSession's; none for the record
// of before 3.6).
func zkRecord(t *testing.T, typ string, a args) (proto.OpCode, any) {
	op, ok := zkTypes[typ]
	if !ok {
		t.Fatalf("unknown transaction type %q", typ)
	}
	path := a.str("path", "/")
	var data []byte
	if v, ok := a["data"]; ok {
		data = []byte(v)
	}
	var acl []proto.ACL
	if v, ok := a["acl"]; ok {
		acl = parseACL(t, v)
	}
	pcv := int32(a.int(t, "pcv", -1))
	version := int32(a.int(t, "version", 0))
	switch op {
	case proto.OpCreate, proto.OpCreate2:
		return op, &zkdata.CreateTxn{Path: path, Data: data, ACL: acl, Ephemeral: a.str("eph", "") == "true", ParentCversion: pcv}
	case proto.OpCreateTTL:
		return op, &zkdata.CreateTTLTxn{Path: path, Data: data, ACL: acl, ParentCversion: pcv, TTL: a.int(t, "ttl", 1000)}
	case proto.OpCreateContainer:
		return op, &zkdata.CreateContainerTxn{Path: path, Data: data, ACL: acl, ParentCversion: pcv}
	case proto.OpDelete, proto.OpDeleteContainer:
		return op, &zkdata.DeleteTxn{Path: path}
	case proto.OpSetData, proto.OpReconfig:
		return op, &zkdata.SetDataTxn{Path: path, Data: data, Version: version}
	case proto.OpSetACL:
		return op, &zkdata.SetACLTxn{Path: path, ACL: acl, Version: version}
	case proto.OpCheck:
		return op, &zkdata.CheckVersionTxn{Path: path, Version: version}
	case proto.OpError:
		return op, &zkdata.ErrorTxn{Err: proto.Code(a.int(t, "err", 0))}
	case proto.OpCreateSession:
		return op, &zkdata.CreateSessionTxn{Timeout: int32(a.int(t, "timeout", 30000))}
	case proto.OpCloseSession:
		v, ok := a["paths"]
		if !ok {
			return op, &zkdata.CloseSessionTxn{}
		}
		if v == "none" {
			return op, nil
		}
		return op, &zkdata.CloseSessionTxn{Paths: strings.Split(v, ",")}
	}
	return op, &zkdata.MultiTxn{}
}

// zk applies a ZooKeeper transaction given by a datadriven command: zk
// with type= and the record's arguments, or zkmulti with one op a line.
// The zxid is the next one unless zxid= says; session= is the header's.
func (h *harness) zk(t *testing.T, d *datadriven.TestData, a args) string {
	h.time += 1000
	hdr := zkdata.Header{Session: a.int(t, "session", 1), Cxid: 1, Zxid: a.int(t, "zxid", h.f.LastZxid()+1), Time: a.int(t, "time", h.time)}
	var rec any
	if d.Cmd == "zkmulti" {
		hdr.Type = proto.OpMulti
		m := &zkdata.MultiTxn{}
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			op, r := zkRecord(t, f[0], parseArgs(f[1:]))
			m.Txns = append(m.Txns, zkdata.SubTxn{Type: op, Record: r})
		}
		rec = m
	} else {
		hdr.Type, rec = zkRecord(t, a.str("type", ""), a)
	}
	res := h.f.ApplyZooKeeper(&zkdata.Txn{Header: hdr, Record: rec})
	h.index = h.f.Applied()
	out := formatResult(res)
	if res.Closed != 0 {
		out += fmt.Sprintf("\nclosed %#x", res.Closed)
	}
	return out
}

// TestApplyZooKeeperEventACLs checks that events carry the ACLs watchers
// are checked against: the node's for its own events, the parent's for
// NodeChildrenChanged, and a deleted node's as it was.
func TestApplyZooKeeperEventACLs(t *testing.T) {
	f := New(Options{})
	readOnly := []proto.ACL{{Perms: proto.PermRead, ID: proto.ID{Scheme: "digest", ID: "u:x"}}}
	adminOnly := []proto.ACL{{Perms: proto.PermAdmin, ID: proto.ID{Scheme: "ip", ID: "10.0.0.1"}}}
	apply := func(typ proto.OpCode, rec any) Result {
		t.Helper()
		res := f.ApplyZooKeeper(&zkdata.Txn{Header: zkdata.Header{Session: 1, Zxid: f.LastZxid() + 1, Time: 100, Type: typ}, Record: rec})
		if res.Err != proto.OK {
			t.Fatalf("%v: %v", typ, res.Err)
		}
		return res
	}
	check := func(res Result, want ...Event) {
		t.Helper()
		if len(res.Events) != len(want) {
			t.Fatalf("events %+v, want %+v", res.Events, want)
		}
		for i, ev := range res.Events {
			if ev.Type != want[i].Type || ev.Path != want[i].Path || !slices.Equal(ev.ACL, want[i].ACL) {
				t.Fatalf("event %d: %+v, want %+v", i, ev, want[i])
			}
		}
	}
	check(apply(proto.OpCreate, &zkdata.CreateTxn{Path: "/p", ACL: readOnly, ParentCversion: 1}),
		Event{proto.EventNodeCreated, "/p", readOnly}, Event{proto.EventNodeChildrenChanged, "/", tree.OpenACL})
	check(apply(proto.OpCreate, &zkdata.CreateTxn{Path: "/p/c", ACL: adminOnly, ParentCversion: 1}),
		Event{proto.EventNodeCreated, "/p/c", adminOnly}, Event{proto.EventNodeChildrenChanged, "/p", readOnly})
	check(apply(proto.OpSetData, &zkdata.SetDataTxn{Path: "/p/c", Data: []byte("d"), Version: 1}),
		Event{proto.EventNodeDataChanged, "/p/c", adminOnly})
	// A setACL fires nothing, as in ZooKeeper; the deletion after it
	// shows the new ACL.
	check(apply(proto.OpSetACL, &zkdata.SetACLTxn{Path: "/p/c", ACL: readOnly, Version: 1}))
	check(apply(proto.OpDelete, &zkdata.DeleteTxn{Path: "/p/c"}),
		Event{proto.EventNodeDeleted, "/p/c", readOnly}, Event{proto.EventNodeChildrenChanged, "/p", readOnly})
	// A null ACL is world:anyone, as ZooKeeper's ACL cache reads it.
	check(apply(proto.OpCreate, &zkdata.CreateTxn{Path: "/open", ParentCversion: -1}),
		Event{proto.EventNodeCreated, "/open", tree.OpenACL}, Event{proto.EventNodeChildrenChanged, "/", tree.OpenACL})
}

// TestApplyZooKeeperSessions checks the session table: a createSession
// opens a session marked as ZooKeeper's, with its timeout; a closeSession
// removes it and ends it even when this replica never saw it open.
func TestApplyZooKeeperSessions(t *testing.T) {
	f := New(Options{})
	hdr := func(typ proto.OpCode, session int64) zkdata.Header {
		return zkdata.Header{Session: session, Zxid: f.LastZxid() + 1, Time: 1, Type: typ}
	}
	f.ApplyZooKeeper(&zkdata.Txn{Header: hdr(proto.OpCreateSession, 0x10), Record: &zkdata.CreateSessionTxn{Timeout: 9000}})
	if s, ok := f.Session(0x10); !ok || s != (Session{ID: 0x10, Timeout: 9000, ZooKeeper: true}) {
		t.Fatalf("session after createSession: %+v %v", s, ok)
	}
	if f.Applied() != 1 || f.LastZxid() != 1 {
		t.Fatalf("applied %d, last zxid %d after zxid 1", f.Applied(), f.LastZxid())
	}
	res := f.ApplyZooKeeper(&zkdata.Txn{Header: hdr(proto.OpCloseSession, 0x10), Record: &zkdata.CloseSessionTxn{}})
	if _, ok := f.Session(0x10); ok || res.Closed != 0x10 {
		t.Fatalf("after closeSession: session still open %v, closed %#x", ok, res.Closed)
	}
	res = f.ApplyZooKeeper(&zkdata.Txn{Header: hdr(proto.OpCloseSession, 0x20)})
	if res.Closed != 0x20 || res.Err != proto.OK {
		t.Fatalf("closeSession of a session never seen: closed %#x, %v", res.Closed, res.Err)
	}
	if res := f.ApplyZooKeeper(nil); res.Zxid != 0 || res.Err != proto.ErrRuntimeInconsistency {
		t.Fatalf("nil transaction: %+v", res)
	}
}

// zkWorkload makes random ZooKeeper transactions over a few paths, the
// kinds a replay over a fuzzy snapshot meets included: creates of nodes
// that exist, with parent cversions above, below or -1, deletes of nodes
// that are gone, failed multis, and sessions closed with and without
// their paths listed.
type zkWorkload struct {
	rng *rand.Rand
	f   *FSM
}

var zkWorkloadPaths = []string{"/a", "/b", "/a/x", "/a/y", "/b/x", "/a/x/z", "/a/s-0000000001"}

func (w *zkWorkload) record() (proto.OpCode, any) {
	rng := w.rng
	p := zkWorkloadPaths[rng.IntN(len(zkWorkloadPaths))]
	pcv := int32(rng.IntN(12) - 1)
	switch rng.IntN(9) {
	case 0:
		return proto.OpCreate2, &zkdata.CreateTxn{Path: p, Data: []byte{byte(rng.IntN(9))}, ACL: tree.OpenACL, Ephemeral: rng.IntN(3) == 0, ParentCversion: pcv}
	case 1:
		return proto.OpCreate, &zkdata.CreateTxn{Path: p, ACL: tree.ReadACL, ParentCversion: pcv}
	case 2:
		return proto.OpCreateTTL, &zkdata.CreateTTLTxn{Path: p, ACL: tree.OpenACL, ParentCversion: pcv, TTL: 1 + rng.Int64N(1000)}
	case 3:
		return proto.OpCreateContainer, &zkdata.CreateContainerTxn{Path: p, ACL: tree.OpenACL, ParentCversion: pcv}
	case 4:
		return proto.OpDelete, &zkdata.DeleteTxn{Path: p}
	case 5:
		return proto.OpSetData, &zkdata.SetDataTxn{Path: p, Data: []byte(fmt.Sprint(rng.IntN(99))), Version: int32(rng.IntN(9))}
	case 6:
		return proto.OpSetACL, &zkdata.SetACLTxn{Path: p, ACL: []proto.ACL{{Perms: int32(1 + rng.IntN(31)), ID: proto.ID{Scheme: "world", ID: "anyone"}}}, Version: int32(rng.IntN(9))}
	case 7:
		return proto.OpCheck, &zkdata.CheckVersionTxn{Path: p, Version: 1}
	}
	return proto.OpError, &zkdata.ErrorTxn{Err: proto.ErrNoNode}
}

func (w *zkWorkload) next() *zkdata.Txn {
	rng := w.rng
	h := zkdata.Header{Session: int64(1 + rng.IntN(3)), Zxid: w.f.LastZxid() + 1, Time: w.f.LastZxid() * 10}
	var rec any
	switch rng.IntN(12) {
	case 0:
		h.Type, rec = proto.OpCreateSession, &zkdata.CreateSessionTxn{Timeout: 4000}
	case 1:
		var listed []string
		if rng.IntN(2) == 0 {
			listed = w.f.Tree().Ephemerals(h.Session)
		}
		h.Type, rec = proto.OpCloseSession, &zkdata.CloseSessionTxn{Paths: listed}
	case 2, 3:
		m := &zkdata.MultiTxn{}
		for range 1 + rng.IntN(4) {
			typ, r := w.record()
			if typ == proto.OpSetACL || typ == proto.OpCreate2 {
				typ, r = proto.OpDelete, &zkdata.DeleteTxn{Path: zkWorkloadPaths[rng.IntN(len(zkWorkloadPaths))]}
			}
			m.Txns = append(m.Txns, zkdata.SubTxn{Type: typ, Record: r})
		}
		h.Type, rec = proto.OpMulti, m
	default:
		h.Type, rec = w.record()
	}
	return &zkdata.Txn{Header: h, Record: rec}
}

// TestApplyZooKeeperWhileSnapshotting writes snapshots while ZooKeeper
// transactions keep being applied between their chunks: each must restore
// to exactly the state of the moment it began.
func TestApplyZooKeeperWhileSnapshotting(t *testing.T) {
	defer func(n int) { snapshotChunk = n }(snapshotChunk)
	snapshotChunk = 3
	h := &harness{f: New(Options{ExtendedTypes: true})}
	w := &zkWorkload{rng: rand.New(rand.NewPCG(5, 8)), f: h.f}
	for round := range 60 {
		for range 10 {
			h.f.ApplyZooKeeper(w.next())
		}
		checkSnapshotWhile(t, h, round, func() {
			for range w.rng.IntN(4) {
				h.f.ApplyZooKeeper(w.next())
			}
		})
	}
	if h.f.Tree().Len() < 5 {
		t.Fatalf("the workload left %d nodes: it exercised too little", h.f.Tree().Len())
	}
}

// encodeZkRecord encodes a transaction record as ZooKeeper logs it.
func encodeZkRecord(e *proto.Encoder, rec any) {
	switch r := rec.(type) {
	case *zkdata.CreateTxn:
		e.String(r.Path)
		e.Buffer(r.Data)
		e.ACLs(r.ACL)
		e.Bool(r.Ephemeral)
		e.Int(r.ParentCversion)
	case *zkdata.CreateTTLTxn:
		e.String(r.Path)
		e.Buffer(r.Data)
		e.ACLs(r.ACL)
		e.Int(r.ParentCversion)
		e.Long(r.TTL)
	case *zkdata.CreateContainerTxn:
		e.String(r.Path)
		e.Buffer(r.Data)
		e.ACLs(r.ACL)
		e.Int(r.ParentCversion)
	case *zkdata.DeleteTxn:
		e.String(r.Path)
	case *zkdata.SetDataTxn:
		e.String(r.Path)
		e.Buffer(r.Data)
		e.Int(r.Version)
	case *zkdata.SetACLTxn:
		e.String(r.Path)
		e.ACLs(r.ACL)
		e.Int(r.Version)
	case *zkdata.CheckVersionTxn:
		e.String(r.Path)
		e.Int(r.Version)
	case *zkdata.CreateSessionTxn:
		e.Int(r.Timeout)
	case *zkdata.CloseSessionTxn:
		e.Strings(r.Paths)
	case *zkdata.ErrorTxn:
		e.Int(int32(r.Err))
	case *zkdata.MultiTxn:
		e.Int(int32(len(r.Txns)))
		for _, sub := range r.Txns {
			e.Int(int32(sub.Type))
			inner := proto.NewEncoder(nil)
			encodeZkRecord(inner, sub.Record)
			e.Buffer(inner.Bytes())
		}
	}
}

func encodeZkTxn(txn *zkdata.Txn) []byte {
	e := proto.NewEncoder(nil)
	e.Long(txn.Session)
	e.Int(txn.Cxid)
	e.Long(txn.Zxid)
	e.Long(txn.Time)
	e.Int(int32(txn.Type))
	encodeZkRecord(e, txn.Record)
	return e.Bytes()
}

// FuzzApplyZooKeeper feeds transactions decoded from arbitrary bytes, each
// a 2-byte length and the transaction, to ApplyZooKeeper over a tree with
// nodes of every kind. Nothing may panic, and the state must stay
// consistent: a snapshot of it restores to the same nodes, sessions,
// ephemerals and size.
func FuzzApplyZooKeeper(f *testing.F) {
	for seed := range uint64(6) {
		w := &zkWorkload{rng: rand.New(rand.NewPCG(seed, 1)), f: New(Options{ExtendedTypes: true})}
		var in []byte
		for range 30 {
			txn := w.next()
			b := encodeZkTxn(txn)
			in = binary.BigEndian.AppendUint16(in, uint16(len(b)))
			in = append(in, b...)
			w.f.ApplyZooKeeper(txn)
		}
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h := &harness{f: New(Options{ExtendedTypes: true})}
		w := &zkWorkload{rng: rand.New(rand.NewPCG(9, 9)), f: h.f}
		for range 20 {
			h.f.ApplyZooKeeper(w.next())
		}
		for len(in) >= 2 {
			n := int(binary.BigEndian.Uint16(in))
			in = in[2:]
			b := in[:min(n, len(in))]
			in = in[len(b):]
			txn, err := zkdata.DecodeTxn(b)
			if err != nil {
				continue
			}
			last := h.f.LastZxid()
			if res := h.f.ApplyZooKeeper(txn); res.Zxid == 0 {
				if h.f.LastZxid() != last || res.Err != proto.ErrRuntimeInconsistency {
					t.Fatalf("a refused transaction moved the last zxid from %#x to %#x, %v", last, h.f.LastZxid(), res.Err)
				}
				// Once more after the last, so that every decoded
				// transaction applies.
				txn.Zxid = last + 1
				h.f.ApplyZooKeeper(txn)
			}
		}
		var buf bytes.Buffer
		if err := h.f.Save(&buf); err != nil {
			t.Fatal(err)
		}
		restored, err := Restore(h.f.opts, &buf)
		if err != nil {
			t.Fatalf("restore of a snapshot after the transactions: %v", err)
		}
		want, size, count := h.dump()+indexes(h.f.Tree()), h.f.Tree().DataSize(), h.f.Tree().Len()
		h.f = restored
		if got := h.dump() + indexes(restored.Tree()); got != want {
			t.Fatalf("the snapshot restores another state:\nlive:\n%s\nrestored:\n%s", want, got)
		}
		if restored.Tree().DataSize() != size || restored.Tree().Len() != count {
			t.Fatalf("live tree: %d nodes of %d bytes; restored: %d of %d", count, size, restored.Tree().Len(), restored.Tree().DataSize())
		}
	})
}

// indexes shows what a tree indexes beside its nodes: the ephemerals of
// every session, and the containers and TTL nodes that could be deleted
// at the end of time.
func indexes(tr *tree.Tree) string {
	var b strings.Builder
	for _, id := range tr.EphemeralSessions() {
		fmt.Fprintf(&b, "ephemerals of %#x: %v\n", id, tr.Ephemerals(id))
	}
	fmt.Fprintf(&b, "candidates: %v\n", tr.Candidates(math.MaxInt64))
	return b.String()
}

// TestApplyZooKeeperAgreesWithApply applies random writes to one state
// machine through Apply and, as the transactions a ZooKeeper leader would
// log for them, to another through ApplyZooKeeper: both must reach the
// same state and return the same results, replies and watch events alike.
func TestApplyZooKeeperAgreesWithApply(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 21))
	a := &harness{f: New(Options{ExtendedTypes: true})}
	b := New(Options{ExtendedTypes: true})
	acls := [][]proto.ACL{tree.OpenACL, tree.OpenACL, tree.ReadACL, {{Perms: proto.PermAll &^ proto.PermDelete, ID: proto.ID{Scheme: "world", ID: "anyone"}}}}
	paths := []string{"/a", "/b", "/a/x", "/a/y", "/b/x", "/a/x/z", "/a/s-", "/c"}
	flags := []proto.CreateMode{proto.ModePersistent, proto.ModeEphemeral, proto.ModePersistentSequential, proto.ModeEphemeralSequential, proto.ModeContainer, proto.ModePersistentWithTTL}
	randomOp := func() (proto.OpCode, proto.Record) {
		p := paths[rng.IntN(len(paths))]
		version := int32(-1)
		if rng.IntN(3) == 0 {
			version = int32(rng.IntN(2))
		}
		switch rng.IntN(5) {
		case 0:
			mode := flags[rng.IntN(len(flags))]
			switch {
			case mode.TTL():
				return proto.OpCreateTTL, &proto.CreateTTLRequest{Path: p, Data: []byte{byte(rng.IntN(9))}, ACL: acls[rng.IntN(len(acls))], Flags: mode, TTL: 1 + rng.Int64N(999)}
			case mode.Container():
				return proto.OpCreateContainer, &proto.CreateRequest{Path: p, ACL: acls[rng.IntN(len(acls))], Flags: mode}
			}
			return []proto.OpCode{proto.OpCreate, proto.OpCreate2}[rng.IntN(2)], &proto.CreateRequest{Path: p, Data: []byte{byte(rng.IntN(9))}, ACL: acls[rng.IntN(len(acls))], Flags: mode}
		case 1:
			return proto.OpDelete, &proto.DeleteRequest{Path: p, Version: version}
		case 2:
			return proto.OpSetData, &proto.SetDataRequest{Path: p, Data: []byte(fmt.Sprint(rng.IntN(99))), Version: version}
		case 3:
			return proto.OpSetACL, &proto.SetACLRequest{Path: p, ACL: acls[rng.IntN(len(acls))], Version: version}
		}
		return proto.OpCheck, &proto.CheckVersionRequest{Path: p, Version: version}
	}
	// changed counts the transactions that changed something, by type.
	changed := map[proto.OpCode]int{}
	for step := range 3000 {
		session := int64(1 + rng.IntN(3))
		e := &Entry{Type: EntryRequest, Session: session}
		_, open := a.f.Session(session)
		switch r := rng.IntN(40); {
		case !open:
			e = &Entry{Type: EntryCreateSession, Session: session, Timeout: 5000}
		case r == 0:
			// Only an open session is closed: a ZooKeeper leader logs
			// no close of one already closed.
			e = &Entry{Type: EntryCloseSession, Session: session}
		case r < 12:
			m := &proto.MultiRequest{}
			for range 1 + rng.IntN(4) {
				op, req := randomOp()
				if op == proto.OpSetACL || op == proto.OpCreate2 {
					op, req = proto.OpCheck, &proto.CheckVersionRequest{Path: "/a", Version: -1}
				}
				m.Ops = append(m.Ops, proto.MultiOp{Type: op, Req: req})
			}
			e.Op, e.Body = proto.OpMulti, proto.Marshal(m)
		default:
			op, req := randomOp()
			if op == proto.OpCheck {
				op, req = randomOp()
			}
			e.Op, e.Body = op, proto.Marshal(req)
		}
		// What the session owned before, for the closeSession's record.
		owned := a.f.Tree().Ephemerals(session)
		want := a.apply(t, e)
		txn := leaderTxn(t, a.f, e, want, owned)
		got := b.ApplyZooKeeper(txn)
		if len(got.Events) > 0 || txn.Type == proto.OpSetACL && got.Err == proto.OK {
			changed[txn.Type]++
		}
		if g, w := describeResult(got), describeResult(want); g != w {
			t.Fatalf("step %d, %s: ApplyZooKeeper's result\n%s\nApply's\n%s", step, txn.Type, g, w)
		}
		if g, w := (&harness{f: b}).dump(), a.dump(); g != strings.ReplaceAll(w, " timeout=5000 ", " timeout=5000 zookeeper ") {
			t.Fatalf("step %d, %s: ApplyZooKeeper's state\n%s\nApply's\n%s", step, txn.Type, g, w)
		}
	}
	for _, op := range []proto.OpCode{proto.OpCreate, proto.OpCreate2, proto.OpCreateTTL, proto.OpCreateContainer,
		proto.OpDelete, proto.OpSetData, proto.OpSetACL, proto.OpMulti, proto.OpCloseSession} {
		if changed[op] == 0 {
			t.Errorf("no %s changed anything: the workload left it untested", op)
		}
	}
	t.Logf("transactions that changed something: %v", changed)
}

// describeResult shows everything a Result holds, the ACLs of its events
// included.
func describeResult(res Result) string {
	out := formatResult(res) + fmt.Sprintf("\nclosed=%#x", res.Closed)
	for _, ev := range res.Events {
		out += fmt.Sprintf("\n%s %s %v", ev.Type, ev.Path, ev.ACL)
	}
	return out
}

// leaderTxn returns the transaction a ZooKeeper leader logs for the entry
// Apply has applied to f with result res; owned are the ephemerals the
// entry's session had before.
func leaderTxn(t *testing.T, f *FSM, e *Entry, res Result, owned []string) *zkdata.Txn {
	t.Helper()
	h := zkdata.Header{Session: e.Session, Zxid: res.Zxid, Time: e.Time}
	switch {
	case e.Type == EntryCreateSession:
		s, _ := f.Session(e.Session)
		return &zkdata.Txn{Header: withType(h, proto.OpCreateSession), Record: &zkdata.CreateSessionTxn{Timeout: s.Timeout}}
	case e.Type == EntryCloseSession:
		return &zkdata.Txn{Header: withType(h, proto.OpCloseSession), Record: &zkdata.CloseSessionTxn{Paths: owned}}
	case res.Err != proto.OK:
		return &zkdata.Txn{Header: withType(h, proto.OpError), Record: &zkdata.ErrorTxn{Err: res.Err}}
	}
	req, _ := proto.NewRequest(e.Op)
	if err := proto.Unmarshal(e.Body, req); err != nil {
		t.Fatal(err)
	}
	if e.Op != proto.OpMulti {
		typ, rec := leaderRecord(f, e.Op, req, res.Resp, false)
		return &zkdata.Txn{Header: withType(h, typ), Record: rec}
	}
	m := &zkdata.MultiTxn{}
	for i, op := range req.(*proto.MultiRequest).Ops {
		r := res.Resp.(*proto.MultiResponse).Results[i]
		if r.Type == proto.OpError {
			m.Txns = append(m.Txns, zkdata.SubTxn{Type: proto.OpError, Record: &zkdata.ErrorTxn{Err: r.Err}})
			continue
		}
		typ, rec := leaderRecord(f, op.Type, op.Req, r.Resp, true)
		m.Txns = append(m.Txns, zkdata.SubTxn{Type: typ, Record: rec})
	}
	return &zkdata.Txn{Header: withType(h, proto.OpMulti), Record: m}
}

func withType(h zkdata.Header, typ proto.OpCode) zkdata.Header {
	h.Type = typ
	return h
}

// leaderRecord is the record of one successful op whose reply is resp. In
// a multi, where the state after it is not f's, a create's parent cversion
// is -1 (one more) and a setData's version is its reply's.
func leaderRecord(f *FSM, op proto.OpCode, req proto.Record, resp proto.Record, inMulti bool) (proto.OpCode, any) {
	tr := f.Tree()
	created := func(path string) ([]byte, []proto.ACL, int32) {
		n, _ := tr.Get(path)
		parent, _ := tr.Get(proto.Parent(path))
		if inMulti || n == nil {
			return nil, nil, -1
		}
		return n.Data, tr.ACL(n), parent.Cversion
	}
	path := func() string {
		switch r := resp.(type) {
		case *proto.CreateResponse:
			return r.Path
		case *proto.Create2Response:
			return r.Path
		}
		return ""
	}
	switch r := req.(type) {
	case *proto.CreateRequest:
		data, acl, pcv := created(path())
		if data == nil {
			data, acl = r.Data, r.ACL
		}
		if op == proto.OpCreateContainer {
			return op, &zkdata.CreateContainerTxn{Path: path(), Data: data, ACL: acl, ParentCversion: pcv}
		}
		return op, &zkdata.CreateTxn{Path: path(), Data: data, ACL: acl, Ephemeral: r.Flags.Ephemeral(), ParentCversion: pcv}
	case *proto.CreateTTLRequest:
		data, acl, pcv := created(path())
		if data == nil {
			data, acl = r.Data, r.ACL
		}
		return op, &zkdata.CreateTTLTxn{Path: path(), Data: data, ACL: acl, ParentCversion: pcv, TTL: r.TTL}
	case *proto.DeleteRequest:
		return op, &zkdata.DeleteTxn{Path: r.Path}
	case *proto.SetDataRequest:
		return op, &zkdata.SetDataTxn{Path: r.Path, Data: r.Data, Version: resp.(*proto.SetDataResponse).Stat.Version}
	case *proto.SetACLRequest:
		return op, &zkdata.SetACLTxn{Path: r.Path, ACL: r.ACL, Version: resp.(*proto.SetACLResponse).Stat.Aversion}
	case *proto.CheckVersionRequest:
		return op, &zkdata.CheckVersionTxn{Path: r.Path, Version: r.Version}
	}
	panic(fmt.Sprintf("no transaction for %T", req))
}
