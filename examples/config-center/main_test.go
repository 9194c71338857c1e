package main

import (
	"fmt"
	"slices"
	"testing"

	"github.com/collie-io/collie/examples/internal/exampletest"
)

// Every subscriber starts on the first database and switches to each of
// the others, in order.
func TestRun(t *testing.T) {
	exampletest.Run(t, run, func(t *testing.T, out exampletest.Output) {
		for i := 1; i <= subscribers; i++ {
			var used []string
			for _, m := range out.Match(fmt.Sprintf(`^subscriber-%d: (?:started with|switched to) (\S+)$`, i)) {
				used = append(used, m[1])
			}
			if !slices.Equal(used, dsns) {
				t.Errorf("subscriber-%d used %v, want %v", i, used, dsns)
			}
		}
		if n := out.Count("switched to " + dsns[len(dsns)-1]); n != subscribers {
			t.Errorf("%d subscribers switched to the last database, want %d", n, subscribers)
		}
	})
}
