package tree

import (
	"testing"

	"github.com/collie-io/collie/quota"
)

func quotaTree(t *testing.T) *Tree {
	t.Helper()
	tr := New(false)
	tr.KeepQuotaStats(true)
	tr.Create("/a", []byte("x"), OpenACL, 0, 1, 1)
	tr.Create(quota.Path("/a"), nil, OpenACL, 0, 2, 2)
	tr.Create(quota.LimitPath("/a"), []byte("count=5,bytes=-1"), OpenACL, 0, 3, 3)
	tr.Create(quota.StatPath("/a"), []byte("count=0,bytes=0"), OpenACL, 0, 4, 4)
	return tr
}

func statsOf(t *testing.T, tr *Tree) string {
	t.Helper()
	n, ok := tr.Get(quota.StatPath("/a"))
	if !ok {
		t.Fatal("no stats node")
	}
	return string(n.Data)
}

// A snapshot's cut holds the stats as they were at the freeze, while the
// tree goes on counting.
func TestQuotaStatsInACut(t *testing.T) {
	tr := quotaTree(t)
	cut := tr.Freeze()
	tr.Create("/a/b", []byte("yy"), OpenACL, 0, 5, 5)
	if got := statsOf(t, tr); got != "count=2,bytes=3" {
		t.Fatalf("stats after a create: %q", got)
	}
	var inCut string
	for cut.Next(100, func(path []byte, n *Node) {
		if string(path) == quota.StatPath("/a") {
			inCut = string(n.Data)
		}
	}) {
	}
	tr.Thaw()
	if inCut != "count=1,bytes=1" {
		t.Fatalf("stats in the cut: %q, want those at the freeze", inCut)
	}
}

// A rolled back multi leaves the stats, and the set of quotas, as they
// were.
func TestQuotaRollback(t *testing.T) {
	tr := quotaTree(t)
	tr.Begin()
	tr.Create("/a/b", []byte("yy"), OpenACL, 0, 5, 5)
	tr.SetData("/a", []byte("xxxx"), 1, 5, 5)
	tr.Delete(quota.LimitPath("/a"), 5)
	tr.Create("/a/c", nil, OpenACL, 0, 5, 5)
	if tr.HasQuotas() {
		t.Fatal("the quota is still there after its limits node was deleted")
	}
	tr.Rollback()
	if got := statsOf(t, tr); got != "count=1,bytes=1" {
		t.Fatalf("stats after rollback: %q", got)
	}
	if q, ok := tr.Quota("/a/b"); !ok || q.Path != "/a" || string(q.Limits) != "count=5,bytes=-1" {
		t.Fatalf("quota after rollback: %+v %v", q, ok)
	}
	if n, _ := tr.Get(quota.StatPath("/a")); n.Mzxid != 4 || n.Version != 0 {
		t.Fatalf("the stats node's Stat changed: mzxid %d version %d", n.Mzxid, n.Version)
	}
}

// Quotas come back with the nodes restored from a snapshot.
func TestQuotasRestored(t *testing.T) {
	tr := quotaTree(t)
	restored := New(false)
	tr.Walk(func(path string, n *Node) bool {
		c := *n
		c.children = nil
		if err := restored.Restore(path, &c, restored.InternACL(tr.ACL(n))); err != nil {
			t.Fatal(err)
		}
		return true
	})
	restored.KeepQuotaStats(true)
	restored.Create("/a/b", []byte("yy"), OpenACL, 0, 5, 5)
	n, _ := restored.Get(quota.StatPath("/a"))
	if string(n.Data) != "count=2,bytes=3" {
		t.Fatalf("stats after a create in the restored tree: %q", n.Data)
	}
}
