package tree

import (
	"strings"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/quota"
)

// Quotas, as ZooKeeper 3.8's DataTree keeps them.
//
// A path has a quota while a zookeeper_limits node gives it one
// (quota.Key): Tree.quotas counts those nodes by the path, so the set is a
// function of the nodes alone and a tree restored from a snapshot has the
// same. ZooKeeper keeps a set without counts (PathTrie): where two limits
// nodes give one path a quota (/zookeeper/quota/a and /zookeeper/quotaa,
// or a name of spaces), deleting one ends the quota there and not here;
// and ZooKeeper stops when a limits node directly under /zookeeper/quota
// is created, which here gives no quota.
//
// With quota stats kept (KeepQuotaStats), every create, delete and setData
// under a path with a quota adds its nodes and bytes to the count and
// bytes of the stats node of the deepest such path (updateQuotaStat), and
// creating a stats node sets it to the nodes and bytes under its path
// (updateQuotaForPath). Only the stats node's data changes, never its Stat
// but for the data length, as in ZooKeeper. Stats that ZooKeeper could not
// read (it stops there) are left as they are.
//
// ZooKeeper also counts every quota again from the tree when it loads a
// snapshot, which changes stats that a client wrote or that nested quotas
// left short; here stats are part of the replicated state and are kept as
// they are, so that every replica holds the same whenever it started.

// KeepQuotaStats turns the upkeep of quota stats on or off for the
// mutations that follow: the state machine keeps them for the entries
// whose version has them.
func (t *Tree) KeepQuotaStats(on bool) { t.keepQuotaStats = on }

// HasQuotas reports whether any path has a quota.
func (t *Tree) HasQuotas() bool { return len(t.quotas) > 0 }

// quotaKey returns the path a node at path gives a quota, or "".
func quotaKey(path string) string {
	if proto.Base(path) != quota.LimitNode || !strings.HasPrefix(path, quota.Root) {
		return ""
	}
	return quota.Key(proto.Parent(path))
}

func (t *Tree) indexQuota(path string) {
	if k := quotaKey(path); k != "" {
		t.quotas[k]++
	}
}

func (t *Tree) unindexQuota(path string) {
	if k := quotaKey(path); k != "" {
		if t.quotas[k]--; t.quotas[k] <= 0 {
			delete(t.quotas, k)
		}
	}
}

// governing returns the path whose quota governs path, or "".
func (t *Tree) governing(path string) string {
	if len(t.quotas) == 0 {
		return ""
	}
	return quota.Governing(path, func(k string) bool { return t.quotas[k] > 0 })
}

// quotaCreated keeps quota stats after the node at path was created with
// data of size bytes.
func (t *Tree) quotaCreated(path string, bytes int) {
	if !t.keepQuotaStats {
		return
	}
	if dir := proto.Parent(path); proto.Base(path) == quota.StatNode && strings.HasPrefix(dir, quota.Root) {
		t.recountQuota(dir[len(quota.Root):], path)
	}
	t.addQuotaUsage(path, 1, int64(bytes))
}

// recountQuota sets the stats node at stat to the nodes and bytes of the
// subtree at path, as updateQuotaForPath does: path is what follows
// /zookeeper/quota in the stats node's parent, "" being the root (ZooKeeper
// keeps the root under "" too) and a path without a leading slash none.
func (t *Tree) recountQuota(path, stat string) {
	var n *Node
	switch {
	case path == "":
		n = t.root
	case strings.HasPrefix(path, "/"):
		n = t.lookup(path)
	}
	var count, bytes int64
	if n != nil {
		stack := []*Node{n}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			count++
			bytes += int64(len(n.Data))
			for _, c := range n.children {
				stack = append(stack, c)
			}
		}
	}
	t.setQuotaStats(stat, t.lookup(stat), quota.Usage(count, bytes))
}

// addQuotaUsage adds count nodes and bytes bytes to the stats of the quota
// that governs path, if there is one and its stats node holds stats.
func (t *Tree) addQuotaUsage(path string, count, bytes int64) {
	if !t.keepQuotaStats {
		return
	}
	g := t.governing(path)
	if g == "" {
		return
	}
	stat := quota.StatPath(g)
	n := t.lookup(stat)
	if n == nil {
		return
	}
	s, err := quota.Parse(n.Data)
	if err != nil {
		return
	}
	s.SetCount(s.Count() + count)
	s.SetBytes(s.Bytes() + bytes)
	t.setQuotaStats(stat, n, []byte(s.String()))
}

// setQuotaStats replaces the data of the stats node n at path, leaving its
// Stat as it is.
func (t *Tree) setQuotaStats(path string, n *Node, data []byte) {
	t.preserve(n)
	t.record(undo{kind: undoSetData, path: path, data: n.Data, version: n.Version, mzxid: n.Mzxid, mtime: n.Mtime})
	t.dataSize += int64(len(data) - len(n.Data))
	n.Data = data
}

// QuotaState is what a quota check reads of the quota governing a path:
// the path with the quota, and the data of its limits and stats nodes,
// with whether they exist.
type QuotaState struct {
	Path                  string
	Limits, Stats         []byte
	HaveLimits, HaveStats bool
}

// Quota returns the state of the quota that governs path; ok is false when
// none does.
func (t *Tree) Quota(path string) (q QuotaState, ok bool) {
	g := t.governing(path)
	if g == "" {
		return QuotaState{}, false
	}
	return t.quotaState(g), true
}

func (t *Tree) quotaState(g string) QuotaState {
	q := QuotaState{Path: g}
	if n := t.lookup(quota.LimitPath(g)); n != nil {
		q.Limits, q.HaveLimits = n.Data, true
	}
	if n := t.lookup(quota.StatPath(g)); n != nil {
		q.Stats, q.HaveStats = n.Data, true
	}
	return q
}

// Quotas is every quota's state at one moment (Tree.SaveQuotas).
type Quotas map[string]QuotaState

// SaveQuotas returns the state of every quota, for the checks of a multi,
// which ZooKeeper makes against the tree as it was before the multi. Node
// data is never changed in place, so this shares it.
func (t *Tree) SaveQuotas() Quotas {
	qs := make(Quotas, len(t.quotas))
	for k := range t.quotas {
		qs[k] = t.quotaState(k)
	}
	return qs
}

// Quota returns the state of the quota that governed path when the
// quotas were saved.
func (qs Quotas) Quota(path string) (QuotaState, bool) {
	if len(qs) == 0 {
		return QuotaState{}, false
	}
	g := quota.Governing(path, func(k string) bool { _, ok := qs[k]; return ok })
	q, ok := qs[g]
	return q, ok && g != ""
}
