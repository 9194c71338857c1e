package proto

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

var sampleStat = Stat{Czxid: 1, Mzxid: 2, Ctime: 3, Mtime: 4, Version: 5, Cversion: 6, Aversion: 7, EphemeralOwner: 8, DataLength: 9, NumChildren: 10, Pzxid: 11}

var sampleACL = []ACL{{Perms: PermAll, ID: ID{Scheme: "world", ID: "anyone"}}, {Perms: PermRead, ID: ID{Scheme: "digest", ID: "u:h"}}}

// samples holds one populated value of every record, so that a field left out
// of Encode or Decode shows up as a round-trip difference.
var samples = []Record{
	&ConnectRequest{ProtocolVersion: 0, LastZxidSeen: 42, TimeOut: 30000, SessionID: 0x1234, Passwd: make([]byte, 16), ReadOnly: true},
	&ConnectResponse{TimeOut: 4000, SessionID: -5, Passwd: []byte("0123456789abcdef"), ReadOnly: true},
	&SetWatches{RelativeZxid: 9, DataWatches: []string{"/a"}, ExistWatches: []string{"/b", "/c"}, ChildWatches: []string{}},
	&SetWatches2{RelativeZxid: 9, DataWatches: []string{"/a"}, ExistWatches: []string{}, ChildWatches: []string{"/d"}, PersistentWatches: []string{"/e"}, PersistentRecursiveWatches: []string{"/f"}},
	&RequestHeader{Xid: 7, Type: OpCreate},
	&MultiHeader{Type: OpCheck, Done: true, Err: ErrBadVersion},
	&AuthPacket{Type: 0, Scheme: "digest", Auth: []byte("u:p")},
	&GetSASLRequest{Token: []byte{}},
	&SetSASLResponse{Token: []byte(`rspauth=0123456789abcdef0123456789abcdef`)},
	&ReplyHeader{Xid: 7, Zxid: 1 << 40, Err: ErrNoNode},
	&GetDataRequest{Path: "/x", Watch: true},
	&SetDataRequest{Path: "/x", Data: []byte{1, 2}, Version: -1},
	&ReconfigRequest{JoiningServers: "a", LeavingServers: "b", NewMembers: "c", CurConfigID: -1},
	&SetDataResponse{Stat: sampleStat},
	&CreateRequest{Path: "/x", Data: []byte("d"), ACL: sampleACL, Flags: ModeEphemeralSequential},
	&CreateTTLRequest{Path: "/x", Data: []byte("d"), ACL: sampleACL, Flags: ModePersistentWithTTL, TTL: 1000},
	&DeleteRequest{Path: "/x", Version: 3},
	&GetChildrenRequest{Path: "/x", Watch: true},
	&GetAllChildrenNumberRequest{Path: "/x"},
	&GetChildren2Request{Path: "/x", Watch: true},
	&CheckVersionRequest{Path: "/x", Version: 2},
	&SyncRequest{Path: "/x"},
	&SyncResponse{Path: "/x"},
	&GetACLRequest{Path: "/x"},
	&SetACLRequest{Path: "/x", ACL: sampleACL, Version: 1},
	&SetACLResponse{Stat: sampleStat},
	&AddWatchRequest{Path: "/x", Mode: AddWatchPersistentRecursive},
	&WatcherEvent{Type: EventNodeDeleted, State: StateSyncConnected, Path: "/x"},
	&ErrorResponse{Err: ErrNotEmpty},
	&CreateResponse{Path: "/x0000000001"},
	&Create2Response{Path: "/x", Stat: sampleStat},
	&ExistsRequest{Path: "/x", Watch: true},
	&ExistsResponse{Stat: sampleStat},
	&GetDataResponse{Data: []byte("v"), Stat: sampleStat},
	&GetChildrenResponse{Children: []string{"a", "b"}},
	&GetAllChildrenNumberResponse{TotalNumber: 12},
	&GetChildren2Response{Children: []string{"a"}, Stat: sampleStat},
	&GetACLResponse{ACL: sampleACL, Stat: sampleStat},
	&CheckWatchesRequest{Path: "/x", Type: WatcherData},
	&RemoveWatchesRequest{Path: "/x", Type: WatcherAny},
	&GetEphemeralsRequest{PrefixPath: "/"},
	&GetEphemeralsResponse{Ephemerals: []string{"/e1"}},
	&WhoAmIResponse{ClientInfo: []ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}}},
	&MultiRequest{Ops: []MultiOp{
		{Type: OpCreate, Req: &CreateRequest{Path: "/m", ACL: sampleACL}},
		{Type: OpCreateTTL, Req: &CreateTTLRequest{Path: "/t", ACL: sampleACL, Flags: ModePersistentWithTTL, TTL: 5}},
		{Type: OpDelete, Req: &DeleteRequest{Path: "/m", Version: -1}},
		{Type: OpSetData, Req: &SetDataRequest{Path: "/m", Data: []byte("x"), Version: -1}},
		{Type: OpCheck, Req: &CheckVersionRequest{Path: "/m", Version: 1}},
		{Type: OpGetData, Req: &GetDataRequest{Path: "/m"}},
		{Type: OpGetChildren, Req: &GetChildrenRequest{Path: "/m"}},
	}},
	&MultiResponse{Results: []OpResult{
		{Type: OpCreate, Resp: &CreateResponse{Path: "/m"}},
		{Type: OpCreate2, Resp: &Create2Response{Path: "/m", Stat: sampleStat}},
		{Type: OpDelete},
		{Type: OpSetData, Resp: &SetDataResponse{Stat: sampleStat}},
		{Type: OpCheck},
		{Type: OpGetData, Resp: &GetDataResponse{Data: []byte("x"), Stat: sampleStat}},
		{Type: OpGetChildren, Resp: &GetChildrenResponse{Children: []string{}}},
		{Type: OpError, Err: ErrNoNode},
	}},
}

