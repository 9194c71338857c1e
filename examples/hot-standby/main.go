// Hot-standby shows instances of a service of which one is active and the
// others stand by, connected and in line, to take over the moment it dies.
//
// Each instance joins a recipe/election Latch on /billing/leader: it queues
// an ephemeral sequential znode there, and the instance whose node has the
// smallest sequence number is active. Every standby watches only the node
// just before its own, so when the active instance dies (its session ends
// and the server deletes its node) exactly one standby wakes, finds itself
// first and takes over: within a round trip, not a polling interval. The
// others stay in line in the order they joined. (examples/cold-standby
// shows a standby that looks now and then instead.)
//
// Start a server (go run ./cmd/collie server), then:
//
//	go run ./examples/hot-standby -server 127.0.0.1:2181
//
// The instances run in one process, each with a session of its own; closing
// an instance's session stands for killing it.
package main

import (
	"context"
	"io"
	"path"
	"strings"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/examples/internal/demo"
	"github.com/collie-io/collie/recipe/election"
)

// electionPath is the parent of the instances' nodes.
const electionPath = "/billing/leader"

func main() { demo.Main(run) }

func run(ctx context.Context, server string, out io.Writer) error {
	g, ctx := demo.NewGroup(ctx, server, out)
	defer g.Stop()

	// Every instance says so on active when it becomes the active one.
	active := make(chan string)
	awaitActive := func() (string, error) {
		select {
		case id := <-active:
			return id, nil
		case <-ctx.Done():
			return "", g.Err()
		}
	}
	var newest *election.Latch
	start := func(id string) error {
		c, err := g.Dial(ctx, id)
		if err != nil {
			return err
		}
		// Start returns once the instance's node is in line.
		latch := election.NewLatch(c, electionPath, id)
		if err := latch.Start(ctx); err != nil {
			return err
		}
		// The node's name is protected ("_c_<uuid>-latch-<sequence>"), so
		// that a create whose reply was lost is found again.
		name, _ := client.IsProtected(path.Base(latch.Node()))
		g.Logf("%s: started, in line as %s", id, name)
		newest = latch
		g.Go(id, func() error { return work(ctx, latch, g.Logf, active) })
		return nil
	}
	// kill ends an instance's session and waits for the standby that takes
	// over.
	kill := func(id string) error {
		died := time.Now()
		g.Kill(id)
		next, err := awaitActive()
		if err != nil {
			return err
		}
		g.Logf("%s took over %v after %s died", next, time.Since(died).Round(time.Millisecond), id)
		return nil
	}
	// showLine prints the instances in line, as any of them reads it.
	showLine := func() error {
		all, err := newest.Participants(ctx)
		if err != nil {
			return err
		}
		var line []string
		for _, p := range all {
			if p.Leader {
				line = append(line, p.ID+" (active)")
			} else {
				line = append(line, p.ID)
			}
		}
		g.Logf("line: %s", strings.Join(line, ", "))
		return nil
	}

	if err := start("instance-1"); err != nil {
		return err
	}
	if _, err := awaitActive(); err != nil {
		return err
	}
	for _, step := range []func() error{
		func() error { return start("instance-2") },
		func() error { return start("instance-3") },
		showLine,
		func() error { return kill("instance-1") },
		func() error { return kill("instance-2") },
		// A restarted instance joins at the end of the line.
		func() error { return start("instance-4") },
		showLine,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return g.Stop()
}

// work is an instance: it stands by until its latch leads, then does the
// active instance's work until its term ends, and stands by again; it
// sends its id on active each time it becomes active.
func work(ctx context.Context, latch *election.Latch, logf func(string, ...any), active chan<- string) error {
	for {
		term, err := latch.Await(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err // client.ErrClosed when the instance was killed
		}
		// The token grows with every new leader: a resource that records
		// the largest it has seen can refuse a former leader's late writes.
		logf("%s: active (fencing token %d)", latch.ID(), term.Token())
		select {
		case active <- latch.ID():
		case <-ctx.Done():
			return nil
		}
		// A real service would work here, with term.Context(ctx) as the
		// context of the work, so that it stops the moment the term ends:
		// the connection broke, the session expired or the node went.
		select {
		case <-term.Lost():
		case <-ctx.Done():
			return nil
		}
	}
}
