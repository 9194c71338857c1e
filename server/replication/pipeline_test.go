package replication

import (
	"slices"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// ents returns entries from..to of term.
func ents(from, to, term uint64) []raftpb.Entry {
	var es []raftpb.Entry
	for i := from; i <= to; i++ {
		es = append(es, raftpb.Entry{Index: i, Term: term})
	}
	return es
}

// Appends gathered into one write end as the log would after writing them
// one by one: later entries replace those at their indexes and after.
func TestAppendBatchReplacesAsTheLogDoes(t *testing.T) {
	type id struct{ index, term uint64 }
	for _, tc := range []struct {
		name string
		msgs [][]raftpb.Entry
		want []id
	}{
		{"consecutive", [][]raftpb.Entry{ents(1, 3, 1), ents(4, 5, 1)}, []id{{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}}},
		{"overlapping tail", [][]raftpb.Entry{ents(1, 3, 1), ents(2, 4, 2)}, []id{{1, 1}, {2, 2}, {3, 2}, {4, 2}}},
		{"replacing all", [][]raftpb.Entry{ents(3, 4, 1), ents(1, 2, 2)}, []id{{1, 2}, {2, 2}}},
		{"same start", [][]raftpb.Entry{ents(5, 9, 1), ents(5, 5, 3)}, []id{{5, 3}}},
		{"three", [][]raftpb.Entry{ents(1, 2, 1), ents(3, 6, 1), ents(5, 7, 2)}, []id{{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 2}, {6, 2}, {7, 2}}},
		{"none", [][]raftpb.Entry{nil, ents(1, 1, 1), nil}, []id{{1, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var passed, originals [][]raftpb.Entry
			var b appendBatch
			for _, es := range tc.msgs {
				// Spare capacity that a careless append would write into.
				es = slices.Grow(es, 8)
				passed = append(passed, es)
				originals = append(originals, slices.Clone(es[:cap(es)]))
				b.add(raftpb.Message{Type: raftpb.MsgStorageAppend, Entries: es})
			}
			var got []id
			for _, e := range b.ents {
				got = append(got, id{e.Index, e.Term})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("batch holds %v, want %v", got, tc.want)
			}
			for i, es := range passed {
				if !slices.EqualFunc(es[:cap(es)], originals[i], func(a, b raftpb.Entry) bool { return a.Index == b.Index && a.Term == b.Term }) {
					t.Errorf("the entries of append %d, raft's, were written to", i)
				}
			}
		})
	}
}
