package main

import (
	"slices"
	"strconv"
	"testing"

	"github.com/collie-io/collie/examples/internal/exampletest"
)

// The instances become active in the order they joined, each once, when
// the one before dies, each with a larger fencing token; the restarted
// instance joins behind the active one.
func TestRun(t *testing.T) {
	exampletest.Run(t, run, func(t *testing.T, out exampletest.Output) {
		var ids []string
		var tokens []int64
		for _, m := range out.Match(`^(\S+): active \(fencing token (\d+)\)$`) {
			token, _ := strconv.ParseInt(m[2], 10, 64)
			ids, tokens = append(ids, m[1]), append(tokens, token)
		}
		if want := []string{"instance-1", "instance-2", "instance-3"}; !slices.Equal(ids, want) {
			t.Errorf("active in turn: %v, want %v", ids, want)
		}
		if !slices.IsSorted(tokens) || len(slices.Compact(slices.Clone(tokens))) != len(tokens) {
			t.Errorf("fencing tokens %v, want each larger than the last", tokens)
		}
		if n := out.Count("line: instance-3 (active), instance-4"); n != 1 {
			t.Errorf("the last line shows instance-3 active and instance-4 in line %d times, want once", n)
		}
	})
}
