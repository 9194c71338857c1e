package conn

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
)

// echoBackend answers everything at once and records what reached it.
type echoBackend struct {
	// lose, if set, answers every write with ErrConnectionLoss, as a
	// server whose proposal was lost with its leader.
	lose bool
	// readOnly grants read-only sessions to clients that accept them.
	readOnly bool
	// sasl is the exchange SASL hands out; nil answers as a server
	// without SASL users.
	sasl SASLServer

	mu     sync.Mutex
	writes int
	locals int
}

func (b *echoBackend) LastZxid() int64 { return 7 }
func (b *echoBackend) OpenSession(_ context.Context, _ *Conn, _ time.Duration, readOnly bool) (Session, error) {
	return Session{ID: 1, Passwd: make([]byte, 16), Timeout: 4 * time.Second, ReadOnly: readOnly && b.readOnly}, nil
}
func (b *echoBackend) ResumeSession(context.Context, *Conn, int64, []byte, time.Duration) (time.Duration, bool) {
	return 4 * time.Second, true
}
func (b *echoBackend) Write(c *Conn, op proto.OpCode, body []byte, auth []proto.ID, done func(Reply, Reader)) {
	b.mu.Lock()
	b.writes++
	b.mu.Unlock()
	if b.lose {
		done(Reply{Zxid: 7, Err: proto.ErrConnectionLoss}, nil)
		return
	}
	done(Reply{Zxid: 8, Close: op == proto.OpCloseSession}, b)
}
func (b *echoBackend) Sync(c *Conn, done func(Reader, error)) { done(b, nil) }
func (b *echoBackend) View(f func(Reader))                    { f(b) }
func (b *echoBackend) Read(c *Conn, op proto.OpCode, req proto.Record, auth []proto.ID) Reply {
	b.mu.Lock()
	b.locals++
	b.mu.Unlock()
	return Reply{Zxid: 7}
}
func (b *echoBackend) Authenticate(*Conn, string, []byte) ([]proto.ID, bool) { return nil, true }
func (b *echoBackend) SASL(*Conn) SASLServer                                 { return b.sasl }
func (b *echoBackend) Touch(int64)                                           {}
func (b *echoBackend) Detach(*Conn)                                          {}
func (b *echoBackend) FourLetter(cmd string, _ func() (int64, bool)) (string, bool) {
	return "imok", cmd == "ruok"
}

func frameOf(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func connectFrame() []byte {
	return frameOf(proto.Marshal(&proto.ConnectRequest{TimeOut: 4000, Passwd: make([]byte, 16)}))
}

func request(xid int32, op proto.OpCode, r proto.Record) []byte {
	e := proto.NewEncoder(nil)
	(&proto.RequestHeader{Xid: xid, Type: op}).Encode(e)
	if r != nil {
		r.Encode(e)
	}
	return frameOf(e.Bytes())
}

// serve runs a connection over a pipe, sends input, and returns what the
// server wrote before the connection ended.
func serve(t testing.TB, input []byte) []byte { return serveFor(t, input, 50*time.Millisecond) }

// serveFor is serve with the time the client stays connected.
func serveFor(t testing.TB, input []byte, linger time.Duration) []byte {
	return serveWith(t, &echoBackend{}, input, linger)
}

// serveWith is serveFor with a backend of the test's.
func serveWith(t testing.TB, b Backend, input []byte, linger time.Duration) []byte {
	return serveConfig(t, b, Config{MaxBuffer: 4096, HandshakeTimeout: time.Second}, input, linger)
}

// serveConfig is serveWith with a configuration of the test's.
func serveConfig(t testing.TB, b Backend, cfg Config, input []byte, linger time.Duration) []byte {
	client, server := net.Pipe()
	done := make(chan struct{})
	go func() {
		Serve(context.Background(), server, b, cfg)
		close(done)
	}()
	var out []byte
	readDone := make(chan struct{})
	go func() {
		out, _ = io.ReadAll(client)
		close(readDone)
	}()
	// The client goes away soon: whatever the input was, the server must
	// end the connection and every goroutine of it.
	time.AfterFunc(linger, func() { client.Close() })
	client.Write(input)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("connection did not end")
	}
	<-readDone
	return out
}

