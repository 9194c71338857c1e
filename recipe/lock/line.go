package lock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/recipe/internal/znode"
)

// The names Curator gives lock nodes, before the protection prefix's end
// and the sequence number: InterProcessMutex's, and the read and write
// nodes of InterProcessReadWriteLock (of one length, which Curator's
// sorting relies on).
const (
	mutexName = "lock-"
	readName  = "__READ__"
	writeName = "__WRIT__"
)

// retryDelay paces the deletes of a release sent again after a connection
// loss.
const retryDelay = 50 * time.Millisecond

// line is the queue of contenders on one lock path, as Curator's
// LockInternals with a LockInternalsDriver: each contender creates an
// ephemeral sequential node named after name, and holds the lock once no
// node before its own blocks it.
type line struct {
	c    *client.Client
	path string
	name string
	data []byte // the data of each node created, Curator's lock node bytes
	// key is what names are ordered by: the sequence number that follows
	// the name, however Curator finds it for this kind of lock.
	key func(name string) string
	// blocker returns the index, in sorted, of the node that the node at
	// i waits for, or -1 when the node at i holds the lock.
	blocker func(sorted []string, i int) int
	// contends reports whether a child of path is in line; nil means every
	// child is, as Curator counts them. Kazoo's Lock ignores children that
	// do not match its pattern, and so must a lock that shares its line.
	contends func(name string) bool
}

// predecessor is the blocker of an exclusive lock, Curator's
// StandardLockInternalsDriver with one lease: the node just before.
func predecessor(_ []string, i int) int { return i - 1 }

// acquire creates a node and waits until it holds the lock. A node that
// vanishes while waiting (the session expired and the client renewed it)
// is replaced by a new one at the end of the line, as Curator does. On
// failure no node of its own stays behind (see abandon).
func (l *line) acquire(ctx context.Context) (string, client.Stat, error) {
	for {
		node, stat, err := l.create(ctx)
		if err != nil {
			return "", client.Stat{}, err
		}
		held, err := l.waitTurn(ctx, node)
		if held {
			return node, stat, nil
		}
		abandon(l.c, node)
		if err != nil {
			return "", client.Stat{}, err
		}
	}
}

// create makes a contender's node, creating missing parents as
// containers. The create runs to its end even when ctx ends meanwhile: a
// protected create whose name the caller never learns could otherwise
// stay behind, so a late result is abandoned instead.
func (l *line) create(ctx context.Context) (string, client.Stat, error) {
	type result struct {
		node string
		stat client.Stat
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.node, r.stat, r.err = createNode(context.WithoutCancel(ctx), l.c, l.path, l.name, l.data)
		done <- r
	}()
	select {
	case r := <-done:
		return r.node, r.stat, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil {
				abandon(l.c, r.node)
			}
		}()
		return "", client.Stat{}, ctx.Err()
	}
}

// createNode creates a protected ephemeral sequential node under path
// named after name, holding data, creating path as Curator's
// creatingParentContainersIfNeeded does when it is missing.
func createNode(ctx context.Context, c *client.Client, path, name string, data []byte) (string, client.Stat, error) {
	prefix := proto.Join(path, name)
	for {
		node, stat, err := c.CreateProtected(ctx, prefix, data, client.ModeEphemeralSequential, nil)
		if !errors.Is(err, client.ErrNoNode) {
			return node, stat, err
		}
		if err := znode.CreateContainers(ctx, c, path); err != nil {
			return "", client.Stat{}, err
		}
	}
}

