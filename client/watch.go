package client

import (
	"slices"
	"sync"

	"github.com/collie-io/collie/proto"
)

// watchKind is what a call does to the watch registry when its reply comes.
type watchKind uint8

const (
	watchNone       watchKind = iota
	watchData                 // getData: a data watch on success
	watchExists               // exists: a data watch if the node exists, an exist watch if not
	watchChild                // getChildren: a child watch on success
	watchPersistent           // addWatch, either mode: the stream on success
	watchRemove               // removeWatches: the local watches go on success
)

// watchReq travels with a call: the registry change its reply makes.
type watchReq struct {
	kind   watchKind
	path   string // server path
	ch     chan Event
	stream *persistentWatch
	remove WatcherType
}

// persistentWatch is one stream of AddWatch.
type persistentWatch struct {
	path      string // server path
	recursive bool
	events    *Stream[Event]
}

// pathWatches are the local watches of one server path.
type pathWatches struct {
	data      []chan Event // getData, and exists of a node that exists
	exist     []chan Event // exists of a node that does not exist
	child     []chan Event
	plain     []*persistentWatch
	recursive []*persistentWatch
	// inflight counts requests that may register a watch here when their
	// reply comes, addWatches those that are addWatch: the server's watch
	// must not be removed or changed under them.
	inflight, addWatches int
}

func (w *pathWatches) empty() bool {
	return len(w.data)+len(w.exist)+len(w.child)+len(w.plain)+len(w.recursive)+w.inflight == 0
}

func (w *pathWatches) persistent() bool { return len(w.plain)+len(w.recursive) > 0 }

// watchRegistry is the client's half of the watches: who waits for which
// event. The server keeps one watch per path and connection (per table),
// with one mode, the last one set (ZooKeeper 3.8 and Collie alike); the
// registry fans its events out to every local watcher and keeps that one
// mode right:
//
//   - A one-shot watch on a path that has a persistent watch is not asked
//     of the server, which would turn the persistent watch into a one-shot
//     one; the persistent watch brings its events.
//   - A path with both a plain and a recursive persistent watch is
//     recursive at the server, which then sends no children-changed event
//     for it: the registry derives those from the creation and deletion
//     events of its direct children.
//   - When the last persistent watch of a path goes, the server's watch is
//     removed unless a one-shot watch still relies on it.
//
// The registry is changed by the reader of the live connection
// (registrations when replies arrive, deliveries when events arrive), by
// the session loop (snapshots to re-arm, ending everything at expiry), and
// by callers (removals). A delivery never blocks: one-shot channels have
// room for their single event and streams queue without bound. Keys are
// server paths.
type watchRegistry struct {
	mu         sync.Mutex
	paths      map[string]*pathWatches
	recursives int // paths with a recursive watch: ancestors are looked up only then
}

func (r *watchRegistry) init() { r.paths = map[string]*pathWatches{} }

func (r *watchRegistry) at(path string) *pathWatches {
	w := r.paths[path]
	if w == nil {
		w = &pathWatches{}
		r.paths[path] = w
	}
	return w
}

func (r *watchRegistry) tidy(path string, w *pathWatches) {
	if w.empty() {
		delete(r.paths, path)
	}
}

// begin notes a request that may register a watch on path, and returns
// whether a one-shot watch must be asked of the server.
func (r *watchRegistry) begin(path string, addWatch bool) (askServer bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.at(path)
	w.inflight++
	if addWatch {
		w.addWatches++
	}
	return !w.persistent() && w.addWatches == 0
}

// finish ends what begin noted, once the reply has been handled.
func (r *watchRegistry) finish(path string, addWatch bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.at(path)
	w.inflight--
	if addWatch {
		w.addWatches--
	}
	r.tidy(path, w)
}

// register applies the watch a reply sets, and returns the code the
// caller should see.
func (r *watchRegistry) register(req *watchReq, code proto.Code, chroot string) proto.Code {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.at(req.path)
	defer r.tidy(req.path, w)
	switch req.kind {
	case watchData:
		if code == proto.OK {
			w.data = append(w.data, req.ch)
		}
	case watchExists:
		switch code {
		case proto.OK:
			w.data = append(w.data, req.ch)
		case proto.ErrNoNode:
			w.exist = append(w.exist, req.ch)
		}
	case watchChild:
		if code == proto.OK {
			w.child = append(w.child, req.ch)
		}
	case watchPersistent:
		if code == proto.OK {
			r.addStreamLocked(w, req.stream)
		}
	case watchRemove:
		if code == proto.OK || code == proto.ErrNoWatcher {
			if r.removeLocked(req.path, w, req.remove, chroot) > 0 {
				return proto.OK
			}
		}
	}
	return code
}