func TestPipelineAnswersInOrder(t *testing.T) {
	in := connectFrame()
	in = append(in, request(1, proto.OpSetData, &proto.SetDataRequest{Path: "/a", Version: -1})...)
	in = append(in, request(2, proto.OpGetData, &proto.GetDataRequest{Path: "/a"})...)
	in = append(in, request(3, proto.OpCode(99), nil)...)
	in = append(in, request(4, proto.OpCreate, &proto.CreateRequest{Path: "/b"})...)
	in = append(in, request(-2, proto.OpPing, nil)...)
	xids, codes := replyXids(t, serve(t, in))
	want := []int32{1, 2, 3, 4, -2}
	if len(xids) != len(want) {
		t.Fatalf("replies %v, want %v", xids, want)
	}
	for i := range want {
		if xids[i] != want[i] {
			t.Fatalf("replies %v, want %v", xids, want)
		}
	}
	if codes[2] != proto.ErrUnimplemented {
		t.Fatalf("unknown opcode answered %v", codes[2])
	}
}

// A write whose outcome the server cannot know ends the connection, with
// no answer to it or to what follows: ZooKeeper clients learn of a
// connection loss only by losing the connection.
func TestConnectionLossClosesConnection(t *testing.T) {
	in := connectFrame()
	in = append(in, request(1, proto.OpSetData, &proto.SetDataRequest{Path: "/a", Version: -1})...)
	in = append(in, request(2, proto.OpGetData, &proto.GetDataRequest{Path: "/a"})...)
	out := serveWith(t, &echoBackend{lose: true}, in, 5*time.Second)
	// The connection may close before even the connect response is
	// flushed; no reply may follow it.
	if len(out) > 0 {
		if n := binary.BigEndian.Uint32(out); len(out) != int(4+n) {
			t.Fatalf("got %d bytes after the connect response; want none", len(out)-int(4+n))
		}
	}
}

// replyXids returns the xid and error code of each frame after the
// connect response.
func replyXids(t *testing.T, out []byte) ([]int32, []proto.Code) {
	t.Helper()
	var xids []int32
	var codes []proto.Code
	for first := true; len(out) >= 4; first = false {
		n := binary.BigEndian.Uint32(out)
		frame := out[4 : 4+n]
		out = out[4+n:]
		if first {
			continue
		}
		var h proto.ReplyHeader
		if err := proto.Unmarshal(frame, &h); err != nil {
			t.Fatal(err)
		}
		xids, codes = append(xids, h.Xid), append(codes, h.Err)
	}
	return xids, codes
}

