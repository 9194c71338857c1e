package fsm

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
)

// harness drives an FSM from datadriven commands. Every write goes through
// Entry.Marshal and UnmarshalEntry, as it would through the log.
type harness struct {
	f     *FSM
	index uint64
	time  int64
}

var modes = map[string]proto.CreateMode{
	"persistent": proto.ModePersistent, "ephemeral": proto.ModeEphemeral,
	"persistent_sequential": proto.ModePersistentSequential, "ephemeral_sequential": proto.ModeEphemeralSequential,
	"container": proto.ModeContainer, "ttl": proto.ModePersistentWithTTL, "ttl_sequential": proto.ModePersistentSequentialWithTTL,
}

var opcodes = map[string]proto.OpCode{
	"create": proto.OpCreate, "create2": proto.OpCreate2, "createContainer": proto.OpCreateContainer,
	"createTTL": proto.OpCreateTTL, "delete": proto.OpDelete, "set": proto.OpSetData,
	"setacl": proto.OpSetACL, "check": proto.OpCheck,
	// In a multi only: ops that are not writes.
	"get": proto.OpGetData, "ls": proto.OpGetChildren, "deleteContainer": proto.OpDeleteContainer,
}

type args map[string]string

func parseArgs(fields []string) args {
	a := args{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		a[k] = v
	}
	return a
}

func (a args) str(k, def string) string {
	if v, ok := a[k]; ok {
		return v
	}
	return def
}

func (a args) int(t *testing.T, k string, def int64) int64 {
	v, ok := a[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		t.Fatalf("%s=%s: %v", k, v, err)
	}
	return n
}

func parseACL(t *testing.T, s string) []proto.ACL {
	if s == "" {
		return tree.OpenACL
	}
	if s == "none" {
		return []proto.ACL{}
	}
	var acl []proto.ACL
	for _, part := range strings.Split(s, ",") {
		// scheme:id:perms, perms as letters rwcda; the id may contain colons.
		i, j := strings.Index(part, ":"), strings.LastIndex(part, ":")
		perms := int32(0)
		for _, c := range part[j+1:] {
			perms |= map[rune]int32{'r': proto.PermRead, 'w': proto.PermWrite, 'c': proto.PermCreate, 'd': proto.PermDelete, 'a': proto.PermAdmin}[c]
		}
		acl = append(acl, proto.ACL{Perms: perms, ID: proto.ID{Scheme: part[:i], ID: part[i+1 : j]}})
	}
	return acl
}

func parseAuth(s string) []proto.ID {
	var ids []proto.ID
	if s == "" {
		return ids
	}
	for _, part := range strings.Split(s, ",") {
		scheme, id, _ := strings.Cut(part, ":")
		ids = append(ids, proto.ID{Scheme: scheme, ID: id})
	}
	return ids
}

// request builds the record of one write from its command arguments.
func (h *harness) request(t *testing.T, cmd string, a args) (proto.OpCode, proto.Record) {
	op, ok := opcodes[a.str("op", cmd)]
	if !ok {
		t.Fatalf("unknown op %q", cmd)
	}
	path := a.str("path", "/")
	version := int32(a.int(t, "version", -1))
	var data []byte
	if v, ok := a["data"]; ok {
		data = []byte(v)
	}
	// mode is a mode's name or a number.
	mode := func(def string) proto.CreateMode {
		if m, ok := modes[a.str("mode", def)]; ok {
			return m
		}
		return proto.CreateMode(a.int(t, "mode", 0))
	}
	switch op {
	case proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer:
		return op, &proto.CreateRequest{Path: path, Data: data, ACL: parseACL(t, a.str("acl", "")), Flags: mode("persistent")}
	case proto.OpCreateTTL:
		return op, &proto.CreateTTLRequest{Path: path, Data: data, ACL: parseACL(t, a.str("acl", "")), Flags: mode("ttl"), TTL: a.int(t, "ttl", 1000)}
	case proto.OpDelete:
		return op, &proto.DeleteRequest{Path: path, Version: version}
	case proto.OpSetData:
		return op, &proto.SetDataRequest{Path: path, Data: data, Version: version}
	case proto.OpSetACL:
		return op, &proto.SetACLRequest{Path: path, ACL: parseACL(t, a.str("acl", "")), Version: version}
	case proto.OpGetData:
		return op, &proto.GetDataRequest{Path: path}
	case proto.OpGetChildren:
		return op, &proto.GetChildrenRequest{Path: path}
	case proto.OpDeleteContainer:
		return op, &proto.DeleteRequest{Path: path, Version: version}
	}
	return op, &proto.CheckVersionRequest{Path: path, Version: version}
}

func (h *harness) apply(t *testing.T, e *Entry) Result {
	h.index++
	h.time += 1000
	if e.Time == 0 {
		e.Time = h.time
	}
	decoded, err := UnmarshalEntry(e.Marshal())
	if err != nil {
		t.Fatalf("entry round trip: %v", err)
	}
	return h.f.Apply(h.index, decoded)
}

