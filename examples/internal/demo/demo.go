// Package demo is what every example program does the same way: its
// command line (-server, a deadline, Ctrl-C) and the group of roles,
// each with a session of its own, that plays its scenario in one process.
package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"time"

	"github.com/collie-io/collie/client"
)

// Timeout bounds a whole demo, so that a run against a server that is down
// or unreachable ends with an error rather than waits for ever.
const Timeout = 30 * time.Second

// dialTimeout bounds the wait for a session.
const dialTimeout = 10 * time.Second

// Run is the shape of every example: it plays the scenario against the
// ensemble at server (a ZooKeeper connect string) and prints what happens
// to out, from several goroutines at once.
type Run func(ctx context.Context, server string, out io.Writer) error

// Main parses the command line, runs the demo until it ends, Timeout
// passes or Ctrl-C, and exits 1 with the error when the demo fails.
func Main(run Run) {
	server := flag.String("server", "127.0.0.1:2181", "connect string of the ZooKeeper-protocol ensemble")
	flag.Parse()
	if err := runMain(run, *server); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(os.Args[0]), err)
		os.Exit(1)
	}
}

func runMain(run Run, server string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	return run(ctx, server, os.Stdout)
}

// errStopped ends the roles' context when the scenario is over.
var errStopped = errors.New("demo over")

// Group runs the roles of a scenario (publishers, subscribers, leaders,
// standbys...) as goroutines of one process, each with a session of its
// own as if it were a process of its own. Closing a role's session (Kill)
// is then what a crash of that process looks like to the ensemble: its
// session ends and its ephemeral nodes go at once.
type Group struct {
	server string
	out    *log.Logger  // writes each line with one Write, one call at a time
	cause  func() error // the cause of the roles' context
	cancel context.CancelCauseFunc
	roles  sync.WaitGroup

	mu       sync.Mutex                // guards sessions and stopped
	sessions map[string]*client.Client // by role
	stopped  bool
}

// NewGroup returns a group of roles on the ensemble at server, printing to
// out, and the context of its roles, which ends when a role fails or Stop
// is called.
func NewGroup(ctx context.Context, server string, out io.Writer) (*Group, context.Context) {
	ctx, cancel := context.WithCancelCause(ctx)
	return &Group{
		server:   server,
		out:      log.New(out, "", 0),
		cause:    func() error { return context.Cause(ctx) },
		cancel:   cancel,
		sessions: map[string]*client.Client{},
	}, ctx
}

// Logf prints one line of the demo's output. Any goroutine may call it.
func (g *Group) Logf(format string, args ...any) { g.out.Printf(format, args...) }

// Dial starts the session of the role name, which lasts until Kill or
// Stop.
func (g *Group) Dial(ctx context.Context, name string) (*client.Client, error) {
	dialCtx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err := client.Dial(dialCtx, g.server, client.Config{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w (is a server running? go run ./cmd/collie server)", name, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		c.Close()
		return nil, client.ErrClosed
	}
	g.sessions[name] = c
	return c, nil
}

// Kill closes the session of the role name, as if its process had died,
// and says so.
func (g *Group) Kill(name string) {
	g.mu.Lock()
	c := g.sessions[name]
	delete(g.sessions, name)
	g.mu.Unlock()
	g.Logf("%s: killed", name)
	if c != nil {
		c.Close()
	}
}

// Go runs role in a goroutine. When it fails, the roles' context ends with
// its error, which Stop returns. An error that says the role's session was
// closed (Kill) is no failure.
func (g *Group) Go(name string, role func() error) {
	g.roles.Go(func() {
		if err := role(); err != nil && !errors.Is(err, client.ErrClosed) {
			g.cancel(fmt.Errorf("%s: %w", name, err))
		}
	})
}

// Err returns why the roles' context ended: the first role's failure,
// or the parent context's error (the deadline, Ctrl-C); nil while the
// context goes on, and when Stop ended it. A scenario waiting for its
// roles returns Err when that context ends.
func (g *Group) Err() error {
	if err := g.cause(); err != errStopped {
		return err
	}
	return nil
}

// Stop ends the roles' context, waits until every role has returned,
// closes the sessions still open and returns the failure of the role that
// failed first, if any. Calling it again returns the same.
func (g *Group) Stop() error {
	g.cancel(errStopped)
	g.roles.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.stopped {
		g.stopped = true
		for _, c := range g.sessions {
			c.Close()
		}
	}
	return g.Err()
}
