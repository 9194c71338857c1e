// Log-collector shows a distributed log collector: collectors come and go,
// a coordinator assigns the log sources among the live ones and moves the
// sources of a collector that dies to the others; when the coordinator
// dies, a standby coordinator takes over from where it stopped.
//
// Layout, under /logcollector:
//
//	collectors/<id>    ephemeral, one per live collector
//	assignments/<id>   the sources assigned to collector <id>, comma-separated
//	coordinator/...    the coordinators' recipe/election Selector
//
// The elected coordinator watches the children of collectors (ChildrenW)
// and, at each join or leave, computes new assignments and writes them in
// one transaction that also checks that its election node still exists: a
// coordinator deposed without knowing it cannot overwrite its successor's
// work. (The Selector runs the coordinator's function while it leads, and
// cancels the function's context the moment it knows leadership is lost;
// the check covers the moments before it knows.) Each collector watches
// its own assignment node (GetW, or ExistsW while there is none) and reads
// it again when it changes. The assignments are persistent, so a newly
// elected coordinator starts from them and moves only what must move (and
// a second run of the demo starts from those of the first).
//
// Start a server (go run ./cmd/collie server), then:
//
//	go run ./examples/log-collector -server 127.0.0.1:2181
//
// The collectors and two coordinators run in one process, each with a
// session of its own; closing a session stands for killing its process.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/examples/internal/demo"
	"github.com/collie-io/collie/recipe/election"
)

const (
	rootPath        = "/logcollector"
	collectorsPath  = rootPath + "/collectors"
	assignmentsPath = rootPath + "/assignments"
	electionPath    = rootPath + "/coordinator"
)

// sources are the logs to collect.
var sources = []string{"api-1.app", "api-2.app", "db-1.slow", "db-2.slow", "web-1.access", "web-2.access"}

func main() { demo.Main(run) }

func run(ctx context.Context, server string, out io.Writer) error {
	g, ctx := demo.NewGroup(ctx, server, out)
	defer g.Stop()

	setup, err := g.Dial(ctx, "setup")
	if err != nil {
		return err
	}
	for _, p := range []string{rootPath, collectorsPath, assignmentsPath} {
		_, _, err := setup.Create(ctx, p, nil, client.ModePersistent, nil)
		if err != nil && !errors.Is(err, client.ErrNodeExists) {
			return err
		}
	}

	// The coordinator sends each set of assignments it puts in force on
	// plans, and each collector what it is told to collect on reports:
	// settle waits until the collectors have taken up the last plan.
	plans := make(chan map[string][]string)
	reports := make(chan assignment)
	collecting := map[string][]string{} // by live collector
	settle := func() error {
		var plan map[string][]string
		for plan == nil || !maps.EqualFunc(plan, collecting, slices.Equal) {
			select {
			case plan = <-plans:
			case r := <-reports:
				if _, ok := collecting[r.collector]; ok { // not killed since
					collecting[r.collector] = r.sources
				}
			case <-ctx.Done():
				return g.Err()
			}
		}
		return nil
	}

	startCollector := func(id string) error {
		c, err := g.Dial(ctx, id)
		if err != nil {
			return err
		}
		// Registering is one ephemeral node, which goes with the session.
		if _, _, err := c.Create(ctx, collectorsPath+"/"+id, nil, client.ModeEphemeral, nil); err != nil {
			return err
		}
		g.Logf("%s: registered", id)
		collecting[id] = nil
		g.Go(id, func() error { return collect(ctx, c, id, g.Logf, reports) })
		return nil
	}
	startCoordinator := func(id string) error {
		c, err := g.Dial(ctx, id)
		if err != nil {
			return err
		}
		co := &coordinator{c: c, sel: election.NewSelector(c, electionPath, id), logf: g.Logf, plans: plans}
		g.Go(id, func() error { return co.run(ctx) })
		return nil
	}
	kill := func(id string) error {
		g.Kill(id)
		delete(collecting, id)
		return settle()
	}

	for i := 1; i <= 3; i++ {
		if err := startCollector(fmt.Sprintf("collector-%d", i)); err != nil {
			return err
		}
	}
	for _, step := range []func() error{
		func() error { return startCoordinator("coordinator-1") },
		settle,
		// The standby coordinator waits in line behind coordinator-1.
		func() error { return startCoordinator("coordinator-2") },
		func() error { return kill("collector-2") },
		func() error { return kill("coordinator-1") },
		func() error { return startCollector("collector-4") },
		settle,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return g.Stop()
}
