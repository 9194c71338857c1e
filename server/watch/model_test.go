package watch

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/collie-io/collie/proto"
)

// model is ZooKeeper 3.8's watch semantics written as plainly as possible:
// a list of (table, watcher, path, mode), scanned in full for every question.
type model struct {
	entries []modelEntry
	order   []int        // watchers in the order they first registered
	inData  map[int]bool // watchers listed by wchs
}

type modelEntry struct {
	child bool
	w     int
	path  string
	mode  mode
}

func newModel() *model { return &model{inData: map[int]bool{}} }

func (m *model) put(child bool, w int, path string, md mode) {
	if !slices.Contains(m.order, w) {
		m.order = append(m.order, w)
	}
	if !child {
		m.inData[w] = true
	}
	for i, e := range m.entries {
		if e.child == child && e.w == w && e.path == path {
			m.entries[i].mode = md
			return
		}
	}
	m.entries = append(m.entries, modelEntry{child, w, path, md})
}

func (m *model) add(w int, path string, k Kind) {
	switch k {
	case Data, Exist:
		m.put(false, w, path, oneShot)
	case Child:
		m.put(true, w, path, oneShot)
	case Persistent:
		m.put(false, w, path, persistent)
		m.put(true, w, path, persistent)
	case PersistentRecursive:
		m.put(false, w, path, recursive)
		m.put(true, w, path, recursive)
	}
}

func isAncestor(a, p string) bool {
	if a == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, a+"/")
}

func (m *model) trigger(ev proto.EventType, path string) []int {
	var tables []bool // child?
	switch ev {
	case proto.EventNodeCreated, proto.EventNodeDataChanged:
		tables = []bool{false}
	case proto.EventNodeDeleted:
		tables = []bool{false, true}
	case proto.EventNodeChildrenChanged:
		tables = []bool{true}
	}
	fired := map[int]bool{}
	for _, child := range tables {
		var kept []modelEntry
		for _, e := range m.entries {
			if e.child != child {
				kept = append(kept, e)
				continue
			}
			switch {
			case e.mode == recursive && (e.path == path || isAncestor(e.path, path)):
				if ev != proto.EventNodeChildrenChanged {
					fired[e.w] = true
				}
			case e.mode != recursive && e.path == path:
				fired[e.w] = true
				if e.mode == oneShot {
					continue
				}
			}
			kept = append(kept, e)
		}
		m.entries = kept
	}
	var out []int
	for _, w := range m.order {
		if fired[w] {
			out = append(out, w)
		}
	}
	return out
}

func (m *model) watched(child bool, path string) bool {
	for _, e := range m.entries {
		if e.child == child && e.path == path {
			return true
		}
	}
	return false
}

func (m *model) contains(path string, t proto.WatcherType) bool {
	switch t {
	case proto.WatcherChildren:
		return m.watched(true, path)
	case proto.WatcherData:
		return m.watched(false, path)
	case proto.WatcherAny:
		return m.watched(true, path) || m.watched(false, path)
	}
	return false
}

func (m *model) removeOne(child bool, w int, path string) bool {
	for i, e := range m.entries {
		if e.child == child && e.w == w && e.path == path {
			m.entries = slices.Delete(m.entries, i, i+1)
			return true
		}
	}
	return false
}

func (m *model) remove(w int, path string, t proto.WatcherType) bool {
	switch t {
	case proto.WatcherChildren:
		return m.removeOne(true, w, path)
	case proto.WatcherData:
		return m.removeOne(false, w, path)
	case proto.WatcherAny:
		c := m.removeOne(true, w, path)
		d := m.removeOne(false, w, path)
		return c || d
	}
	return false
}

func (m *model) removeWatcher(w int) {
	m.entries = slices.DeleteFunc(m.entries, func(e modelEntry) bool { return e.w == w })
	m.order = slices.DeleteFunc(m.order, func(x int) bool { return x == w })
	delete(m.inData, w)
}

func (m *model) byPath() map[string][]int {
	out := map[string][]int{}
	for _, w := range m.order {
		for _, e := range m.entries {
			if !e.child && e.w == w {
				out[e.path] = append(out[e.path], w)
			}
		}
	}
	return out
}

