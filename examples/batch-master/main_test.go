package main

import (
	"slices"
	"strconv"
	"testing"

	"github.com/collie-io/collie/examples/internal/exampletest"
)

// Each day's run is recorded once: by batch-1 on the first day, by batch-2,
// elected while batch-1's job hangs, on the second and third. batch-1's
// late record of the second day is refused.
func TestRun(t *testing.T) {
	exampletest.Run(t, run, func(t *testing.T, out exampletest.Output) {
		var recorded []string
		for _, m := range out.Match(`^(batch-\d): recorded the run of (\S+)$`) {
			recorded = append(recorded, m[1]+" "+m[2])
		}
		want := []string{"batch-1 " + days[0], "batch-2 " + days[1], "batch-2 " + days[2]}
		if !slices.Equal(recorded, want) {
			t.Errorf("runs recorded: %q, want %q", recorded, want)
		}
		if n := out.Count("batch-1: the server refused the run of " + days[1]); n != 1 {
			t.Errorf("batch-1's late run of the second day refused %d times, want once", n)
		}
		if n := out.Count("refused"); n != 1 {
			t.Errorf("%d runs refused, want 1", n)
		}
		var markers []string
		for _, m := range out.Match(`^marker (\S+): run by (batch-\d) \(fencing token \d+\)$`) {
			markers = append(markers, m[2]+" "+m[1])
		}
		if !slices.Equal(markers, want) {
			t.Errorf("markers: %q, want %q", markers, want)
		}
		var tokens []int64
		for _, m := range out.Match(`^batch-\d: elected master \(fencing token (\d+)\)$`) {
			token, _ := strconv.ParseInt(m[1], 10, 64)
			tokens = append(tokens, token)
		}
		if len(tokens) != 2 || tokens[1] <= tokens[0] {
			t.Errorf("masters' tokens %v, want two, the second larger", tokens)
		}
	})
}
