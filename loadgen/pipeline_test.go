package loadgen

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
)

// staleProxy stands between clients and a server and, on each connection,
// answers every getData, exists and getChildren of a path with the reply
// to the first one: a server that serves a session's reads from an old
// state, behind writes it has acknowledged to that session.
type staleProxy struct {
	ln     net.Listener
	target string
	ctx    context.Context // ends when the test does: the connections close
	wg     sync.WaitGroup
}

func newStaleProxy(t *testing.T, target string) *staleProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &staleProxy{ln: ln, target: target, ctx: ctx}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		cancel()
		p.wg.Wait()
	})
	return p
}

func (p *staleProxy) Addr() string { return p.ln.Addr().String() }

func (p *staleProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// serve forwards between c and a connection of its own to the server
// until either ends.
func (p *staleProxy) serve(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	closeBoth := func() {
		c.Close()
		s.Close()
	}
	defer context.AfterFunc(p.ctx, closeBoth)()
	sc := &staleConn{pending: map[int32]staleRead{}, first: map[staleRead][]byte{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer closeBoth()
		sc.pipe(s, c, sc.request)
	})
	sc.pipe(c, s, sc.reply)
	closeBoth()
	wg.Wait()
}

// staleRead is a read request: its opcode and path.
type staleRead struct {
	op   proto.OpCode
	path string
}

// staleConn is the state of one proxied connection.
type staleConn struct {
	mu      sync.Mutex
	pending map[int32]staleRead  // reads sent, by xid
	first   map[staleRead][]byte // the body of each read's first OK reply
}

// pipe copies frames from src to dst, each after the first (the
// handshake) through edit, until either connection fails.
func (sc *staleConn) pipe(dst, src net.Conn, edit func([]byte) []byte) {
	for n := 0; ; n++ {
		frame, err := zkwire.ReadFrame(src)
		if err != nil {
			return
		}
		if n > 0 {
			frame = edit(frame)
		}
		out := binary.BigEndian.AppendUint32(nil, uint32(len(frame)))
		if _, err := dst.Write(append(out, frame...)); err != nil {
			return
		}
	}
}

// request notes the reads among the client's requests.
func (sc *staleConn) request(frame []byte) []byte {
	d := proto.NewDecoder(frame)
	var hdr proto.RequestHeader
	hdr.Decode(d)
	switch hdr.Type {
	case proto.OpGetData, proto.OpExists, proto.OpGetChildren2:
		path := d.String()
		if d.Err() == nil {
			sc.mu.Lock()
			sc.pending[hdr.Xid] = staleRead{hdr.Type, path}
			sc.mu.Unlock()
		}
	}
	return frame
}

// reply replaces the body of an OK reply to a read with the first one of
// the same read.
func (sc *staleConn) reply(frame []byte) []byte {
	d := proto.NewDecoder(frame)
	var hdr proto.ReplyHeader
	hdr.Decode(d)
	if d.Err() != nil {
		return frame
	}
	body := frame[len(frame)-d.Remaining():]
	sc.mu.Lock()
	defer sc.mu.Unlock()
	read, ok := sc.pending[hdr.Xid]
	delete(sc.pending, hdr.Xid)
	if !ok || hdr.Err != proto.OK {
		return frame
	}
	first, seen := sc.first[read]
	if !seen {
		sc.first[read] = bytes.Clone(body)
		return frame
	}
	return append(frame[:len(frame)-len(body):len(frame)-len(body)], first...)
}

// TestPipelineFlagsStaleReads runs the pipeline workload's reads and
// writes by hand through a proxy that answers reads with stale replies:
// every kind of read is flagged once its session has had a later write of
// the key acknowledged, and the report says so.
func TestPipelineFlagsStaleReads(t *testing.T) {
	srv := collietest.Start(t)
	proxy := newStaleProxy(t, srv.Addr())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cfg, err := shortConfig(proxy.Addr(), "pipeline", "/bench-stale").withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	tg, err := prepare(ctx, &cfg, "", proxy.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tg.close(ctx); err != nil {
			t.Error(err)
		}
	}()
	l := tg.load.(*pipelineLoad)
	// Worker 0 reads the key of another worker of its session.
	reader, writer := tg.workers[0], tg.workers[cfg.Clients]
	if reader.c != writer.c {
		t.Fatalf("workers 0 and %d are on different sessions", cfg.Clients)
	}
	k := l.keys[writer.id]
	kinds := []readKind{readData, readExists, readChildren}
	read := func(kind readKind) error {
		return reader.do(ctx, ctx, func(ctx context.Context, w *worker) error { return l.read(ctx, w, kind, k) }, time.Time{})
	}
	for _, kind := range kinds {
		if err := read(kind); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.set(ctx, writer); err != nil {
		t.Fatal(err)
	}
	if err := l.toggle(ctx, writer); err != nil {
		t.Fatal(err)
	}
	for _, kind := range kinds {
		if err := read(kind); err != nil {
			t.Fatal(err)
		}
	}

	res := tg.result(cfg.Workload)
	rw := res.ReadYourWrites
	if rw == nil || rw.Checked != 6 || rw.Violations != 3 || res.Errors != 3 || res.Ops != 3 {
		t.Fatalf("result %+v, read-your-writes %+v; want 6 reads checked, the last 3 violations and errors", res, rw)
	}
	if !strings.Contains(rw.FirstViolation, "getData "+k.path+" shows write 0, but write 1 of the same session was acknowledged") {
		t.Errorf("first violation: %s", rw.FirstViolation)
	}
	report := newReport(&cfg)
	report.Results = []Result{res}
	var text bytes.Buffer
	if err := report.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "read-your-writes VIOLATED by 3 of 6 reads checked (0% sent behind a write") {
		t.Errorf("report:\n%s", text.String())
	}
}

func TestCheckRead(t *testing.T) {
	for _, tc := range []struct {
		shown, acked, sent int64
		ok                 bool
	}{
		{shown: 5, acked: 5, sent: 5, ok: true},
		{shown: 5, acked: 4, sent: 6, ok: true},  // a write in flight, seen
		{shown: 4, acked: 4, sent: 6, ok: true},  // a write in flight, not seen
		{shown: 3, acked: 4, sent: 6, ok: false}, // an acknowledged write missed
		{shown: 7, acked: 4, sent: 6, ok: false}, // a write never sent
	} {
		err := checkRead("getData", "/k", tc.shown, tc.acked, tc.sent)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, errInconsistent)) {
			t.Errorf("checkRead(shown %d, acked %d, sent %d) = %v, want ok %v", tc.shown, tc.acked, tc.sent, err, tc.ok)
		}
	}
}

func TestPipelineValue(t *testing.T) {
	filler := bytes.Repeat([]byte{'x'}, 10)
	for _, n := range []int64{0, 7, 123456789012} {
		v := appendValue(nil, n, filler)
		if got, err := parseValue(v); err != nil || got != n {
			t.Errorf("parseValue(%q) = %d, %v; want %d", v, got, err, n)
		}
		if len(v) < len(filler) {
			t.Errorf("value %q is shorter than %d bytes", v, len(filler))
		}
	}
	if _, err := parseValue([]byte("abc")); err == nil {
		t.Error("parseValue accepted a value without a counter")
	}
}
