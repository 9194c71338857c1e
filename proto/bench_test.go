package proto_test

import (
	"fmt"
	"testing"

	"github.com/collie-io/collie/proto"
)

// benchSizes are the data sizes of the records that carry data: a small
// value, the 1 KiB a typical configuration or lock node holds, and a large
// one.
var benchSizes = []int{100, 1 << 10, 16 << 10}

var benchACL = []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}

func benchData(size int) []byte {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	return data
}

func benchStat(size int) proto.Stat {
	return proto.Stat{
		Czxid: 0x100000002, Mzxid: 0x1000f4243, Pzxid: 0x100000002,
		Ctime: 1_700_000_000_000, Mtime: 1_700_000_123_456,
		Version: 1234, DataLength: int32(size),
	}
}

// frame is a sequence of records encoded back to back, as one packet on the
// socket carries a header and then a body.
type frame []proto.Record

func (f frame) Encode(e *proto.Encoder) {
	for _, r := range f {
		r.Encode(e)
	}
}

func (f frame) Decode(d *proto.Decoder) {
	for _, r := range f {
		r.Decode(d)
	}
}

// decodeInto returns a function that decodes a frame into the fresh records
// that newRecords returns, as a connection reads each packet into new
// records.
func decodeInto(newRecords func() (proto.Record, proto.Record)) func([]byte) error {
	return func(b []byte) error {
		header, body := newRecords()
		d := proto.NewDecoder(b)
		header.Decode(d)
		if body != nil {
			body.Decode(d)
		}
		return d.Err()
	}
}

// benchCodec measures encoding into a reused buffer, as a connection writes
// packets, and decoding into fresh records, as a connection reads them.
// Throughput counts the encoded bytes.
func benchCodec(b *testing.B, sent frame, decode func([]byte) error) {
	// Converted once, so that the loop measures the encoding and not the
	// conversion of the slice to an interface.
	var record proto.Record = sent
	encoded := proto.Marshal(record)
	b.Run("encode", func(b *testing.B) {
		buf := make([]byte, 0, len(encoded))
		b.SetBytes(int64(len(encoded)))
		b.ReportAllocs()
		for b.Loop() {
			buf = proto.AppendMarshal(buf[:0], record)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(encoded)))
		b.ReportAllocs()
		for b.Loop() {
			if err := decode(encoded); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSetDataRequest is the hot write request: a RequestHeader and a
// SetDataRequest.
func BenchmarkSetDataRequest(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("data=%d", size), func(b *testing.B) {
			sent := frame{
				&proto.RequestHeader{Xid: 42, Type: proto.OpSetData},
				&proto.SetDataRequest{Path: "/app/config/service-0042", Data: benchData(size), Version: -1},
			}
			benchCodec(b, sent, decodeInto(func() (proto.Record, proto.Record) {
				return &proto.RequestHeader{}, &proto.SetDataRequest{}
			}))
		})
	}
}

// BenchmarkGetDataResponse is the hot read reply: a ReplyHeader and a
// GetDataResponse with its Stat.
func BenchmarkGetDataResponse(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("data=%d", size), func(b *testing.B) {
			sent := frame{
				&proto.ReplyHeader{Xid: 42, Zxid: 0x1000f4243},
				&proto.GetDataResponse{Data: benchData(size), Stat: benchStat(size)},
			}
			benchCodec(b, sent, decodeInto(func() (proto.Record, proto.Record) {
				return &proto.ReplyHeader{}, &proto.GetDataResponse{}
			}))
		})
	}
}

// BenchmarkReplyHeader is the header every reply and watch event starts
// with, and the whole reply of a setData's header-only error.
func BenchmarkReplyHeader(b *testing.B) {
	sent := frame{&proto.ReplyHeader{Xid: 42, Zxid: 0x1000f4243, Err: proto.ErrBadVersion}}
	benchCodec(b, sent, decodeInto(func() (proto.Record, proto.Record) {
		return &proto.ReplyHeader{}, nil
	}))
}

// BenchmarkMultiRequest is a multi of five ops, the shape of a typical
// transaction: check a version, create two nodes, set data and delete.
func BenchmarkMultiRequest(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("data=%d", size), func(b *testing.B) {
			data := benchData(size)
			sent := frame{
				&proto.RequestHeader{Xid: 42, Type: proto.OpMulti},
				&proto.MultiRequest{Ops: []proto.MultiOp{
					{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: "/app/leader", Version: 7}},
					{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/app/jobs/job-", Data: data, ACL: benchACL, Flags: proto.ModePersistentSequential}},
					{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/app/owners/job-42", Data: data, ACL: benchACL, Flags: proto.ModeEphemeral}},
					{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/app/state", Data: data, Version: 12}},
					{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/app/queue/item-0000000041", Version: -1}},
				}},
			}
			benchCodec(b, sent, decodeInto(func() (proto.Record, proto.Record) {
				return &proto.RequestHeader{}, &proto.MultiRequest{}
			}))
		})
	}
}
