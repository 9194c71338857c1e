package lock

import (
	"slices"
	"testing"
)

// TestSortBySequence orders names by their sequence only, whatever their
// protection prefix, as Curator's StandardLockInternalsDriver does.
func TestSortBySequence(t *testing.T) {
	names := []string{
		"_c_ffffffff-0000-4000-8000-000000000000-lock-0000000003",
		"lock-0000000002",
		"_c_00000000-0000-4000-8000-000000000000-lock-0000000010",
		"_c_99999999-0000-4000-8000-000000000000-lock-0000000001",
	}
	sortBySequence(names)
	want := []string{
		"_c_99999999-0000-4000-8000-000000000000-lock-0000000001",
		"lock-0000000002",
		"_c_ffffffff-0000-4000-8000-000000000000-lock-0000000003",
		"_c_00000000-0000-4000-8000-000000000000-lock-0000000010",
	}
	if !slices.Equal(names, want) {
		t.Errorf("sorted %v, want %v", names, want)
	}
}
