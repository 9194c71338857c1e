package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
)

func TestEntryRoundTrip(t *testing.T) {
	// Version 0 is this code's version, which the decoded entry names.
	for _, v := range []uint8{0, 1, 3, 4, entryVersion} {
		e := &Entry{Version: v, Type: EntryRequest, ReqID: 7, Origin: 3, Session: -9, Cxid: 11, Time: 1234, Timeout: 30000,
			Op: proto.OpSetData, Auth: []proto.ID{{Scheme: "ip", ID: "127.0.0.1"}}, Body: []byte("body")}
		// Fields an entry of the version has.
		if e.version() >= 3 {
			e.AuthSchemes = []string{"sasl"}
		}
		if e.version() >= 5 {
			e.EnforceQuota = true
		}
		b := e.Marshal()
		got, err := UnmarshalEntry(b)
		if err != nil {
			t.Fatal(err)
		}
		want := *e
		want.Version = b[0]
		if b[0] != e.version() || !reflect.DeepEqual(got, &want) {
			t.Fatalf("version %d: version byte %d, got %+v, want %+v", v, b[0], got, &want)
		}
	}
}

// An entry of a version or type this code does not know, from a newer
// Collie, is refused whole: decoding fails, and Apply panics on one built
// in memory.
func TestUnknownEntryStopsReplica(t *testing.T) {
	b := (&Entry{Type: EntryRequest}).Marshal()
	with := func(version, typ byte) []byte { return append([]byte{version, typ}, b[2:]...) }
	for _, bad := range [][]byte{nil, {1}, with(0, 3), with(entryVersion+1, 3), with(1, 99), with(entryVersion, 99)} {
		if _, err := UnmarshalEntry(bad); !errors.Is(err, ErrUnknownEntry) {
			t.Errorf("UnmarshalEntry(% x) = %v, want ErrUnknownEntry", bad, err)
		}
	}
	f := New(Options{})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Apply of an entry of a newer version did not panic")
			}
		}()
		f.Apply(1, &Entry{Version: entryVersion + 1, Type: EntryCreateSession, Session: 1, Timeout: 4000})
	}()
	if f.Applied() != 0 || len(f.Sessions()) != 0 {
		t.Errorf("the refused entry changed the state: applied %d, sessions %v", f.Applied(), f.Sessions())
	}
}

func FuzzUnmarshalEntry(f *testing.F) {
	f.Add((&Entry{Type: EntryCreateSession, Session: 1, Timeout: 4000}).Marshal())
	f.Add((&Entry{Type: EntryRequest, Auth: []proto.ID{{Scheme: "digest", ID: "u:x"}}, Body: []byte{1, 2}}).Marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := UnmarshalEntry(b)
		if err != nil {
			return
		}
		again, err := UnmarshalEntry(e.Marshal())
		if err != nil || !reflect.DeepEqual(e, again) {
			t.Fatalf("re-decode: %v\n%+v\n%+v", err, e, again)
		}
	})
}

