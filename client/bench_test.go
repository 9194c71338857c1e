package client

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"testing"

	"github.com/collie-io/collie/proto"
)

var discardLogger = slog.New(slog.DiscardHandler)

// benchClient connects to a fresh in-process server and creates /bench
// with size bytes of data.
func benchClient(b *testing.B, size int) *Client {
	srv := startCollie(b)
	c, err := Dial(b.Context(), srv.Addr(), Config{Logger: discardLogger})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if _, _, err := c.Create(b.Context(), "/bench", bytes.Repeat([]byte{'x'}, size), ModePersistent, nil); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkGet is one getData round trip after another.
func BenchmarkGet(b *testing.B) {
	c := benchClient(b, 100)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.Get(ctx, "/bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetParallel pipelines getData from many goroutines on the one
// connection.
func BenchmarkGetParallel(b *testing.B) {
	c := benchClient(b, 100)
	ctx := b.Context()
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := c.Get(ctx, "/bench"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkSet is one setData round trip after another; each is a write
// through the server's log.
func BenchmarkSet(b *testing.B) {
	c := benchClient(b, 100)
	ctx := b.Context()
	data := bytes.Repeat([]byte{'y'}, 100)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Set(ctx, "/bench", data, AnyVersion); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetParallel pipelines setData from many goroutines.
func BenchmarkSetParallel(b *testing.B) {
	c := benchClient(b, 100)
	ctx := b.Context()
	data := bytes.Repeat([]byte{'y'}, 100)
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Set(ctx, "/bench", data, AnyVersion); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkEncodeGet is the client's cost of building a getData frame.
func BenchmarkEncodeGet(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		cl, e := newCall(1, proto.OpGetData)
		req := proto.GetDataRequest{Path: "/bench/some/node", Watch: false}
		req.Encode(e)
		cl.seal()
		cl.release()
	}
}

// BenchmarkDecodeGetReply is the reader's cost of a getData reply of 100
// bytes, up to handing it to its caller.
func BenchmarkDecodeGetReply(b *testing.B) {
	e := proto.NewEncoder(nil)
	hdr := proto.ReplyHeader{Xid: 1, Zxid: 42}
	hdr.Encode(e)
	resp := proto.GetDataResponse{Data: bytes.Repeat([]byte{'x'}, 100), Stat: proto.Stat{Czxid: 1, DataLength: 100}}
	resp.Encode(e)
	frame := e.Bytes()
	c := &Client{}
	c.watches.init()
	cn := &conn{c: c}
	cl, _ := newCall(1, proto.OpGetData)
	cl.resp = &cl.data
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		cl.state.Store(callSent)
		cn.dec = *proto.NewDecoder(frame)
		var h proto.ReplyHeader
		h.Decode(&cn.dec)
		if err := cn.finish(cl, &h); err != nil {
			b.Fatal(err)
		}
		<-cl.done
	}
	if binary.BigEndian.Uint32(frame) != 1 || len(cl.data.Data) != 100 {
		b.Fatal("decoded the wrong reply")
	}
}
