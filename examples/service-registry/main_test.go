package main

import (
	"slices"
	"testing"

	"github.com/collie-io/collie/examples/internal/exampletest"
)

// The resolver answers with exactly the live instances after each step:
// three registered one after the other, orders-2 killed, orders-4 added.
func TestRun(t *testing.T) {
	exampletest.Run(t, run, func(t *testing.T, out exampletest.Output) {
		var answers []string
		for _, m := range out.Match(`^resolver: orders -> (.*)$`) {
			answers = append(answers, m[1])
		}
		want := []string{
			"(no instance)",
			"10.0.0.1:8080",
			"10.0.0.1:8080 10.0.0.2:8080",
			"10.0.0.1:8080 10.0.0.2:8080 10.0.0.3:8080",
			"10.0.0.1:8080 10.0.0.3:8080",
			"10.0.0.1:8080 10.0.0.3:8080 10.0.0.4:8080",
		}
		if !slices.Equal(answers, want) {
			t.Errorf("the resolver answered\n%q\nwant\n%q", answers, want)
		}
	})
}
