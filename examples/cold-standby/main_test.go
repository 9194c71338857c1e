package main

import (
	"testing"

	"github.com/collie-io/collie/examples/internal/exampletest"
)

// instance-1 is active first; once it dies exactly one standby takes over,
// and the other one's scan finds it active.
func TestRun(t *testing.T) {
	exampletest.Run(t, run, func(t *testing.T, out exampletest.Output) {
		var active []string
		for _, m := range out.Match(`^(\S+): active; starting the service from cold$`) {
			active = append(active, m[1])
		}
		if len(active) != 2 || active[0] != "instance-1" || active[1] == "instance-1" {
			t.Fatalf("active in turn: %v, want instance-1 then one standby", active)
		}
		other := map[string]string{"instance-2": "instance-3", "instance-3": "instance-2"}[active[1]]
		if n := out.Count(other + ": scan: " + active[1] + " is active"); n != 1 {
			t.Errorf("%s found %s active %d times, want once", other, active[1], n)
		}
		if n := out.Count(active[1] + " took over"); n != 1 {
			t.Errorf("%q printed %d times, want once", active[1]+" took over", n)
		}
	})
}