func (m *model) byWatcher() map[int][]string {
	out := map[int][]string{}
	for w := range m.inData {
		out[w] = []string{}
	}
	for _, e := range m.entries {
		if !e.child {
			out[e.w] = append(out[e.w], e.path)
		}
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// TestAgainstModel runs random operations on a Registry and on the model and
// compares every answer. Paths include a prefix that is not a parent (/a and
// /ab) and the root.
func TestAgainstModel(t *testing.T) {
	paths := []string{"/", "/a", "/ab", "/a/b", "/a/b/c", "/a/c", "/b", "/b/a"}
	events := []proto.EventType{proto.EventNodeCreated, proto.EventNodeDeleted, proto.EventNodeDataChanged, proto.EventNodeChildrenChanged}
	types := []proto.WatcherType{proto.WatcherChildren, proto.WatcherData, proto.WatcherAny}
	kinds := []Kind{Data, Exist, Child, Persistent, PersistentRecursive}

	for seed := range uint64(12) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			r, m := New[int](), newModel()
			var log []string // the operations so far, printed on failure
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("after\n\t%s\n%s", strings.Join(log, "\n\t"), fmt.Sprintf(format, args...))
			}
			path := func() string { return paths[rng.IntN(len(paths))] }
			someOf := func() []string {
				var ps []string
				for range rng.IntN(3) {
					ps = append(ps, path())
				}
				return ps
			}
			for range 2000 {
				w := 1 + rng.IntN(4)
				switch op := rng.IntN(100); {
				case op < 40:
					p, k := path(), kinds[rng.IntN(len(kinds))]
					log = append(log, fmt.Sprintf("add %d %v %s", w, k, p))
					r.Add(w, p, k)
					m.add(w, p, k)
				case op < 75:
					ev, p := events[rng.IntN(len(events))], path()
					log = append(log, fmt.Sprintf("trigger %v %s", ev, p))
					var got []int
					for _, d := range r.Trigger(ev, p) {
						got = append(got, d.Watcher)
					}
					if want := m.trigger(ev, p); !slices.Equal(got, want) {
						fail("Trigger notified %v, model %v", got, want)
					}
				case op < 82:
					p, wt := path(), types[rng.IntN(len(types))]
					log = append(log, fmt.Sprintf("contains %d %v %s", w, wt, p))
					if got, want := r.Contains(w, p, wt), m.contains(p, wt); got != want {
						fail("Contains = %v, model %v", got, want)
					}
				case op < 90:
					p, wt := path(), types[rng.IntN(len(types))]
					log = append(log, fmt.Sprintf("remove %d %v %s", w, wt, p))
					if got, want := r.Remove(w, p, wt), m.remove(w, p, wt); got != want {
						fail("Remove = %v, model %v", got, want)
					}
				case op < 94:
					log = append(log, fmt.Sprintf("close %d", w))
					r.RemoveWatcher(w)
					m.removeWatcher(w)
				default:
					// Each path's node is present or not, with zxids around the relative one.
					nodes := map[string]NodeInfo{}
					for _, p := range paths {
						nodes[p] = NodeInfo{Exists: rng.IntN(3) > 0, Mzxid: rng.Int64N(20), Pzxid: rng.Int64N(20)}
					}
					req := &proto.SetWatches2{RelativeZxid: 10, DataWatches: someOf(), ExistWatches: someOf(),
						ChildWatches: someOf(), PersistentWatches: someOf(), PersistentRecursiveWatches: someOf()}
					log = append(log, fmt.Sprintf("setwatches %d %+v %v", w, req, nodes))
					got := r.SetWatches(w, req, func(p string) NodeInfo { return nodes[p] })
					want := m.setWatches(w, req, nodes)
					if !slices.Equal(got, want) {
						fail("SetWatches = %v, model %v", got, want)
					}
				}
				if err := r.check(); err != nil {
					fail("broken invariant: %v", err)
				}
				dataCount, childCount := 0, 0
				for _, e := range m.entries {
					if e.child {
						childCount++
					} else {
						dataCount++
					}
				}
				byPath := m.byPath()
				if got, want := r.Summary(), (Summary{len(m.inData), len(byPath), dataCount}); got != want {
					fail("Summary = %+v, model %+v", got, want)
				}
				if got, want := r.Count(), dataCount+childCount; got != want {
					fail("Count = %d, model %d", got, want)
				}
				if got := r.ByPath(); !reflect.DeepEqual(got, byPath) {
					fail("ByPath = %v, model %v", got, byPath)
				}
				if got, want := r.ByWatcher(), m.byWatcher(); !reflect.DeepEqual(got, want) {
					fail("ByWatcher = %v, model %v", got, want)
				}
			}
		})
	}
}

func (m *model) setWatches(w int, req *proto.SetWatches2, nodes map[string]NodeInfo) []Delivery[int] {
	var out []Delivery[int]
	event := func(ev proto.EventType, p string) {
		out = append(out, Delivery[int]{w, proto.WatcherEvent{Type: ev, State: proto.StateSyncConnected, Path: p}})
	}
	for _, p := range req.DataWatches {
		switch n := nodes[p]; {
		case !n.Exists:
			event(proto.EventNodeDeleted, p)
		case n.Mzxid > req.RelativeZxid:
			event(proto.EventNodeDataChanged, p)
		default:
			m.add(w, p, Data)
		}
	}
	for _, p := range req.ExistWatches {
		if nodes[p].Exists {
			event(proto.EventNodeCreated, p)
		} else {
			m.add(w, p, Exist)
		}
	}
	for _, p := range req.ChildWatches {
		switch n := nodes[p]; {
		case !n.Exists:
			event(proto.EventNodeDeleted, p)
		case n.Pzxid > req.RelativeZxid:
			event(proto.EventNodeChildrenChanged, p)
		default:
			m.add(w, p, Child)
		}
	}
	for _, p := range req.PersistentWatches {
		m.add(w, p, Persistent)
	}
	for _, p := range req.PersistentRecursiveWatches {
		m.add(w, p, PersistentRecursive)
	}
	return out
}
