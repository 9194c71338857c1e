package replication

import (
	"bytes"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// app is an append from member 1 in term 2 after entry prev of term
// prevTerm, carrying entries prev+1..prev+n of term 2.
func app(to, prev, prevTerm uint64, n int, commit uint64) raftpb.Message {
	m := raftpb.Message{Type: raftpb.MsgApp, From: 1, To: to, Term: 2, Index: prev, LogTerm: prevTerm, Commit: commit}
	for i := range n {
		m.Entries = append(m.Entries, raftpb.Entry{Term: 2, Index: prev + 1 + uint64(i), Data: []byte{byte(i)}})
	}
	return m
}

func ack(index uint64, reject bool) raftpb.Message {
	return raftpb.Message{Type: raftpb.MsgAppResp, From: 2, To: 1, Term: 2, Index: index, Reject: reject}
}

// summary describes a message by what a receiver acts on.
type summary struct {
	typ            raftpb.MessageType
	to             uint64
	index, logTerm uint64
	first, last    uint64 // entry indexes, 0 without entries
	commit         uint64
	reject         bool
}

func summarize(msgs []raftpb.Message) []summary {
	var out []summary
	for _, m := range msgs {
		s := summary{typ: m.Type, to: m.To, index: m.Index, logTerm: m.LogTerm, commit: m.Commit, reject: m.Reject}
		if len(m.Entries) > 0 {
			s.first, s.last = m.Entries[0].Index, m.Entries[len(m.Entries)-1].Index
			for i, e := range m.Entries {
				if e.Index != s.first+uint64(i) {
					return append(out, summary{}) // entries out of order: never equal to a want
				}
			}
		}
		out = append(out, s)
	}
	return out
}

func TestCoalesce(t *testing.T) {
	big := app(2, 10, 2, 1, 9)
	big.Entries[0].Data = make([]byte, maxCoalescedBytes)
	hb := raftpb.Message{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: 2, Commit: 10}
	otherTerm := app(2, 12, 2, 1, 10)
	otherTerm.Term = 3
	for _, tc := range []struct {
		name string
		in   []raftpb.Message
		want []summary
	}{{
		name: "appends that continue one another merge, with the later commit",
		in:   []raftpb.Message{app(2, 10, 2, 2, 9), app(2, 12, 2, 3, 10)},
		want: []summary{{typ: raftpb.MsgApp, to: 2, index: 10, logTerm: 2, first: 11, last: 15, commit: 10}},
	}, {
		name: "an append carrying only the commit index merges into the one before",
		in:   []raftpb.Message{app(2, 10, 2, 2, 9), app(2, 12, 2, 0, 12)},
		want: []summary{{typ: raftpb.MsgApp, to: 2, index: 10, logTerm: 2, first: 11, last: 12, commit: 12}},
	}, {
		name: "each member's appends merge among themselves",
		in:   []raftpb.Message{app(2, 10, 2, 1, 9), app(3, 10, 2, 1, 9), app(2, 11, 2, 1, 10), app(3, 11, 2, 0, 11)},
		want: []summary{
			{typ: raftpb.MsgApp, to: 2, index: 10, logTerm: 2, first: 11, last: 12, commit: 10},
			{typ: raftpb.MsgApp, to: 3, index: 10, logTerm: 2, first: 11, last: 11, commit: 11},
		},
	}, {
		name: "an append that does not continue the one before stays apart",
		in:   []raftpb.Message{app(2, 10, 2, 2, 9), app(2, 11, 2, 1, 10)},
		want: []summary{
			{typ: raftpb.MsgApp, to: 2, index: 10, logTerm: 2, first: 11, last: 12, commit: 9},
			{typ: raftpb.MsgApp, to: 2, index: 11, logTerm: 2, first: 12, last: 12, commit: 10},
		},
	}, {
		name: "an append checked against another term stays apart",
		in:   []raftpb.Message{app(2, 10, 2, 2, 9), app(2, 12, 1, 1, 10)},
		want: []summary{
			{typ: raftpb.MsgApp, to: 2, index: 10, logTerm: 2, first: 11, last: 12, commit: 9},
			{typ: raftpb.MsgApp, to: 2, index: 12, logTerm: 1, first: 13, last: 13, commit: 10},
		},
	}, {
		name: "messages of different terms stay apart",
		in:   []raftpb.Message{app(2, 10, 2, 2, 9), otherTerm},
		want: []summary{
			{typ: raftpb.MsgApp, to: 2, index: 10, logTerm: 2, first: 11, last: 12, commit: 9},
			{typ: raftpb.MsgApp, to: 2, index: 12, logTerm: 2, first: 13, last: 13, commit: 10},
		},
	}, {
		name: "nothing merges across another message to the same member",
		in:   []raftpb.Message{app(2, 10, 2, 2, 9), hb, app(2, 12, 2, 1, 10)},
		want: []summary{
			{typ: raftpb.MsgApp, to: 2, index: 10, logTerm: 2, first: 11, last: 12, commit: 9},
			{typ: raftpb.MsgHeartbeat, to: 2, commit: 10},
			{typ: raftpb.MsgApp, to: 2, index: 12, logTerm: 2, first: 13, last: 13, commit: 10},
		},
	}, {
		name: "appends over the size bound stay apart",
		in:   []raftpb.Message{big, app(2, 11, 2, 1, 10)},
		want: []summary{
			{typ: raftpb.MsgApp, to: 2, index: 10, logTerm: 2, first: 11, last: 11, commit: 9},
			{typ: raftpb.MsgApp, to: 2, index: 11, logTerm: 2, first: 12, last: 12, commit: 10},
		},
	}, {
		name: "a later acknowledgement stands for the earlier",
		in:   []raftpb.Message{ack(11, false), ack(14, false)},
		want: []summary{{typ: raftpb.MsgAppResp, to: 1, index: 14}},
	}, {
		name: "rejections and acknowledgements going back stay",
		in:   []raftpb.Message{ack(11, false), ack(9, true), ack(14, false), ack(12, false)},
		want: []summary{
			{typ: raftpb.MsgAppResp, to: 1, index: 11},
			{typ: raftpb.MsgAppResp, to: 1, index: 9, reject: true},
			{typ: raftpb.MsgAppResp, to: 1, index: 14},
			{typ: raftpb.MsgAppResp, to: 1, index: 12},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(coalesce(tc.in))
			if len(got) != len(tc.want) {
				t.Fatalf("got %d messages %+v, want %+v", len(got), got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("message %d: got %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// The entries of raft's messages are raft's log: a merge must not write
// into them, even where their slice has room.
func TestCoalesceLeavesRaftsEntries(t *testing.T) {
	first := app(2, 10, 2, 2, 9)
	log := append(first.Entries, raftpb.Entry{Term: 2, Index: 99, Data: []byte("raft's")})
	first.Entries = log[:2]
	in := []raftpb.Message{first, app(2, 12, 2, 1, 10)}
	out := coalesce(in)
	if len(out) != 1 || len(out[0].Entries) != 3 {
		t.Fatalf("got %+v, want one append of 3 entries", summarize(out))
	}
	if e := log[2]; e.Index != 99 || !bytes.Equal(e.Data, []byte("raft's")) {
		t.Fatalf("the entry after the first message's in raft's slice became %+v", e)
	}
	if len(in[0].Entries) != 2 || in[0].Commit != 9 {
		t.Fatalf("the first message given became %+v", summarize(in[:1]))
	}
}