func formatStat(s proto.Stat) string {
	return fmt.Sprintf("czxid=%d mzxid=%d pzxid=%d ctime=%d mtime=%d version=%d cversion=%d aversion=%d owner=%#x len=%d children=%d",
		s.Czxid, s.Mzxid, s.Pzxid, s.Ctime, s.Mtime, s.Version, s.Cversion, s.Aversion, uint64(s.EphemeralOwner), s.DataLength, s.NumChildren)
}

func formatResp(r proto.Record) string {
	switch r := r.(type) {
	case nil:
		return ""
	case *proto.CreateResponse:
		return "path=" + r.Path
	case *proto.Create2Response:
		return "path=" + r.Path + " " + formatStat(r.Stat)
	case *proto.SetDataResponse:
		return formatStat(r.Stat)
	case *proto.SetACLResponse:
		return formatStat(r.Stat)
	case *proto.ExistsResponse:
		return formatStat(r.Stat)
	case *proto.GetDataResponse:
		return fmt.Sprintf("data=%q %s", r.Data, formatStat(r.Stat))
	case *proto.GetChildrenResponse:
		return fmt.Sprintf("children=%v", r.Children)
	case *proto.GetChildren2Response:
		return fmt.Sprintf("children=%v %s", r.Children, formatStat(r.Stat))
	case *proto.GetACLResponse:
		return fmt.Sprintf("acl=%v %s", r.ACL, formatStat(r.Stat))
	case *proto.GetAllChildrenNumberResponse:
		return fmt.Sprintf("total=%d", r.TotalNumber)
	case *proto.GetEphemeralsResponse:
		return fmt.Sprintf("ephemerals=%v", r.Ephemerals)
	case *proto.MultiResponse:
		var b strings.Builder
		for _, res := range r.Results {
			fmt.Fprintf(&b, "\n  %s", res.Type)
			if res.Type == proto.OpError {
				fmt.Fprintf(&b, " err=%d", res.Err)
			}
			if s := formatResp(res.Resp); s != "" {
				b.WriteString(" " + s)
			}
		}
		return b.String()
	}
	return fmt.Sprintf("%+v", r)
}

func formatResult(res Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "zxid=%d err=%s", res.Zxid, codeName(res.Err))
	if s := formatResp(res.Resp); strings.HasPrefix(s, "\n") {
		b.WriteString(s)
	} else if s != "" {
		b.WriteString(" " + s)
	}
	for _, ev := range res.Events {
		fmt.Fprintf(&b, "\nevent %s %s", ev.Type, ev.Path)
	}
	for _, q := range res.QuotaExceeded {
		fmt.Fprintf(&b, "\n%s", q)
	}
	return b.String()
}

func codeName(c proto.Code) string {
	if c == proto.OK {
		return "ok"
	}
	return strings.TrimPrefix(c.Error(), "zk: ")
}

