package shell

import (
	"context"
	"slices"
	"sync"

	"github.com/collie-io/collie/client"
)

// watchedEvent is an event as zkCli.sh prints it, from Java's WatchedEvent.
type watchedEvent struct {
	state string // KeeperState: SyncConnected, Disconnected, Expired, Closed...
	typ   string // EventType: None, NodeCreated, NodeDataChanged...
	path  string // "" for a session event, printed as null
}

func (e watchedEvent) String() string {
	path := e.path
	if path == "" {
		path = "null"
	}
	return "WatchedEvent state:" + e.state + " type:" + e.typ + " path:" + path
}

// jsonEvent is a watch event in --json output; Path is null for session
// events.
type jsonEvent struct {
	State string  `json:"state"`
	Type  string  `json:"type"`
	Path  *string `json:"path"`
}

// stateEvent is the event the Java client gives its default watcher when the
// session changes to s.
func stateEvent(s client.State) watchedEvent {
	state := "SyncConnected"
	switch s {
	case client.StateDisconnected:
		state = "Disconnected"
	case client.StateReadOnly:
		state = "ConnectedReadOnly"
	case client.StateExpired:
		state = "Expired"
	case client.StateClosed:
		state = "Closed"
	case client.StateAuthFailed:
		state = "AuthFailed"
	}
	return watchedEvent{state: state, typ: "None"}
}

// eventTypeNames are Java's Watcher.Event.EventType names.
var eventTypeNames = map[client.EventType]string{
	client.EventNodeCreated:         "NodeCreated",
	client.EventNodeDeleted:         "NodeDeleted",
	client.EventNodeDataChanged:     "NodeDataChanged",
	client.EventNodeChildrenChanged: "NodeChildrenChanged",
	client.EventDataWatchRemoved:    "DataWatchRemoved",
	client.EventChildWatchRemoved:   "ChildWatchRemoved",
}

// persistentWatchRemoved is the event of Java's client, not of the
// protocol, that says a persistent watch was removed.
const persistentWatchRemoved = "PersistentWatchRemoved"

func nodeEvent(e client.Event) watchedEvent {
	return watchedEvent{state: "SyncConnected", typ: eventTypeNames[e.Type], path: e.Path}
}

// printEvent prints an event as zkCli.sh's watcher does, unless
// printwatches is off.
func (sh *Shell) printEvent(e watchedEvent) {
	if !sh.printWatches.Load() {
		return
	}
	if sh.cfg.JSON {
		v := jsonEvent{State: e.state, Type: e.typ}
		if e.path != "" {
			v.Path = &e.path
		}
		sh.out.json(struct {
			Event jsonEvent `json:"event"`
		}{v})
		return
	}
	sh.out.text(sh.out.stdout, "\nWATCHER::\n\n"+e.String()+"\n")
}

// watchClass is what a one-shot watch waits for: data (get, stat) or
// children (ls).
type watchClass uint8

const (
	dataWatch watchClass = iota
	childWatch
)

// oneShot is a watch set by get -w, stat -w or ls -w.
type oneShot struct {
	class watchClass
}

// persistent is a watch set by addWatch.
type persistent struct {
	recursive bool
	stream    *client.Stream[client.Event]
}

// watchSet is the shell's record of its watches, kept so that one change
// prints once, as it does through zkCli.sh's single watcher, although the
// client delivers it to every watch it concerns: a one-shot watch prints
// its event unless a persistent watch prints it, and of the one-shot
// watches of a path that one change fires, only the first to report it
// prints. The shell keeps one persistent watch per path, the last one set.
//
// Limitations: the record is read when an event is printed, not when the
// client delivered it, so a watch set or removed in between can make an
// event print twice or not at all. Each watch waits on a goroutine of its
// own, so the events of different watches may print in another order than
// the server sent them; those of one watch print in order.
type watchSet struct {
	mu         sync.Mutex
	oneShots   map[string][]*oneShot // by path
	persistent map[string]*persistent
}

func newWatchSet() *watchSet {
	return &watchSet{oneShots: map[string][]*oneShot{}, persistent: map[string]*persistent{}}
}

// armOneShot records a one-shot watch and waits for its event.
func (sh *Shell) armOneShot(path string, class watchClass, ch <-chan client.Event) {
	w := &oneShot{class: class}
	ws := sh.watches
	ws.mu.Lock()
	ws.oneShots[path] = append(ws.oneShots[path], w)
	ws.mu.Unlock()
	sh.tasks.Go(func() {
		e := <-ch
		if ws.fired(path, w, e) {
			sh.printEvent(nodeEvent(e))
		}
	})
}

