package watch

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/collie-io/collie/proto"
)

// Kind is what a request asks to be told about.
type Kind uint8

const (
	// Data is the watch of getData: one-shot, in the data table.
	Data Kind = iota + 1
	// Exist is the watch of exists. The server keeps it exactly as Data; the
	// two differ only in what the client does with the event.
	Exist
	// Child is the watch of getChildren: one-shot, in the child table.
	Child
	// Persistent is addWatch's persistent mode: in both tables, fires for the
	// path itself, stays.
	Persistent
	// PersistentRecursive is addWatch's recursive mode: in both tables, fires
	// for the path and all descendants except for NodeChildrenChanged, stays.
	PersistentRecursive
)

func (k Kind) String() string {
	switch k {
	case Data:
		return "data"
	case Exist:
		return "exist"
	case Child:
		return "child"
	case Persistent:
		return "persistent"
	case PersistentRecursive:
		return "persistentRecursive"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// AddWatchKind returns the Kind an addWatch request asks for; false for a
// mode ZooKeeper does not know, which it answers with MarshallingError.
func AddWatchKind(m proto.AddWatchMode) (Kind, bool) {
	switch m {
	case proto.AddWatchPersistent:
		return Persistent, true
	case proto.AddWatchPersistentRecursive:
		return PersistentRecursive, true
	}
	return 0, false
}

// Delivery is one notification to send: Event goes to Watcher.
type Delivery[W comparable] struct {
	Watcher W
	Event   proto.WatcherEvent
}

// NodeInfo is what SetWatches needs to know of a znode.
type NodeInfo struct {
	Exists bool
	Mzxid  int64 // Stat.Mzxid: last change of the data
	Pzxid  int64 // Stat.Pzxid: last change of the children
}

// watcher is the registry's record of one watcher.
type watcher[W comparable] struct {
	id W
	// seq orders deliveries: watchers are notified in the order they first
	// registered a watch.
	seq     uint64
	firedIn uint64 // epoch of the last Trigger that notified it
	tables  [2]ownerWatches[W]
	// inData is set by the first data-table watch and cleared only by
	// RemoveWatcher: ZooKeeper's wchs and wchc list a connection from then
	// until it closes, even when none of its watches is left.
	inData bool
}

// Registry is a server's watch registry; W identifies a watcher, in practice
// a client connection. The zero value is not usable; call New.
type Registry[W comparable] struct {
	data, child table[W]
	watchers    map[W]*watcher[W]
	nextSeq     uint64
	inData      int // watchers with inData set

	epoch uint64
	fired []*watcher[W] // scratch of Trigger, kept to spare an allocation per call
}

// New returns an empty registry.
func New[W comparable]() *Registry[W] {
	return &Registry[W]{
		data:     newTable[W](dataSide),
		child:    newTable[W](childSide),
		watchers: map[W]*watcher[W]{},
	}
}

func (r *Registry[W]) watcher(w W) *watcher[W] {
	o := r.watchers[w]
	if o == nil {
		r.nextSeq++
		o = &watcher[W]{id: w, seq: r.nextSeq}
		r.watchers[w] = o
	}
	return o
}

func (r *Registry[W]) addData(o *watcher[W], path string, m mode) {
	if !o.inData {
		o.inData = true
		r.inData++
	}
	r.data.add(o, path, m)
}

// Add registers w's watch of kind k on path. It panics on an unknown Kind.
func (r *Registry[W]) Add(w W, path string, k Kind) {
	switch k {
	case Data, Exist:
		r.addData(r.watcher(w), path, oneShot)
	case Child:
		r.child.add(r.watcher(w), path, oneShot)
	case Persistent:
		o := r.watcher(w)
		r.addData(o, path, persistent)
		r.child.add(o, path, persistent)
	case PersistentRecursive:
		o := r.watcher(w)
		r.addData(o, path, recursive)
		r.child.add(o, path, recursive)
	default:
		panic(fmt.Sprintf("watch: Add of unknown %v", k))
	}
}

// Trigger applies one event of the state machine (see the package doc) and
// returns the notifications it causes, one per watcher, ordered by when each
// watcher first registered a watch. One-shot watches that fire are removed.
// The result is nil when nobody is watching. Trigger panics on an event type
// the state machine never emits.
func (r *Registry[W]) Trigger(ev proto.EventType, path string) []Delivery[W] {
	r.epoch++
	fired := r.fired[:0]
	switch ev {
	case proto.EventNodeCreated, proto.EventNodeDataChanged:
		fired = r.data.trigger(ev, path, r.epoch, fired)
	case proto.EventNodeDeleted:
		fired = r.data.trigger(ev, path, r.epoch, fired)
		fired = r.child.trigger(ev, path, r.epoch, fired)
	case proto.EventNodeChildrenChanged:
		fired = r.child.trigger(ev, path, r.epoch, fired)
	default:
		panic(fmt.Sprintf("watch: Trigger of event %v", ev))
	}
	if len(fired) == 0 {
		return nil
	}
	slices.SortFunc(fired, func(a, b *watcher[W]) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]Delivery[W], len(fired))
	for i, o := range fired {
		out[i] = delivery(o.id, ev, path)
	}
	clear(fired)
	r.fired = fired[:0]
	return out
}

func delivery[W comparable](w W, ev proto.EventType, path string) Delivery[W] {
	return Delivery[W]{Watcher: w, Event: proto.WatcherEvent{Type: ev, State: proto.StateSyncConnected, Path: path}}
}

// Contains answers checkWatches as ZooKeeper 3.8 does: whether the table
// that t names (the child table for WatcherChildren, the data table for
// WatcherData, either for WatcherAny) holds a watch on path. A persistent or
// recursive watch is in both tables and so counts for every type.
//
// 3.8 looks at the path only, not at w: the answer is true when any watcher
// watches path there. ZooKeeper 3.9 asks about w's own watch. A real client
// sends checkWatches only for a watch it holds, so the two differ only when
// the server has already dropped that watch.
//
// Types other than Children, Data and Any match nothing; ZooKeeper answers
// them with MarshallingError.
func (r *Registry[W]) Contains(w W, path string, t proto.WatcherType) bool {
	switch t {
	case proto.WatcherChildren:
		return r.child.paths[path] != nil
	case proto.WatcherData:
		return r.data.paths[path] != nil
	case proto.WatcherAny:
		return r.child.paths[path] != nil || r.data.paths[path] != nil
	}
	return false
}

// Remove answers removeWatches: it removes w's watch on path from the child
// table (WatcherChildren), the data table (WatcherData) or both
// (WatcherAny), and reports whether it removed any. Removing one type of a
// persistent or recursive watch leaves the other half in place, as in 3.8.
// Types other than Children, Data and Any match nothing.
func (r *Registry[W]) Remove(w W, path string, t proto.WatcherType) bool {
	switch t {
	case proto.WatcherChildren:
		return r.child.removeOne(w, path)
	case proto.WatcherData:
		return r.data.removeOne(w, path)
	case proto.WatcherAny:
		c := r.child.removeOne(w, path)
		d := r.data.removeOne(w, path)
		return c || d
	}
	return false
}

// RemoveWatcher drops every watch of w; call it when w's connection closes.
func (r *Registry[W]) RemoveWatcher(w W) {
	o := r.watchers[w]
	if o == nil {
		return
	}
	r.data.removeOwner(o)
	r.child.removeOwner(o)
	if o.inData {
		r.inData--
	}
	delete(r.watchers, w)
}

// SetWatches re-registers the watches a client held before it reconnected,
// as DataTree.setWatches does in 3.8, and returns the events the client
// missed meanwhile, in the order of the request's lists:
//
//   - data watch: node gone: NodeDeleted; Mzxid > RelativeZxid:
//     NodeDataChanged; otherwise registered.
//   - exist watch: node exists: NodeCreated; otherwise registered.
//   - child watch: node gone: NodeDeleted; Pzxid > RelativeZxid:
//     NodeChildrenChanged; otherwise registered.
//   - persistent and recursive watches: registered, no event.
//
// A watch that yields an event is not registered. Events are not merged: a
// path in two lists may yield two. The old setWatches request is the same
// with empty persistent lists. Paths are not validated, as in ZooKeeper, so
// lookup must accept any string.
func (r *Registry[W]) SetWatches(w W, req *proto.SetWatches2, lookup func(path string) NodeInfo) []Delivery[W] {
	var out []Delivery[W]
	for _, p := range req.DataWatches {
		switch n := lookup(p); {
		case !n.Exists:
			out = append(out, delivery(w, proto.EventNodeDeleted, p))
		case n.Mzxid > req.RelativeZxid:
			out = append(out, delivery(w, proto.EventNodeDataChanged, p))
		default:
			r.Add(w, p, Data)
		}
	}
	for _, p := range req.ExistWatches {
		if lookup(p).Exists {
			out = append(out, delivery(w, proto.EventNodeCreated, p))
		} else {
			r.Add(w, p, Exist)
		}
	}
	for _, p := range req.ChildWatches {
		switch n := lookup(p); {
		case !n.Exists:
			out = append(out, delivery(w, proto.EventNodeDeleted, p))
		case n.Pzxid > req.RelativeZxid:
			out = append(out, delivery(w, proto.EventNodeChildrenChanged, p))
		default:
			r.Add(w, p, Child)
		}
	}
	for _, p := range req.PersistentWatches {
		r.Add(w, p, Persistent)
	}
	for _, p := range req.PersistentRecursiveWatches {
		r.Add(w, p, PersistentRecursive)
	}
	return out
}

// Count returns the number of watches in both tables, as mntr reports it in
// zk_watch_count. A persistent or recursive watch counts twice.
func (r *Registry[W]) Count() int {
	return len(r.data.byKey) + len(r.child.byKey)
}

// Summary is what the four-letter word wchs reports. Like wchc and wchp, it
// covers the data table only: one-shot child watches do not show.
type Summary struct {
	// Connections counts the watchers that registered a data-table watch
	// and were not removed since, whether or not any such watch is left.
	Connections int
	// Paths counts the paths with a data-table watch.
	Paths int
	// Watches counts the data-table watches.
	Watches int
}

// Summary returns the figures of wchs.
func (r *Registry[W]) Summary() Summary {
	return Summary{Connections: r.inData, Paths: len(r.data.paths), Watches: len(r.data.byKey)}
}

// ByWatcher returns the data-table watches by watcher, paths sorted, as wchc
// lists them: every watcher Summary counts is present, with an empty slice
// when none of its data watches is left.
func (r *Registry[W]) ByWatcher() map[W][]string {
	out := make(map[W][]string, r.inData)
	for w, o := range r.watchers {
		if !o.inData {
			continue
		}
		paths := make([]string, 0, o.tables[dataSide].n)
		for x := o.tables[dataSide].head; x != nil; x = x.nextOfOwner {
			paths = append(paths, x.at.path)
		}
		slices.Sort(paths)
		out[w] = paths
	}
	return out
}

// ByPath returns the data-table watches by path, as wchp lists them; the
// watchers of a path are in the order they first registered a watch.
func (r *Registry[W]) ByPath() map[string][]W {
	out := make(map[string][]W, len(r.data.paths))
	var owners []*watcher[W]
	for path, p := range r.data.paths {
		owners = owners[:0]
		for x := p.head; x != nil; x = x.nextAtPath {
			owners = append(owners, x.owner)
		}
		slices.SortFunc(owners, func(a, b *watcher[W]) int { return cmp.Compare(a.seq, b.seq) })
		ws := make([]W, len(owners))
		for i, o := range owners {
			ws[i] = o.id
		}
		out[path] = ws
	}
	return out
}
