package client

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
)

// testTimeout bounds every wait of a test; the tests never sleep for
// correctness, they wait for conditions and fail after this long.
const testTimeout = 20 * time.Second

// testCtx returns a context that ends with the test or after testTimeout.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// testLogger logs to the test's output, shown when it fails or with -v.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// dialT connects to addr and closes the client when the test ends.
func dialT(t testing.TB, addr string, cfg Config) *Client {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	c, err := Dial(testCtx(t), addr, cfg)
	if err != nil {
		t.Fatalf("Dial(%s): %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// startCollie starts an in-process server whose sessions may last up to
// 10s, so that a loaded machine does not expire them by accident.
func startCollie(t testing.TB) *collietest.Server {
	return collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
		c.MaxSessionTimeout = 10 * time.Second
	}))
}

// startZooKeeper starts the reference ZooKeeper 3.8, with TTL nodes and a
// short tick, or skips the test when it is not installed.
func startZooKeeper(t testing.TB) *zkref.Server {
	return zkref.Start(t, zkref.WithExtendedTypes(), zkref.WithTickTime(200*time.Millisecond))
}

// servers runs f against Collie and against ZooKeeper 3.8, each as a
// subtest with its own server.
func servers(t *testing.T, f func(t *testing.T, addr string)) {
	t.Run("collie", func(t *testing.T) { f(t, startCollie(t).Addr()) })
	t.Run("zookeeper", func(t *testing.T) { f(t, startZooKeeper(t).Addr()) })
}

// recv waits for one value of ch.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed", what)
		}
		return v
	case <-time.After(testTimeout):
		t.Fatalf("%s: nothing after %v", what, testTimeout)
	}
	panic("unreachable")
}

// noEvent checks that ch holds nothing now. Callers first make a round
// trip that any pending event would have preceded.
func noEvent(t testing.TB, ch <-chan Event, what string) {
	t.Helper()
	select {
	case ev := <-ch:
		t.Fatalf("%s: unexpected %v", what, ev)
	default:
	}
}

// awaitState reads states from s until want, failing on a state in
// forbidden.
func awaitState(t testing.TB, s *Stream[State], want State, forbidden ...State) {
	t.Helper()
	for {
		got := recv(t, s.Events(), "state "+want.String())
		if got == want {
			return
		}
		for _, f := range forbidden {
			if got == f {
				t.Fatalf("state %v while waiting for %v", got, want)
			}
		}
	}
}

// eventually polls cond until it holds or the test times out. Used only
// for what the client cannot be told, such as the server's own expiry of
// a session.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, testTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// proxy forwards TCP connections to a server and can cut them, so tests
// can break a client's connection at a chosen moment.
type proxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu        sync.Mutex
	conns     map[net.Conn]bool
	refusing  bool // accepted connections are closed at once
	blackhole bool // the server's bytes are dropped, not forwarded
	held      bool // the server's bytes wait until Hold(false)
	release   *sync.Cond
	accepted  int
	// handshakes are the connect requests of the connections, in order.
	handshakes [][]byte

	wg sync.WaitGroup
}

func newProxy(t testing.TB, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &proxy{t: t, ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.release = sync.NewCond(&p.mu)
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refusing := p.refusing
		p.accepted++
		p.mu.Unlock()
		if refusing {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = true, true
		p.mu.Unlock()
		// The connect request is read whole and kept, for tests of what
		// the client presents when it reconnects.
		if req, err := readFrameFrom(c); err == nil {
			p.mu.Lock()
			p.handshakes = append(p.handshakes, req)
			p.mu.Unlock()
			s.Write(binary.BigEndian.AppendUint32(nil, uint32(len(req))))
			s.Write(req)
		}
		p.wg.Go(func() { p.pipe(s, c, false) })
		p.wg.Go(func() { p.pipe(c, s, true) })
	}
}

// pipe copies src to dst until either fails, then closes both.
func (p *proxy) pipe(dst, src net.Conn, fromServer bool) {
	defer p.drop(dst, src)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for fromServer && p.held {
				p.release.Wait()
			}
			hole := fromServer && p.blackhole
			p.mu.Unlock()
			if !hole {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) drop(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(p.conns, c)
	}
}

// Cut closes every connection and refuses new ones until Restore.
func (p *proxy) Cut() {
	p.mu.Lock()
	p.refusing = true
	p.mu.Unlock()
	p.Drop()
}

// Drop closes every connection; new ones are accepted.
func (p *proxy) Drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Restore accepts connections again.
func (p *proxy) Restore() {
	p.mu.Lock()
	p.refusing = false
	p.mu.Unlock()
}

// Blackhole drops (true) or forwards (false) what the server sends.
func (p *proxy) Blackhole(on bool) {
	p.mu.Lock()
	p.blackhole = on
	p.mu.Unlock()
}

// Hold keeps (true) what the server sends from reaching the client, until
// Hold(false) lets it through.
func (p *proxy) Hold(on bool) {
	p.mu.Lock()
	p.held = on
	p.mu.Unlock()
	p.release.Broadcast()
}

// Connections returns how many client connections are open.
func (p *proxy) Connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns) / 2
}

func (p *proxy) close() {
	p.Hold(false)
	p.ln.Close()
	p.Drop()
	p.wg.Wait()
}

// clientGoroutines counts the goroutines the package's clients run.
func clientGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, fn := range []string{"client.(*Client).run(", "client.(*conn).read(", "client.(*conn).write(", ").forward("} {
			if strings.Contains(g, fn) {
				count++
				break
			}
		}
	}
	return count
}

// readFrameFrom reads one length-prefixed frame.
func readFrameFrom(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}

// lastHandshake decodes the newest connect request the proxy forwarded.
func (p *proxy) lastHandshake(t testing.TB) proto.ConnectRequest {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.handshakes) == 0 {
		t.Fatal("proxy: no connect request seen")
	}
	var req proto.ConnectRequest
	if err := proto.Unmarshal(p.handshakes[len(p.handshakes)-1], &req); err != nil {
		t.Fatalf("proxy: connect request: %v", err)
	}
	return req
}
