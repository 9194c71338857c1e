package watch

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/collie-io/collie/proto"
)

// The scenarios in testdata use these commands; watchers are small integers.
//
//	add W KIND PATH...             register (KIND: data exist child persistent recursive)
//	create PATH | delete PATH | set PATH
//	                               the events the state machine emits for that write,
//	                               each with the watchers notified
//	trigger EVENT PATH             one raw event
//	contains W TYPE PATH           checkWatches (TYPE: children data any)
//	remove W TYPE PATH             removeWatches
//	close W                        the connection closes
//	node PATH [mzxid=N] [pzxid=N]  a znode SetWatches sees
//	setwatches W zxid=N [data=(..)] [exist=(..)] [child=(..)] [persistent=(..)] [recursive=(..)]
//	dump                           both tables
//	wchs | wchc | wchp | count     what the four-letter words and mntr report
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{r: New[int](), nodes: map[string]NodeInfo{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := h.run(t, d)
			if err := h.r.check(); err != nil {
				t.Fatalf("%s: broken invariant: %v", d.Pos, err)
			}
			return out
		})
	})
}

type harness struct {
	r     *Registry[int]
	nodes map[string]NodeInfo
}

var kinds = map[string]Kind{
	"data": Data, "exist": Exist, "child": Child, "persistent": Persistent, "recursive": PersistentRecursive,
}

var watcherTypes = map[string]proto.WatcherType{
	"children": proto.WatcherChildren, "data": proto.WatcherData, "any": proto.WatcherAny,
}

var eventTypes = map[string]proto.EventType{
	"NodeCreated": proto.EventNodeCreated, "NodeDeleted": proto.EventNodeDeleted,
	"NodeDataChanged": proto.EventNodeDataChanged, "NodeChildrenChanged": proto.EventNodeChildrenChanged,
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	var pos []string // positional arguments
	named := map[string][]string{}
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 {
			pos = append(pos, a.Key)
		} else {
			named[a.Key] = a.Vals
		}
	}
	arg := func(i int) string {
		if i >= len(pos) {
			t.Fatalf("%s: %s needs %d arguments", d.Pos, d.Cmd, i+1)
		}
		return pos[i]
	}
	watcherArg := func() int {
		w, err := strconv.Atoi(arg(0))
		if err != nil {
			t.Fatalf("%s: watcher %q: %v", d.Pos, arg(0), err)
		}
		return w
	}
	typeArg := func() proto.WatcherType {
		wt, ok := watcherTypes[arg(1)]
		if !ok {
			t.Fatalf("%s: unknown watcher type %q", d.Pos, arg(1))
		}
		return wt
	}
	zxid := func(k string) int64 {
		if len(named[k]) == 0 {
			return 0
		}
		n, err := strconv.ParseInt(named[k][0], 0, 64)
		if err != nil {
			t.Fatalf("%s: %s: %v", d.Pos, k, err)
		}
		return n
	}

	switch d.Cmd {
	case "add":
		k, ok := kinds[arg(1)]
		if !ok {
			t.Fatalf("%s: unknown kind %q", d.Pos, arg(1))
		}
		for _, p := range pos[2:] {
			h.r.Add(watcherArg(), p, k)
		}
		return ""
	case "create":
		return h.trigger(t, proto.EventNodeCreated, arg(0)) + h.trigger(t, proto.EventNodeChildrenChanged, proto.Parent(arg(0)))
	case "delete":
		return h.trigger(t, proto.EventNodeDeleted, arg(0)) + h.trigger(t, proto.EventNodeChildrenChanged, proto.Parent(arg(0)))
	case "set":
		return h.trigger(t, proto.EventNodeDataChanged, arg(0))
	case "trigger":
		ev, ok := eventTypes[arg(0)]
		if !ok {
			t.Fatalf("%s: unknown event %q", d.Pos, arg(0))
		}
		return h.trigger(t, ev, arg(1))
	case "contains":
		return fmt.Sprintln(h.r.Contains(watcherArg(), arg(2), typeArg()))
	case "remove":
		return fmt.Sprintln(h.r.Remove(watcherArg(), arg(2), typeArg()))
	case "close":
		h.r.RemoveWatcher(watcherArg())
		return ""
	case "node":
		h.nodes[arg(0)] = NodeInfo{Exists: true, Mzxid: zxid("mzxid"), Pzxid: zxid("pzxid")}
		return ""
	case "setwatches":
		req := &proto.SetWatches2{
			RelativeZxid: zxid("zxid"), DataWatches: named["data"], ExistWatches: named["exist"],
			ChildWatches: named["child"], PersistentWatches: named["persistent"], PersistentRecursiveWatches: named["recursive"],
		}
		var b strings.Builder
		for _, dl := range h.r.SetWatches(watcherArg(), req, func(p string) NodeInfo { return h.nodes[p] }) {
			fmt.Fprintf(&b, "%d %s %s\n", dl.Watcher, dl.Event.Type, dl.Event.Path)
			if dl.Event.State != proto.StateSyncConnected {
				t.Errorf("%s: event state %d, want SyncConnected", d.Pos, dl.Event.State)
			}
		}
		return b.String()
	case "dump":
		return h.r.dump()
	case "wchs":
		s := h.r.Summary()
		return fmt.Sprintf("%d connections watching %d paths\nTotal watches:%d\n", s.Connections, s.Paths, s.Watches)
	case "wchc":
		var b strings.Builder
		byWatcher := h.r.ByWatcher()
		for _, w := range slices.Sorted(maps.Keys(byWatcher)) {
			fmt.Fprintf(&b, "%d\n", w)
			for _, p := range byWatcher[w] {
				fmt.Fprintf(&b, "\t%s\n", p)
			}
		}
		return b.String()
	case "wchp":
		var b strings.Builder
		byPath := h.r.ByPath()
		for _, p := range slices.Sorted(maps.Keys(byPath)) {
			fmt.Fprintf(&b, "%s\n", p)
			for _, w := range byPath[p] {
				fmt.Fprintf(&b, "\t%d\n", w)
			}
		}
		return b.String()
	case "count":
		return fmt.Sprintln(h.r.Count())
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}

