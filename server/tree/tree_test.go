package tree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/collie-io/collie/proto"
)

func dump(t *Tree) string {
	var b strings.Builder
	t.Walk(func(path string, n *Node) bool {
		fmt.Fprintf(&b, "%s %q %+v %v\n", path, n.Data, t.Stat(n), t.ACL(n))
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
		case !exists && parentExists && rng.IntN(3) == 0:
			// A logged ZooKeeper delete of a node already gone.
			tr.RaisePzxid(proto.Parent(p), rng.Int64N(100))
		case !exists && parentExists:
			if parent, _ := tr.Get(proto.Parent(p)); KindOf(parent.EphemeralOwner, true) != Ephemeral {
				if rng.IntN(2) == 0 {
					tr.Create(p, []byte{byte(rng.IntN(9))}, OpenACL, owners[rng.IntN(len(owners))], rng.Int64N(100), rng.Int64N(100))
				} else {
					// A logged ZooKeeper create, its parent's cversion
					// given: higher, lower or -1.
					tr.CreateAt(p, []byte{byte(rng.IntN(9))}, OpenACL, owners[rng.IntN(len(owners))], int32(rng.IntN(12)-1), rng.Int64N(100), rng.Int64N(100))
				}
			}
		case exists && rng.IntN(6) == 0:
			tr.SetCversionPzxid(p, int32(rng.IntN(12)-1), rng.Int64N(100))
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
		tr.Sweep()
		checkACLCounts(t, tr)
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

// TestCreateAtKeepsHigherCversions applies logged ZooKeeper creates as
// DataTree.createNode does: the parent's cversion and pzxid move only
// forward, and -1 means one more.
func TestCreateAtKeepsHigherCversions(t *testing.T) {
	tr := New(false)
	tr.Create("/p", nil, OpenACL, 0, 1, 1)
	parent := func() proto.Stat {
		p, _ := tr.Get("/p")
		return proto.Stat{Cversion: p.Cversion, Pzxid: p.Pzxid}
	}
	steps := []struct {
		do   func()
		want proto.Stat
	}{
		{func() { tr.CreateAt("/p/a", nil, OpenACL, 0, 5, 10, 10) }, proto.Stat{Cversion: 5, Pzxid: 10}},
		// A replayed create whose cversion the parent has passed.
		{func() { tr.CreateAt("/p/b", nil, OpenACL, 0, 3, 11, 11) }, proto.Stat{Cversion: 5, Pzxid: 10}},
		{func() { tr.CreateAt("/p/c", nil, OpenACL, 0, -1, 12, 12) }, proto.Stat{Cversion: 6, Pzxid: 12}},
		{func() { tr.SetCversionPzxid("/p", 6, 13) }, proto.Stat{Cversion: 6, Pzxid: 12}},
		{func() { tr.SetCversionPzxid("/p", -1, 14) }, proto.Stat{Cversion: 7, Pzxid: 14}},
		{func() { tr.RaisePzxid("/p", 13) }, proto.Stat{Cversion: 7, Pzxid: 14}},
		{func() { tr.RaisePzxid("/p", 15) }, proto.Stat{Cversion: 7, Pzxid: 15}},
	}
	for i, s := range steps {
		s.do()
		if got := parent(); got != s.want {
			t.Fatalf("step %d: parent cversion %d pzxid %d, want %d %d", i, got.Cversion, got.Pzxid, s.want.Cversion, s.want.Pzxid)
		}
	}
	if n, _ := tr.Get("/p/b"); n == nil || n.Czxid != 11 || n.Pzxid != 11 || n.Ctime != 11 {
		t.Fatalf("/p/b created by a replayed create: %+v", n)
	}
}

func TestACLChecks(t *testing.T) {
	digest := DigestID("super:test")
	// The value is computed independently (base64 of SHA-1 of "super:test").
	if digest != "super:D/InIHSb7yEEbrWz8b9l71RjZJU=" {
		t.Fatalf("DigestID = %q", digest)
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
	for _, rules := range []ACLRules{ACLRulesZK38, ACLRulesV1} {
		for _, c := range cases {
			if got := CheckACL(acl, c.perm, c.ids, rules); got != c.want {
				t.Errorf("CheckACL(perm %d, %v, rules %d) = %v, want %v", c.perm, c.ids, rules, got, c.want)
			}
		}
		if !CheckACL(nil, proto.PermAll, nil, rules) {
			t.Error("an empty ACL must allow everything")
		}
	}
	// ip ids as ZooKeeper 3.8 reads them: IPv4 only, numbers as Java's
	// Integer.parseInt reads them (see zkcompat's TestAuthAgainstZooKeeper).
	for _, c := range []struct {
		client, acl  string
		valid, match bool
	}{
		{"127.0.0.1", "127.000.000.001", true, true},
		{"127.0.0.1", "127.1.1.1/+8", true, true},
		{"127.0.0.1", "128.0.0.0/0", true, true},
		{"127.0.0.1", "127.0.0.3/31", true, false},
		{"127.0.0.1", "\u0661\u0662\u0667.0.0.1", true, true},
		{"127.0.0.1", "1.2.3.4/33", false, false},
		{"127.0.0.1", "1.2.3.4/", false, false},
		{"::1", "::1", false, false},
		{"0:0:0:0:0:0:0:1", "0.0.0.0/0", true, false},
	} {
		_, _, valid := parseIPACL(c.acl)
		if match := ipMatches(c.client, c.acl); valid != c.valid || match != c.match {
			t.Errorf("ip id %q: valid %v, matches %s %v; want %v, %v", c.acl, valid, c.client, match, c.valid, c.match)
		}
	}
	for id, want := range map[string]bool{"u:h": true, ":h": true, "u:h:": true, "u:h::": true, "u:": false, "u::": false, "::": false, "u": false, "a:b:c": false} {
		if validDigest(id) != want {
			t.Errorf("validDigest(%q) = %v, want %v", id, !want, want)
		}
	}
	fixed, ok := FixupACL([]proto.ACL{{Perms: 31, ID: proto.ID{Scheme: "auth"}}}, []proto.ID{{Scheme: "ip", ID: "1.2.3.4"}, {Scheme: "digest", ID: digest}}, ACLRulesZK38)
	if !ok || len(fixed) != 1 || fixed[0].ID.Scheme != "digest" {
		t.Fatalf("auth expands to authenticated identities only, not ip: %v %v", fixed, ok)
	}
}

// TestACLRulesV1 checks where the rules of version 1 log entries differ
// from ZooKeeper 3.8's, and that they are kept for those entries.
func TestACLRulesV1(t *testing.T) {
	auth := proto.ACL{Perms: proto.PermAll, ID: proto.ID{Scheme: SchemeAuth}}
	// ConnOrder lists these two the other way round (TestConnOrderAsZooKeeper).
	u1 := proto.ID{Scheme: SchemeDigest, ID: DigestID("user1:pw")}
	u2 := proto.ID{Scheme: SchemeDigest, ID: DigestID("user2:pw")}
	super := proto.ID{Scheme: SchemeSuper}
	ids := []proto.ID{{Scheme: SchemeIP, ID: "127.0.0.1"}, u1, super, u2}
	expand := func(rules ACLRules) []proto.ID {
		fixed, ok := FixupACL([]proto.ACL{auth}, ids, rules)
		if !ok {
			t.Fatalf("auth refused under rules %d", rules)
		}
		var out []proto.ID
		for _, a := range fixed {
			out = append(out, a.ID)
		}
		return out
	}
	if got, want := expand(ACLRulesV1), []proto.ID{u1, super, u2}; !slices.Equal(got, want) {
		t.Errorf("auth under ACLRulesV1 = %v, want %v", got, want)
	}
	if got, want := expand(ACLRulesZK38), []proto.ID{u2, u1}; !slices.Equal(got, want) {
		t.Errorf("auth under ACLRulesZK38 = %v, want %v", got, want)
	}
	if _, ok := FixupACL([]proto.ACL{auth}, []proto.ID{super}, ACLRulesZK38); ok {
		t.Error("auth with only the super identity accepted under ACLRulesZK38")
	}
	for _, c := range []struct {
		scheme, id string
		v1, zk38   bool
	}{
		{SchemeIP, "::1", true, false},
		{SchemeIP, "fe80::/10", true, false},
		{SchemeIP, "127.000.000.001", false, true},
		{SchemeIP, "1.2.3.4/+8", false, true},
		{SchemeIP, "10.0.0.0/8", true, true},
		{SchemeDigest, "u:", true, false},
		{SchemeDigest, "u:h:", false, true},
		{SchemeDigest, "u:h", true, true},
	} {
		acl := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: c.scheme, ID: c.id}}}
		if _, ok := FixupACL(acl, nil, ACLRulesV1); ok != c.v1 {
			t.Errorf("%s:%s valid under ACLRulesV1: %v, want %v", c.scheme, c.id, ok, c.v1)
		}
		if _, ok := FixupACL(acl, nil, ACLRulesZK38); ok != c.zk38 {
			t.Errorf("%s:%s valid under ACLRulesZK38: %v, want %v", c.scheme, c.id, ok, c.zk38)
		}
	}
	// Ids are decoded as Java decodes UTF-8 under ZooKeeper's rules only.
	raw := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: SchemeDigest, ID: "u\xff:h"}}}
	if fixed, _ := FixupACL(raw, nil, ACLRulesV1); fixed[0].ID.ID != "u\xff:h" {
		t.Errorf("ACLRulesV1 changed the id to %q", fixed[0].ID.ID)
	}
	if fixed, _ := FixupACL(raw, nil, ACLRulesZK38); fixed[0].ID.ID != "u\ufffd:h" {
		t.Errorf("ACLRulesZK38 made the id %q", fixed[0].ID.ID)
	}
	ipACL := []proto.ACL{{Perms: proto.PermRead, ID: proto.ID{Scheme: SchemeIP, ID: "::1"}}}
	client := []proto.ID{{Scheme: SchemeIP, ID: "::1"}}
	if !CheckACL(ipACL, proto.PermRead, client, ACLRulesV1) || CheckACL(ipACL, proto.PermRead, client, ACLRulesZK38) {
		t.Error("ip:::1 must match the client ::1 under ACLRulesV1 only")
	}
}

