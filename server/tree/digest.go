package tree

import (
	"encoding/binary"
	"hash/crc32"
	"strings"
)

// DigestVersion is the version of ZooKeeper's DigestCalculator whose
// digest Digest computes.
const DigestVersion = 2

// Digest returns ZooKeeper's digest of the tree, as its DataTree keeps
// it: the sum, wrapping, of every node's digest, where a node's digest is
// the CRC-32 of its path ("" for the root), its data and its persisted
// Stat (czxid, mzxid, pzxid, ctime, mtime, version, cversion counting
// creations, aversion, ephemeral owner, big-endian), and the nodes under
// /zookeeper/ count for nothing. The tree keeps it up to date with every
// change, so every replica that applied the same entries has the same
// digest.
func (t *Tree) Digest() int64 { return int64(t.digest) }

// nodeDigest is one node's share of the tree's digest.
func nodeDigest(path string, n *Node) uint64 {
	if strings.HasPrefix(path, "/zookeeper/") {
		return 0
	}
	if path == "/" {
		path = ""
	}
	var stat [60]byte
	b := binary.BigEndian.AppendUint64(stat[:0], uint64(n.Czxid))
	b = binary.BigEndian.AppendUint64(b, uint64(n.Mzxid))
	b = binary.BigEndian.AppendUint64(b, uint64(n.Pzxid))
	b = binary.BigEndian.AppendUint64(b, uint64(n.Ctime))
	b = binary.BigEndian.AppendUint64(b, uint64(n.Mtime))
	b = binary.BigEndian.AppendUint32(b, uint32(n.Version))
	b = binary.BigEndian.AppendUint32(b, uint32(n.Cversion))
	b = binary.BigEndian.AppendUint32(b, uint32(n.Aversion))
	b = binary.BigEndian.AppendUint64(b, uint64(n.EphemeralOwner))
	crc := crc32.Update(0, crc32.IEEETable, []byte(path))
	crc = crc32.Update(crc, crc32.IEEETable, n.Data)
	return uint64(crc32.Update(crc, crc32.IEEETable, b))
}

// beforeChange takes the node at path out of the digest before its fields
// change; afterChange puts it back in with them.
func (t *Tree) beforeChange(path string, n *Node) { t.digest -= nodeDigest(path, n) }
func (t *Tree) afterChange(path string, n *Node)  { t.digest += nodeDigest(path, n) }
