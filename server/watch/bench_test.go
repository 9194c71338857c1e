package watch

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/collie-io/collie/proto"
)

const (
	benchWatches  = 100_000
	benchWatchers = 1_000
)

// benchPaths returns n paths of depth 3, /app/gN/nM, 100 per parent.
func benchPaths(n int) []string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf("/app/g%d/n%d", i/100, i)
	}
	return ps
}

// benchRegistry holds 100k watches: a data watch on every path and a child
// watch on every tenth, spread over 1000 watchers.
func benchRegistry(paths []string) *Registry[int] {
	r := New[int]()
	for i, p := range paths[:benchWatches*10/11] {
		r.Add(i%benchWatchers, p, Data)
		if i%10 == 0 {
			r.Add(i%benchWatchers, p, Child)
		}
	}
	return r
}

func BenchmarkTrigger(b *testing.B) {
	paths := benchPaths(benchWatches)
	deep := "/app" + strings.Repeat("/d", 9) // depth 10

	b.Run("unwatched", func(b *testing.B) {
		r := benchRegistry(paths)
		b.ReportAllocs()
		for b.Loop() {
			r.Trigger(proto.EventNodeDataChanged, "/app/none")
		}
	})
	b.Run("oneShot", func(b *testing.B) {
		r := benchRegistry(paths)
		b.ReportAllocs()
		for b.Loop() {
			r.Add(7, "/app/free", Data)
			if len(r.Trigger(proto.EventNodeDataChanged, "/app/free")) != 1 {
				b.Fatal("watch did not fire")
			}
		}
	})
	b.Run("delete", func(b *testing.B) {
		// A node with a data and a child watch deleted, and its parent's
		// children watch: the two events of a delete.
		r := benchRegistry(paths)
		b.ReportAllocs()
		for b.Loop() {
			r.Add(7, paths[0], Data)
			r.Add(7, paths[0], Child)
			r.Add(8, proto.Parent(paths[0]), Child)
			r.Trigger(proto.EventNodeDeleted, paths[0])
			r.Trigger(proto.EventNodeChildrenChanged, proto.Parent(paths[0]))
		}
	})
	b.Run("persistent", func(b *testing.B) {
		r := benchRegistry(paths)
		r.Add(7, paths[0], Persistent)
		b.ReportAllocs()
		for b.Loop() {
			r.Trigger(proto.EventNodeDataChanged, paths[0])
		}
	})
	b.Run("recursive/depth=10", func(b *testing.B) {
		// One recursive watch anywhere makes every trigger look at ancestors.
		r := benchRegistry(paths)
		r.Add(7, "/app", PersistentRecursive)
		b.ReportAllocs()
		for b.Loop() {
			if len(r.Trigger(proto.EventNodeDataChanged, deep)) != 1 {
				b.Fatal("watch did not fire")
			}
		}
	})
	b.Run("persistent/watchers=1000", func(b *testing.B) {
		r := benchRegistry(paths)
		for w := range benchWatchers {
			r.Add(w, "/hot", Persistent)
		}
		b.ReportAllocs()
		for b.Loop() {
			r.Trigger(proto.EventNodeDataChanged, "/hot")
		}
	})
}

// BenchmarkAdd registers 100k watches per iteration and reports the heap
// each watch takes.
func BenchmarkAdd(b *testing.B) {
	paths := benchPaths(benchWatches)
	var keep *Registry[int]
	for b.Loop() {
		r := New[int]()
		for i, p := range paths {
			r.Add(i%benchWatchers, p, Data)
		}
		keep = r
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	runtime.KeepAlive(keep)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(paths) // the registry shares the path strings; count only its own memory
	b.ReportMetric(float64(before.HeapAlloc-after.HeapAlloc)/benchWatches, "heapB/watch")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchWatches, "ns/watch")
}
