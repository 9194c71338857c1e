package barrier

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/recipe/internal/uuid"
	"github.com/collie-io/collie/recipe/internal/znode"
)

// readyName is the node a double barrier's members wait for in Enter, as
// Curator names it.
const readyName = "ready"

// retryDelay paces the requests of a member sent again after a connection
// loss.
const retryDelay = 50 * time.Millisecond

// ErrEntered is returned by Enter on a member that has entered and not left.
var ErrEntered = errors.New("barrier: already entered")

// ErrNotEntered is returned by Leave on a member that has not entered.
var ErrNotEntered = errors.New("barrier: not entered")

// ErrIDTaken says that another session's member has the id asked for.
var ErrIDTaken = errors.New("barrier: member id taken by another session")

// ErrMemberGone says that a member's node vanished while it waited in
// Enter: its session expired (and was renewed) or someone deleted the node.
// The member is not in the barrier; Enter again to rejoin.
var ErrMemberGone = errors.New("barrier: member node gone")

// DoubleBarrier is one member of a group that enters and leaves together.
// Its methods may be called from any goroutine; they run one at a time.
type DoubleBarrier struct {
	c    *client.Client
	path string
	size int
	id   string

	// turn admits one Enter or Leave at a time, and guards the fields
	// below.
	turn    chan struct{}
	entered bool   // Enter has succeeded and Leave has not run since
	token   []byte // the data of the member's node, telling it from another member's of the session with the same id
}

// NewDouble returns a member of the double barrier at path that releases
// Enter once size members are in, using c's session. id names the member's
// node; empty means a random UUID, as Curator does. Ids must be unique
// among the members and valid node names other than "ready".
func NewDouble(c *client.Client, path string, size int, id string) *DoubleBarrier {
	if id == "" {
		id = uuid.New()
	}
	return &DoubleBarrier{c: c, path: path, size: size, id: id, turn: make(chan struct{}, 1)}
}

// ID returns the member's id, the name of its node.
func (b *DoubleBarrier) ID() string { return b.id }

// Path returns the barrier path.
func (b *DoubleBarrier) Path() string { return b.path }

// Enter joins the barrier and waits until size members have joined, or ctx
// ends, or the session expires or the client closes. On failure it deletes
// the member's node before it returns (sending the delete again across
// connection losses, until the session ends if it must), so that a member
// that gave up is not counted.
func (b *DoubleBarrier) Enter(ctx context.Context) error {
	if err := b.take(ctx); err != nil {
		return err
	}
	defer b.give()
	if b.entered {
		return fmt.Errorf("enter barrier %s as %s: %w", b.path, b.id, ErrEntered)
	}
	if b.size < 1 {
		return fmt.Errorf("enter barrier %s: %w: size %d", b.path, client.ErrBadArguments, b.size)
	}
	node, err := childPath(b.path, b.id)
	if err == nil && b.id == readyName {
		err = fmt.Errorf("%w: %q is the barrier's own node", client.ErrInvalidPath, b.id)
	}
	if err != nil {
		return fmt.Errorf("enter barrier %s: %w", b.path, err)
	}
	b.token = []byte(rand.Text())
	if err := b.join(ctx, node); err != nil {
		b.quit(ctx, node)
		return fmt.Errorf("enter barrier %s as %s: %w", b.path, b.id, err)
	}
	if err := b.awaitReady(ctx); err != nil {
		b.quit(ctx, node)
		return fmt.Errorf("enter barrier %s as %s: %w", b.path, b.id, err)
	}
	b.entered = true
	return nil
}

// join creates the member's ephemeral node. A create whose reply was lost
// is sent again: a node with the member's id and token that this session
// owns is the earlier attempt's.
func (b *DoubleBarrier) join(ctx context.Context, node string) error {
	return client.Retry(ctx, client.RetryForever(retryDelay), func(ctx context.Context) error {
		err := znode.Create(ctx, b.c, node, b.token, client.ModeEphemeral)
		if !errors.Is(err, client.ErrNodeExists) {
			return err
		}
		mine, err := b.owns(ctx, node)
		if err == nil && !mine {
			err = ErrIDTaken
		}
		return err
	})
}

// awaitReady waits until "ready" exists, creating it once the member sees
// size members. It watches "ready" only, and only while it does not exist.
func (b *DoubleBarrier) awaitReady(ctx context.Context) error {
	ready := proto.Join(b.path, readyName)
	for {
		children, _, err := b.c.Children(ctx, b.path)
		if err != nil {
			return err
		}
		if !slices.Contains(children, b.id) {
			return ErrMemberGone
		}
		if len(members(children)) >= b.size {
			_, _, err := b.c.Create(ctx, ready, nil, client.ModePersistent, nil)
			if err != nil && !errors.Is(err, client.ErrNodeExists) {
				return err
			}
			return nil
		}
		exists, _, created, err := b.c.ExistsW(ctx, ready)
		if err != nil {
			return err
		}
		if exists {
			// Created since the children were read: the watch just set
			// would stay on "ready" until it changes.
			b.unwatch(ctx, ready)
			return nil
		}
		select {
		case ev := <-created:
			switch ev.Type {
			case client.EventNotWatching:
				return ev.Err
			case client.EventNodeCreated:
				// Returning now rather than checking again leaves no watch
				// behind on "ready".
				return nil
			}
		case <-ctx.Done():
			b.unwatch(ctx, ready)
			return ctx.Err()
		}
	}
}

