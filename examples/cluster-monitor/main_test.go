package main

import (
	"slices"
	"testing"

	"github.com/collie-io/collie/examples/internal/exampletest"
)

// The monitor reports every join and leave, in order, each once.
func TestRun(t *testing.T) {
	exampletest.Run(t, run, func(t *testing.T, out exampletest.Output) {
		var changes []string
		for _, m := range out.Match(`^monitor: (server-\d (?:joined|left)) \(10\.0\.1\.\d:7000\); (\d) in the cluster$`) {
			changes = append(changes, m[1]+" "+m[2])
		}
		want := []string{
			"server-1 joined 1",
			"server-2 joined 2",
			"server-3 joined 3",
			"server-2 left 2",
			"server-1 left 1",
			"server-2 joined 2",
		}
		if !slices.Equal(changes, want) {
			t.Errorf("the monitor reported\n%q\nwant\n%q", changes, want)
		}
	})
}
