// Package ensembletest runs the recipes against an ensemble of three
// servers while the leader is stopped and started again: the guarantees
// the recipes give on one server must hold across a change of leader.
package ensembletest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/recipe/election"
	"github.com/collie-io/collie/recipe/internal/recipetest"
)

// dial connects a client to every server of e, renewing its session when
// it expires.
func dial(t *testing.T, e *collietest.Ensemble) *client.Client {
	t.Helper()
	return recipetest.Dial(t, e.ConnectString(), client.Config{SessionTimeout: 2 * time.Second, RenewSession: true})
}

// bounce stops the leader of e and starts it again once another leads.
func bounce(t *testing.T, e *collietest.Ensemble) {
	t.Helper()
	old := e.Leader()
	old.Stop()
	recipetest.WaitFor(t, "another leader", func() bool { l := e.Leader(); return l != nil && l != old })
	old.Restart()
}

// Three latches on one path elect one leader; after the ensemble's leader
// is stopped twice, there is again exactly one leader, whose token is not
// older.
func TestLatchAcrossLeaderChanges(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	ctx := recipetest.Context(t)
	var latches []*election.Latch
	for i := range 3 {
		l := election.NewLatch(dial(t, e), "/latch", fmt.Sprint("p", i))
		if err := l.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), recipetest.Timeout)
			defer cancel()
			if err := l.Close(ctx); err != nil {
				t.Errorf("latch %d: %v", i, err)
			}
		})
		latches = append(latches, l)
	}
	leaders := func() (n int, token int64) {
		for _, l := range latches {
			if l.IsLeader() {
				n++
				if term := l.Term(); term != nil {
					token = term.Token()
				}
			}
		}
		return n, token
	}
	recipetest.WaitFor(t, "one leader", func() bool { n, _ := leaders(); return n == 1 })
	_, first := leaders()
	bounce(t, e)
	bounce(t, e)
	recipetest.WaitFor(t, "one leader after the leader changes", func() bool { n, _ := leaders(); return n == 1 })
	if _, token := leaders(); token < first {
		t.Errorf("token %d after the changes, %d before", token, first)
	}
}