// trigger prints one event and the watchers it notifies, and checks that
// each notification is that event.
func (h *harness) trigger(t *testing.T, ev proto.EventType, path string) string {
	ds := h.r.Trigger(ev, path)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s:", ev, path)
	if len(ds) == 0 {
		b.WriteString(" -")
	}
	want := proto.WatcherEvent{Type: ev, State: proto.StateSyncConnected, Path: path}
	for _, d := range ds {
		fmt.Fprintf(&b, " %d", d.Watcher)
		if d.Event != want {
			t.Errorf("%s %s: watcher %d got %+v", ev, path, d.Watcher, d.Event)
		}
	}
	b.WriteByte('\n')
	return b.String()
}

var modeNames = [...]string{oneShot: "oneShot", persistent: "persistent", recursive: "recursive"}

// dump prints both tables, paths sorted, watchers in delivery order.
func (r *Registry[W]) dump() string {
	var b strings.Builder
	for _, tb := range []struct {
		name string
		t    *table[W]
	}{{"data", &r.data}, {"child", &r.child}} {
		for _, path := range slices.Sorted(maps.Keys(tb.t.paths)) {
			var ws []*watch[W]
			for x := tb.t.paths[path].head; x != nil; x = x.nextAtPath {
				ws = append(ws, x)
			}
			slices.SortFunc(ws, func(a, b *watch[W]) int { return cmp.Compare(a.owner.seq, b.owner.seq) })
			fmt.Fprintf(&b, "%s %s:", tb.name, path)
			for _, x := range ws {
				fmt.Fprintf(&b, " %v=%s", x.owner.id, modeNames[x.mode])
			}
			b.WriteByte('\n')
		}
	}
	if b.Len() == 0 {
		return "empty\n"
	}
	return b.String()
}

