package cache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"

	"github.com/collie-io/collie/client"
)

// Scope says which nodes a Cache follows.
type Scope int

const (
	// Tree follows the root and every node below it (Curator's
	// CuratorCache, TreeCache).
	Tree Scope = iota
	// Children follows the root and its direct children
	// (PathChildrenCache, with the root as well).
	Children
	// Single follows the root alone (NodeCache).
	Single
)

var scopeNames = [...]string{Tree: "Tree", Children: "Children", Single: "Single"}

func (s Scope) String() string {
	if s >= 0 && int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return fmt.Sprintf("Scope(%d)", int(s))
}

// Node is a cached znode: its path, data and Stat as last read. Data is
// shared with the cache and with every other copy of the Node: do not
// modify it.
type Node struct {
	Path string
	Data []byte
	Stat client.Stat
}

// EventType says what an Event reports.
type EventType int

const (
	// Created: a node entered the cache (found by a reading of the
	// scope, or created since).
	Created EventType = iota + 1
	// Changed: a node's data changed (its Mzxid moved).
	Changed
	// Deleted: a node left the cache.
	Deleted
	// Initialized: Start's reading of the scope is complete; sent once,
	// after the Created events of that reading.
	Initialized
)

var eventNames = [...]string{Created: "Created", Changed: "Changed", Deleted: "Deleted", Initialized: "Initialized"}

func (t EventType) String() string {
	if t > 0 && int(t) < len(eventNames) {
		return eventNames[t]
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is a change of the cache. Node is the node's new value (nil for
// Deleted and Initialized); Old is the value the cache held before (nil
// for Created and Initialized). Path is empty for Initialized.
type Event struct {
	Type EventType
	Path string
	Node *Node
	Old  *Node
}

func (e Event) String() string {
	if e.Type == Initialized {
		return e.Type.String()
	}
	return e.Type.String() + " " + e.Path
}

// ErrClosed is returned by Start on a cache that was closed.
var ErrClosed = errors.New("cache: closed")

// Cache is a local copy of the nodes of one scope, kept in sync through a
// persistent watch. It is safe for concurrent use.
type Cache struct {
	c      *client.Client
	root   string
	scope  Scope
	events *queue

	// wg counts the follow goroutine and the queue's. Use: Add only under
	// mu while closed is false, so that Close's Wait never races an Add.
	wg        sync.WaitGroup
	closeOnce sync.Once

	mu sync.RWMutex // guards the fields below
	// nodes is the copy: path to node. Invariant: every path in nodes
	// but the root's is named in kids under its parent.
	nodes map[string]Node
	// kids names the cached children of each cached node with any.
	kids map[string]map[string]struct{}
	// following is false from a disconnection until the scope has been
	// read again.
	following bool
	started   bool
	closed    bool
	cancel    context.CancelFunc // ends the follow goroutine; nil before Start
}

// New returns a cache of the nodes of scope at root, using c's session.
// It reads nothing until Start.
func New(c *client.Client, root string, scope Scope) *Cache {
	return &Cache{
		c: c, root: root, scope: scope,
		events: newQueue(),
		nodes:  map[string]Node{},
		kids:   map[string]map[string]struct{}{},
	}
}

// Start sets the watch, reads the scope, queues a Created event for each
// node found (parents first) and then Initialized, and from then on keeps
// the copy up to date until Close, or until the client closes. The root
// need not exist.
//
// If the watch cannot be set or the scope read (ctx ends, the session
// expires, the server fails a reading), Start returns why and the cache is
// closed: make a new one to try again.
func (c *Cache) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if c.started {
		c.mu.Unlock()
		return fmt.Errorf("cache of %s: started twice", c.root)
	}
	c.started = true
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	c.events.start(&c.wg)
	c.mu.Unlock()

	// A Close while Start reads ends the reading.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(life, stop)()

	w, err := c.watch(ctx)
	if err == nil {
		if err = c.resync(ctx); err != nil {
			w.Close()
		}
	}
	if err != nil {
		c.Close()
		return err
	}
	c.events.push(Event{Type: Initialized})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		w.Close()
		return ErrClosed
	}
	c.wg.Go(func() { c.run(life, w) })
	return nil
}

// Events returns the channel of the cache's events, in the order the
// cache changed. Events wait in a queue of the cache's own until they are
// received, however many: read them, or close the cache. The channel is
// closed by Close (events not yet received are dropped), or after the last
// event once the client has closed.
func (c *Cache) Events() <-chan Event { return c.events.out }

// Get returns the cached node at p.
func (c *Cache) Get(p string) (Node, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.nodes[p]
	return n, ok
}

// Children returns the names of the cached children of p, sorted.
func (c *Cache) Children(p string) []string {
	c.mu.RLock()
	names := make([]string, 0, len(c.kids[p]))
	for name := range c.kids[p] {
		names = append(names, name)
	}
	c.mu.RUnlock()
	slices.Sort(names)
	return names
}

// Nodes returns every cached node, sorted by path.
func (c *Cache) Nodes() []Node {
	c.mu.RLock()
	out := make([]Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, n)
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b Node) int { return cmp.Compare(a.Path, b.Path) })
	return out
}

// Connected reports whether the cache is following changes: false from
// the moment the session's connection breaks until the cache has read its
// scope again once the session is back (or a new one has been made), and
// after Close. While it is false, the copy may be stale.
func (c *Cache) Connected() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.following && !c.closed
}

// Close stops following changes, removes the watch and closes the event
// channel, dropping the events not yet received. It returns once the
// cache's goroutines have ended. The copy stays readable. Calling Close
// again does nothing.
func (c *Cache) Close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		cancel := c.cancel
		c.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		c.events.halt()
		c.wg.Wait()
	})
}

// put records n and says what the cache held at its path before.
func (c *Cache) put(n Node) (old Node, had bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, had = c.nodes[n.Path]
	c.nodes[n.Path] = n
	if !had && n.Path != c.root {
		dir, name := split(n.Path)
		if c.kids[dir] == nil {
			c.kids[dir] = map[string]struct{}{}
		}
		c.kids[dir][name] = struct{}{}
	}
	return old, had
}

// drop removes p and every cached node below it, and returns them,
// deepest first.
func (c *Cache) drop(p string) []Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var gone []Node
	var below func(p string)
	below = func(p string) {
		for name := range c.kids[p] {
			q := join(p, name)
			below(q)
			gone = append(gone, c.nodes[q])
			delete(c.nodes, q)
		}
		delete(c.kids, p)
	}
	below(p)
	slices.SortFunc(gone, func(a, b Node) int { return cmp.Compare(b.Path, a.Path) })
	if n, ok := c.nodes[p]; ok {
		gone = append(gone, n)
		delete(c.nodes, p)
	}
	if p != c.root {
		dir, name := split(p)
		delete(c.kids[dir], name)
		if len(c.kids[dir]) == 0 {
			delete(c.kids, dir)
		}
	}
	return gone
}

// replace makes nodes the copy, and returns the one it replaces.
func (c *Cache) replace(nodes map[string]Node) map[string]Node {
	kids := map[string]map[string]struct{}{}
	for p := range nodes {
		if p == c.root {
			continue
		}
		dir, name := split(p)
		if kids[dir] == nil {
			kids[dir] = map[string]struct{}{}
		}
		kids[dir][name] = struct{}{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.nodes
	c.nodes, c.kids, c.following = nodes, kids, true
	return old
}

func (c *Cache) setFollowing(v bool) {
	c.mu.Lock()
	c.following = v
	c.mu.Unlock()
}

func split(p string) (dir, name string) {
	return path.Dir(p), path.Base(p)
}

func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}