// checkACLCounts checks the ACL table against the nodes: each ACL is
// counted once per node that uses it, and, after a sweep, no ACL is kept
// that no node uses.
func checkACLCounts(t *testing.T, tr *Tree) {
	t.Helper()
	uses := map[ACLRef]int{}
	tr.Walk(func(_ string, n *Node) bool {
		uses[n.acl]++
		return true
	})
	for ref, e := range tr.acls.entries {
		if e.live && e.refs != uses[ACLRef(ref)] {
			t.Fatalf("ACL %d %v counted %d times, used by %d nodes", ref, e.acl, e.refs, uses[ACLRef(ref)])
		}
		if !e.live && uses[ACLRef(ref)] > 0 {
			t.Fatalf("ACL %d is free but used by %d nodes", ref, uses[ACLRef(ref)])
		}
	}
	if len(tr.acls.unused) == 0 && tr.acls.len() != len(uses) {
		t.Fatalf("after a sweep the table holds %d ACLs, the nodes use %d", tr.acls.len(), len(uses))
	}
}

func TestNodeFitsItsSizeClass(t *testing.T) {
	// 96 bytes is an allocation size class; one byte more costs 16.
	if size := unsafe.Sizeof(Node{}); size != 96 {
		t.Fatalf("a node is %d bytes, want 96", size)
	}
}

