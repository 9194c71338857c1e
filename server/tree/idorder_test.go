package tree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/collie-io/collie/proto"
)

func digestIDs(users ...string) []proto.ID {
	ids := []proto.ID{{Scheme: SchemeIP, ID: "127.0.0.1"}}
	for _, u := range users {
		ids = append(ids, proto.ID{Scheme: SchemeDigest, ID: DigestID(u + ":pw")})
	}
	return ids
}

func users(ids []proto.ID) []string {
	var out []string
	for _, id := range ids {
		if id.Scheme == SchemeDigest {
			out = append(out, id.ID[:len(id.ID)-29]) // the user, without ":" and the hash
		} else {
			out = append(out, id.Scheme)
		}
	}
	return out
}

// TestConnOrderAsZooKeeper checks orders that ZooKeeper 3.8's whoAmI
// listed for a connection from 127.0.0.1 after these addauths (see
// zkcompat's TestAuthAgainstZooKeeper, which compares many more).
func TestConnOrderAsZooKeeper(t *testing.T) {
	cases := []struct {
		added []string
		want  []string
	}{
		{[]string{"user1", "user2", "user3"}, []string{"user2", "user1", "user3", "ip"}},
		{[]string{"user3", "user2", "user1"}, []string{"user2", "user1", "user3", "ip"}},
		{[]string{"user4", "user5", "user6", "user7", "user8", "user9", "user10"},
			[]string{"user5", "user7", "user8", "user9", "user10", "ip", "user4", "user6"}},
	}
	for _, c := range cases {
		if got := users(ConnOrder(digestIDs(c.added...))); !slices.Equal(got, c.want) {
			t.Errorf("ConnOrder after %v = %v, want %v", c.added, got, c.want)
		}
	}
}

// TestConnOrderBucketBecomesTree adds identities that share a bucket until
// the bucket is a tree: the table grows to 128 buckets first, and the tree
// then lists the identities added after it formed newest first, before the
// older ones in the order they came.
func TestConnOrderBucketBecomesTree(t *testing.T) {
	same := collidingUsers(12, 127)
	var s IDSet
	for _, id := range digestIDs(same...) {
		s.Add(id)
	}
	if len(s.bins) != 128 || !s.bins[0].tree {
		t.Fatalf("%d buckets, bucket 0 a tree: %v; want 128 and a tree", len(s.bins), s.bins[0].tree)
	}
	// The ninth add grew the table; the tenth found nine in the list,
	// joined them and made the ten a tree; the two after came first.
	want := []string{same[11], same[10]}
	want = append(want, same[:10]...)
	var bucket []proto.ID
	for _, e := range s.bins[0].entries {
		bucket = append(bucket, e.id)
	}
	got := users(bucket)
	if !slices.Equal(got, want) {
		t.Fatalf("bucket 0 lists %v, want %v", got, want)
	}
}

// TestConnOrderKeepsEveryone checks that ConnOrder neither loses nor
// repeats an identity, however many.
func TestConnOrderKeepsEveryone(t *testing.T) {
	var added []string
	for i := range 300 {
		added = append(added, fmt.Sprintf("u%d", i))
		ids := digestIDs(added...)
		got := ConnOrder(ids)
		sortIDs := func(s []proto.ID) []proto.ID {
			s = slices.Clone(s)
			slices.SortFunc(s, func(a, b proto.ID) int {
				if a.Scheme+a.ID < b.Scheme+b.ID {
					return -1
				}
				return 1
			})
			return s
		}
		if !slices.Equal(sortIDs(got), sortIDs(ids)) {
			t.Fatalf("ConnOrder of %d identities returned %d, or others", len(ids), len(got))
		}
	}
}

// collidingUsers returns n users whose digest identities (with password
// "pw") have spread hashes equal in the bits of mask: they share a bucket of
// every table of up to mask+1 buckets.
func collidingUsers(n int, mask int32) []string {
	var same []string
	for i := 0; len(same) < n; i++ {
		u := fmt.Sprintf("c%d", i)
		if spread(idHash(proto.ID{Scheme: SchemeDigest, ID: DigestID(u + ":pw")}))&mask == 0 {
			same = append(same, u)
		}
	}
	return same
}

// TestConnOrderReadded checks that an identity added again can change the
// order, as in ZooKeeper (see zkcompat's TestAuthAgainstZooKeeper): when it
// sits eighth in its bucket, the map grows its table as if it were new,
// which reorders the bucket; and when the table is large, the bucket
// becomes a tree, which lists the identities added after it first.
func TestConnOrderReadded(t *testing.T) {
	for _, c := range []struct {
		same  []string
		again string
		after []string
	}{
		{collidingUsers(8, 15), collidingUsers(8, 15)[7], nil},
		{collidingUsers(9, 127), collidingUsers(9, 127)[8], collidingUsers(10, 127)[9:]},
	} {
		once := digestIDs(append(c.same, c.after...)...)
		twice := digestIDs(append(append(c.same, c.again), c.after...)...)
		if a, b := users(ConnOrder(once)), users(ConnOrder(twice)); slices.Equal(a, b) {
			t.Errorf("adding %s again left the order %v", c.again, a)
		}
	}
}

// TestIDSetAddReportsChange checks that the adds IDSet.Add reports as
// changing nothing can be left out: ConnOrder of the adds it reported gives
// the order of all of them, for sequences with many repeats, some in
// crowded buckets.
func TestIDSetAddReportsChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := append(collidingUsers(12, 127), "u1", "u2", "u3", "u4", "u5")
	readds := 0 // adds of an id already there that changed the set
	for range 500 {
		var added []proto.ID
		var kept []proto.ID
		var s IDSet
		for _, id := range digestIDs() { // the address
			s.Add(id)
			added, kept = append(added, id), append(kept, id)
		}
		for range 1 + rng.IntN(60) {
			id := digestIDs(pool[rng.IntN(len(pool))])[1]
			there := slices.Contains(added, id)
			added = append(added, id)
			if s.Add(id) {
				kept = append(kept, id)
				if there {
					readds++
				}
			}
		}
		if got, want := ConnOrder(kept), ConnOrder(added); !slices.Equal(got, want) {
			t.Fatalf("after %v:\nthe adds that changed the set give %v\nall of them give %v", users(added), users(got), users(want))
		}
		if !slices.Equal(s.list(), ConnOrder(added)) {
			t.Fatalf("the set lists %v, ConnOrder %v", users(s.list()), users(ConnOrder(added)))
		}
	}
	if readds == 0 {
		t.Fatal("no add of an id already there changed the set: the sequences test nothing")
	}
	t.Logf("%d adds again changed the set", readds)
}