// waitTurn waits until no node blocks node. It reports false with a nil
// error when node has vanished, so that the caller makes another.
func (l *line) waitTurn(ctx context.Context, node string) (bool, error) {
	name := baseName(node)
	for {
		children, _, err := l.c.Children(ctx, l.path)
		if err != nil {
			return false, err
		}
		children = l.sorted(children)
		i := slices.Index(children, name)
		if i < 0 {
			return false, nil
		}
		b := l.blocker(children, i)
		if b < 0 {
			return true, nil
		}
		// Get rather than Exists: Get sets no watch on a node already gone,
		// so no watch outlives its use.
		_, _, changed, err := l.c.GetW(ctx, proto.Join(l.path, children[b]))
		if errors.Is(err, client.ErrNoNode) {
			continue
		}
		if err != nil {
			return false, err
		}
		select {
		case ev := <-changed:
			if ev.Type == client.EventNotWatching {
				return false, ev.Err
			}
			if hook := wokenHook.Load(); hook != nil {
				(*hook)()
			}
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// wokenHook, when set by a test, is called every time a watch wakes a
// contender waiting in line.
var wokenHook atomic.Pointer[func()]

// participants lists the nodes in line, in line order, with their data
// and tokens, as Curator's getParticipantNodes lists their paths. A node
// that goes between the listing and the reading of its data is left out.
func (l *line) participants(ctx context.Context) ([]Participant, error) {
	names, _, err := l.c.Children(ctx, l.path)
	if errors.Is(err, client.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("participants of %s: %w", l.path, err)
	}
	if names = l.sorted(names); len(names) == 0 {
		return nil, nil
	}
	reads := make([]client.Op, len(names))
	for i, n := range names {
		reads[i] = client.GetOp(proto.Join(l.path, n))
	}
	// One round trip for every node, rather than one per participant.
	results, err := l.c.MultiRead(ctx, reads...)
	if err != nil {
		return nil, fmt.Errorf("participants of %s: %w", l.path, err)
	}
	out := make([]Participant, 0, len(names))
	for i, r := range results {
		switch {
		case errors.Is(r.Err, client.ErrNoNode):
			continue
		case r.Err != nil:
			return nil, fmt.Errorf("participant %s: %w", reads[i].Path(), r.Err)
		}
		out = append(out, Participant{
			Node:  reads[i].Path(),
			Data:  r.Data,
			Token: r.Stat.Czxid,
			Read:  strings.Contains(names[i], readName),
		})
	}
	return out, nil
}

// Participant is one node in line on a lock, or one lease of a semaphore.
type Participant struct {
	// Node is the node's path.
	Node string
	// Data is the node's data, as WithData set it.
	Data []byte
	// Token is the node's fencing token, the zxid that created it.
	Token int64
	// Read says the node is a reader's, of an RWLock.
	Read bool
}

// abandon deletes a node that its creator gave up on, without waiting:
// across a connection loss that may take until the connection is back,
// and it ends when the session does, which deletes the node anyway.
func abandon(c *client.Client, node string) {
	go deleteNode(context.Background(), c, node)
}

// release deletes node as Curator's guaranteed delete does: it sends the
// delete again across connection losses until ctx ends, and then goes on
// in the background until the delete succeeds or the session ends, so
// that a delete lost with a connection never leaves the node, and the lock
// it stands for, behind. The error wraps ErrReleasePending when the
// delete went on in the background; another error says the server refused
// the delete, and the node stays.
func release(ctx context.Context, c *client.Client, node string) error {
	err := deleteNode(ctx, c, node)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		abandon(c, node)
		return fmt.Errorf("%w: %w", ErrReleasePending, err)
	}
	return err
}

// refused reports whether err, from a release or an Unlock, is a failure
// rather than a release that goes on in the background: the server refused
// the delete, and the node stays, or there was nothing to release.
func refused(err error) bool { return err != nil && !errors.Is(err, ErrReleasePending) }

// deleteNode deletes node, sending the delete again across connection
// losses. A node already gone, with its session or by an earlier attempt,
// counts as deleted.
func deleteNode(ctx context.Context, c *client.Client, node string) error {
	err := client.Retry(ctx, client.RetryForever(retryDelay), func(ctx context.Context) error {
		return c.Delete(ctx, node, client.AnyVersion)
	})
	if err == nil || errors.Is(err, client.ErrNoNode) || errors.Is(err, client.ErrSessionExpired) || errors.Is(err, client.ErrClosed) {
		return nil
	}
	return err
}

// sorted returns the children of path that are in line, in line order,
// reusing children's storage.
func (l *line) sorted(children []string) []string {
	if l.contends != nil {
		children = slices.DeleteFunc(children, func(name string) bool { return !l.contends(name) })
	}
	sortLine(children, l.key)
	return children
}

// sortLine orders node names by key, keeping the server's order among
// equal keys, as Curator's LockInternals.getSortedChildren does.
func sortLine(names []string, key func(string) string) {
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(key(a), key(b)) })
}

// after returns a key function that orders names by what follows the last
// occurrence of marker, Curator's standardFixForSorting: the protection
// prefix does not count, and a name without marker sorts by the whole name.
func after(marker string) func(string) string {
	return func(name string) string {
		if i := strings.LastIndex(name, marker); i >= 0 {
			return name[i+len(marker):]
		}
		return name
	}
}

// baseName returns the last element of a node's path.
func baseName(node string) string { return node[strings.LastIndexByte(node, '/')+1:] }
