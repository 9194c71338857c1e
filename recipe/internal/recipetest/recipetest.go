// Package recipetest is the scaffolding the recipe packages' tests share:
// the servers every scenario runs against (an in-process Collie and the real
// ZooKeeper 3.8), clients that close with the test, bounded waits, a
// partition that breaks a client's connections, the server's list of
// watches read through the four-letter words, and Java programs built on
// Apache Curator run beside the Go recipes.
//
// A recipe test runs each scenario against both servers, so that the
// scenario's expectations are shown to be ZooKeeper's:
//
//	func TestThing(t *testing.T) {
//		for _, srv := range recipetest.Servers {
//			t.Run("server="+srv.Name, func(t *testing.T) {
//				addr := srv.Start(t)
//				t.Run("scenario", func(t *testing.T) {
//					ctx := recipetest.Context(t)
//					c := recipetest.Dial(t, addr, client.Config{})
//					...
//				})
//			})
//		}
//	}
//
// Every wait is bounded by Timeout, so that a lost wakeup fails a test
// rather than hangs it.
package recipetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/server/config"
)

// Timeout bounds every wait of a test.
const Timeout = 15 * time.Second

// tick is the tickTime of both servers: sessions can be made to expire in
// a fraction of a second.
const tick = 100 * time.Millisecond

// ShortSession is the session timeout of clients whose session a test
// expires: the shortest both servers grant.
const ShortSession = 2 * tick

// maxSession is the longest session timeout both servers grant: longer
// than ZooKeeper's default of 20 ticks, so that sessions survive a machine
// too loaded to ping in time.
const maxSession = 300 * tick

// LongSession is the session timeout of clients whose connection a test
// breaks without expiring the session; client.Config's default, 10s, is
// granted too.
const LongSession = maxSession

// pollInterval paces WaitFor.
const pollInterval = 5 * time.Millisecond

// Server is a kind of server that recipes are tested against.
type Server struct {
	Name string
	// Start starts a server for the test and returns its client address;
	// the server stops when the test ends.
	Start func(t testing.TB) string
}

// Servers are Collie and the real ZooKeeper 3.8 (skipped when it is not
// installed, failed when CI=true).
var Servers = []Server{
	{"collie", StartCollie},
	{"zookeeper", StartZooKeeper},
}

// StartCollie starts an in-process Collie server with a 100ms tick,
// session timeouts from ShortSession to LongSession, every four-letter word
// allowed and no limit on connections per client address.
func StartCollie(t testing.TB) string {
	t.Helper()
	return collietest.Start(t, collietest.WithConfig(func(cfg *config.Config) {
		cfg.TickTime = tick
		cfg.MinSessionTimeout = ShortSession
		cfg.MaxSessionTimeout = maxSession
		cfg.MaxClientCnxns = 0
	})).Addr()
}

// StartZooKeeper starts a ZooKeeper 3.8 standalone server configured as
// StartCollie configures Collie.
func StartZooKeeper(t testing.TB) string {
	t.Helper()
	zkref.Require(t, zkref.Available())
	return zkref.Start(t,
		zkref.WithTickTime(tick),
		zkref.WithConfig("maxSessionTimeout", strconv.FormatInt(maxSession.Milliseconds(), 10)),
		zkref.WithConfig("maxClientCnxns", "0"),
	).Addr()
}

// Context returns a context that ends after Timeout, or with the test.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

// Dial connects a client with a session of its own, closed when the test
// ends.
func Dial(t testing.TB, addr string, cfg client.Config) *client.Client {
	t.Helper()
	c, err := client.Dial(Context(t), addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Children lists path's children in the server's order; none when path
// does not exist.
func Children(t testing.TB, c *client.Client, path string) []string {
	t.Helper()
	names, _, err := c.Children(Context(t), path)
	if err != nil && !errors.Is(err, client.ErrNoNode) {
		t.Fatal(err)
	}
	return names
}

// WaitFor polls cond until it holds, failing the test after Timeout.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(Timeout); !cond(); time.Sleep(pollInterval) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Receive returns the next value of ch, failing the test after Timeout.
func Receive[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatal("timed out waiting on a channel")
		panic("unreachable")
	}
}

// Pending fails the test when ch already has a value, or is closed: what
// sends on it was expected to be still waiting.
func Pending[T any](t testing.TB, what string, ch <-chan T) {
	t.Helper()
	select {
	case v, ok := <-ch:
		if ok {
			t.Fatalf("%s: did not wait (%v)", what, v)
		}
		t.Fatalf("%s: did not wait", what)
	default:
	}
}

// SessionHex formats a session id as the four-letter words print it.
func SessionHex(id int64) string { return "0x" + strconv.FormatUint(uint64(id), 16) }

// Sequence returns the sequence number that ends a sequential node's name.
func Sequence(t testing.TB, node string) int {
	t.Helper()
	if len(node) < 10 {
		t.Fatalf("node %s has no sequence number", node)
	}
	n, err := strconv.Atoi(node[len(node)-10:])
	if err != nil {
		t.Fatalf("node %s has no sequence number: %v", node, err)
	}
	return n
}

// Errs collects the errors of goroutines, for the test to report once
// they are done: t.Fatal may only be called from the test's own goroutine.
// The zero value is ready to use.
type Errs struct {
	mu   sync.Mutex
	errs []error
}

// Add records err, if any, with what failed.
func (e *Errs) Add(what string, err error) {
	if err == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, fmt.Errorf("%s: %w", what, err))
}

// Report fails the test with every error recorded so far.
func (e *Errs) Report(t testing.TB) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, err := range e.errs {
		t.Error(err)
	}
	e.errs = nil
}