func (h *harness) dump() string {
	var b strings.Builder
	h.f.Tree().Walk(func(path string, n *tree.Node) bool {
		kind := map[tree.Kind]string{tree.Persistent: "persistent", tree.Ephemeral: "ephemeral", tree.Container: "container", tree.TTL: "ttl"}[tree.KindOf(n.EphemeralOwner, h.f.Tree().Extended())]
		if kind == "ttl" {
			kind = fmt.Sprintf("ttl(%d)", tree.TTLOf(n.EphemeralOwner))
		}
		fmt.Fprintf(&b, "%s %s data=%q %s acl=%v\n", path, kind, n.Data, formatStat(h.f.Tree().Stat(n)), h.f.Tree().ACL(n))
		return true
	})
	for _, s := range h.f.Sessions() {
		zk := ""
		if s.ZooKeeper {
			zk = " zookeeper"
		}
		fmt.Fprintf(&b, "session %#x timeout=%d%s ephemerals=%v\n", s.ID, s.Timeout, zk, h.f.Tree().Ephemerals(s.ID))
	}
	return b.String()
}

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.Contains(path, "/fuzz/") {
			t.Skip("a fuzz corpus, run by the fuzz targets")
		}
		h := &harness{f: New(Options{ExtendedTypes: true})}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			a := args{}
			for _, arg := range d.CmdArgs {
				a[arg.Key] = strings.Join(arg.Vals, ",")
			}
			session := a.int(t, "session", 1)
			auth := parseAuth(a.str("auth", ""))
			// entry is the version of a write's log entry; 0 is this code's.
			entry := uint8(a.int(t, "entry", 0))
			// enforce=true: the write's server enforces quotas.
			enforce := a.str("enforce", "false") == "true"
			switch d.Cmd {
			case "open":
				return formatResult(h.apply(t, &Entry{Type: EntryCreateSession, Session: session, Timeout: int32(a.int(t, "timeout", 30000))}))
			case "close":
				return formatResult(h.apply(t, &Entry{Type: EntryCloseSession, Session: session}))
			case "extended":
				h.f = New(Options{ExtendedTypes: a.str("on", "true") == "true"})
				return "ok"
			case "create", "create2", "createContainer", "createTTL", "delete", "set", "setacl", "check":
				op, req := h.request(t, d.Cmd, a)
				return formatResult(h.apply(t, &Entry{Version: entry, Type: EntryRequest, Session: session, Op: op, Auth: auth, EnforceQuota: enforce, Body: proto.Marshal(req)}))
			case "multi":
				m := &proto.MultiRequest{}
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					f := strings.Fields(line)
					if len(f) == 0 {
						continue
					}
					op, req := h.request(t, f[0], parseArgs(f[1:]))
					m.Ops = append(m.Ops, proto.MultiOp{Type: op, Req: req})
				}
				return formatResult(h.apply(t, &Entry{Version: entry, Type: EntryRequest, Session: session, Op: proto.OpMulti, Auth: auth, EnforceQuota: enforce, Body: proto.Marshal(m)}))
			case "deletecontainer":
				return formatResult(h.apply(t, &Entry{Type: EntryDeleteContainer, Body: []byte(a.str("path", "")), Time: a.int(t, "time", 0)}))
			case "candidates":
				return fmt.Sprint(h.f.Tree().Candidates(a.int(t, "now", h.time)))
			case "read":
				op := map[string]proto.OpCode{"exists": proto.OpExists, "get": proto.OpGetData, "ls": proto.OpGetChildren,
					"ls2": proto.OpGetChildren2, "getacl": proto.OpGetACL, "count": proto.OpGetAllChildrenNumber, "ephemerals": proto.OpGetEphemerals}[a.str("op", "")]
				p := a.str("path", "/")
				req := map[proto.OpCode]proto.Record{
					proto.OpExists: &proto.ExistsRequest{Path: p}, proto.OpGetData: &proto.GetDataRequest{Path: p},
					proto.OpGetChildren: &proto.GetChildrenRequest{Path: p}, proto.OpGetChildren2: &proto.GetChildren2Request{Path: p},
					proto.OpGetACL: &proto.GetACLRequest{Path: p}, proto.OpGetAllChildrenNumber: &proto.GetAllChildrenNumberRequest{Path: p},
					proto.OpGetEphemerals: &proto.GetEphemeralsRequest{PrefixPath: p},
				}[op]
				resp, code := h.f.Read(session, op, req, auth)
				out := "err=" + codeName(code)
				if s := formatResp(resp); s != "" {
					out += " " + s
				}
				return out
			case "zk", "zkmulti":
				return h.zk(t, d, a)
			case "dump":
				return h.dump()
			case "data":
				// The data of the nodes at or under a path, with their Stats.
				var b strings.Builder
				p := a.str("path", "/")
				h.f.Tree().Walk(func(path string, n *tree.Node) bool {
					if tree.HasPrefix(path, p) {
						fmt.Fprintf(&b, "%s data=%q %s\n", path, n.Data, formatStat(h.f.Tree().Stat(n)))
					}
					return true
				})
				return b.String()
			case "snapshot":
				var buf bytes.Buffer
				if err := h.f.Save(&buf); err != nil {
					t.Fatal(err)
				}
				before := h.dump()
				restored, err := Restore(h.f.opts, bytes.NewReader(buf.Bytes()))
				if err != nil {
					t.Fatal(err)
				}
				h.f = restored
				if after := h.dump(); after != before {
					t.Fatalf("snapshot changed the state:\nbefore:\n%s\nafter:\n%s", before, after)
				}
				return fmt.Sprintf("restored applied=%d zxid=%d nodes=%d", h.f.Applied(), h.f.LastZxid(), h.f.Tree().Len())
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

// A session belongs to the server that created it until it moves: writes
// proposed through any other server fail with SessionMoved, and a move of
// a session that is gone fails with SessionExpired.
func TestSessionMoves(t *testing.T) {
	h := &harness{f: New(Options{})}
	h.apply(t, &Entry{Type: EntryCreateSession, Session: 7, Timeout: 4000, Origin: 1})
	create := func(origin uint64, path string) proto.Code {
		return h.apply(t, &Entry{Type: EntryRequest, Session: 7, Origin: origin, Op: proto.OpCreate,
			Body: proto.Marshal(&proto.CreateRequest{Path: path, ACL: tree.OpenACL})}).Err
	}
	if code := create(1, "/a"); code != proto.OK {
		t.Fatalf("write through the owner: %v", code)
	}
	if code := create(2, "/b"); code != proto.ErrSessionMoved {
		t.Fatalf("write through another server: %v, want %v", code, proto.ErrSessionMoved)
	}
	if code := h.apply(t, &Entry{Type: EntryMoveSession, Session: 7, Origin: 2}).Err; code != proto.OK {
		t.Fatalf("move: %v", code)
	}
	if code := create(2, "/c"); code != proto.OK {
		t.Fatalf("write through the new owner: %v", code)
	}
	if code := create(1, "/d"); code != proto.ErrSessionMoved {
		t.Fatalf("write through the old owner: %v, want %v", code, proto.ErrSessionMoved)
	}
	if code := h.apply(t, &Entry{Type: EntryMoveSession, Session: 8, Origin: 2}).Err; code != proto.ErrSessionExpired {
		t.Fatalf("move of an unknown session: %v, want %v", code, proto.ErrSessionExpired)
	}
	if _, ok := h.f.Tree().Get("/b"); ok {
		t.Fatal("a refused write created /b")
	}
}
