// Service-registry shows a service registry, a dynamic DNS of sorts, whose
// health checking is the session itself. Every instance of the "orders"
// service registers an ephemeral znode /services/orders/<id> holding its
// address; a resolver lists the live instances and follows the changes.
// When an instance dies its session ends and the server deletes its node,
// so the resolver never hands out the address of a dead instance for
// longer than a session timeout (at once when the process closes its
// session, as here).
//
// Both sides use recipe/discovery, which writes Curator's ServiceDiscovery
// layout (so Java services registered with Curator are found too),
// registers an instance again if its session comes back without its node,
// and keeps the resolver's list with a persistent watch.
//
// Start a server (go run ./cmd/collie server), then:
//
//	go run ./examples/service-registry -server 127.0.0.1:2181
//
// The instances and the resolver run in one process, each with a session
// of its own; closing an instance's session stands for killing it.
package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/examples/internal/demo"
	"github.com/collie-io/collie/recipe/discovery"
)

const (
	base    = "/services" // the registry: base/<service>/<instance id>
	service = "orders"
)

func main() { demo.Main(run) }

func run(ctx context.Context, server string, out io.Writer) error {
	g, ctx := demo.NewGroup(ctx, server, out)
	defer g.Stop()

	// The resolver sends the ids of the live instances whenever they
	// change, so that each step below waits until the resolver has seen
	// the last one.
	views := make(chan []string)
	rc, err := g.Dial(ctx, "resolver")
	if err != nil {
		return err
	}
	g.Go("resolver", func() error { return resolve(ctx, rc, g.Logf, views) })
	live := map[string]bool{} // the instances started and not killed
	await := func() error {
		want := slices.Sorted(maps.Keys(live))
		for {
			select {
			case got := <-views:
				if slices.Equal(got, want) {
					return nil
				}
			case <-ctx.Done():
				return g.Err()
			}
		}
	}
	if err := await(); err != nil {
		return err
	}

	// start starts instance n, kill kills one (its session closes, its
	// node goes), and each waits until the resolver has seen the change.
	start := func(n int) error {
		id := fmt.Sprintf("orders-%d", n)
		c, err := g.Dial(ctx, id)
		if err != nil {
			return err
		}
		live[id] = true
		g.Go(id, func() error { return serve(ctx, c, id, fmt.Sprintf("10.0.0.%d", n), g.Logf) })
		return await()
	}
	kill := func(id string) error {
		g.Kill(id)
		delete(live, id)
		return await()
	}

	for n := 1; n <= 3; n++ {
		if err := start(n); err != nil {
			return err
		}
	}
	if err := kill("orders-2"); err != nil {
		return err
	}
	if err := start(4); err != nil {
		return err
	}
	return g.Stop()
}

// serve is an instance of the service at address: it registers, serves
// requests until ctx ends, and unregisters.
func serve(ctx context.Context, c *client.Client, id, address string, logf func(string, ...any)) error {
	// A Discovery keeps the instance registered: it writes the node again
	// if it is deleted, or if the session expires and a new one starts.
	d := discovery.New(c, base)
	port := 8080
	logf("%s: registering at %s:%d", id, address, port)
	err := d.Register(ctx, discovery.Instance{Name: service, ID: id, Address: address, Port: &port})
	if err != nil {
		return err
	}
	<-ctx.Done()
	// Close unregisters at once, rather than leave the node to the end of
	// the session.
	return d.Close(context.WithoutCancel(ctx))
}

// resolve follows the instances of the service and prints their
// addresses whenever they change, as a DNS server would answer for the
// name; it sends the instances' ids on views, until ctx ends.
// (discovery.NewProvider hands out one instance at a time from such a
// list, in turn or at random, for a client that sends requests itself.)
func resolve(ctx context.Context, c *client.Client, logf func(string, ...any), views chan<- []string) error {
	instances, err := discovery.New(c, base).Cache(ctx, service)
	if err != nil {
		return err
	}
	defer instances.Close()
	for {
		// Updates delivers the list as read at first, then after each
		// change; a reader that lags gets the latest list.
		var list []discovery.Instance
		select {
		case l, ok := <-instances.Updates():
			if !ok {
				return nil // the client closed
			}
			list = l
		case <-ctx.Done():
			return nil
		}
		var ids, addrs []string
		for _, inst := range list {
			ids = append(ids, inst.ID)
			addrs = append(addrs, fmt.Sprintf("%s:%d", inst.Address, *inst.Port))
		}
		if len(addrs) == 0 {
			addrs = []string{"(no instance)"}
		}
		logf("resolver: %s -> %s", service, strings.Join(addrs, " "))
		select {
		case views <- ids:
		case <-ctx.Done():
			return nil
		}
	}
}
