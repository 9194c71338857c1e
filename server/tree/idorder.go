package tree

import "github.com/collie-io/collie/proto"

// ConnOrder returns a connection's identities, given in the order the
// connection added them (its address first, then those of each auth
// packet), in the order ZooKeeper lists them: whoAmI shows them so, and an
// "auth" ACL expands to them so. An identity added again is given again:
// that can change the order (see IDSet.Add). Each is listed once.
//
// A ZooKeeper connection keeps its identities in a set backed by a
// java.util.concurrent.ConcurrentHashMap and lists them in the map's
// iteration order, which follows the hashes of the ids, the size of the
// table, how it grew and, within a bucket, when each id came. ConnOrder
// replays the additions on a model of that map, an IDSet.
func ConnOrder(ids []proto.ID) []proto.ID {
	if len(ids) < 2 {
		return ids
	}
	var s IDSet
	for _, id := range ids {
		s.Add(id)
	}
	return s.list()
}

// The constants of java.util.concurrent.ConcurrentHashMap.
const (
	chmInitialBins  = 16 // DEFAULT_CAPACITY
	chmTreeifyAt    = 8  // TREEIFY_THRESHOLD
	chmUntreeifyAt  = 6  // UNTREEIFY_THRESHOLD
	chmMinTreeTable = 64 // MIN_TREEIFY_CAPACITY
)

// IDSet models the ConcurrentHashMap behind a ZooKeeper connection's set
// of identities, as far as the order of its entries goes, for one thread
// that only adds. A bucket is a list, or a tree once long in a large
// table: a list keeps entries in the order they came, a tree lists the
// newest first, and growing the table splits each bucket in its own way
// (see grow). The zero value is an empty set. A connection keeps one to
// learn which of the identities it is given again it must record.
type IDSet struct {
	bins    []bin
	count   int
	sizeCtl int // the count at which the table grows
}

type bin struct {
	entries []idEntry
	tree    bool
}

type idEntry struct {
	hash int32 // spread, as the map stores it
	id   proto.ID
}

// Add adds id and reports whether the set changed: true for an id not in
// it, and for one already in it that sits eighth or deeper in a list
// bucket, which the map then restructures (it makes the bucket a tree, or
// grows a small table) as if the id were new. Adding an id again changes
// nothing otherwise, so a connection that records only the adds that
// return true gives ConnOrder what it needs for the order of every add.
func (s *IDSet) Add(id proto.ID) bool {
	if s.bins == nil {
		s.bins = make([]bin, chmInitialBins)
		s.sizeCtl = chmInitialBins - chmInitialBins/4
	}
	h := spread(idHash(id))
	i := int(h) & (len(s.bins) - 1)
	b := &s.bins[i]
	// binCount is what putVal counts: the position of an equal entry, or
	// the length of the list it appends to; 2 for a tree.
	binCount := 0
	switch {
	case len(b.entries) == 0:
		b.entries = append(b.entries, idEntry{h, id})
	case b.tree:
		binCount = 2
		if b.find(id) >= 0 {
			return false
		}
		b.entries = append([]idEntry{{h, id}}, b.entries...)
	default:
		if k := b.find(id); k >= 0 {
			// Finding it deep in a list treeifies that list all the same.
			if k+1 >= chmTreeifyAt {
				s.treeify(i)
				return true
			}
			return false
		}
		binCount = len(b.entries)
		b.entries = append(b.entries, idEntry{h, id})
	}
	if binCount >= chmTreeifyAt {
		s.treeify(i)
	}
	s.count++
	for s.count >= s.sizeCtl {
		s.grow()
	}
	return true
}

func (b *bin) find(id proto.ID) int {
	for k, e := range b.entries {
		if e.id == id {
			return k
		}
	}
	return -1
}

// treeify makes bucket i a tree, or grows a small table instead
// (treeifyBin).
func (s *IDSet) treeify(i int) {
	n := len(s.bins)
	if n < chmMinTreeTable {
		// tryPresize(n << 1): grow until the count at which the table
		// grows reaches the table size wanted for 2n entries.
		size := n << 1
		want := tableSizeFor(size + size>>1 + 1)
		for want > s.sizeCtl {
			s.grow()
		}
		return
	}
	s.bins[i].tree = true
}

func tableSizeFor(c int) int {
	n := 1
	for n < c {
		n <<= 1
	}
	return n
}

// grow doubles the table (transfer). Each bucket splits in two by the next
// bit of the hash. A list keeps its longest tail of entries going the same
// way in order, and the entries before that tail land in front of it, each
// before the previous: reversed. A tree keeps its order, and becomes a list
// again if short.
func (s *IDSet) grow() {
	n := len(s.bins)
	next := make([]bin, 2*n)
	for i, b := range s.bins {
		if len(b.entries) == 0 {
			continue
		}
		var lo, hi []idEntry
		if b.tree {
			for _, e := range b.entries {
				if int(e.hash)&n == 0 {
					lo = append(lo, e)
				} else {
					hi = append(hi, e)
				}
			}
		} else {
			lastRun := 0
			for k := 1; k < len(b.entries); k++ {
				if int(b.entries[k].hash)&n != int(b.entries[lastRun].hash)&n {
					lastRun = k
				}
			}
			tail := b.entries[lastRun:]
			if int(tail[0].hash)&n == 0 {
				lo = append(lo, tail...)
			} else {
				hi = append(hi, tail...)
			}
			for _, e := range b.entries[:lastRun] {
				if int(e.hash)&n == 0 {
					lo = append([]idEntry{e}, lo...)
				} else {
					hi = append([]idEntry{e}, hi...)
				}
			}
		}
		next[i] = bin{entries: lo, tree: b.tree && len(lo) > chmUntreeifyAt}
		next[i+n] = bin{entries: hi, tree: b.tree && len(hi) > chmUntreeifyAt}
	}
	s.bins = next
	s.sizeCtl = 2*n - n/2
}

func (s *IDSet) list() []proto.ID {
	out := make([]proto.ID, 0, s.count)
	for _, b := range s.bins {
		for _, e := range b.entries {
			out = append(out, e.id)
		}
	}
	return out
}

// spread is ConcurrentHashMap.spread: the high half of the hash folded
// into the low, the sign bit cleared.
func spread(h int32) int32 {
	return (h ^ int32(uint32(h)>>16)) & 0x7fffffff
}

// idHash is the hashCode of ZooKeeper's Id record, as jute generates it.
func idHash(id proto.ID) int32 {
	return 37*(37*17+javaHash(id.Scheme)) + javaHash(id.ID)
}

// javaHash is Java's String.hashCode of s, which sums UTF-16 code units. s
// is valid UTF-8: identities are made of strings decoded as Java does.
func javaHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xd800+(r>>10))
			h = 31*h + int32(0xdc00+(r&0x3ff))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
