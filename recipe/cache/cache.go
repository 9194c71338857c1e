package cache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collie-io/collie/client"
)

// Scope says which nodes a Cache follows.
type Scope int

const (
	// Tree follows the root and every node below it.
	Tree Scope = iota
	// Children follows the root and its direct children.
	Children
	// Single follows the root alone.
	Single
)

// Node is a cached znode: its path, data and Stat as last read.
type Node struct {
	Path string
	Data []byte
	Stat client.Stat
}

// EventType says what an Event reports.
type EventType int

const (
	// Created: a node entered the cache (at Start, or created since).
	Created EventType = iota + 1
	// Changed: a node's data changed (its mzxid moved).
	Changed
	// Deleted: a node left the cache.
	Deleted
	// Initialized: Start's first reading is complete; sent once.
	Initialized
)

func (t EventType) String() string {
	switch t {
	case Created:
		return "Created"
	case Changed:
		return "Changed"
	case Deleted:
		return "Deleted"
	case Initialized:
		return "Initialized"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is a change of the cache. Node is the node's new value (nil for
// Deleted and Initialized); Old is the value the cache held before (nil
// for Created and Initialized).
type Event struct {
	Type EventType
	Path string
	Node *Node
	Old  *Node
}

// retryDelay paces the attempts to set the watch again after the session
// came back, while the server refuses or the connection flaps.
const retryDelay = 100 * time.Millisecond

// Cache is a local copy of the nodes of one scope, kept in sync through a
// persistent watch. It is safe for concurrent use.
type Cache struct {
	c     *client.Client
	root  string
	scope Scope

	mu        sync.RWMutex
	nodes     map[string]*Node
	connected bool
	started   bool
	running   bool // run was started: Close waits for done

	events queue
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a cache of the nodes of scope at root, using c's session.
// It reads nothing until Start.
func New(c *client.Client, root string, scope Scope) *Cache {
	ctx, cancel := context.WithCancel(context.Background())
	cc := &Cache{c: c, root: root, scope: scope, nodes: map[string]*Node{}, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	cc.events.init()
	return cc
}

// Start sets the watch, reads the scope, queues a Created event for each
// node found and then Initialized, and keeps the cache up to date from
// then on, until Close. It fails, leaving nothing running, if the first
// reading fails or ctx ends first. The root need not exist.
func (c *Cache) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("cache: already started")
	}
	c.started = true
	c.mu.Unlock()
	w, err := c.watch(ctx)
	if err != nil {
		c.Close()
		return err
	}
	if err := c.resync(ctx); err != nil {
		w.Close()
		c.Close()
		return err
	}
	c.events.push(Event{Type: Initialized})
	c.mu.Lock()
	if c.ctx.Err() != nil {
		// Closed meanwhile.
		c.mu.Unlock()
		w.Close()
		return c.ctx.Err()
	}
	c.running = true
	c.mu.Unlock()
	go c.run(w)
	return nil
}

// Events returns the channel of the cache's events. It is closed by Close
// (events not yet received are dropped).
func (c *Cache) Events() <-chan Event { return c.events.out }

// Get returns the cached node at path.
func (c *Cache) Get(p string) (Node, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.nodes[p]
	if !ok {
		return Node{}, false
	}
	return *n, true
}

// Children returns the names of the cached children of path, sorted.
func (c *Cache) Children(p string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var names []string
	for q := range c.nodes {
		if q != p && parent(q) == p {
			names = append(names, path.Base(q))
		}
	}
	slices.Sort(names)
	return names
}

// Nodes returns every cached node, sorted by path.
func (c *Cache) Nodes() []Node {
	c.mu.RLock()
	out := make([]Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, *n)
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b Node) int { return cmp.Compare(a.Path, b.Path) })
	return out
}

// Connected reports whether the copy is being kept up to date: false
// while the session is disconnected or gone, until the cache has caught
// up again.
func (c *Cache) Connected() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.connected
}

// Close stops following changes, removes the watch, and closes the event
// channel. It returns once the cache's goroutine has ended.
func (c *Cache) Close() {
	c.mu.Lock()
	c.cancel()
	running := c.running
	c.started = true // no Start after Close
	c.mu.Unlock()
	if running {
		<-c.done
	}
	c.events.close()
}

// run follows the watch until the cache closes, setting it again after
// the session expires.
func (c *Cache) run(w *client.Stream[client.Event]) {
	defer close(c.done)
	for {
		c.follow(w)
		w.Close()
		c.setConnected(false)
		for {
			if !c.awaitSession() {
				return
			}
			var err error
			if w, err = c.watch(c.ctx); err == nil {
				if err = c.resync(c.ctx); err == nil {
					break
				}
				w.Close()
			}
			select {
			case <-c.ctx.Done():
				return
			case <-time.After(retryDelay):
			}
		}
	}
}

