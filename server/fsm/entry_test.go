package fsm

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/collie-io/collie/proto"
)

func TestEntryRoundTrip(t *testing.T) {
	e := &Entry{Type: EntryRequest, ReqID: 7, Origin: 3, Session: -9, Cxid: 11, Time: 1234, Timeout: 30000,
		Op: proto.OpSetData, Auth: []proto.ID{{Scheme: "ip", ID: "127.0.0.1"}}, Body: []byte("body")}
	got, err := UnmarshalEntry(e.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("got %+v, want %+v", got, e)
	}
}

func TestUnknownEntryStopsReplica(t *testing.T) {
	b := (&Entry{Type: EntryRequest}).Marshal()
	for _, bad := range [][]byte{nil, {1}, append([]byte{2}, b[1:]...), append([]byte{1, 99}, b[2:]...)} {
		if _, err := UnmarshalEntry(bad); !errors.Is(err, ErrUnknownEntry) {
			t.Errorf("UnmarshalEntry(% x) = %v, want ErrUnknownEntry", bad, err)
		}
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