func TestUnusedACLsAreDropped(t *testing.T) {
	tr := New(false)
	before := tr.acls.len()
	acl := func(i int) []proto.ACL {
		return []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "ip", ID: fmt.Sprintf("10.0.0.%d", i)}}}
	}
	for i := range 100 {
		tr.Create(fmt.Sprintf("/n%d", i), nil, acl(i), 0, 1, 1)
	}
	tr.Sweep()
	checkACLCounts(t, tr)
	if got := tr.acls.len(); got != before+100 {
		t.Fatalf("%d ACLs with 100 distinct ones in use, want %d", got, before+100)
	}
	// A node changing its ACL inside a transaction that is rolled back
	// gets its ACL back, even if a sweep comes after.
	tr.Begin()
	tr.SetACL("/n0", OpenACL, 1)
	tr.Rollback()
	tr.Sweep()
	checkACLCounts(t, tr)
	if n, _ := tr.Get("/n0"); !slices.Equal(tr.ACL(n), acl(0)) {
		t.Fatalf("after rollback /n0 has ACL %v, want %v", tr.ACL(n), acl(0))
	}
	// While a cut is open, an ACL no node uses any more is kept: the cut
	// still reads it.
	cut := tr.Freeze()
	tr.SetACL("/n1", OpenACL, 1)
	tr.Sweep()
	var seen []proto.ACL
	for cut.Next(1000, func(path []byte, n *Node) {
		if string(path) == "/n1" {
			seen = tr.ACL(n)
		}
	}) {
	}
	tr.Thaw()
	if !slices.Equal(seen, acl(1)) {
		t.Fatalf("the cut read /n1 with ACL %v, want %v", seen, acl(1))
	}
	for i := range 100 {
		tr.Delete(fmt.Sprintf("/n%d", i), 2)
	}
	tr.Sweep()
	checkACLCounts(t, tr)
	if got := tr.acls.len(); got != before {
		t.Fatalf("%d ACLs after every node with its own was deleted, want %d", got, before)
	}
}

// TestRestoreAfterDeletesFindsTheLiveParent checks that the parent a
// restore remembers is never a node that has since been deleted.
func TestRestoreAfterDeletesFindsTheLiveParent(t *testing.T) {
	tr := New(false)
	acl := tr.InternACL(OpenACL)
	for _, p := range []string{"/a", "/a/b"} {
		if err := tr.Restore(p, &Node{}, acl); err != nil {
			t.Fatal(err)
		}
	}
	tr.Delete("/a/b", 2)
	tr.Delete("/a", 3)
	tr.Create("/a", nil, OpenACL, 0, 4, 4)
	if err := tr.Restore("/a/c", &Node{}, acl); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Get("/a/c"); !ok {
		t.Fatal("/a/c was restored under the deleted /a")
	}
}