// FuzzApply applies arbitrary request bodies: whatever a client sends, Apply
// answers with a code and never panics, and the state still snapshots and
// restores to itself.
func FuzzApply(f *testing.F) {
	f.Add(int32(proto.OpCreate), proto.Marshal(&proto.CreateRequest{Path: "/a", ACL: []proto.ACL{{Perms: 31, ID: proto.ID{Scheme: "world", ID: "anyone"}}}}))
	f.Add(int32(proto.OpMulti), proto.Marshal(&proto.MultiRequest{Ops: []proto.MultiOp{{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/zookeeper", Version: -1}}}}))
	f.Fuzz(func(t *testing.T, op int32, body []byte) {
		m := New(Options{ExtendedTypes: true})
		m.Apply(1, &Entry{Type: EntryCreateSession, Session: 1, Timeout: 4000})
		m.Apply(2, &Entry{Type: EntryRequest, Session: 1, Op: proto.OpCode(op), Body: body, Time: 5})
		m.Apply(3, &Entry{Type: EntryRequest, Session: 1, Op: proto.OpCode(op), Body: body, Time: 6})
		m.Apply(4, &Entry{Type: EntryCloseSession, Session: 1})
		var buf []byte
		w := &sliceWriter{&buf}
		if err := m.Save(w); err != nil {
			t.Fatal(err)
		}
		if _, err := Restore(Options{ExtendedTypes: true}, bytes.NewReader(buf)); err != nil {
			t.Fatal(err)
		}
	})
}

type sliceWriter struct{ b *[]byte }

func (w *sliceWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }

// A sasl ACL is valid, and matches, by the providers its entry names, not
// by this replica's options.
func TestEntryAuthSchemes(t *testing.T) {
	f := New(Options{})
	f.Apply(1, &Entry{Type: EntryCreateSession, Session: 1, Timeout: 4000})
	bob := []proto.ID{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "sasl", ID: "bob"}}
	saslACL := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "sasl", ID: "bob"}}}
	apply := requestApplier(f, bob)
	if got := apply(2, nil, proto.OpCreate, &proto.CreateRequest{Path: "/v2", ACL: saslACL}); got != proto.ErrInvalidACL {
		t.Errorf("version 2: create with a sasl ACL = %v, want InvalidACL", got)
	}
	if got := apply(0, nil, proto.OpCreate, &proto.CreateRequest{Path: "/none", ACL: saslACL}); got != proto.ErrInvalidACL {
		t.Errorf("no sasl provider: create with a sasl ACL = %v, want InvalidACL", got)
	}
	if got := apply(0, []string{"sasl"}, proto.OpCreate, &proto.CreateRequest{Path: "/a", ACL: saslACL}); got != proto.OK {
		t.Fatalf("sasl provider: create with a sasl ACL = %v", got)
	}
	if got := apply(0, nil, proto.OpSetData, &proto.SetDataRequest{Path: "/a", Version: -1}); got != proto.ErrNoAuth {
		t.Errorf("no sasl provider: setData = %v, want NoAuth", got)
	}
	if got := apply(0, []string{"sasl"}, proto.OpSetData, &proto.SetDataRequest{Path: "/a", Version: -1}); got != proto.OK {
		t.Errorf("sasl provider: setData = %v", got)
	}
	e := &Entry{Type: EntryRequest, AuthSchemes: []string{"sasl"}, Body: []byte{1}}
	got, err := UnmarshalEntry(e.Marshal())
	if err != nil || !reflect.DeepEqual(got.AuthSchemes, e.AuthSchemes) {
		t.Errorf("round trip: %+v, %v", got, err)
	}
}

// An x509 ACL is valid, and matches, from version 4 on and by the
// providers its entry names; a version 3 entry naming x509 (which no
// Collie wrote) applies as version 3 code applied it.
func TestEntryX509Scheme(t *testing.T) {
	// Reads decide by this replica's options; writes by their entries.
	f := New(Options{X509Scheme: true})
	f.Apply(1, &Entry{Type: EntryCreateSession, Session: 1, Timeout: 4000})
	client := []proto.ID{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "x509", ID: "CN=client,O=Example"}}
	x509ACL := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "x509", ID: "CN=client,O=Example"}}}
	apply := requestApplier(f, client)
	if got := apply(3, []string{"x509"}, proto.OpCreate, &proto.CreateRequest{Path: "/v3", ACL: x509ACL}); got != proto.ErrInvalidACL {
		t.Errorf("version 3: create with an x509 ACL = %v, want InvalidACL", got)
	}
	if got := apply(0, []string{"sasl"}, proto.OpCreate, &proto.CreateRequest{Path: "/none", ACL: x509ACL}); got != proto.ErrInvalidACL {
		t.Errorf("no x509 provider: create with an x509 ACL = %v, want InvalidACL", got)
	}
	if got := apply(0, []string{"sasl", "x509"}, proto.OpCreate, &proto.CreateRequest{Path: "/a", ACL: x509ACL}); got != proto.OK {
		t.Fatalf("x509 provider: create with an x509 ACL = %v", got)
	}
	if got := apply(0, nil, proto.OpSetData, &proto.SetDataRequest{Path: "/a", Version: -1}); got != proto.ErrNoAuth {
		t.Errorf("no x509 provider: setData = %v, want NoAuth", got)
	}
	if got := apply(0, []string{"x509"}, proto.OpSetData, &proto.SetDataRequest{Path: "/a", Version: -1}); got != proto.OK {
		t.Errorf("x509 provider: setData = %v", got)
	}
	auth := []proto.ACL{{Perms: proto.PermRead, ID: proto.ID{Scheme: "auth"}}}
	if got := apply(0, []string{"x509"}, proto.OpCreate, &proto.CreateRequest{Path: "/auth", ACL: auth}); got != proto.OK {
		t.Fatalf("x509 provider: create with an auth ACL = %v", got)
	}
	if r, code := f.Read(1, proto.OpGetACL, &proto.GetACLRequest{Path: "/auth"}, client); code != proto.OK ||
		!reflect.DeepEqual(r.(*proto.GetACLResponse).ACL, []proto.ACL{{Perms: proto.PermRead, ID: client[1]}}) {
		t.Errorf("auth expanded to %+v, %v; want the x509 identity", r, code)
	}
}

