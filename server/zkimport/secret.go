package zkimport

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"slices"

	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/zkdata"
)

// Digest returns a SHA-256 of everything a ZooKeeper database holds that
// the import keeps: every node's path, data, ACL and Stat in path order,
// the sessions with their timeouts, and the last zxid. Two imports of the
// same data have the same digest.
func Digest(t *zkdata.DataTree) [sha256.Size]byte {
	h := sha256.New()
	var num [8]byte
	long := func(v int64) {
		binary.BigEndian.PutUint64(num[:], uint64(v))
		h.Write(num[:])
	}
	bytes := func(b []byte) {
		long(int64(len(b)))
		h.Write(b)
	}
	long(t.LastZxid)
	ids := make([]int64, 0, len(t.Sessions))
	for id := range t.Sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		long(id)
		long(int64(t.Sessions[id]))
	}
	t.Walk(func(path string, n *zkdata.Node) error {
		bytes([]byte(path))
		bytes(n.Data)
		long(int64(len(n.ACL)))
		for _, a := range n.ACL {
			long(int64(a.Perms))
			bytes([]byte(a.ID.Scheme))
			bytes([]byte(a.ID.ID))
		}
		s := n.Stat
		for _, v := range []int64{s.Czxid, s.Mzxid, s.Ctime, s.Mtime, int64(s.Version), int64(s.Cversion), int64(s.Aversion), s.EphemeralOwner, s.Pzxid} {
			long(v)
		}
		return nil
	})
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// EnsembleSecret returns the session secret of an ensemble whose members
// each import the same ZooKeeper data: made from the data's Digest and a
// token the operator gives every member and keeps secret, since session
// passwords derive from it. Members that import different data get
// different secrets, so they are different ensembles and refuse each
// other rather than serve diverging trees.
func EnsembleSecret(digest [sha256.Size]byte, token string) []byte {
	var mac hash.Hash = hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("collie import\x00"))
	mac.Write(digest[:])
	return mac.Sum(nil)[:fsm.SecretLen]
}