// get reads a node, and with watch sets a data watch on it.
func (sh *Shell) get(ctx context.Context, path string, watch bool) ([]byte, client.Stat, error) {
	if !watch {
		return sh.client.Get(ctx, path)
	}
	data, stat, ch, err := sh.client.GetW(ctx, path)
	if err == nil {
		sh.armOneShot(path, dataWatch, ch)
	}
	return data, stat, err
}

// exists reads a node's Stat, and with watch sets a data watch, whether
// the node exists or not.
func (sh *Shell) exists(ctx context.Context, path string, watch bool) (bool, client.Stat, error) {
	if !watch {
		return sh.client.Exists(ctx, path)
	}
	ok, stat, ch, err := sh.client.ExistsW(ctx, path)
	if err == nil {
		sh.armOneShot(path, dataWatch, ch)
	}
	return ok, stat, err
}

// children lists a node's children, and with watch sets a child watch.
func (sh *Shell) children(ctx context.Context, path string, watch bool) ([]string, client.Stat, error) {
	if !watch {
		return sh.client.Children(ctx, path)
	}
	names, stat, ch, err := sh.client.ChildrenW(ctx, path)
	if err == nil {
		sh.armOneShot(path, childWatch, ch)
	}
	return names, stat, err
}

// fired forgets the one-shot watches of path that e fires, w among them, and
// reports whether w is the one to print e.
func (ws *watchSet) fired(path string, w *oneShot, e client.Event) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	list := ws.oneShots[path]
	if !slices.Contains(list, w) {
		return false // another watch of path printed this change
	}
	kept := slices.DeleteFunc(list, func(o *oneShot) bool {
		return o == w || (e.Type != client.EventNotWatching && firedBy(o.class, e.Type))
	})
	if len(kept) == 0 {
		delete(ws.oneShots, path)
	} else {
		ws.oneShots[path] = kept
	}
	return e.Type != client.EventNotWatching && ws.printerFor(e) == nil
}

// firedBy reports whether an event of type t ends a one-shot watch of
// class c, by the rules of ZooKeeper's client.
func firedBy(c watchClass, t client.EventType) bool {
	switch t {
	case client.EventNodeCreated, client.EventNodeDataChanged, client.EventDataWatchRemoved:
		return c == dataWatch
	case client.EventNodeChildrenChanged, client.EventChildWatchRemoved:
		return c == childWatch
	case client.EventNodeDeleted:
		return true
	}
	return false
}

// addPersistent records a persistent watch on path, replacing the shell's
// previous one there, and prints its events.
func (sh *Shell) addPersistent(path string, recursive bool, stream *client.Stream[client.Event]) {
	p := &persistent{recursive: recursive, stream: stream}
	ws := sh.watches
	ws.mu.Lock()
	old := ws.persistent[path]
	ws.persistent[path] = p
	ws.mu.Unlock()
	if old != nil {
		old.stream.Close()
	}
	sh.tasks.Go(func() {
		for e := range stream.Events() {
			if _, node := eventTypeNames[e.Type]; !node {
				continue // session changes print from the session's own stream
			}
			ws.mu.Lock()
			mine := ws.printerFor(e) == p
			ws.mu.Unlock()
			if mine {
				sh.printEvent(nodeEvent(e))
			}
		}
	})
}

// removePersistent removes the persistent watch on path and reports
// whether there was one.
func (sh *Shell) removePersistent(path string) bool {
	ws := sh.watches
	ws.mu.Lock()
	p := ws.persistent[path]
	delete(ws.persistent, path)
	ws.mu.Unlock()
	if p == nil {
		return false
	}
	p.stream.Close()
	return true
}

// printerFor returns the persistent watch that prints e: the recursive
// watch nearest the root on the event's path or above it (recursive watches
// report no children changes), else a plain watch on the path itself; nil
// when no persistent watch reports e. ws.mu is held.
func (ws *watchSet) printerFor(e client.Event) *persistent {
	switch e.Type {
	case client.EventNodeCreated, client.EventNodeDeleted, client.EventNodeDataChanged:
		for _, p := range ancestorsAndSelf(e.Path) {
			if w := ws.persistent[p]; w != nil && w.recursive {
				return w
			}
		}
	case client.EventNodeChildrenChanged:
	default:
		return nil
	}
	if w := ws.persistent[e.Path]; w != nil && !w.recursive {
		return w
	}
	return nil
}

// ancestorsAndSelf returns "/" and every ancestor of path down to path.
func ancestorsAndSelf(path string) []string {
	out := []string{"/"}
	for i := 1; i < len(path); i++ {
		if path[i] == '/' {
			out = append(out, path[:i])
		}
	}
	if path != "/" {
		out = append(out, path)
	}
	return out
}
