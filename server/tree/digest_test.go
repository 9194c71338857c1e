package tree

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/collie-io/collie/proto"
)

// walkDigest is the digest computed from scratch: the naive model the
// kept one is checked against.
func walkDigest(t *Tree) int64 {
	var sum uint64
	t.Walk(func(path string, n *Node) bool {
		sum += nodeDigest(path, n)
		return true
	})
	return int64(sum)
}

// ZooKeeper 3.8's digests, worked out apart (Python's zlib.crc32 over the
// bytes DigestCalculator hashes): a new tree holds / and /zookeeper with
// zero Stats (and /zookeeper/quota and /zookeeper/config, which count for
// nothing); a container node's digest covers its owner as stored.
func TestDigestValues(t *testing.T) {
	if got := New(false).Digest(); got != 68323592+1303661912 {
		t.Errorf("new tree: Digest() = %d, want %d", got, 68323592+1303661912)
	}
	n := &Node{Data: []byte("hello"), Czxid: 5, Mzxid: 7, Pzxid: 9, Ctime: 1700000000000, Mtime: 1700000000001,
		Version: 3, Cversion: 4, Aversion: 2, EphemeralOwner: ContainerOwner}
	if got := nodeDigest("/app/x", n); got != 3856220131 {
		t.Errorf("nodeDigest = %d, want 3856220131", got)
	}
	if got := nodeDigest("/zookeeper/quota/app", n); got != 0 {
		t.Errorf("a node under /zookeeper/ has digest %d, want 0", got)
	}
}

// Random creates, deletes, sets and multis with rollbacks keep the digest
// equal to the one computed from scratch; a tree restored from the same
// nodes has it too.
func TestDigestFollowsChanges(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tr := New(true)
	paths := []string{"/"}
	zxid := int64(1)
	for i := range 3000 {
		zxid++
		inMulti := r.IntN(10) == 0
		if inMulti {
			tr.Begin()
		}
		for range 1 + r.IntN(3) {
			switch op := r.IntN(4); {
			case op == 0 || len(paths) < 3:
				parent := paths[r.IntN(len(paths))]
				path := proto.Join(parent, fmt.Sprintf("n%d", i))
				if _, ok := tr.Get(path); ok {
					continue
				}
				tr.Create(path, []byte(fmt.Sprint(r.Int())), OpenACL, int64(r.IntN(3)), zxid, zxid*10)
				paths = append(paths, path)
			case op == 1:
				j := 1 + r.IntN(len(paths)-1)
				if n, ok := tr.Get(paths[j]); !ok || n.NumChildren() > 0 {
					continue
				}
				tr.Delete(paths[j], zxid)
				paths = append(paths[:j], paths[j+1:]...)
			case op == 2:
				path := paths[r.IntN(len(paths))]
				n, _ := tr.Get(path)
				tr.SetData(path, []byte(fmt.Sprint(r.Int())), n.Version+1, zxid, zxid*10)
			default:
				path := paths[r.IntN(len(paths))]
				n, _ := tr.Get(path)
				tr.SetACL(path, ReadACL, n.Aversion+1)
			}
		}
		if inMulti {
			if r.IntN(2) == 0 {
				tr.Rollback()
				paths = paths[:0]
				tr.Walk(func(path string, _ *Node) bool {
					if !HasPrefix(path, ZookeeperPath) {
						paths = append(paths, path)
					}
					return true
				})
			} else {
				tr.Commit()
			}
		}
		if got, want := tr.Digest(), walkDigest(tr); got != want {
			t.Fatalf("after step %d: Digest() = %d, computed from the nodes %d", i, got, want)
		}
	}
	restored := New(true)
	tr.Walk(func(path string, n *Node) bool {
		c := *n
		c.children = nil
		if err := restored.Restore(path, &c, restored.InternACL(tr.ACL(n))); err != nil {
			t.Fatal(err)
		}
		return true
	})
	if restored.Digest() != tr.Digest() {
		t.Errorf("restored tree's digest %d, the original's %d", restored.Digest(), tr.Digest())
	}
}