func (r *watchRegistry) addStreamLocked(w *pathWatches, pw *persistentWatch) {
	if pw.recursive {
		if len(w.recursive) == 0 {
			r.recursives++
		}
		w.recursive = append(w.recursive, pw)
	} else {
		w.plain = append(w.plain, pw)
	}
}

// addPlainLocally registers a plain persistent watch without asking the
// server when its path already has a recursive one, which reports all it
// would (asking would turn the recursive watch into a plain one).
func (r *watchRegistry) addPlainLocally(pw *persistentWatch) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.paths[pw.path]
	if w == nil || len(w.recursive) == 0 {
		return false
	}
	w.plain = append(w.plain, pw)
	return true
}

// prepareRemove decides how RemoveWatches proceeds: found false when there
// is no local one-shot watch of type t; otherwise ask true when the server
// must remove its watch first, or false when the watches were removed here
// alone, the server's watch being shared with a persistent watch or a
// request in flight.
func (r *watchRegistry) prepareRemove(path string, t WatcherType, chroot string) (found, ask bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.paths[path]
	if w == nil {
		return false, false
	}
	n := 0
	if t == WatchData || t == WatchAny {
		n += len(w.data) + len(w.exist)
	}
	if t == WatchChildren || t == WatchAny {
		n += len(w.child)
	}
	if n == 0 {
		return false, false
	}
	if w.persistent() || w.inflight > 0 {
		r.removeLocked(path, w, t, chroot)
		r.tidy(path, w)
		return true, false
	}
	return true, true
}

// removeLocked drops the one-shot watches of type t on path and tells each
// it was removed. It returns how many there were.
func (r *watchRegistry) removeLocked(path string, w *pathWatches, t WatcherType, chroot string) int {
	cp, _ := clientPath(chroot, path)
	n := 0
	if t == WatchData || t == WatchAny {
		n += fire(&w.data, Event{Type: EventDataWatchRemoved, Path: cp})
		n += fire(&w.exist, Event{Type: EventDataWatchRemoved, Path: cp})
	}
	if t == WatchChildren || t == WatchAny {
		n += fire(&w.child, Event{Type: EventChildWatchRemoved, Path: cp})
	}
	return n
}

// streamGone says what the server must be told when a stream closes.
type streamGone uint8

const (
	keepServerWatch   streamGone = iota // something else still relies on it
	removeServerWatch                   // nothing does
	makeServerPlain                     // only plain streams are left: the server's watch must stop being recursive
)

// removeStream drops a closed persistent watch.
func (r *watchRegistry) removeStream(pw *persistentWatch) streamGone {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.paths[pw.path]
	if w == nil {
		return keepServerWatch
	}
	defer r.tidy(pw.path, w)
	if pw.recursive {
		i := slices.Index(w.recursive, pw)
		if i < 0 {
			return keepServerWatch
		}
		w.recursive = slices.Delete(w.recursive, i, i+1)
		if len(w.recursive) == 0 {
			r.recursives--
			if len(w.plain) > 0 {
				return makeServerPlain
			}
		}
	} else {
		i := slices.Index(w.plain, pw)
		if i < 0 {
			return keepServerWatch
		}
		w.plain = slices.Delete(w.plain, i, i+1)
	}
	if w.empty() {
		return removeServerWatch
	}
	return keepServerWatch
}

// fire delivers ev to the one-shot watches of list and forgets them.
func fire(list *[]chan Event, ev Event) int {
	n := len(*list)
	for _, ch := range *list {
		select {
		case ch <- ev:
		default: // impossible: each channel gets one event and has room for it
		}
	}
	*list = nil
	return n
}

