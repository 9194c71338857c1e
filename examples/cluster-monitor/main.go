// Cluster-monitor shows group membership with the client's own watches:
// every server of a cluster registers an ephemeral znode under
// /clusterServers, and a monitor prints each server that joins or leaves.
//
// The monitor lists the children of /clusterServers with ChildrenW, which
// also sets a one-shot watch: the next join or leave fires it, once. The
// event says that the children changed, not how, so the monitor lists them
// again (setting the next watch) and compares with what it knew. Changes
// that happen between the event and the next list are in that list, so
// none is missed; a server that joins and leaves in between is never seen,
// which suits a monitor of who is there now. (recipe/discovery's Join and
// WatchGroup package the same pattern, with re-registration after a
// session expires.)
//
// Start a server (go run ./cmd/collie server), then:
//
//	go run ./examples/cluster-monitor -server 127.0.0.1:2181
//
// The cluster's servers and the monitor run in one process, each with a
// session of its own; closing a server's session stands for killing it.
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
)

const groupPath = "/clusterServers"

func main() { demo.Main(run) }

func run(ctx context.Context, server string, out io.Writer) error {
	g, ctx := demo.NewGroup(ctx, server, out)
	defer g.Stop()

	// The monitor sends each join and leave it sees on seen, as
	// "server-1 joined" or "server-1 left", so that each step below waits
	// until it has seen the one before.
	seen := make(chan string)
	await := func(want string) error {
		for {
			select {
			case s := <-seen:
				if s == want {
					return nil
				}
			case <-ctx.Done():
				return g.Err()
			}
		}
	}
	mc, err := g.Dial(ctx, "monitor")
	if err != nil {
		return err
	}
	g.Go("monitor", func() error { return monitor(ctx, mc, g.Logf, seen) })
	if err := await("ready"); err != nil {
		return err
	}

	join := func(name string, n int) error {
		c, err := g.Dial(ctx, name)
		if err != nil {
			return err
		}
		addr := fmt.Sprintf("10.0.1.%d:7000", n)
		g.Logf("%s: registering as %s/%s", name, groupPath, name)
		// The node lives as long as the server's session: when the
		// process dies, the server deletes it (at once when the session
		// is closed, after the session timeout when it just stops).
		if _, _, err := c.Create(ctx, groupPath+"/"+name, []byte(addr), client.ModeEphemeral, nil); err != nil {
			return err
		}
		return await(name + " joined")
	}
	kill := func(name string) error {
		g.Kill(name)
		return await(name + " left")
	}

	for n := 1; n <= 3; n++ {
		if err := join(fmt.Sprintf("server-%d", n), n); err != nil {
			return err
		}
	}
	if err := kill("server-2"); err != nil {
		return err
	}
	if err := kill("server-1"); err != nil {
		return err
	}
	// server-2 comes back, with a new session.
	if err := join("server-2", 2); err != nil {
		return err
	}
	return g.Stop()
}

// monitor prints the servers of the group as they join and leave, and
// sends each join and leave on seen, after "ready" once it has listed the
// group the first time.
func monitor(ctx context.Context, c *client.Client, logf func(string, ...any), seen chan<- string) error {
	send := func(s string) bool {
		select {
		case seen <- s:
			return true
		case <-ctx.Done():
			return false
		}
	}
	// The group's node is persistent; the monitor creates it if needed.
	_, _, err := c.Create(ctx, groupPath, nil, client.ModePersistent, nil)
	if err != nil && !errors.Is(err, client.ErrNodeExists) {
		return err
	}
	known := map[string]string{} // the servers' addresses, by name
	for first := true; ; first = false {
		names, _, changed, err := c.ChildrenW(ctx, groupPath)
		if err != nil {
			return err
		}
		slices.Sort(names) // the server lists children in no particular order
		for _, name := range names {
			if _, ok := known[name]; ok {
				continue
			}
			addr, _, err := c.Get(ctx, groupPath+"/"+name)
			if errors.Is(err, client.ErrNoNode) {
				continue // gone already: the next event says so
			}
			if err != nil {
				return err
			}
			known[name] = string(addr)
			logf("monitor: %s joined (%s); %d in the cluster", name, addr, len(known))
			if !send(name + " joined") {
				return nil
			}
		}
		for _, name := range slices.Sorted(maps.Keys(known)) {
			if slices.Contains(names, name) {
				continue
			}
			addr := known[name]
			delete(known, name)
			logf("monitor: %s left (%s); %d in the cluster", name, addr, len(known))
			if !send(name + " left") {
				return nil
			}
		}
		if first {
			logf("monitor: watching %s: %d in the cluster", groupPath, len(known))
			if !send("ready") {
				return nil
			}
		}
		select {
		case ev := <-changed:
			if ev.Type == client.EventNotWatching {
				return ev.Err // the session ended
			}
		case <-ctx.Done():
			return nil
		}
	}
}
