// Package barrier holds processes back until a condition is met, built on
// the client package and laid out as Apache Curator's DistributedBarrier and
// DistributedDoubleBarrier, so that Curator and Go processes can share one
// barrier.
//
// # Barrier
//
// A Barrier is one node: while it exists, Wait blocks; Remove releases
// every waiter at once. Set creates it (its missing parents as containers,
// which the server removes once they are empty), as a persistent node: a
// barrier outlives the process that set it.
//
//	b := barrier.New(c, "/app/barriers/deploy")
//	err := b.Set(ctx)    // the coordinator closes the gate
//	err = b.Wait(ctx)    // workers block until it opens...
//	err = b.Remove(ctx)  // ...when the coordinator removes the node
//
// A waiter sets one exists watch on the node: Remove wakes every waiter,
// which is the point of a barrier.
//
// # DoubleBarrier
//
// A DoubleBarrier lets a group of size members start together and finish
// together: Enter returns once size members have entered, Leave once every
// member has left.
//
//	b := barrier.NewDouble(c, "/app/barriers/round-7", 5, "") // 5 members, a random id
//	if err := b.Enter(ctx); err != nil { ... }
//	// ...compute with the other four...
//	if err := b.Leave(ctx); err != nil { ... }
//
// Layout (Curator's): each member creates an ephemeral node named by its id
// (a random UUID unless given) under the barrier path, whose missing
// parents are created as containers. A member that sees size members
// creates the persistent node "ready" beside them; members waiting in Enter
// watch "ready" and nothing else. size is a threshold, not a limit: a member
// that comes once "ready" exists enters at once.
//
// Leave follows ZooKeeper's recipe, so that a departure wakes at most one
// member until the last one goes: members are ordered by name; the lowest
// keeps its node and watches the highest; every other member deletes its
// node and watches the lowest. The lowest deletes its node once it is alone,
// which releases everybody, and each leaver deletes "ready" on its way out.
// At any moment a leaver holds one watch, on one node.
//
// A path serves one round at a time: a member that enters again while
// others of the previous round are still leaving keeps them waiting. Use a
// new path per round, or wait until Leave has returned everywhere.
//
// Ephemeral members vanish with their session: a crashed member no longer
// counts, and no longer holds the others in Leave.
package barrier

import (
	"context"
	"errors"
	"fmt"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/recipe/internal/znode"
)

// Barrier is a gate on one node: closed while the node exists.
type Barrier struct {
	c    *client.Client
	path string
}

// New returns the barrier whose node is path, using c's session.
func New(c *client.Client, path string) *Barrier {
	return &Barrier{c: c, path: path}
}

// Path returns the barrier node's path.
func (b *Barrier) Path() string { return b.path }

// Set closes the barrier: it creates the node, and its missing parents as
// containers. A barrier already set stays as it is.
func (b *Barrier) Set(ctx context.Context) error {
	err := znode.Create(ctx, b.c, b.path, nil, client.ModePersistent)
	if err != nil && !errors.Is(err, client.ErrNodeExists) {
		return fmt.Errorf("set barrier %s: %w", b.path, err)
	}
	return nil
}

// Remove opens the barrier: it deletes the node, releasing every waiter.
// A barrier already open stays open.
func (b *Barrier) Remove(ctx context.Context) error {
	err := b.c.Delete(ctx, b.path, client.AnyVersion)
	if err != nil && !errors.Is(err, client.ErrNoNode) {
		return fmt.Errorf("remove barrier %s: %w", b.path, err)
	}
	return nil
}

// Wait blocks until the barrier node does not exist, or ctx ends, or the
// session expires or the client closes. It returns at once when the
// barrier is not set.
func (b *Barrier) Wait(ctx context.Context) error {
	for {
		set, _, changed, err := b.c.ExistsW(ctx, b.path)
		if err != nil {
			return fmt.Errorf("wait on barrier %s: %w", b.path, err)
		}
		if !set {
			return nil
		}
		select {
		case ev := <-changed:
			if ev.Type == client.EventNotWatching {
				return fmt.Errorf("wait on barrier %s: %w", b.path, ev.Err)
			}
		case <-ctx.Done():
			return fmt.Errorf("wait on barrier %s: %w", b.path, ctx.Err())
		}
	}
}

// childPath returns the path of name under parent, checked as the server
// would check it.
func childPath(parent, name string) (string, error) {
	p := proto.Join(parent, name)
	if err := proto.ValidatePath(p); err != nil {
		return "", err
	}
	if proto.Parent(p) != parent {
		return "", fmt.Errorf("%w %q: a member id is one node name", client.ErrInvalidPath, name)
	}
	return p, nil
}
