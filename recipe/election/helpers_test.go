package election_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
)

// testTimeout bounds every wait of a test, so that a lost wakeup fails
// rather than hangs.
const testTimeout = 15 * time.Second

// shortSession is the session timeout of clients whose session a test
// expires: the shortest both servers grant with a 100ms tick.
const shortSession = 200 * time.Millisecond

// longSession is the session timeout of clients whose connection a test
// breaks without expiring the session: the longest both servers grant with
// a 100ms tick.
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
	servers := map[string]func(t *testing.T) string{
		"collie": func(t *testing.T) string { return collietest.Start(t).Addr() },
		"zookeeper": func(t *testing.T) string {
			zkref.Require(t, zkref.Available())
			return zkref.Start(t, zkref.WithTickTime(100*time.Millisecond)).Addr()
		},
	}
	for _, name := range []string{"collie", "zookeeper"} {
		t.Run("server="+name, func(t *testing.T) {
			addr := servers[name](t)
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
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	e := &env{T: t, addr: addr, ctx: ctx}
	e.observer = e.client(client.Config{})
	return e
}

// client connects a client with a session of its own, closed when the
// test ends.
func (e *env) client(cfg client.Config) *client.Client {
	e.Helper()
	c, err := client.Dial(e.ctx, e.addr, cfg)
	if err != nil {
		e.Fatal(err)
	}
	e.Cleanup(func() { c.Close() })
	return c
}

// partitioned connects a client, with the given session timeout, through
// a partition of its own; the client renews its session when it expires.
func (e *env) partitioned(timeout time.Duration) (*client.Client, *partition) {
	e.Helper()
	p := &partition{}
	return e.client(client.Config{SessionTimeout: timeout, RenewSession: true, Dial: p.dial}), p
}

// nodes lists path's children, none when path does not exist.
func (e *env) nodes(path string) []string {
	e.Helper()
	names, _, err := e.observer.Children(e.ctx, path)
	if err != nil && !errors.Is(err, client.ErrNoNode) {
		e.Fatal(err)
	}
	return names
}

// until polls cond until it holds, failing the test after testTimeout.
func (e *env) until(what string, cond func() bool) {
	e.Helper()
	for deadline := time.Now().Add(testTimeout); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			e.Fatalf("timed out waiting for %s", what)
		}
	}
}

// watchers returns, for path and each node below it, the sessions that
// watch it (data and child watches alike), sorted, as the four-letter word
// wchp reports them.
func (e *env) watchers(path string) map[string][]string {
	e.Helper()
	out, err := zkref.FourLetter(e.addr, "wchp")
	if err != nil {
		e.Fatal(err)
	}
	byPath := map[string][]string{}
	current := ""
	for line := range strings.Lines(out) {
		switch line = strings.TrimRight(line, "\r\n"); {
		case line == "":
		case strings.HasPrefix(line, "\t"):
			if current == path || strings.HasPrefix(current, path+"/") {
				byPath[current] = append(byPath[current], strings.TrimSpace(line))
			}
		default:
			current = line
		}
	}
	for _, sessions := range byPath {
		slices.Sort(sessions)
	}
	return byPath
}

// next returns the next value of ch, failing the test after testTimeout.
func next[T any](e *env, ch <-chan T) T {
	e.Helper()
	timer := time.NewTimer(testTimeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		e.Fatal("timed out waiting on a channel")
		panic("unreachable")
	}
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
	n, err := strconv.Atoi(node[strings.LastIndexByte(node, '-')+1:])
	if err != nil {
		e.Fatalf("node %s has no sequence number: %v", node, err)
	}
	return n
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

func sessionHex(c *client.Client) string { return fmt.Sprintf("0x%x", uint64(c.SessionID())) }

// partition stands between a client and its server: it lets connections
// through until cut, which breaks them and refuses new ones until heal.
type partition struct {
	mu     sync.Mutex
	conns  []net.Conn
	cutOff bool
}

func (p *partition) dial(ctx context.Context, network, address string) (net.Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutOff {
		return nil, errors.New("partitioned")
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, network, address)
	if err == nil {
		p.conns = append(p.conns, conn)
	}
	return conn, err
}

func (p *partition) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOff = true
	for _, conn := range p.conns {
		conn.Close()
	}
	p.conns = nil
}

func (p *partition) heal() {
	p.mu.Lock()
	p.cutOff = false
	p.mu.Unlock()
}
