package client

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/proto"
)

// cannedServer answers the protocol with canned replies and allocates
// nothing per request, so that benchmarks against it measure the client
// alone, and protocol tests can make it misbehave.
type cannedServer struct {
	ln       net.Listener
	readOnly bool

	mu sync.Mutex
	// badXid makes the reply to the next getData carry a wrong xid.
	badXid   bool
	connects []proto.ConnectRequest

	getData []byte // body of every getData reply
	stat    []byte // body of every setData reply
	wg      sync.WaitGroup
}

func startCanned(t testing.TB, configure func(*cannedServer)) *cannedServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &cannedServer{ln: ln}
	if configure != nil {
		configure(s)
	}
	st := proto.Stat{Czxid: 1, Mzxid: 2, Version: 3, DataLength: 100}
	s.getData = proto.Marshal(&proto.GetDataResponse{Data: make([]byte, 100), Stat: st})
	s.stat = proto.Marshal(&st)
	s.wg.Go(s.accept)
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *cannedServer) Addr() string { return s.ln.Addr().String() }

func (s *cannedServer) accept() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() {
			defer nc.Close()
			s.serve(nc)
		})
	}
}

func (s *cannedServer) serve(nc net.Conn) {
	// A client test ends with Close: a connection left open by a failed
	// one must not hold the server up for long.
	nc.SetDeadline(time.Now().Add(time.Minute))
	br, bw := bufio.NewReader(nc), bufio.NewWriter(nc)
	frame, err := readFrameFrom(br)
	if err != nil {
		return
	}
	var req proto.ConnectRequest
	if proto.Unmarshal(frame, &req) != nil {
		return
	}
	s.mu.Lock()
	s.connects = append(s.connects, req)
	s.mu.Unlock()
	resp := proto.ConnectResponse{TimeOut: req.TimeOut, SessionID: 1, Passwd: make([]byte, proto.PasswordLen), ReadOnly: s.readOnly}
	writeFrame(bw, proto.Marshal(&resp))
	bw.Flush()
	var lenBuf [4]byte
	buf := make([]byte, 0, 1024)
	out := make([]byte, 0, 256)
	for {
		if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(lenBuf[:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil || n < 8 {
			return
		}
		xid := int32(binary.BigEndian.Uint32(buf))
		op := proto.OpCode(binary.BigEndian.Uint32(buf[4:]))
		var body []byte
		switch op {
		case proto.OpGetData:
			body = s.getData
			s.mu.Lock()
			if s.badXid {
				xid, s.badXid = xid+1000, false
			}
			s.mu.Unlock()
		case proto.OpSetData:
			body = s.stat
		}
		out = binary.BigEndian.AppendUint32(out[:0], uint32(16+len(body)))
		out = binary.BigEndian.AppendUint32(out, uint32(xid))
		out = binary.BigEndian.AppendUint64(out, 7)
		out = binary.BigEndian.AppendUint32(out, 0)
		out = append(out, body...)
		bw.Write(out)
		if op == proto.OpCloseSession {
			bw.Flush()
			return
		}
		if br.Buffered() == 0 {
			if bw.Flush() != nil {
				return
			}
		}
	}
}

func writeFrame(w io.Writer, b []byte) {
	w.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b))))
	w.Write(b)
}

// TestReadOnlyServer connects to a server in read-only mode.
func TestReadOnlyServer(t *testing.T) {
	s := startCanned(t, func(s *cannedServer) { s.readOnly = true })
	c := dialT(t, s.Addr(), Config{ReadOnly: true, SessionTimeout: 5 * time.Second})
	if c.State() != StateReadOnly {
		t.Errorf("state %v, want ReadOnly", c.State())
	}
	s.mu.Lock()
	req := s.connects[0]
	s.mu.Unlock()
	if !req.ReadOnly || req.TimeOut != 5000 || req.SessionID != 0 || len(req.Passwd) != proto.PasswordLen {
		t.Errorf("connect request %+v", req)
	}
}

// TestReplyOutOfOrder gets a reply that matches no request: the client
// drops the connection, fails the request, and reconnects.
func TestReplyOutOfOrder(t *testing.T) {
	s := startCanned(t, func(s *cannedServer) { s.badXid = true })
	ctx := testCtx(t)
	c := dialT(t, s.Addr(), Config{SessionTimeout: 5 * time.Second})
	states := c.StateChanges()
	defer states.Close()
	if _, _, err := c.Get(ctx, "/x"); !errors.Is(err, ErrConnectionLoss) {
		t.Errorf("Get answered with a wrong xid: %v, want ErrConnectionLoss", err)
	}
	awaitState(t, states, StateReconnected)
	if data, _, err := c.Get(ctx, "/x"); err != nil || len(data) != 100 {
		t.Errorf("Get after reconnecting: %d bytes, %v", len(data), err)
	}
}

// BenchmarkClientGet measures the client alone: getData round trips
// against a server of canned replies.
func BenchmarkClientGet(b *testing.B) {
	s := startCanned(b, nil)
	c := dialT(b, s.Addr(), Config{Logger: discardLogger})
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.Get(ctx, "/bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClientGetParallel is BenchmarkClientGet from many goroutines:
// requests are pipelined and written and read in batches.
func BenchmarkClientGetParallel(b *testing.B) {
	s := startCanned(b, nil)
	c := dialT(b, s.Addr(), Config{Logger: discardLogger})
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

// BenchmarkClientSet measures the client alone for setData of 100 bytes.
func BenchmarkClientSet(b *testing.B) {
	s := startCanned(b, nil)
	c := dialT(b, s.Addr(), Config{Logger: discardLogger})
	ctx := b.Context()
	data := make([]byte, 100)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Set(ctx, "/bench", data, AnyVersion); err != nil {
			b.Fatal(err)
		}
	}
}