// As ZooKeeper, an auth packet is answered with the xid the client sent:
// go-zookeeper sends auth with an ordinary xid and waits for it.
func TestAuthReplyCarriesClientXid(t *testing.T) {
	in := connectFrame()
	in = append(in, request(5, proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")})...)
	in = append(in, request(-4, proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")})...)
	xids, codes := replyXids(t, serve(t, in))
	if len(xids) != 2 || xids[0] != 5 || xids[1] != -4 || codes[0] != proto.OK || codes[1] != proto.OK {
		t.Fatalf("auth replies %v %v, want xids [5 -4], both OK", xids, codes)
	}

	refused := &authRefusingBackend{}
	in = append(connectFrame(), request(9, proto.OpAuth, &proto.AuthPacket{Scheme: "nosuch", Auth: []byte("x")})...)
	xids, codes = replyXids(t, serveWith(t, refused, in, 5*time.Second))
	if len(xids) != 1 || xids[0] != 9 || codes[0] != proto.ErrAuthFailed {
		t.Fatalf("refused auth: replies %v %v, want xid 9 with AuthFailed", xids, codes)
	}
}

type authRefusingBackend struct{ echoBackend }

func (*authRefusingBackend) Authenticate(*Conn, string, []byte) ([]proto.ID, bool) { return nil, false }

func TestOversizedFrameClosesConnection(t *testing.T) {
	in := append(connectFrame(), 0, 0, 0x10, 0x01) // 4097 bytes > MaxBuffer
	out := serve(t, append(in, make([]byte, 100)...))
	// The connection may close before the connect response is flushed;
	// nothing may follow it.
	if len(out) > 0 {
		if n := binary.BigEndian.Uint32(out); len(out) != int(4+n) {
			t.Fatalf("got %d bytes after the connect response; want none", len(out)-int(4+n))
		}
	}
}

func TestFourLetterWord(t *testing.T) {
	if out := serve(t, []byte("ruok")); string(out) != "imok" {
		t.Fatalf("ruok: %q", out)
	}
	if out := serve(t, []byte("stat")); string(out) != "stat is not executed because it is not in the whitelist.\n" {
		t.Fatalf("stat: %q", out)
	}
}

// FuzzConn sends arbitrary bytes after a valid handshake: the connection
// must end cleanly whatever they are, and never panic.
func FuzzConn(f *testing.F) {
	f.Add(request(1, proto.OpGetData, &proto.GetDataRequest{Path: "/a", Watch: true}))
	f.Add(request(1, proto.OpMulti, &proto.MultiRequest{Ops: []proto.MultiOp{{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: "/", Version: 1}}}}))
	f.Add(request(-4, proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}))
	f.Add(request(-8, proto.OpSetWatches, &proto.SetWatches{DataWatches: []string{"/a"}}))
	f.Add([]byte{0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0x0b})
	f.Fuzz(func(t *testing.T, b []byte) {
		serveFor(t, append(connectFrame(), b...), 2*time.Millisecond)
	})
}

// TestAuthRecordsIdentities checks what a connection records of the
// identities auth packets give: each new one, in order; one given again
// only when that changes ZooKeeper's order, so repeats cost nothing; and
// no more than maxAuthIDs, past which an auth packet is refused.
func TestAuthRecordsIdentities(t *testing.T) {
	ip := proto.ID{Scheme: "ip", ID: "127.0.0.1"}
	digest := func(i int) proto.ID { return proto.ID{Scheme: "digest", ID: fmt.Sprintf("u%d:x", i)} }
	c := &Conn{}
	c.auth.Store(&[]proto.ID{ip})

	// The same identity, over and over.
	for range 100_000 {
		if !c.addAuth([]proto.ID{digest(1)}) {
			t.Fatal("auth refused")
		}
	}
	if got, want := c.Auth(), []proto.ID{ip, digest(1)}; !slices.Equal(got, want) {
		t.Fatalf("after 100000 auths of one identity the connection holds %d: %v..., want %v", len(got), got[:min(len(got), 3)], want)
	}

	// A few identities in any order, repeated: what is recorded lists as
	// everything added would (tree.IDSet.Add decides; its tests show
	// repeats that are recorded).
	all := slices.Clone(c.Auth())
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		ids := []proto.ID{digest(rng.IntN(12))}
		if rng.IntN(4) == 0 {
			ids = append(ids, proto.ID{Scheme: "super"})
		}
		all = append(all, ids...)
		before := c.Auth()
		if !c.addAuth(ids) {
			t.Fatal("auth refused")
		}
		if got := c.Auth(); len(got) > len(before) && &got[0] == &before[0] {
			t.Fatal("auth changed the slice an earlier request holds")
		}
	}
	if got, want := tree.ConnOrder(c.Auth()), tree.ConnOrder(all); !slices.Equal(got, want) {
		t.Fatalf("the recorded identities list as %v, all of them as %v", got, want)
	}
	if n := len(c.Auth()); n != 14 {
		t.Fatalf("the connection holds %d identities, want 14: the address, super and 12 users", n)
	}

	// New identities up to the bound, and one more.
	for i := 12; len(c.Auth()) < maxAuthIDs; i++ {
		if !c.addAuth([]proto.ID{digest(i)}) {
			t.Fatalf("auth refused at %d identities", len(c.Auth()))
		}
	}
	held := c.Auth()
	if c.addAuth([]proto.ID{digest(1), digest(100_000)}) {
		t.Fatalf("auth past %d identities accepted", maxAuthIDs)
	}
	if !slices.Equal(c.Auth(), held) {
		t.Fatal("a refused auth changed the identities")
	}
}

// TestIPIdentity checks the "ip" identity of a client's address against
// what ZooKeeper's whoAmI shows, which is Java's InetAddress.getHostAddress
// (see zkcompat's TestIPv6IdentityAgainstZooKeeper).
func TestIPIdentity(t *testing.T) {
	for _, c := range []struct {
		addr  string
		scope string
		want  string
	}{
		{"127.0.0.1", "", "127.0.0.1"},
		{"::ffff:10.1.2.3", "", "10.1.2.3"},
		{"::1", "", "0:0:0:0:0:0:0:1"},
		{"::", "", "0:0:0:0:0:0:0:0"},
		{"fd00::2", "", "fd00:0:0:0:0:0:0:2"},
		{"2001:DB8::ABCD:0:1", "", "2001:db8:0:0:0:abcd:0:1"},
		{"::1.2.3.4", "", "0:0:0:0:0:0:102:304"},
		{"fe80::fc:ff:fe00:1", "4", "fe80:0:0:0:fc:ff:fe00:1%4"},
	} {
		if got := javaHostAddress(netip.MustParseAddr(c.addr), c.scope); got != c.want {
			t.Errorf("javaHostAddress(%s, %q) = %q, want %q", c.addr, c.scope, got, c.want)
		}
	}
	// Go names the zone of an address by its interface; Java numbers it.
	ifcs, err := net.Interfaces()
	if err != nil || len(ifcs) == 0 {
		t.Fatalf("no interface to name a zone: %v", err)
	}
	ifc := ifcs[0]
	for zone, want := range map[string]string{
		ifc.Name: fmt.Sprintf("fe80:0:0:0:0:0:0:1%%%d", ifc.Index),
		"7":      "fe80:0:0:0:0:0:0:1%7",
		"":       "fe80:0:0:0:0:0:0:1",
	} {
		addr := &net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 2181, Zone: zone}
		if got := ipIdentity(addr); got != want {
			t.Errorf("ipIdentity(%v) = %q, want %q", addr, got, want)
		}
	}
	if got := ipIdentity(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2181}); got != "127.0.0.1" {
		t.Errorf("ipIdentity(127.0.0.1:2181) = %q", got)
	}
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	if got := ipIdentity(server.RemoteAddr()); got != "pipe" {
		t.Errorf("ipIdentity of a pipe = %q, want its text", got)
	}
}

// statsBackend hands each connection it opens a session for to a
// goroutine that reads what mntr, cons and the admin server read of it,
// as those may from the moment the server knows the connection.
type statsBackend struct {
	echoBackend
	wg sync.WaitGroup
}

func (b *statsBackend) OpenSession(ctx context.Context, c *Conn, d time.Duration, readOnly bool) (Session, error) {
	b.wg.Go(func() {
		for range 100 {
			c.Outstanding()
			c.Counts()
			c.Auth()
			c.ConsLine()
			c.ReadOnly()
			c.Session()
			c.Timeout()
		}
	})
	return b.echoBackend.OpenSession(ctx, c, d, readOnly)
}

// The statistics of a connection may be read while its handshake ends
// and its first requests run: under the race detector, a field that the
// connection sets up after the handshake without synchronization fails
// this test.
func TestStatisticsReadDuringHandshake(t *testing.T) {
	b := &statsBackend{}
	serveWith(t, b, append(connectFrame(), request(1, proto.OpExists, &proto.ExistsRequest{Path: "/"})...), 20*time.Millisecond)
	b.wg.Wait()
}
