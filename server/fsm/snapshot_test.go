package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
)

// TestSnapshotWhileApplying writes a snapshot while entries keep being
// applied between its chunks: the snapshot must restore to exactly the
// state of the moment it began.
func TestSnapshotWhileApplying(t *testing.T) {
	defer func(n int) { snapshotChunk = n }(snapshotChunk)
	snapshotChunk = 3
	rng := rand.New(rand.NewPCG(3, 5))
	h := &harness{f: New(Options{ExtendedTypes: true})}
	for _, id := range []int64{1, 2} {
		h.apply(t, &Entry{Type: EntryCreateSession, Session: id, Timeout: 4000})
	}
	names := []string{"/a", "/b", "/c", "/a/x", "/a/y", "/b/x", "/a/x/z", "/c/s-"}
	randomWrite := func() {
		p := names[rng.IntN(len(names))]
		var op proto.OpCode
		var req proto.Record
		switch rng.IntN(4) {
		case 0:
			op, req = proto.OpCreate, &proto.CreateRequest{Path: p, Data: []byte{byte(rng.IntN(9))}, ACL: tree.OpenACL, Flags: proto.CreateMode(rng.IntN(4))}
		case 1:
			op, req = proto.OpDelete, &proto.DeleteRequest{Path: p, Version: -1}
		case 2:
			op, req = proto.OpSetData, &proto.SetDataRequest{Path: p, Data: []byte(fmt.Sprint(rng.IntN(99))), Version: -1}
		case 3:
			op, req = proto.OpSetACL, &proto.SetACLRequest{Path: p, ACL: tree.ReadACL, Version: -1}
		}
		h.apply(t, &Entry{Type: EntryRequest, Session: int64(1 + rng.IntN(2)), Op: op, Body: proto.Marshal(req)})
	}
	for round := range 50 {
		for range 10 {
			randomWrite()
		}
		if rng.IntN(5) == 0 {
			h.apply(t, &Entry{Type: EntryCloseSession, Session: 2})
			h.apply(t, &Entry{Type: EntryCreateSession, Session: 2, Timeout: 4000})
		}
		want := h.dump()
		job := h.f.BeginSnapshot()
		var buf bytes.Buffer
		// Apply runs between the chunks of the snapshot, as it does on a
		// server.
		err := job.Write(&buf, func() {
			for range rng.IntN(4) {
				randomWrite()
			}
		}, func() {})
		h.f.EndSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		restored, err := Restore(h.f.opts, buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		live := h.f
		h.f = restored
		got := h.dump()
		h.f = live
		if got != want {
			t.Fatalf("round %d: snapshot is not the state at its start:\nwant:\n%s\ngot:\n%s", round, want, got)
		}
	}
}