// requestApplier returns a function that applies requests of session 1,
// with the identities auth, as entries of the given version and schemes,
// at the indexes after 1.
func requestApplier(f *FSM, auth []proto.ID) func(version uint8, schemes []string, op proto.OpCode, req proto.Record) proto.Code {
	index := uint64(1)
	return func(version uint8, schemes []string, op proto.OpCode, req proto.Record) proto.Code {
		index++
		return f.Apply(index, &Entry{Version: version, Type: EntryRequest, Session: 1, Op: op, Auth: auth,
			AuthSchemes: schemes, Body: proto.Marshal(req)}).Err
	}
}

// FuzzApplyUnderQuota applies arbitrary requests under a quota, enforced
// or not: Apply never panics, the state snapshots and restores to itself,
// and unless the request rewrote the quota's nodes, the stats still count
// exactly the nodes and bytes under the quota's path.
func FuzzApplyUnderQuota(f *testing.F) {
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
	f.Add(int32(proto.OpCreate), proto.Marshal(&proto.CreateRequest{Path: "/a/b", Data: []byte("data"), ACL: open}), true)
	f.Add(int32(proto.OpSetData), proto.Marshal(&proto.SetDataRequest{Path: "/a", Data: []byte("0123456789"), Version: -1}), true)
	f.Add(int32(proto.OpMulti), proto.Marshal(&proto.MultiRequest{Ops: []proto.MultiOp{
		{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/a/c", ACL: open, Flags: proto.ModeEphemeral}},
		{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/a/d", ACL: open}},
		{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/zookeeper/quota/a/zookeeper_stats", Version: -1}},
		{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/zookeeper/quota/a/zookeeper_stats", ACL: open}},
	}}), false)
	f.Fuzz(func(t *testing.T, op int32, body []byte, enforce bool) {
		m := New(Options{ExtendedTypes: true})
		m.Apply(1, &Entry{Type: EntryCreateSession, Session: 1, Timeout: 4000})
		index := uint64(2)
		for _, n := range []struct{ path, data string }{
			{"/a", "x"}, {"/zookeeper/quota/a", ""},
			{"/zookeeper/quota/a/zookeeper_limits", "count=-1,bytes=-1=;byteHardLimit=10;countHardLimit=4"},
			{"/zookeeper/quota/a/zookeeper_stats", ""},
		} {
			body := proto.Marshal(&proto.CreateRequest{Path: n.path, Data: []byte(n.data), ACL: open})
			if res := m.Apply(index, &Entry{Type: EntryRequest, Session: 1, Op: proto.OpCreate, Body: body, Time: 5}); res.Err != proto.OK {
				t.Fatalf("create %s: %v", n.path, res.Err)
			}
			index++
		}
		limitsZxid := int64(index - 2)
		for range 2 {
			m.Apply(index, &Entry{Type: EntryRequest, Session: 1, Op: proto.OpCode(op), EnforceQuota: enforce, Body: body, Time: 6})
			index++
		}
		m.Apply(index, &Entry{Type: EntryCloseSession, Session: 1})

		tr := m.Tree()
		limits, okLimits := tr.Get("/zookeeper/quota/a/zookeeper_limits")
		stats, okStats := tr.Get("/zookeeper/quota/a/zookeeper_stats")
		others := 0
		var count, size int64
		tr.Walk(func(path string, n *tree.Node) bool {
			if strings.HasSuffix(path, "/zookeeper_limits") && path != "/zookeeper/quota/a/zookeeper_limits" {
				others++
			}
			if tree.HasPrefix(path, "/a") {
				count++
				size += int64(len(n.Data))
			}
			return true
		})
		if okLimits && okStats && limits.Czxid == limitsZxid && stats.Version == 0 && others == 0 {
			if want := fmt.Sprintf("count=%d,bytes=%d", count, size); string(stats.Data) != want {
				t.Fatalf("stats %q, want %q", stats.Data, want)
			}
		}
		var buf []byte
		if err := m.Save(&sliceWriter{&buf}); err != nil {
			t.Fatal(err)
		}
		if _, err := Restore(Options{ExtendedTypes: true}, bytes.NewReader(buf)); err != nil {
			t.Fatal(err)
		}
	})
}
