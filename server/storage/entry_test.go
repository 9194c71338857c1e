package storage

import (
	"bytes"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// FuzzDecodeEntry checks decodeEntry against Entry.Unmarshal: every entry
// Marshal writes decodes to the same entry, and whatever else decodeEntry
// accepts, Unmarshal accepts with the same result. On malformed input
// decodeEntry may be stricter (it refuses overlong varints and groups).
func FuzzDecodeEntry(f *testing.F) {
	f.Add([]byte{}, uint64(0), uint64(0), int32(0), []byte(nil))
	f.Add([]byte{0x22, 0x80}, uint64(3), uint64(1<<40), int32(raftpb.EntryConfChangeV2), []byte("change"))
	f.Add([]byte{0x0a, 0x01, 0x00}, uint64(1), uint64(2), int32(0), bytes.Repeat([]byte{0xab}, 300))
	f.Add([]byte{0x2a, 0x01, 0x07, 0x10}, uint64(1), uint64(2), int32(-1), []byte{})
	f.Fuzz(func(t *testing.T, data []byte, term, index uint64, typ int32, payload []byte) {
		e := raftpb.Entry{Term: term, Index: index, Type: raftpb.EntryType(typ), Data: payload}
		b, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var want raftpb.Entry
		if err := want.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		var got raftpb.Entry
		if err := decodeEntry(b, &got); err != nil {
			t.Fatalf("decodeEntry of %+v: %v", e, err)
		}
		same(t, b, got, want)

		want = raftpb.Entry{} // Unmarshal does not reset what it fills
		wantErr := want.Unmarshal(data)
		if err := decodeEntry(data, &got); err != nil {
			return
		}
		if wantErr != nil {
			t.Fatalf("decodeEntry(%x) = %+v; Unmarshal refused it: %v", data, got, wantErr)
		}
		same(t, data, got, want)
	})
}

func same(t *testing.T, data []byte, got, want raftpb.Entry) {
	t.Helper()
	if got.Term != want.Term || got.Index != want.Index || got.Type != want.Type ||
		!bytes.Equal(got.Data, want.Data) || (got.Data == nil) != (want.Data == nil) {
		t.Fatalf("decodeEntry(%x) = %+v, Unmarshal gives %+v", data, got, want)
	}
}
