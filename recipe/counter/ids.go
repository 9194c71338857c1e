package counter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/recipe/internal/znode"
)

// ErrExhausted says that the sequence numbers of an IDs path have run out:
// the server numbers a path's children with a 32-bit counter.
var ErrExhausted = errors.New("counter: ids exhausted")

// IDs hands out ids unique across every process that uses the same path: a
// naming service.
//
// Next creates a persistent sequential node "<prefix>-<sequence>" under the
// path (a protected create, so that a create whose reply was lost is found
// rather than made twice), returns the server's sequence number as the id,
// and deletes the node: the path stays empty, and uniqueness rests on the
// server's sequence counter for the path (its cversion), which only grows.
// Every create under the path advances it, so ids increase in the order
// they are handed out, are consecutive while nothing else creates nodes
// there, and are unique across all prefixes under one path (a prefix says
// what the id is for; it does not start a numbering of its own). A node
// left behind by a process that died between the create and the delete
// does no harm.
//
// The path must never be deleted, which would start the numbering again:
// Next creates it as a persistent node (its missing parents as
// containers), and nothing else may create it as a container. A path hands
// out 2^31 ids (about two thousand million), then Next fails with
// ErrExhausted.
//
//	orders := counter.NewIDs(c, "/app/ids", "order")
//	id, err := orders.Next(ctx) // 0, 1, 2... across all processes
type IDs struct {
	c      *client.Client
	path   string
	prefix string

	ready atomic.Bool // the path exists
}

// NewIDs returns the ids of path whose nodes are named after prefix, using
// c's session.
func NewIDs(c *client.Client, path, prefix string) *IDs {
	return &IDs{c: c, path: path, prefix: prefix}
}

// Path returns the path whose children the ids are numbered by.
func (g *IDs) Path() string { return g.path }

// Next returns a new id.
func (g *IDs) Next(ctx context.Context) (int64, error) {
	id, err := g.next(ctx)
	if err != nil {
		return 0, fmt.Errorf("next id of %s/%s: %w", g.path, g.prefix, err)
	}
	return id, nil
}

func (g *IDs) next(ctx context.Context) (int64, error) {
	if strings.Contains(g.prefix, "/") {
		return 0, fmt.Errorf("%w: prefix %q holds a /", client.ErrInvalidPath, g.prefix)
	}
	if !g.ready.Load() {
		err := znode.Create(ctx, g.c, g.path, nil, client.ModePersistent)
		if err != nil && !errors.Is(err, client.ErrNodeExists) {
			return 0, err
		}
		g.ready.Store(true)
	}
	node, _, err := g.c.CreateProtected(ctx, proto.Join(g.path, g.prefix+"-"), nil, client.ModePersistentSequential, nil)
	if errors.Is(err, client.ErrNoNode) {
		// Deleted since: create it on the next call. (Its numbering starts
		// again, which its doc forbids.)
		g.ready.Store(false)
	}
	if err != nil {
		return 0, err
	}
	// The node has done its work once created; delete it even when ctx
	// has ended meanwhile.
	client.Retry(context.WithoutCancel(ctx), client.RetryForever(retryDelay), func(ctx context.Context) error {
		err := g.c.Delete(ctx, node, client.AnyVersion)
		if errors.Is(err, client.ErrNoNode) {
			return nil
		}
		return err
	})
	name, _ := client.IsProtected(proto.Base(node))
	id, err := strconv.ParseInt(strings.TrimPrefix(name, g.prefix+"-"), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("node %s has no sequence number: %w", node, err)
	}
	if id < 0 {
		return 0, ErrExhausted
	}
	return id, nil
}
