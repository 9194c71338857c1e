package tree_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/collie-io/collie/server/tree"
)

// Trees are built as parents of benchFanout children each, so that neither
// the node map nor any one children set is the only thing that grows.
const (
	benchFanout   = 1000
	benchDataSize = 100
	// benchBatch is how many nodes a Create or Delete benchmark adds or
	// removes between two untimed resets to the tree's original size.
	benchBatch = 10_000
)

var benchTreeSizes = []int{10_000, 1_000_000}

type benchTree struct {
	t       *tree.Tree
	parents []string
	// paths are the leaves in random order, so that lookups do not walk
	// memory in insertion order.
	paths []string
	zxid  int64
	data  []byte
}

func newBenchTree(nodes int) *benchTree {
	bt := &benchTree{t: tree.New(false), data: make([]byte, benchDataSize)}
	for p := range max(1, nodes/benchFanout) {
		parent := fmt.Sprintf("/p%04d", p)
		bt.create(parent)
		bt.parents = append(bt.parents, parent)
		for c := range benchFanout {
			path := fmt.Sprintf("%s/c%06d", parent, c)
			bt.create(path)
			bt.paths = append(bt.paths, path)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(bt.paths), func(i, j int) { bt.paths[i], bt.paths[j] = bt.paths[j], bt.paths[i] })
	return bt
}

func (bt *benchTree) create(path string) {
	bt.zxid++
	bt.t.Create(path, bt.data, tree.OpenACL, 0, bt.zxid, 1_700_000_000_000+bt.zxid)
}

func (bt *benchTree) delete(path string) {
	bt.zxid++
	bt.t.Delete(path, bt.zxid)
}

// extraPaths returns benchBatch paths that are not in the tree, spread
// over its parents.
func (bt *benchTree) extraPaths() []string {
	paths := make([]string, benchBatch)
	for i := range paths {
		paths[i] = fmt.Sprintf("%s/x%06d", bt.parents[i%len(bt.parents)], i)
	}
	return paths
}

// BenchmarkTree measures the tree's operations on trees of 10 thousand and
// 1 million nodes of 100 bytes.
func BenchmarkTree(b *testing.B) {
	for _, size := range benchTreeSizes {
		b.Run(fmt.Sprintf("nodes=%d", size), func(b *testing.B) {
			bt := newBenchTree(size)
			b.Run("Get", func(b *testing.B) { benchGet(b, bt) })
			b.Run("SetData", func(b *testing.B) { benchSetData(b, bt) })
			b.Run("Create", func(b *testing.B) { benchCreate(b, bt) })
			b.Run("Delete", func(b *testing.B) { benchDelete(b, bt) })
		})
	}
}

func benchGet(b *testing.B, bt *benchTree) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := bt.t.Get(bt.paths[i%len(bt.paths)]); !ok {
			b.Fatalf("%s is missing", bt.paths[i%len(bt.paths)])
		}
		i++
	}
}

func benchSetData(b *testing.B, bt *benchTree) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		bt.zxid++
		bt.t.SetData(bt.paths[i%len(bt.paths)], bt.data, int32(i), bt.zxid, 1_700_000_000_000+bt.zxid)
		i++
	}
}

func benchCreate(b *testing.B, bt *benchTree) {
	extra := bt.extraPaths()
	removeAll := func(created int) {
		for _, p := range extra[:created] {
			bt.delete(p)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(extra) {
			b.StopTimer()
			removeAll(i)
			i = 0
			b.StartTimer()
		}
		bt.create(extra[i])
		i++
	}
	removeAll(i)
}

func benchDelete(b *testing.B, bt *benchTree) {
	extra := bt.extraPaths()
	createAll := func(from int) {
		for _, p := range extra[from:] {
			bt.create(p)
		}
	}
	createAll(0)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(extra) {
			b.StopTimer()
			createAll(0)
			i = 0
			b.StartTimer()
		}
		bt.delete(extra[i])
		i++
	}
	// Leave the tree as it was: the nodes not deleted yet go too.
	for _, p := range extra[i:] {
		bt.delete(p)
	}
}