// check verifies the registry's internal invariants.
func (r *Registry[W]) check() error {
	inData := 0
	for w, o := range r.watchers {
		if o.id != w {
			return fmt.Errorf("watcher %v filed under %v", o.id, w)
		}
		if o.inData {
			inData++
		}
		if o.tables[dataSide].n > 0 && !o.inData {
			return fmt.Errorf("watcher %v has data watches but is not counted", w)
		}
	}
	if inData != r.inData {
		return fmt.Errorf("inData=%d, counted %d", r.inData, inData)
	}
	for _, t := range []*table[W]{&r.data, &r.child} {
		seen, recursives := 0, 0
		for path, p := range t.paths {
			if p.path != path || p.head == nil {
				return fmt.Errorf("side %d: path %q: entry %q, head %p", t.side, path, p.path, p.head)
			}
			var prev *watch[W]
			for x := p.head; x != nil; prev, x = x, x.nextAtPath {
				seen++
				if x.prevAtPath != prev || x.at != p {
					return fmt.Errorf("side %d: path %q: broken links", t.side, path)
				}
				if x.mode == recursive {
					recursives++
					if prev != nil && prev.mode != recursive {
						return fmt.Errorf("side %d: path %q: recursive watch after another", t.side, path)
					}
				}
				if t.byKey[watchKey[W]{path, x.owner.id}] != x {
					return fmt.Errorf("side %d: path %q: watch of %v not indexed", t.side, path, x.owner.id)
				}
				if r.watchers[x.owner.id] != x.owner {
					return fmt.Errorf("side %d: path %q: owner %v not registered", t.side, path, x.owner.id)
				}
			}
			if p.tail != prev {
				return fmt.Errorf("side %d: path %q: wrong tail", t.side, path)
			}
		}
		if seen != len(t.byKey) || recursives != t.nRecurs {
			return fmt.Errorf("side %d: %d watches listed, %d indexed; %d recursive, counted %d", t.side, seen, len(t.byKey), recursives, t.nRecurs)
		}
		owned := 0
		for _, o := range r.watchers {
			n := 0
			var prev *watch[W]
			for x := o.tables[t.side].head; x != nil; prev, x = x, x.nextOfOwner {
				n++
				if x.owner != o || x.prevOfOwner != prev {
					return fmt.Errorf("side %d: watcher %v: broken links", t.side, o.id)
				}
			}
			if n != o.tables[t.side].n {
				return fmt.Errorf("side %d: watcher %v: %d watches listed, counted %d", t.side, o.id, n, o.tables[t.side].n)
			}
			owned += n
		}
		if owned != len(t.byKey) {
			return fmt.Errorf("side %d: %d watches owned, %d indexed", t.side, owned, len(t.byKey))
		}
	}
	return nil
}

func TestAddWatchKind(t *testing.T) {
	for _, tc := range []struct {
		mode proto.AddWatchMode
		kind Kind
		ok   bool
	}{
		{proto.AddWatchPersistent, Persistent, true},
		{proto.AddWatchPersistentRecursive, PersistentRecursive, true},
		{2, 0, false},
		{-1, 0, false},
	} {
		k, ok := AddWatchKind(tc.mode)
		if k != tc.kind || ok != tc.ok {
			t.Errorf("AddWatchKind(%d) = %v, %v; want %v, %v", tc.mode, k, ok, tc.kind, tc.ok)
		}
	}
}

func TestUnknownWatcherTypeMatchesNothing(t *testing.T) {
	r := New[int]()
	r.Add(1, "/a", Persistent)
	for _, wt := range []proto.WatcherType{0, 4, -1} {
		if r.Contains(1, "/a", wt) {
			t.Errorf("Contains with type %d = true", wt)
		}
		if r.Remove(1, "/a", wt) {
			t.Errorf("Remove with type %d = true", wt)
		}
	}
	if got := r.Count(); got != 2 {
		t.Errorf("Count = %d after no-op removals, want 2", got)
	}
}

func TestMisusePanics(t *testing.T) {
	r := New[int]()
	for name, f := range map[string]func(){
		"Add of Kind 0":           func() { r.Add(1, "/a", 0) },
		"Trigger of None":         func() { r.Trigger(proto.EventNone, "/a") },
		"Trigger of WatchRemoved": func() { r.Trigger(proto.EventDataWatchRemoved, "/a") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
}
