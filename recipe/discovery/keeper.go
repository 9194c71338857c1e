package discovery

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/internal/znode"
)

// keeper keeps one node in place for its owner, a Membership or a
// registered instance, as Curator's PersistentNode and ServiceDiscovery
// do: it writes the node when the owner starts, replacing one in its place;
// writes it again when it is deleted, or when the session that owned it has
// expired and the client has a new one; and removes it when the owner
// stops.
//
// One goroutine, started by startKeeper and ended by remove,
// watches the node (ExistsW) and the client's state. Every write to the
// node holds mu, so that a data change (set) and a write again never
// interleave: the node is always written with the latest data.
type keeper struct {
	c    *client.Client
	path string // the node's path; for a sequential mode, the prefix of its name
	mode client.CreateMode

	mu    sync.Mutex // guards the fields below; held across writes to the node
	data  []byte
	node  string // the node as created
	owner int64  // the session that created the node; 0 for a persistent one

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// startKeeper writes the node, replacing a node in its place (deleted then
// created, so that watchers see the change, as Curator does), and keeps it
// in place until remove.
func startKeeper(ctx context.Context, c *client.Client, nodePath string, mode client.CreateMode, data []byte) (*keeper, error) {
	k := &keeper{c: c, path: nodePath, mode: mode, data: data}
	// Subscribed before the first write, so that no new session can go
	// unnoticed between the two.
	states := c.StateChanges()
	if err := k.replace(ctx); err != nil {
		states.Close()
		return nil, err
	}
	kctx, stop := context.WithCancel(context.Background())
	k.stop = stop
	k.wg.Go(func() { k.run(kctx, states) })
	return k, nil
}

// replace creates the node, deleting one in its place first.
func (k *keeper) replace(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for attempt := 1; ; attempt++ {
		err := k.create(ctx)
		if !errors.Is(err, client.ErrNodeExists) || attempt == 3 {
			return err
		}
		if err := k.c.Delete(ctx, k.path, client.AnyVersion); err != nil && !errors.Is(err, client.ErrNoNode) {
			return err
		}
	}
}

// create creates the node with the latest data, and its missing ancestors
// as containers. k.mu is held.
func (k *keeper) create(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		node, stat, err := k.c.Create(ctx, k.path, k.data, k.mode, nil)
		if err == nil {
			k.node, k.owner = node, stat.EphemeralOwner
			return nil
		}
		// A missing ancestor, or one the server reaped as an empty
		// container meanwhile: make the ancestors, then try again.
		if !errors.Is(err, client.ErrNoNode) || attempt == 3 {
			return err
		}
		if err := znode.CreateContainers(ctx, k.c, path.Dir(k.path)); err != nil {
			return err
		}
	}
}

// run keeps the node in place until ctx ends or the client closes.
func (k *keeper) run(ctx context.Context, states *client.Stream[client.State]) {
	defer states.Close()
	if !skipSubscriptionState(ctx, states) {
		return
	}
	var p pacer
	for {
		watch, err := k.check(ctx)
		retry, ok := p.after(ctx, err)
		if !ok {
			return
		}
		if watch == nil && err == nil {
			continue // written again: check it, with a new watch
		}
		if !awaitChange(ctx, states, watch, retry) {
			return
		}
	}
}

// check looks at the node and writes it again when it is missing or was
// left by an expired session of this keeper. It returns a watch on the
// node when the node needs nothing (it is in place, or another session's
// node holds its path: that one is not fought over, but waited for), and
// neither watch nor error when it has written the node.
func (k *keeper) check(ctx context.Context) (<-chan client.Event, error) {
	k.mu.Lock()
	node, owner := k.node, k.owner
	k.mu.Unlock()
	ok, stat, watch, err := k.c.ExistsW(ctx, node)
	switch {
	case err != nil:
		return nil, err
	case ok && k.mine(stat):
		// In place. Its owner is known now even if the reply to its
		// create was lost.
		k.mu.Lock()
		k.owner = stat.EphemeralOwner
		k.mu.Unlock()
		return watch, nil
	case ok && stat.EphemeralOwner != owner:
		return watch, nil // someone else's
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if ok {
		// Left by an expired session of ours, which the server has not
		// expired yet: a new session's node takes its place.
		err := k.c.Delete(ctx, node, stat.Version)
		if err != nil && !errors.Is(err, client.ErrNoNode) && !errors.Is(err, client.ErrBadVersion) {
			return nil, err
		}
	}
	err = k.create(ctx) // a sequential node gets a new name
	if errors.Is(err, client.ErrNodeExists) {
		return nil, nil // someone else's came first: look again
	}
	return nil, err
}

// mine reports whether a node at the keeper's path is the one it wrote in
// the current session: persistent, if the keeper's is, or ephemeral of the
// current session (this keeper's or a create of it whose reply was lost).
func (k *keeper) mine(stat client.Stat) bool {
	if !k.mode.Ephemeral() {
		return stat.EphemeralOwner == 0
	}
	sid := k.c.SessionID()
	return sid != 0 && stat.EphemeralOwner == sid
}

// set changes the node's data, now and for every later write.
func (k *keeper) set(ctx context.Context, data []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.data = data
	if _, err := k.c.Set(ctx, k.node, data, client.AnyVersion); err != nil && !errors.Is(err, client.ErrNoNode) {
		return err
	}
	// A missing node is written again, with data, by the keeper.
	return nil
}

// remove stops keeping the node and deletes it, if it is still the one
// written here, retrying across connection losses until ctx ends. A node
// of an expired session is gone already.
func (k *keeper) remove(ctx context.Context) error {
	k.stop()
	k.wg.Wait()
	k.mu.Lock()
	defer k.mu.Unlock()
	err := client.Retry(ctx, retryPolicy, func(ctx context.Context) error {
		ok, stat, err := k.c.Exists(ctx, k.node)
		if err != nil || !ok || (stat.EphemeralOwner != k.owner && !k.mine(stat)) {
			return err // gone, or someone else's
		}
		err = k.c.Delete(ctx, k.node, client.AnyVersion)
		if errors.Is(err, client.ErrNoNode) {
			return nil
		}
		return err
	})
	if errors.Is(err, client.ErrSessionExpired) && k.owner != 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", k.node, err)
	}
	return nil
}