func TestRoundTrip(t *testing.T) {
	for _, r := range samples {
		t.Run(fmt.Sprintf("%T", r), func(t *testing.T) {
			b := Marshal(r)
			got := reflect.New(reflect.TypeOf(r).Elem()).Interface().(Record)
			if err := Unmarshal(b, got); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if !reflect.DeepEqual(got, r) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
			}
			// Every proper prefix is a truncated frame and must fail,
			// except where the record ends in optional fields.
			if _, ok := r.(*ConnectRequest); ok {
				return
			}
			for n := range len(b) {
				if err := Unmarshal(b[:n], reflect.New(reflect.TypeOf(r).Elem()).Interface().(Record)); !errors.Is(err, ErrMalformed) {
					t.Fatalf("prefix of %d/%d bytes: err = %v, want ErrMalformed", n, len(b), err)
				}
			}
		})
	}
}

func TestGoldenBytes(t *testing.T) {
	// Bytes as ZooKeeper's BinaryOutputArchive writes them.
	cases := []struct {
		r    Record
		want []byte
	}{
		{&RequestHeader{Xid: 1, Type: OpGetData}, []byte{0, 0, 0, 1, 0, 0, 0, 4}},
		{&GetDataRequest{Path: "/a", Watch: true}, []byte{0, 0, 0, 2, '/', 'a', 1}},
		{&SetDataRequest{Path: "/", Data: nil, Version: -1}, []byte{0, 0, 0, 1, '/', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{&ReplyHeader{Xid: -2, Zxid: 0x100000002, Err: ErrNoNode}, []byte{0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 1, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0x9b}},
		{&GetChildrenResponse{Children: nil}, []byte{0xff, 0xff, 0xff, 0xff}},
	}
	for _, c := range cases {
		if got := Marshal(c.r); !bytes.Equal(got, c.want) {
			t.Errorf("%T: got % x, want % x", c.r, got, c.want)
		}
	}
}

func TestConnectRequestWithoutReadOnly(t *testing.T) {
	full := Marshal(&ConnectRequest{TimeOut: 5000, Passwd: make([]byte, 16), ReadOnly: true})
	var r ConnectRequest
	if err := Unmarshal(full[:len(full)-1], &r); err != nil {
		t.Fatal(err)
	}
	if r.ReadOnly || r.TimeOut != 5000 {
		t.Fatalf("got %+v", r)
	}
}

func TestHostileLengths(t *testing.T) {
	cases := map[string][]byte{
		"huge string":    {0x7f, 0xff, 0xff, 0xff, 'a'},
		"negative":       {0xff, 0xff, 0xff, 0xf0},
		"huge vector":    {0x7f, 0xff, 0xff, 0xff},
		"vector too big": {0, 0, 0, 3, 0, 0, 0, 0},
	}
	for name, b := range cases {
		var s SyncRequest
		var c GetChildrenResponse
		if name == "huge vector" || name == "vector too big" {
			if err := Unmarshal(b, &c); !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: err = %v", name, err)
			}
			continue
		}
		if err := Unmarshal(b, &s); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestMultiRejectsUnknownOp(t *testing.T) {
	e := NewEncoder(nil)
	(&MultiHeader{Type: OpPing, Err: -1}).Encode(e)
	var m MultiRequest
	if err := Unmarshal(e.Bytes(), &m); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v", err)
	}
}

func TestCodeIs(t *testing.T) {
	err := fmt.Errorf("create /a: %w", ErrNodeExists)
	if !errors.Is(err, ErrNodeExists) || errors.Is(err, ErrNoNode) {
		t.Fatal("errors.Is does not match codes")
	}
	if CodeOf(err) != ErrNodeExists || CodeOf(nil) != OK || CodeOf(errors.New("x")) != ErrSystemError {
		t.Fatal("CodeOf")
	}
	if OK.Err() != nil || ErrNoNode.Err() == nil {
		t.Fatal("Err")
	}
}

func TestValidatePath(t *testing.T) {
	valid := []string{"/", "/a", "/a/b", "/a/...", "/a/.b", "/a/b.", "/ü", "/a b", "/\u00a0"}
	invalid := []string{"", "a", "/a/", "//", "/a//b", "/.", "/..", "/a/.", "/a/../b", "/a\x00", "/\x01", "/\x7f", "/\u0085", "/\ud7ff\ufff0", "/\U0001F600", "/\xff", "/\uf8ff"}
	for _, p := range valid {
		if err := ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range invalid {
		if err := ValidatePath(p); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("ValidatePath(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
}

func TestPathParts(t *testing.T) {
	for _, c := range []struct{ path, parent, base string }{
		{"/a", "/", "a"}, {"/a/b", "/a", "b"}, {"/a/b/c", "/a/b", "c"},
	} {
		if Parent(c.path) != c.parent || Base(c.path) != c.base || Join(c.parent, c.base) != c.path {
			t.Errorf("%q: parent %q base %q", c.path, Parent(c.path), Base(c.path))
		}
	}
}

func TestBufferViewSharesInputWithoutSpillingOver(t *testing.T) {
	e := NewEncoder(nil)
	e.Buffer([]byte("abc"))
	e.Buffer(nil)
	e.Int(7)
	in := e.Bytes()
	d := NewDecoder(in)
	b := d.BufferView()
	if string(b) != "abc" || cap(b) != 3 {
		t.Fatalf("BufferView = %q (cap %d), want \"abc\" (cap 3)", b, cap(b))
	}
	if &b[0] != &in[4] {
		t.Fatal("BufferView copied its input")
	}
	if null := d.BufferView(); null != nil || d.Int() != 7 || d.Err() != nil {
		t.Fatalf("null buffer = %v, then %v", null, d.Err())
	}
	// An append to the view must not write over what follows it.
	_ = append(b, 'x')
	if in[7] != 0xff {
		t.Fatalf("append to a view wrote into the input: % x", in)
	}
}
