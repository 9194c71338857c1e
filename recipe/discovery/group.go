package discovery

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/cache"
	"github.com/collie-io/collie/recipe/internal/znode"
)

// Member is a process's membership of a group: an ephemeral node
// group/name holding the member's data. The node goes with the session;
// when the session comes back without it, or a new session begins after
// expiry, the Member writes it again, until Leave.
type Member struct {
	c      *client.Client
	path   string
	data   []byte
	keeper *keeper
}

// Join adds name to group (created, with its missing parents, as
// containers), holding data. A node of the same name already there is
// replaced, as a process restarting within its old session's timeout
// expects.
func Join(ctx context.Context, c *client.Client, group, name string, data []byte) (*Member, error) {
	m := &Member{c: c, path: group + "/" + name, data: data}
	if err := znode.CreateContainers(ctx, c, group); err != nil {
		return nil, fmt.Errorf("discovery: join %s: %w", m.path, err)
	}
	if err := m.write(ctx); err != nil {
		return nil, err
	}
	m.keeper = startKeeper(c, m.restore)
	return m, nil
}

// Path returns the member's node.
func (m *Member) Path() string { return m.path }

func (m *Member) write(ctx context.Context) error {
	for {
		_, _, err := m.c.Create(ctx, m.path, m.data, client.ModeEphemeral, nil)
		if !errors.Is(err, client.ErrNodeExists) {
			if err != nil {
				return fmt.Errorf("discovery: join %s: %w", m.path, err)
			}
			return nil
		}
		if err := m.c.Delete(ctx, m.path, client.AnyVersion); err != nil && !errors.Is(err, client.ErrNoNode) {
			return fmt.Errorf("discovery: join %s: %w", m.path, err)
		}
	}
}

// restore writes the node again if the session lost it.
func (m *Member) restore(ctx context.Context) error {
	ok, _, err := m.c.Exists(ctx, m.path)
	if err != nil || ok {
		return err
	}
	if err := znode.CreateContainers(ctx, m.c, path.Dir(m.path)); err != nil {
		return err
	}
	return m.write(ctx)
}

// Leave stops writing the node again and removes it.
func (m *Member) Leave(ctx context.Context) error {
	m.keeper.stop()
	err := m.c.Delete(ctx, m.path, client.AnyVersion)
	if err != nil && !errors.Is(err, client.ErrNoNode) {
		return fmt.Errorf("discovery: leave %s: %w", m.path, err)
	}
	return nil
}

// Group is a live list of a group's members.
type Group struct{ l *live }

// WatchGroup starts a live list of group's members. The group need not
// exist yet.
func WatchGroup(ctx context.Context, c *client.Client, group string) (*Group, error) {
	l, err := startLive(ctx, c, group)
	if err != nil {
		return nil, fmt.Errorf("discovery: watch group %s: %w", group, err)
	}
	return &Group{l}, nil
}

// Members returns the members' names and data, sorted by name.
func (g *Group) Members() []cache.Node { return g.l.children() }

// Names returns the members' names, sorted.
func (g *Group) Names() []string {
	var out []string
	for _, n := range g.l.children() {
		out = append(out, path.Base(n.Path))
	}
	return out
}

// Changed is signalled (without waiting, signals coalescing) after each
// change of the list.
func (g *Group) Changed() <-chan struct{} { return g.l.changed }

// Close stops the list.
func (g *Group) Close() { g.l.close() }

// live is a cache of a node's children that signals each change.
type live struct {
	root    string
	c       *cache.Cache
	changed chan struct{}
	done    chan struct{}
}

func startLive(ctx context.Context, c *client.Client, root string) (*live, error) {
	cc := cache.New(c, root, cache.Children)
	if err := cc.Start(ctx); err != nil {
		return nil, err
	}
	l := &live{root: root, c: cc, changed: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for range cc.Events() {
			select {
			case l.changed <- struct{}{}:
			default:
			}
		}
	}()
	return l, nil
}

// children returns the cached children, sorted by path.
func (l *live) children() []cache.Node {
	var out []cache.Node
	for _, n := range l.c.Nodes() {
		if n.Path != l.root {
			out = append(out, n)
		}
	}
	return out
}

func (l *live) close() {
	l.c.Close()
	<-l.done
}
