package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/collie-io/collie/client"
)

// backoff paces what the cache does again after a failure that no session
// event will end: setting the watch once a new session is there, and
// reading the scope when a reading failed while connected.
var backoff = client.ExponentialBackoff(50*time.Millisecond, 5*time.Second, client.Forever)

// run follows the watch w until ctx ends, setting a new watch each time
// the session expires and the client has a new one. When the client
// closes, the cache ends: its channel closes after the last event.
func (c *Cache) run(ctx context.Context, w *client.Stream[client.Event]) {
	stale := false
	for {
		c.follow(ctx, w, stale)
		w.Close()
		c.setFollowing(false)
		if w = c.rewatch(ctx); w == nil {
			c.events.end()
			return
		}
		stale = true
	}
}

// follow applies the events of w until the watch ends (the session
// expired, the client closed) or ctx does. When stale, the copy is read
// again first.
func (c *Cache) follow(ctx context.Context, w *client.Stream[client.Event], stale bool) {
	var again <-chan time.Time // a failed reading's retry, nil when none is due
	failures := 0
	catchUp := func() {
		again = nil
		if err := c.resync(ctx); err != nil {
			failures++
			d, _ := backoff.Delay(failures)
			again = time.After(d)
			return
		}
		failures = 0
	}
	if stale {
		catchUp()
	}
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				return
			}
			switch ev.Type {
			case client.EventSession:
				if ev.State.Connected() {
					// ZooKeeper does not replay a persistent watch's
					// events missed while disconnected.
					catchUp()
				} else {
					// The reading at the reconnection catches up.
					c.setFollowing(false)
					again = nil
				}
			case client.EventNodeCreated, client.EventNodeDataChanged:
				if c.inScope(ev.Path) {
					c.refresh(ctx, ev.Path)
				}
			case client.EventNodeDeleted:
				if c.inScope(ev.Path) {
					c.remove(ev.Path)
				}
			case client.EventNotWatching:
				return
			}
		case <-again:
			catchUp()
		case <-ctx.Done():
			return
		}
	}
}

// rewatch waits for the client to have a session and sets the watch
// again. It returns nil when ctx ends or the client closes first.
func (c *Cache) rewatch(ctx context.Context) *client.Stream[client.Event] {
	for failures := 1; ; failures++ {
		if !c.awaitSession(ctx) {
			return nil
		}
		w, err := c.watch(ctx)
		if err == nil {
			return w
		}
		if errors.Is(err, client.ErrClosed) {
			return nil
		}
		d, _ := backoff.Delay(failures)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil
		}
	}
}

// awaitSession waits until the client has a session; false when ctx ends
// or the client closes first. The cache never renews a session itself:
// that is the client's owner's choice (Config.RenewSession, or Renew).
func (c *Cache) awaitSession(ctx context.Context) bool {
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
		case <-ctx.Done():
			return false
		}
	}
}

// watch sets the persistent watch the scope needs: recursive but for a
// single node. A Children cache filters out the events of deeper nodes.
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

// refresh reads the node at p again and records what changed. A reading
// that fails otherwise than unreadable says is left to the reading of the
// whole scope that follows a reconnection or a new session.
func (c *Cache) refresh(ctx context.Context, p string) {
	data, stat, err := c.c.Get(ctx, p)
	if unreadable(err) {
		c.remove(p)
		return
	}
	if err != nil {
		return
	}
	n := Node{Path: p, Data: data, Stat: stat}
	switch old, had := c.put(n); {
	case !had:
		c.events.push(Event{Type: Created, Path: p, Node: &n})
	case old.Stat.Mzxid != stat.Mzxid:
		c.events.push(Event{Type: Changed, Path: p, Node: &n, Old: &old})
	}
}

// remove drops p, and what the cache holds below it, children first.
func (c *Cache) remove(p string) {
	for _, n := range c.drop(p) {
		c.events.push(Event{Type: Deleted, Path: n.Path, Old: &n})
	}
}

// resync reads the whole scope, makes it the copy, and queues the
// differences with the copy it replaces: creations and changes parents
// first, then deletions children first.
func (c *Cache) resync(ctx context.Context) error {
	fresh, err := c.load(ctx)
	if err != nil {
		return fmt.Errorf("cache of %s: %w", c.root, err)
	}
	old := c.replace(fresh)
	for _, p := range sortedPaths(fresh) {
		n := fresh[p]
		switch was, had := old[p]; {
		case !had:
			c.events.push(Event{Type: Created, Path: p, Node: &n})
		case was.Stat.Mzxid != n.Stat.Mzxid:
			c.events.push(Event{Type: Changed, Path: p, Node: &n, Old: &was})
		}
	}
	gone := sortedPaths(old)
	slices.Reverse(gone)
	for _, p := range gone {
		if _, ok := fresh[p]; !ok {
			was := old[p]
			c.events.push(Event{Type: Deleted, Path: p, Old: &was})
		}
	}
	return nil
}

// load reads every node of the scope, parents before children. A node
// deleted between the listing of its parent and its own reading is left
// out: the watch, set before, reports its deletion, and whatever else
// changes meanwhile. So is a node the session may not read.
func (c *Cache) load(ctx context.Context) (map[string]Node, error) {
	out := map[string]Node{}
	for todo := []string{c.root}; len(todo) > 0; {
		p := todo[0]
		todo = todo[1:]
		data, stat, err := c.c.Get(ctx, p)
		if unreadable(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[p] = Node{Path: p, Data: data, Stat: stat}
		if stat.NumChildren == 0 || c.scope == Single || c.scope == Children && p != c.root {
			continue
		}
		names, _, err := c.c.Children(ctx, p)
		if unreadable(err) {
			delete(out, p)
			continue
		}
		if err != nil {
			return nil, err
		}
		slices.Sort(names)
		for _, name := range names {
			todo = append(todo, join(p, name))
		}
	}
	return out, nil
}

// inScope reports whether an event at p concerns the cache.
func (c *Cache) inScope(p string) bool {
	switch c.scope {
	case Single:
		return p == c.root
	case Children:
		return p == c.root || p != "/" && parentOf(p) == c.root
	}
	return c.root == "/" || p == c.root || strings.HasPrefix(p, c.root+"/")
}

// unreadable reports whether err says that a node is not there for the
// cache: it does not exist, or the session may not read it. The cache
// leaves such a node out, with what is below it.
func unreadable(err error) bool {
	return errors.Is(err, client.ErrNoNode) || errors.Is(err, client.ErrNoAuth)
}

func parentOf(p string) string {
	dir, _ := split(p)
	return dir
}

func sortedPaths(nodes map[string]Node) []string {
	paths := make([]string, 0, len(nodes))
	for p := range nodes {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}
