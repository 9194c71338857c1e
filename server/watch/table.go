package watch

import "github.com/collie-io/collie/proto"

// mode is how a watch behaves when it fires (ZooKeeper's WatcherMode).
type mode uint8

const (
	oneShot    mode = iota // fires for its path, then is removed
	persistent             // fires for its path, stays
	recursive              // fires for its path and descendants except for NodeChildrenChanged, stays
)

// watch is one watcher's watch on one path in one table. It sits on two
// doubly linked lists, so that firing a path and closing a connection each
// touch only their own watches.
type watch[W comparable] struct {
	owner *watcher[W]
	at    *pathWatches[W]
	mode  mode

	prevAtPath, nextAtPath   *watch[W]
	prevOfOwner, nextOfOwner *watch[W]
}

// pathWatches lists the watches of a table on one path.
//
// Invariant: recursive watches come first, so a walk over ancestors stops at
// the first watch of another mode.
type pathWatches[W comparable] struct {
	path       string
	head, tail *watch[W]
}

func (p *pathWatches[W]) link(x *watch[W]) {
	if x.mode == recursive {
		x.nextAtPath = p.head
		if p.head != nil {
			p.head.prevAtPath = x
		} else {
			p.tail = x
		}
		p.head = x
		return
	}
	x.prevAtPath = p.tail
	if p.tail != nil {
		p.tail.nextAtPath = x
	} else {
		p.head = x
	}
	p.tail = x
}

func (p *pathWatches[W]) unlink(x *watch[W]) {
	if x.prevAtPath != nil {
		x.prevAtPath.nextAtPath = x.nextAtPath
	} else {
		p.head = x.nextAtPath
	}
	if x.nextAtPath != nil {
		x.nextAtPath.prevAtPath = x.prevAtPath
	} else {
		p.tail = x.prevAtPath
	}
	x.prevAtPath, x.nextAtPath = nil, nil
}

// ownerWatches lists one watcher's watches in one table.
type ownerWatches[W comparable] struct {
	head *watch[W]
	n    int
}

func (o *ownerWatches[W]) push(x *watch[W]) {
	x.nextOfOwner = o.head
	if o.head != nil {
		o.head.prevOfOwner = x
	}
	o.head = x
	o.n++
}

func (o *ownerWatches[W]) unlink(x *watch[W]) {
	if x.prevOfOwner != nil {
		x.prevOfOwner.nextOfOwner = x.nextOfOwner
	} else {
		o.head = x.nextOfOwner
	}
	if x.nextOfOwner != nil {
		x.nextOfOwner.prevOfOwner = x.prevOfOwner
	}
	x.prevOfOwner, x.nextOfOwner = nil, nil
	o.n--
}

type watchKey[W comparable] struct {
	path string
	w    W
}

// side names a table; it indexes watcher.tables.
type side uint8

const (
	dataSide side = iota
	childSide
)

// table is one of ZooKeeper's two watch managers: at most one watch per
// (watcher, path), the last registration deciding its mode.
type table[W comparable] struct {
	side    side
	paths   map[string]*pathWatches[W]
	byKey   map[watchKey[W]]*watch[W]
	nRecurs int // recursive watches; ancestors of a changed path are looked at only when there are some
}

func newTable[W comparable](s side) table[W] {
	return table[W]{side: s, paths: map[string]*pathWatches[W]{}, byKey: map[watchKey[W]]*watch[W]{}}
}

func (t *table[W]) add(owner *watcher[W], path string, m mode) {
	k := watchKey[W]{path, owner.id}
	if x := t.byKey[k]; x != nil {
		if x.mode == m {
			return
		}
		if (x.mode == recursive) != (m == recursive) {
			x.at.unlink(x)
			x.mode = m
			x.at.link(x)
			if m == recursive {
				t.nRecurs++
			} else {
				t.nRecurs--
			}
			return
		}
		x.mode = m
		return
	}
	p := t.paths[path]
	if p == nil {
		p = &pathWatches[W]{path: path}
		t.paths[path] = p
	}
	x := &watch[W]{owner: owner, at: p, mode: m}
	p.link(x)
	owner.tables[t.side].push(x)
	t.byKey[k] = x
	if m == recursive {
		t.nRecurs++
	}
}

func (t *table[W]) remove(x *watch[W]) {
	p := x.at
	p.unlink(x)
	if p.head == nil {
		delete(t.paths, p.path)
	}
	x.owner.tables[t.side].unlink(x)
	delete(t.byKey, watchKey[W]{p.path, x.owner.id})
	if x.mode == recursive {
		t.nRecurs--
	}
}

// removeOne removes w's watch on path, reporting whether there was one.
func (t *table[W]) removeOne(w W, path string) bool {
	x := t.byKey[watchKey[W]{path, w}]
	if x == nil {
		return false
	}
	t.remove(x)
	return true
}

func (t *table[W]) removeOwner(o *watcher[W]) {
	for x := o.tables[t.side].head; x != nil; {
		next := x.nextOfOwner
		t.remove(x)
		x = next
	}
}

// trigger appends to fired the watchers that ev on path fires in this table,
// skipping those already marked with epoch, and removes the one-shot watches
// that fired.
func (t *table[W]) trigger(ev proto.EventType, path string, epoch uint64, fired []*watcher[W]) []*watcher[W] {
	if p := t.paths[path]; p != nil {
		for x := p.head; x != nil; {
			next := x.nextAtPath
			switch x.mode {
			case recursive:
				if ev != proto.EventNodeChildrenChanged {
					fired = mark(x.owner, epoch, fired)
				}
			case persistent:
				fired = mark(x.owner, epoch, fired)
			case oneShot:
				fired = mark(x.owner, epoch, fired)
				t.remove(x)
			}
			x = next
		}
	}
	if t.nRecurs == 0 || ev == proto.EventNodeChildrenChanged {
		return fired
	}
	for a := path; a != "/"; {
		a = proto.Parent(a)
		p := t.paths[a]
		if p == nil {
			continue
		}
		for x := p.head; x != nil && x.mode == recursive; x = x.nextAtPath {
			fired = mark(x.owner, epoch, fired)
		}
	}
	return fired
}

func mark[W comparable](o *watcher[W], epoch uint64, fired []*watcher[W]) []*watcher[W] {
	if o.firedIn == epoch {
		return fired
	}
	o.firedIn = epoch
	return append(fired, o)
}
