package lock

import (
	"slices"
	"testing"
)

// TestSortLine orders names by their sequence only, whatever their
// protection prefix, as Curator's StandardLockInternalsDriver does, and an
// RWLock's readers and writers in one line, as its SortingLockInternalsDriver
// does.
func TestSortLine(t *testing.T) {
	rw := NewRWLock(nil, "/rw")
	tests := []struct {
		name        string
		key         func(string) string
		names, want []string
	}{
		{
			name: "mutex",
			key:  after(mutexName),
			names: []string{
				"_c_ffffffff-0000-4000-8000-000000000000-lock-0000000003",
				"lock-0000000002",
				"_c_00000000-0000-4000-8000-000000000000-lock-0000000010",
				"_c_99999999-0000-4000-8000-000000000000-lock-0000000001",
			},
			want: []string{
				"_c_99999999-0000-4000-8000-000000000000-lock-0000000001",
				"lock-0000000002",
				"_c_ffffffff-0000-4000-8000-000000000000-lock-0000000003",
				"_c_00000000-0000-4000-8000-000000000000-lock-0000000010",
			},
		},
		{
			name: "rwlock",
			key:  rw.read.key,
			names: []string{
				"_c_ffffffff-0000-4000-8000-000000000000-__WRIT__0000000004",
				"_c_00000000-0000-4000-8000-000000000000-__READ__0000000002",
				"__WRIT__0000000003",
				"_c_99999999-0000-4000-8000-000000000000-__READ__0000000001",
			},
			want: []string{
				"_c_99999999-0000-4000-8000-000000000000-__READ__0000000001",
				"_c_00000000-0000-4000-8000-000000000000-__READ__0000000002",
				"__WRIT__0000000003",
				"_c_ffffffff-0000-4000-8000-000000000000-__WRIT__0000000004",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names := slices.Clone(tt.names)
			sortLine(names, tt.key)
			if !slices.Equal(names, tt.want) {
				t.Errorf("sorted %v, want %v", names, tt.want)
			}
		})
	}
}

// TestBlockers checks whom each kind of contender waits for: a writer its
// predecessor, whatever it is; a reader the last writer before it, or
// nobody.
func TestBlockers(t *testing.T) {
	line := []string{"__READ__1", "__WRIT__2", "__READ__3", "__WRIT__4", "__READ__5", "__READ__6", "__WRIT__7"}
	wantWriter := []int{-1, 0, 1, 2, 3, 4, 5}
	wantReader := []int{-1, -1, 1, 1, 3, 3, 3}
	for i := range line {
		if got := predecessor(line, i); got != wantWriter[i] {
			t.Errorf("writer at %d waits for %d, want %d", i, got, wantWriter[i])
		}
		if got := lastWriter(line, i); got != wantReader[i] {
			t.Errorf("reader at %d waits for %d, want %d", i, got, wantReader[i])
		}
	}
}