// deliver hands a server's event to the watches it concerns, by the rules
// of ZooKeeper's client: creations and data changes go to data and exist
// watches, deletions to those and to child watches, children changes to
// child watches; plain persistent watches of the path get all of these,
// recursive ones of the path or an ancestor all but children changes.
func (r *watchRegistry) deliver(ev *proto.WatcherEvent, chroot string) {
	cp, ok := clientPath(chroot, ev.Path)
	if !ok {
		return
	}
	e := Event{Type: EventType(ev.Type), Path: cp}
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := r.paths[ev.Path]; w != nil {
		switch ev.Type {
		case proto.EventNodeCreated, proto.EventNodeDataChanged:
			fire(&w.data, e)
			fire(&w.exist, e)
		case proto.EventNodeDeleted:
			fire(&w.data, e)
			fire(&w.exist, e)
			fire(&w.child, e)
		case proto.EventNodeChildrenChanged:
			fire(&w.child, e)
		default:
			return
		}
		for _, pw := range w.plain {
			pw.events.push(e)
		}
		r.tidy(ev.Path, w)
	}
	if r.recursives == 0 || ev.Type == proto.EventNodeChildrenChanged || ev.Path == "/" {
		return
	}
	parent := proto.Parent(ev.Path)
	if ev.Type != proto.EventNodeDataChanged {
		if w := r.paths[parent]; w != nil && len(w.recursive) > 0 {
			// The parent's watch is recursive at the server, which
			// therefore reports this child instead of its children change.
			pp, _ := clientPath(chroot, parent)
			changed := Event{Type: EventNodeChildrenChanged, Path: pp}
			fire(&w.child, changed)
			for _, pw := range w.plain {
				pw.events.push(changed)
			}
		}
	}
	for p := ev.Path; ; p = proto.Parent(p) {
		if w := r.paths[p]; w != nil {
			for _, pw := range w.recursive {
				pw.events.push(e)
			}
		}
		if p == "/" {
			return
		}
	}
}

// session tells every persistent watch about a state change.
func (r *watchRegistry) session(s State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := Event{Type: EventSession, State: s}
	for _, w := range r.paths {
		for _, pw := range w.plain {
			pw.events.push(e)
		}
		for _, pw := range w.recursive {
			pw.events.push(e)
		}
	}
}

// endAll ends every watch, the session being over: one-shot watches get an
// EventNotWatching with err; persistent streams end with one, or are halted
// at once when the client is closing.
func (r *watchRegistry) endAll(err error, chroot string, halt bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for path, w := range r.paths {
		cp, _ := clientPath(chroot, path)
		gone := Event{Type: EventNotWatching, Path: cp, Err: err}
		fire(&w.data, gone)
		fire(&w.exist, gone)
		fire(&w.child, gone)
		for _, pw := range slices.Concat(w.plain, w.recursive) {
			if halt {
				pw.events.halt()
			} else {
				pw.events.end(gone)
			}
		}
		w.plain, w.recursive = nil, nil
		r.tidy(path, w)
	}
	r.recursives = 0
}

// maxSetWatchesBytes bounds the paths of one setWatches packet, as
// ZooKeeper's client does, to stay far below any server's jute.maxbuffer.
const maxSetWatchesBytes = 128 << 10

// rearm returns the setWatches packets that re-arm every watch after a
// reconnection, relative to zxid. One-shot watches come first and
// persistent ones last, so that a path with both ends up persistent at the
// server, and recursive when it has both kinds of persistent watch. The
// old setWatches is used while there is no persistent watch, so servers
// older than 3.6 understand it.
func (r *watchRegistry) rearm(zxid int64) []proto.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*proto.SetWatches2
	var cur *proto.SetWatches2
	size := 0
	persistent := false
	add := func(list func(*proto.SetWatches2) *[]string, path string) {
		if cur == nil || size+len(path)+4 > maxSetWatchesBytes {
			cur = &proto.SetWatches2{RelativeZxid: zxid, DataWatches: []string{}, ExistWatches: []string{},
				ChildWatches: []string{}, PersistentWatches: []string{}, PersistentRecursiveWatches: []string{}}
			out = append(out, cur)
			size = 0
		}
		l := list(cur)
		*l = append(*l, path)
		size += len(path) + 4
	}
	for p, w := range r.paths {
		if len(w.data) > 0 {
			add(func(s *proto.SetWatches2) *[]string { return &s.DataWatches }, p)
		}
		if len(w.exist) > 0 {
			add(func(s *proto.SetWatches2) *[]string { return &s.ExistWatches }, p)
		}
		if len(w.child) > 0 {
			add(func(s *proto.SetWatches2) *[]string { return &s.ChildWatches }, p)
		}
		switch {
		case len(w.recursive) > 0:
			add(func(s *proto.SetWatches2) *[]string { return &s.PersistentRecursiveWatches }, p)
			persistent = true
		case len(w.plain) > 0:
			add(func(s *proto.SetWatches2) *[]string { return &s.PersistentWatches }, p)
			persistent = true
		}
	}
	recs := make([]proto.Record, len(out))
	for i, sw := range out {
		if persistent {
			recs[i] = sw
		} else {
			recs[i] = &proto.SetWatches{RelativeZxid: sw.RelativeZxid, DataWatches: sw.DataWatches,
				ExistWatches: sw.ExistWatches, ChildWatches: sw.ChildWatches}
		}
	}
	return recs
}
