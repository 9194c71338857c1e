package discovery

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/collie-io/collie/client"
)

// live is a copy of a node's children and their data, kept up to date with
// one-shot watches, as a list of T sorted by child name: a child watch on
// the node (an exists watch while the node does not exist) and a data watch
// on each child. One-shot watches work with every ZooKeeper server, and the
// client sets them again after a connection loss; after a session expires,
// a new session reads everything again.
//
// Its goroutines: run, which owns the copy, reads and sets the watches; and
// one per armed data watch, which hands the watch's event to run. stop
// ends them all.
type live[T any] struct {
	c      *client.Client
	root   string
	decode func(name string, data []byte) (T, bool)

	mu   sync.Mutex // guards list
	list []T

	// updates holds the latest list that the consumer has not received.
	// run is its only sender, and closes it when it ends.
	updates chan []T

	// Owned by run (and by startLive before run starts).
	children map[string]*child
	// childWatch fires when the children change, or the missing root is
	// created; nil until the next read sets it again.
	childWatch <-chan client.Event
	dataEvents chan dataEvent
	nextWatch  uint64
	published  map[string][]byte // the children of the last list offered; nil before the first

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// child is what live knows of one child.
type child struct {
	data []byte
	// watch numbers the child's armed data watch, so that the event of an
	// older watch is told apart; 0 when none is armed.
	watch uint64
}

// dataEvent is a data watch's event, numbered as the watch.
type dataEvent struct {
	name  string
	watch uint64
	ev    client.Event
}

// startLive reads root's children and their data, then keeps them up to
// date until stop. root need not exist.
func startLive[T any](ctx context.Context, c *client.Client, root string, decode func(string, []byte) (T, bool)) (*live[T], error) {
	l := &live[T]{
		c: c, root: root, decode: decode,
		updates:    make(chan []T, 1),
		children:   map[string]*child{},
		dataEvents: make(chan dataEvent),
	}
	lctx, stop := context.WithCancel(context.Background())
	l.stop = stop
	// Subscribed before the first read, so that no new session can go
	// unnoticed between the two.
	states := c.StateChanges()
	if err := l.read(ctx, lctx); err != nil {
		states.Close()
		stop()
		l.wg.Wait()
		return nil, err
	}
	l.wg.Go(func() { l.run(lctx, states) })
	return l, nil
}

// run keeps the copy up to date until ctx ends or the client closes.
func (l *live[T]) run(ctx context.Context, states *client.Stream[client.State]) {
	defer close(l.updates)
	defer l.stop() // ends the goroutines of the data watches too
	defer states.Close()
	if !skipSubscriptionState(ctx, states) {
		return
	}
	stale := false
	var p pacer
	for {
		var retry time.Duration
		if stale {
			err := l.read(ctx, ctx)
			var ok bool
			if retry, ok = p.after(ctx, err); !ok {
				return
			}
			stale = err != nil
		}
		var timeout <-chan time.Time
		var timer *time.Timer
		if retry > 0 {
			timer = time.NewTimer(retry)
			timeout = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-l.childWatch:
			l.childWatch, stale = nil, true
		case de := <-l.dataEvents:
			ch := l.children[de.name]
			if ch == nil || ch.watch != de.watch {
				break // an older watch's
			}
			ch.watch = 0
			if de.ev.Type == client.EventNotWatching {
				break // the session ended: a new one reads everything again
			}
			if err := l.readChild(ctx, ctx, de.name); err != nil {
				stale = true
			} else {
				l.publish()
			}
		case st, ok := <-states.Events():
			switch {
			case !ok || st == client.StateClosed:
				return
			case st == client.StateConnected:
				// A new session has none of the old one's watches.
				for _, ch := range l.children {
					ch.watch = 0
				}
				l.childWatch, stale = nil, true
			}
		case <-timeout:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// read reads the children, with a child watch, and the data of each child
// whose data watch is not armed, then publishes the list. Requests use
// ctx; the data watches' goroutines live until watchCtx ends.
func (l *live[T]) read(ctx, watchCtx context.Context) error {
	names, _, watch, err := l.c.ChildrenW(ctx, l.root)
	if errors.Is(err, client.ErrNoNode) {
		// Wait for the root to be created. If it was meanwhile, the watch
		// fires at once.
		var exists bool
		exists, _, watch, err = l.c.ExistsW(ctx, l.root)
		if exists {
			return l.read(ctx, watchCtx)
		}
		names = nil
	}
	if err != nil {
		return err
	}
	l.childWatch = watch
	listed := make(map[string]bool, len(names))
	for _, name := range names {
		listed[name] = true
	}
	maps.DeleteFunc(l.children, func(name string, _ *child) bool { return !listed[name] })
	for _, name := range names {
		if ch := l.children[name]; ch == nil || ch.watch == 0 {
			if err := l.readChild(ctx, watchCtx, name); err != nil {
				return err
			}
		}
	}
	l.publish()
	return nil
}

// readChild reads a child's data and arms a data watch on it.
func (l *live[T]) readChild(ctx, watchCtx context.Context, name string) error {
	data, _, watch, err := l.c.GetW(ctx, path.Join(l.root, name))
	if errors.Is(err, client.ErrNoNode) {
		delete(l.children, name) // the child watch says so too
		return nil
	}
	if err != nil {
		return err
	}
	l.nextWatch++
	n := l.nextWatch
	l.children[name] = &child{data: data, watch: n}
	l.wg.Go(func() {
		select {
		case ev := <-watch:
			select {
			case l.dataEvents <- dataEvent{name, n, ev}:
			case <-watchCtx.Done():
			}
		case <-watchCtx.Done():
		}
	})
	return nil
}

// publish makes the current children the list, and offers it on updates
// unless it is the list offered last.
func (l *live[T]) publish() {
	current := make(map[string][]byte, len(l.children))
	for name, ch := range l.children {
		current[name] = ch.data
	}
	if l.published != nil && maps.EqualFunc(current, l.published, bytes.Equal) {
		return
	}
	l.published = current
	list := make([]T, 0, len(current))
	for _, name := range slices.Sorted(maps.Keys(current)) {
		if v, ok := l.decode(name, current[name]); ok {
			list = append(list, v)
		}
	}
	l.mu.Lock()
	l.list = list
	l.mu.Unlock()
	select {
	case <-l.updates: // superseded
	default:
	}
	l.updates <- slices.Clone(list)
}

// current returns the latest list.
func (l *live[T]) current() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.list)
}

// close stops keeping the list up to date and closes updates.
func (l *live[T]) close() {
	l.stop()
	l.wg.Wait()
}
