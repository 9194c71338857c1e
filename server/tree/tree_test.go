package tree

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/collie-io/collie/proto"
)

func dump(t *Tree) string {
	var b strings.Builder
	t.Walk(func(path string, n *Node) bool {
		fmt.Fprintf(&b, "%s %q %+v %v\n", path, n.Data, t.Stat(n), n.ACL)
		return true
	})
	fmt.Fprintf(&b, "size=%d ephemerals=%v containers=%d ttls=%d\n", t.DataSize(), t.EphemeralSessions(), len(t.containers), len(t.ttls))
	for _, id := range t.EphemeralSessions() {
		fmt.Fprintf(&b, "%d: %v\n", id, t.Ephemerals(id))
	}
	return b.String()
}

// TestRollbackRestoresEverything applies random mutations inside a
// journal and rolls them back: the tree, its indexes and its size must be
// exactly as before.
func TestRollbackRestoresEverything(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	tr := New(true)
	names := []string{"/a", "/b", "/a/x", "/a/y", "/b/x", "/a/x/z"}
	owners := []int64{0, 1, 2, ContainerOwner, TTLOwner(500)}
	mutate := func() {
		p := names[rng.IntN(len(names))]
		n, exists := tr.Get(p)
		_, parentExists := tr.Get(proto.Parent(p))
		switch {
		case !exists && parentExists:
			if parent, _ := tr.Get(proto.Parent(p)); KindOf(parent.EphemeralOwner, true) != Ephemeral {
				tr.Create(p, []byte{byte(rng.IntN(9))}, OpenACL, owners[rng.IntN(len(owners))], rng.Int64N(100), rng.Int64N(100))
			}
		case exists && n.NumChildren() == 0 && rng.IntN(2) == 0:
			tr.Delete(p, rng.Int64N(100))
		case exists && rng.IntN(2) == 0:
			tr.SetData(p, []byte(strings.Repeat("d", rng.IntN(5))), n.Version+1, rng.Int64N(100), rng.Int64N(100))
		case exists:
			tr.SetACL(p, ReadACL, n.Aversion+1)
		}
	}
	for round := range 300 {
		for range rng.IntN(5) {
			mutate() // committed changes build up a varied tree
		}
		before := dump(tr)
		tr.Begin()
		for range 1 + rng.IntN(8) {
			mutate()
		}
		tr.Rollback()
		if after := dump(tr); after != before {
			t.Fatalf("round %d: rollback left a different tree:\nbefore:\n%s\nafter:\n%s", round, before, after)
		}
	}
}

func TestCversionCountsCreatesAndDeletes(t *testing.T) {
	tr := New(false)
	root, _ := tr.Get("/")
	if got := tr.Stat(root).Cversion; got != -1 {
		t.Fatalf("root cversion of a new tree = %d, want -1 as ZooKeeper shows", got)
	}
	tr.Create("/p", nil, OpenACL, 0, 1, 1)
	tr.Create("/p/a", nil, OpenACL, 0, 2, 2)
	tr.Create("/p/b", nil, OpenACL, 0, 3, 3)
	tr.Delete("/p/a", 4)
	p, _ := tr.Get("/p")
	if st := tr.Stat(p); st.Cversion != 3 || st.NumChildren != 1 || st.Pzxid != 4 {
		t.Fatalf("after 2 creates and 1 delete: %+v, want cversion 3, 1 child, pzxid 4", st)
	}
	if got := SequenceName("/p/s-", p.Cversion); got != "/p/s-0000000002" {
		t.Fatalf("sequence name %q: the suffix counts creates only", got)
	}
}

func TestACLChecks(t *testing.T) {
	digest, ok := DigestID("super:test")
	// The value is computed independently (base64 of SHA-1 of "super:test").
	if !ok || digest != "super:D/InIHSb7yEEbrWz8b9l71RjZJU=" {
		t.Fatalf("DigestID = %q, %v", digest, ok)
	}
	if _, ok := DigestID("nocolon"); ok {
		t.Fatal("DigestID accepted an id without a colon")
	}
	acl := []proto.ACL{
		{Perms: proto.PermRead, ID: proto.ID{Scheme: "ip", ID: "10.0.0.0/8"}},
		{Perms: proto.PermWrite, ID: proto.ID{Scheme: "digest", ID: digest}},
	}
	cases := []struct {
		perm int32
		ids  []proto.ID
		want bool
	}{
		{proto.PermRead, []proto.ID{{Scheme: "ip", ID: "10.1.2.3"}}, true},
		{proto.PermRead, []proto.ID{{Scheme: "ip", ID: "11.1.2.3"}}, false},
		{proto.PermWrite, []proto.ID{{Scheme: "ip", ID: "10.1.2.3"}}, false},
		{proto.PermWrite, []proto.ID{{Scheme: "digest", ID: digest}}, true},
		{proto.PermAdmin, []proto.ID{{Scheme: "super", ID: ""}}, true},
		{proto.PermAdmin, nil, false},
	}
	for _, c := range cases {
		if got := CheckACL(acl, c.perm, c.ids); got != c.want {
			t.Errorf("CheckACL(perm %d, %v) = %v, want %v", c.perm, c.ids, got, c.want)
		}
	}
	if !CheckACL(nil, proto.PermAll, nil) {
		t.Error("an empty ACL must allow everything")
	}
	fixed, ok := FixupACL([]proto.ACL{{Perms: 31, ID: proto.ID{Scheme: "auth"}}}, []proto.ID{{Scheme: "ip", ID: "1.2.3.4"}, {Scheme: "digest", ID: digest}})
	if !ok || len(fixed) != 1 || fixed[0].ID.Scheme != "digest" {
		t.Fatalf("auth expands to authenticated identities only, not ip: %v %v", fixed, ok)
	}
}