// follow applies the watch's events until the stream ends (the session
// expired, the client closed) or the cache closes.
func (c *Cache) follow(w *client.Stream[client.Event]) {
	for {
		var ev client.Event
		var ok bool
		select {
		case ev, ok = <-w.Events():
			if !ok {
				return
			}
		case <-c.ctx.Done():
			return
		}
		switch ev.Type {
		case client.EventSession:
			switch ev.State {
			case client.StateDisconnected:
				c.setConnected(false)
			case client.StateReconnected, client.StateConnected:
				// Events of the time disconnected are lost: read again.
				// A failure here ends with another disconnection, and
				// another reading when the session is back.
				_ = c.resync(c.ctx)
			}
		case client.EventNotWatching:
			return
		case client.EventNodeCreated, client.EventNodeDataChanged:
			if c.inScope(ev.Path) {
				c.refresh(ev.Path)
			}
		case client.EventNodeDeleted:
			if c.inScope(ev.Path) {
				c.remove(ev.Path)
			}
		}
	}
}

// awaitSession waits until the client has a session again; false when the
// cache or the client closes first.
func (c *Cache) awaitSession() bool {
	states := c.c.StateChanges()
	defer states.Close()
	for {
		select {
		case st, ok := <-states.Events():
			if !ok || st == client.StateClosed {
				return false
			}
			if st.Connected() {
				return true
			}
		case <-c.ctx.Done():
			return false
		}
	}
}

// watch sets the persistent watch the scope needs.
func (c *Cache) watch(ctx context.Context) (*client.Stream[client.Event], error) {
	mode := client.WatchPersistentRecursive
	if c.scope == Single {
		mode = client.WatchPersistent
	}
	w, err := c.c.AddWatch(ctx, c.root, mode)
	if err != nil {
		return nil, fmt.Errorf("cache of %s: %w", c.root, err)
	}
	return w, nil
}

// refresh reads the node at p again and records what changed.
func (c *Cache) refresh(p string) {
	data, stat, err := c.c.Get(c.ctx, p)
	switch {
	case errors.Is(err, client.ErrNoNode):
		c.remove(p)
		return
	case err != nil:
		// Connection loss: the reading after reconnection catches up.
		return
	}
	n := &Node{Path: p, Data: data, Stat: stat}
	c.mu.Lock()
	old := c.nodes[p]
	c.nodes[p] = n
	c.mu.Unlock()
	switch {
	case old == nil:
		c.events.push(Event{Type: Created, Path: p, Node: n})
	case old.Stat.Mzxid != stat.Mzxid:
		c.events.push(Event{Type: Changed, Path: p, Node: n, Old: old})
	}
}

// remove drops p and what the cache holds below it, deepest first.
func (c *Cache) remove(p string) {
	c.mu.Lock()
	var gone []*Node
	for q, n := range c.nodes {
		if within(p, q) {
			gone = append(gone, n)
			delete(c.nodes, q)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(gone, func(a, b *Node) int { return cmp.Compare(b.Path, a.Path) })
	for _, n := range gone {
		c.events.push(Event{Type: Deleted, Path: n.Path, Old: n})
	}
}

// resync reads the whole scope and records the differences with the copy:
// creations and changes parents first, deletions children first.
func (c *Cache) resync(ctx context.Context) error {
	fresh, err := c.load(ctx)
	if err != nil {
		return fmt.Errorf("cache of %s: %w", c.root, err)
	}
	c.mu.Lock()
	old := c.nodes
	c.nodes = fresh
	c.connected = true
	c.mu.Unlock()
	paths := make([]string, 0, len(fresh))
	for p := range fresh {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		n, was := fresh[p], old[p]
		switch {
		case was == nil:
			c.events.push(Event{Type: Created, Path: p, Node: n})
		case was.Stat.Mzxid != n.Stat.Mzxid:
			c.events.push(Event{Type: Changed, Path: p, Node: n, Old: was})
		}
	}
	var gone []string
	for p := range old {
		if fresh[p] == nil {
			gone = append(gone, p)
		}
	}
	slices.Sort(gone)
	slices.Reverse(gone)
	for _, p := range gone {
		c.events.push(Event{Type: Deleted, Path: p, Old: old[p]})
	}
	return nil
}

// load reads every node of the scope. Nodes deleted while it reads are
// left out; the watch reports what changes meanwhile.
func (c *Cache) load(ctx context.Context) (map[string]*Node, error) {
	out := map[string]*Node{}
	queue := []string{c.root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		data, stat, err := c.c.Get(ctx, p)
		if errors.Is(err, client.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[p] = &Node{Path: p, Data: data, Stat: stat}
		if c.scope == Single || c.scope == Children && p != c.root || stat.NumChildren == 0 {
			continue
		}
		names, _, err := c.c.Children(ctx, p)
		if errors.Is(err, client.ErrNoNode) {
			delete(out, p)
			continue
		}
		if err != nil {
			return nil, err
		}
		slices.Sort(names)
		for _, name := range names {
			queue = append(queue, join(p, name))
		}
	}
	return out, nil
}

func (c *Cache) setConnected(v bool) {
	c.mu.Lock()
	c.connected = v
	c.mu.Unlock()
}

// inScope reports whether an event at p concerns the cache.
func (c *Cache) inScope(p string) bool {
	switch c.scope {
	case Single:
		return p == c.root
	case Children:
		return p == c.root || parent(p) == c.root
	}
	return within(c.root, p)
}

// within reports whether p is root or below it.
func within(root, p string) bool {
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == root || strings.HasPrefix(p, root+"/")
}

func parent(p string) string {
	if p == "/" {
		return ""
	}
	return path.Dir(p)
}

func join(p, name string) string {
	if p == "/" {
		return "/" + name
	}
	return p + "/" + name
}
