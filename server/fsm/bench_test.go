package fsm_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/zkdata"
)

const (
	benchSession  int64 = 0x1000
	benchFanout         = 1000
	benchNodes          = 10_000
	benchNodeData       = 100
)

var (
	benchDataSizes = []int{100, 1 << 10, 16 << 10}
	benchACL       = []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
)

// benchFSM is a state machine with one open session and a tree of parents
// holding benchFanout children each.
type benchFSM struct {
	f     *fsm.FSM
	index uint64
	paths []string
}

func newBenchFSM(b *testing.B, nodes int) *benchFSM {
	bf := &benchFSM{f: fsm.New(fsm.Options{})}
	bf.apply(&fsm.Entry{Type: fsm.EntryCreateSession, Origin: 1, Session: benchSession, Timeout: 30_000})
	data := make([]byte, benchNodeData)
	for p := range max(1, nodes/benchFanout) {
		parent := fmt.Sprintf("/p%04d", p)
		bf.mustApply(b, bf.request(proto.OpCreate, &proto.CreateRequest{Path: parent, Data: data, ACL: benchACL}))
		for c := range min(nodes, benchFanout) {
			path := fmt.Sprintf("%s/c%06d", parent, c)
			bf.mustApply(b, bf.request(proto.OpCreate, &proto.CreateRequest{Path: path, Data: data, ACL: benchACL}))
			bf.paths = append(bf.paths, path)
		}
	}
	return bf
}

func (bf *benchFSM) request(op proto.OpCode, req proto.Record) *fsm.Entry {
	return &fsm.Entry{
		Type: fsm.EntryRequest, Origin: 1, Session: benchSession,
		Time: 1_700_000_000_000, Op: op, Body: proto.Marshal(req),
	}
}

func (bf *benchFSM) apply(e *fsm.Entry) fsm.Result {
	bf.index++
	return bf.f.Apply(bf.index, e)
}

func (bf *benchFSM) mustApply(b *testing.B, e *fsm.Entry) {
	if res := bf.apply(e); res.Err != proto.OK {
		b.Fatalf("apply %v: %v", e.Op, res.Err)
	}
}

// BenchmarkApplySetData measures what a replica does for each committed
// setData: decode the log entry and apply it to a tree of 10 thousand
// nodes. Throughput counts the data set.
func BenchmarkApplySetData(b *testing.B) {
	for _, size := range benchDataSizes {
		b.Run(fmt.Sprintf("data=%d", size), func(b *testing.B) {
			bf := newBenchFSM(b, benchNodes)
			// Entries for a spread of nodes, encoded once: the log holds
			// them as bytes.
			entries := make([][]byte, 1024)
			data := make([]byte, size)
			for i := range entries {
				path := bf.paths[(i*7919)%len(bf.paths)]
				entries[i] = bf.request(proto.OpSetData, &proto.SetDataRequest{Path: path, Data: data, Version: -1}).Marshal()
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				e, err := fsm.UnmarshalEntry(entries[i%len(entries)])
				if err != nil {
					b.Fatal(err)
				}
				if res := bf.apply(e); res.Err != proto.OK {
					b.Fatalf("setData: %v", res.Err)
				}
				i++
			}
		})
	}
}

// BenchmarkApplyZooKeeperSetData measures what a server following a
// ZooKeeper ensemble does for each committed setData: decode the
// transaction as ZooKeeper sends it and apply it to a tree of 10 thousand
// nodes. Throughput counts the data set.
func BenchmarkApplyZooKeeperSetData(b *testing.B) {
	for _, size := range benchDataSizes {
		b.Run(fmt.Sprintf("data=%d", size), func(b *testing.B) {
			bf := newBenchFSM(b, benchNodes)
			txns := make([][]byte, 1024)
			data := make([]byte, size)
			for i := range txns {
				e := proto.NewEncoder(nil)
				e.Long(benchSession)
				e.Int(int32(i))
				e.Long(0) // the zxid, set when applied
				e.Long(1_700_000_000_000)
				e.Int(int32(proto.OpSetData))
				e.String(bf.paths[(i*7919)%len(bf.paths)])
				e.Buffer(data)
				e.Int(int32(i))
				txns[i] = e.Bytes()
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				txn, err := zkdata.DecodeTxn(txns[i%len(txns)])
				if err != nil {
					b.Fatal(err)
				}
				txn.Zxid = bf.f.LastZxid() + 1
				if res := bf.f.ApplyZooKeeper(txn); res.Err != proto.OK {
					b.Fatalf("setData: %v", res.Err)
				}
				i++
			}
		})
	}
}

// BenchmarkReadGetData measures answering a getData from local state, ACL
// check included. Throughput counts the data returned.
func BenchmarkReadGetData(b *testing.B) {
	for _, size := range benchDataSizes {
		b.Run(fmt.Sprintf("data=%d", size), func(b *testing.B) {
			bf := newBenchFSM(b, benchNodes)
			data := make([]byte, size)
			reqs := make([]*proto.GetDataRequest, 1024)
			for i := range reqs {
				path := bf.paths[(i*7919)%len(bf.paths)]
				bf.mustApply(b, bf.request(proto.OpSetData, &proto.SetDataRequest{Path: path, Data: data, Version: -1}))
				reqs[i] = &proto.GetDataRequest{Path: path}
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				resp, code := bf.f.Read(benchSession, proto.OpGetData, reqs[i%len(reqs)], nil)
				if code != proto.OK || len(resp.(*proto.GetDataResponse).Data) != size {
					b.Fatalf("getData: %v", code)
				}
				i++
			}
		})
	}
}

// BenchmarkSnapshot measures writing a snapshot of trees of 10 and 100
// thousand nodes of 100 bytes to memory and restoring it. Throughput counts
// the snapshot's bytes.
func BenchmarkSnapshot(b *testing.B) {
	for _, nodes := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			bf := newBenchFSM(b, nodes)
			var snap bytes.Buffer
			if err := bf.f.Save(&snap); err != nil {
				b.Fatal(err)
			}
			b.Run("Save", func(b *testing.B) {
				var buf bytes.Buffer
				buf.Grow(snap.Len())
				b.SetBytes(int64(snap.Len()))
				b.ReportAllocs()
				for b.Loop() {
					buf.Reset()
					if err := bf.f.Save(&buf); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("Restore", func(b *testing.B) {
				b.SetBytes(int64(snap.Len()))
				b.ReportAllocs()
				for b.Loop() {
					f, err := fsm.Restore(fsm.Options{}, bytes.NewReader(snap.Bytes()))
					if err != nil {
						b.Fatal(err)
					}
					if f.Tree().Len() != bf.f.Tree().Len() {
						b.Fatalf("restored %d nodes, saved %d", f.Tree().Len(), bf.f.Tree().Len())
					}
				}
			})
		})
	}
}
