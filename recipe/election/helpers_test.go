package election_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/internal/recipetest"
)

// testTimeout bounds every wait of a test, so that a lost wakeup fails
// rather than hangs.
const testTimeout = recipetest.Timeout

// shortSession is the session timeout of clients whose session a test
// expires.
const shortSession = recipetest.ShortSession

// longSession is the session timeout of clients whose connection a test
// breaks without expiring the session.
const longSession = 2 * time.Second

// scenario is one test of a recipe.
type scenario struct {
	name string
	run  func(e *env)
}

// TestElection runs every scenario of the three recipes against Collie,
// and against the real ZooKeeper 3.8 to show that the scenarios'
// expectations are ZooKeeper's.
func TestElection(t *testing.T) {
	recipes := []struct {
		name      string
		scenarios []scenario
	}{
		{"latch", latchScenarios},
		{"selector", selectorScenarios},
		{"master", masterScenarios},
	}
	for _, srv := range recipetest.Servers {
		t.Run("server="+srv.Name, func(t *testing.T) {
			addr := srv.Start(t)
			for _, r := range recipes {
				t.Run(r.name, func(t *testing.T) {
					for _, sc := range r.scenarios {
						t.Run(sc.name, func(t *testing.T) { sc.run(newEnv(t, addr)) })
					}
				})
			}
		})
	}
}

// env is what a scenario works with: its test, the server, a context
// bounded by testTimeout, and a client of its own for looking at the tree.
type env struct {
	*testing.T
	addr     string
	ctx      context.Context
	observer *client.Client
}

func newEnv(t *testing.T, addr string) *env {
	e := &env{T: t, addr: addr, ctx: recipetest.Context(t)}
	e.observer = e.client(client.Config{})
	return e
}

// client connects a client with a session of its own, closed when the
// test ends.
func (e *env) client(cfg client.Config) *client.Client {
	e.Helper()
	return recipetest.Dial(e.T, e.addr, cfg)
}

// partitioned connects a client, with the given session timeout, through
// a partition of its own; the client renews its session when it expires.
func (e *env) partitioned(timeout time.Duration) (*client.Client, *recipetest.Partition) {
	e.Helper()
	return recipetest.Partitioned(e.T, e.addr, timeout)
}

// nodes lists path's children, none when path does not exist.
func (e *env) nodes(path string) []string {
	e.Helper()
	return recipetest.Children(e.T, e.observer, path)
}

// until polls cond until it holds, failing the test after testTimeout.
func (e *env) until(what string, cond func() bool) {
	e.Helper()
	recipetest.WaitFor(e.T, what, cond)
}

// watchers returns, for path and each node below it, the sessions that
// watch it, sorted, as the four-letter word wchp reports them.
func (e *env) watchers(path string) map[string][]string {
	e.Helper()
	return recipetest.DataWatches(e.T, e.addr).Below(path)
}

// next returns the next value of ch, failing the test after testTimeout.
func next[T any](e *env, ch <-chan T) T {
	e.Helper()
	return recipetest.Receive(e.T, ch)
}

// concurrently runs contend(0) to contend(n-1) at once and reports every
// error they return.
func concurrently(e *env, n int, contend func(i int) error) {
	e.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = contend(i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		e.Error(err)
	}
}

// open reports whether ch is still open and empty.
func open(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// sequence returns the sequence number that ends a node's name.
func sequence(e *env, node string) int {
	e.Helper()
	return recipetest.Sequence(e.T, node)
}

// increasing reports whether every value is larger than the one before.
func increasing[T int | int64](values []T) bool {
	for i := 1; i < len(values); i++ {
		if values[i] <= values[i-1] {
			return false
		}
	}
	return true
}

func sessionHex(c *client.Client) string { return recipetest.SessionHex(c.SessionID()) }
