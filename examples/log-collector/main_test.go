package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/collie-io/collie/examples/internal/exampletest"
)

// The sources go to the live collectors only; the standby coordinator takes
// over once, moving nothing; in the end every source is collected by
// exactly one of the three live collectors, two each.
func TestRun(t *testing.T) {
	exampletest.Run(t, run, func(t *testing.T, out exampletest.Output) {
		dead := false
		for _, line := range out {
			if line == "collector-2: killed" {
				dead = true
			}
			if dead && strings.HasPrefix(line, "coordinator-") && strings.Contains(line, "collector-2") {
				t.Errorf("collector-2 assigned sources after its death: %q", line)
			}
		}
		if n := out.Count("coordinator-2: elected coordinator"); n != 1 {
			t.Errorf("coordinator-2 elected %d times, want once", n)
		}
		if i, j := slices.Index(out, "coordinator-1: killed"), slices.IndexFunc(out, func(l string) bool {
			return strings.HasPrefix(l, "coordinator-2: elected")
		}); j < i {
			t.Errorf("coordinator-2 elected at line %d, before coordinator-1 was killed at line %d", j, i)
		}
		if n := out.Count("coordinator-2: assignments are up to date"); n != 1 {
			t.Errorf("coordinator-2 found the assignments up to date %d times, want once", n)
		}

		last := map[string][]string{}
		for _, m := range out.Match(`^(collector-\d): collecting (.*)$`) {
			last[m[1]] = strings.Split(m[2], ", ")
		}
		var all []string
		for _, id := range []string{"collector-1", "collector-3", "collector-4"} {
			if len(last[id]) != 2 {
				t.Errorf("%s collects %v at the end, want two sources", id, last[id])
			}
			all = append(all, last[id]...)
		}
		if slices.Sort(all); !slices.Equal(all, sources) {
			t.Errorf("the live collectors collect %v at the end, want each of %v once", all, sources)
		}
	})
}
