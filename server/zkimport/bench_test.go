package zkimport

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/zkdata"
)

// BenchmarkSnapshotBody measures what `collie server -follow-zookeeper`
// does with its leader's SNAP: reading the payload into zkdata's tree and
// converting it into the state it serves. The tree is the scale
// measurements' (zkcompat's TestFollowScale): 100-byte znodes under 1000
// parents.
func BenchmarkSnapshotBody(b *testing.B) {
	for _, nodes := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			payload := scaleSnapshotBody(nodes)
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				dt, err := zkdata.ReadSnapshotBody(bytes.NewReader(payload), false)
				if err != nil {
					b.Fatal(err)
				}
				dt.LastZxid = int64(nodes + 1000)
				res, err := Convert(dt, Options{FSM: fsm.Options{}, Secret: make([]byte, fsm.SecretLen)})
				if err != nil {
					b.Fatal(err)
				}
				if res.Nodes < nodes {
					b.Fatalf("%d nodes converted, want at least %d", res.Nodes, nodes)
				}
			}
		})
	}
}

// scaleSnapshotBody returns the SNAP payload of a tree of 1000 parents
// and nodes 100-byte znodes spread over them, created one per zxid, in
// the order a ZooKeeper leader writes it: no sessions, the ACL cache with
// world:anyone as reference 1, the nodes depth first from the root (path
// ""), then "/".
func scaleSnapshotBody(nodes int) []byte {
	const parents = 1000
	e := proto.NewEncoder(nil)
	e.Int(0) // sessions
	e.Int(1) // ACL cache entries
	e.Long(1)
	e.ACLs([]proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}})
	node := func(path string, data []byte, aclRef, czxid, pzxid int64, cversion int32) {
		e.String(path)
		e.Buffer(data)
		e.Long(aclRef)
		// StatPersisted: czxid, mzxid, ctime, mtime, version, cversion,
		// aversion, ephemeralOwner, pzxid.
		e.Long(czxid)
		e.Long(czxid)
		e.Long(1_700_000_000_000 + czxid)
		e.Long(1_700_000_000_000 + czxid)
		e.Int(0)
		e.Int(cversion)
		e.Int(0)
		e.Long(0)
		e.Long(pzxid)
	}
	// Parents are zxids 1..parents, znode i is zxid parents+1+i.
	lastChild := func(p int) int64 {
		last := p + (nodes-1-p)/parents*parents
		if last >= nodes {
			return int64(p + 1)
		}
		return int64(parents + 1 + last)
	}
	node("", nil, -1, 0, parents, parents+1)
	node("/zookeeper", nil, -1, 0, 0, 0)
	data := make([]byte, 100)
	for p := range parents {
		children := int32(max(0, (nodes-p+parents-1)/parents))
		node(fmt.Sprintf("/p%d", p), nil, 1, int64(p+1), lastChild(p), children)
		for i := p; i < nodes; i += parents {
			z := int64(parents + 1 + i)
			node(fmt.Sprintf("/p%d/n%d", p, i), data, 1, z, z, 0)
		}
	}
	e.String("/")
	return e.Bytes()
}
