// Unique-ids shows a naming service: ids unique across every process,
// handed out by the ensemble, with a prefix that says what each id names
// (order-…, invoice-…, shipment-…).
//
// recipe/counter's IDs creates a sequential znode under /ids, takes the
// sequence number the server appended to its name as the id, and deletes
// the node again. The server numbers the children of /ids with one counter
// that only grows, so ids are unique across all processes and all prefixes,
// and increase in the order they are handed out. /ids must never be
// deleted, or the numbering would start again: run the demo twice and the
// second run goes on where the first stopped.
//
// Start a server (go run ./cmd/collie server), then:
//
//	go run ./examples/unique-ids -server 127.0.0.1:2181
//
// The workers run in one process, each with a session of its own, as
// separate processes would.
package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/collie-io/collie/examples/internal/demo"
	"github.com/collie-io/collie/recipe/counter"
)

const (
	idsPath      = "/ids"
	idsPerWorker = 5
	idFormat     = "%s-%08d" // the prefix, then the id
)

// workers says what each worker names: its ids' prefix.
var workers = []string{"order", "invoice", "shipment"}

func main() { demo.Main(run) }

func run(ctx context.Context, server string, out io.Writer) error {
	g, ctx := demo.NewGroup(ctx, server, out)
	defer g.Stop()

	// The workers run at once, each sending its ids on minted.
	minted := make(chan int64)
	for i, prefix := range workers {
		name := fmt.Sprintf("worker-%d", i+1)
		c, err := g.Dial(ctx, name)
		if err != nil {
			return err
		}
		ids := counter.NewIDs(c, idsPath, prefix)
		g.Go(name, func() error {
			for range idsPerWorker {
				id, err := ids.Next(ctx)
				if err != nil {
					return err
				}
				g.Logf("%s: "+idFormat, name, prefix, id)
				select {
				case minted <- id:
				case <-ctx.Done():
					return nil
				}
			}
			return nil
		})
	}

	seen := map[int64]bool{}
	for range len(workers) * idsPerWorker {
		select {
		case id := <-minted:
			if seen[id] {
				return fmt.Errorf("id %d handed out twice", id)
			}
			seen[id] = true
		case <-ctx.Done():
			return g.Err()
		}
	}
	all := slices.Sorted(maps.Keys(seen))
	g.Logf("%d ids from %d sessions, all different, from %d to %d", len(all), len(workers), all[0], all[len(all)-1])
	return g.Stop()
}