// Leave leaves the barrier and waits until every member has left, or ctx
// ends, or the session expires or the client closes. Whatever the outcome,
// the member's node is deleted by the time Leave returns (but for a
// connection loss that outlasts the session, which deletes it anyway): the
// member has left, and only its wait for the others may have been cut
// short.
func (b *DoubleBarrier) Leave(ctx context.Context) error {
	if err := b.take(ctx); err != nil {
		return err
	}
	defer b.give()
	if !b.entered {
		return fmt.Errorf("leave barrier %s as %s: %w", b.path, b.id, ErrNotEntered)
	}
	b.entered = false
	node := proto.Join(b.path, b.id)
	if err := b.leave(ctx, node); err != nil {
		b.quit(ctx, node)
		return fmt.Errorf("leave barrier %s as %s: %w", b.path, b.id, err)
	}
	return nil
}

// leave is ZooKeeper's double-barrier leave: the lowest member waits on the
// highest, every other one deletes its node and waits on the lowest, until
// no member is left.
func (b *DoubleBarrier) leave(ctx context.Context, node string) (err error) {
	var watched string // the node last watched
	defer func() {
		if err != nil && watched != "" {
			b.unwatch(ctx, proto.Join(b.path, watched))
		}
	}()
	for {
		children, _, err := b.c.Children(ctx, b.path)
		if err != nil && !errors.Is(err, client.ErrNoNode) {
			return err
		}
		names := members(children)
		if len(names) == 0 {
			break
		}
		slices.Sort(names)
		// A member whose node is gone already (i < 0) waits, like every
		// other leaver, for the lowest.
		i := slices.Index(names, b.id)
		if i == 0 && len(names) == 1 {
			if err := deleteNode(ctx, b.c, node); err != nil {
				return err
			}
			continue
		}
		watched = names[0]
		if i == 0 {
			watched = names[len(names)-1]
		}
		exists, _, changed, err := b.c.ExistsW(ctx, proto.Join(b.path, watched))
		if err != nil {
			return err
		}
		if i > 0 {
			// After the watch is set, so that the lowest cannot be gone
			// unseen in between.
			if err := deleteNode(ctx, b.c, node); err != nil {
				return err
			}
		}
		if !exists {
			continue
		}
		select {
		case ev := <-changed:
			if ev.Type == client.EventNotWatching {
				return ev.Err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Every leaver deletes "ready", the first one successfully.
	if err := b.c.Delete(ctx, proto.Join(b.path, readyName), client.AnyVersion); !errors.Is(err, client.ErrNoNode) {
		return err
	}
	return nil
}

// unwatch removes the watch that a wait cut short has left on node, so
// that a member that gave up leaves nothing behind. It is best effort: a
// watch that cannot be removed goes with the session, or fires unread.
// Should another member on this client watch node too, it loses its watch
// as well, sees it removed, and looks again.
func (b *DoubleBarrier) unwatch(ctx context.Context, node string) {
	b.c.RemoveWatches(context.WithoutCancel(ctx), node, client.WatchData)
}

// quit deletes the member's node if this session owns it, after Enter or
// Leave failed. It runs to its end even when ctx has ended, since the
// member must not stay counted; it gives up when the session ends, which
// deletes the node.
func (b *DoubleBarrier) quit(ctx context.Context, node string) {
	ctx = context.WithoutCancel(ctx)
	client.Retry(ctx, client.RetryForever(retryDelay), func(ctx context.Context) error {
		if mine, err := b.owns(ctx, node); err != nil || !mine {
			return err
		}
		return deleteNode(ctx, b.c, node)
	})
}

// owns reports whether node is this member's: an ephemeral node of the
// client's current session holding the member's token.
func (b *DoubleBarrier) owns(ctx context.Context, node string) (bool, error) {
	data, stat, err := b.c.Get(ctx, node)
	if errors.Is(err, client.ErrNoNode) {
		return false, nil
	}
	return err == nil && stat.EphemeralOwner == b.c.SessionID() && bytes.Equal(data, b.token), err
}

func (b *DoubleBarrier) take(ctx context.Context) error {
	select {
	case b.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("barrier %s: %w", b.path, ctx.Err())
	}
}

func (b *DoubleBarrier) give() { <-b.turn }

// deleteNode deletes node, sending the delete again across connection
// losses. A node already gone counts as deleted.
func deleteNode(ctx context.Context, c *client.Client, node string) error {
	err := client.Retry(ctx, client.RetryForever(retryDelay), func(ctx context.Context) error {
		return c.Delete(ctx, node, client.AnyVersion)
	})
	if errors.Is(err, client.ErrNoNode) {
		return nil
	}
	return err
}

// members returns the names of the member nodes among a barrier's children.
func members(children []string) []string {
	return slices.DeleteFunc(slices.Clone(children), func(name string) bool { return name == readyName })
}
