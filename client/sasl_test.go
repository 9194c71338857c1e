package client

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/client/digestmd5"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
)

const saslJAAS = `Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_bob="bobsecret"
       user_carol="carolsecret";
};
`

func digest(user, password string) func() SASLMechanism {
	return func() SASLMechanism { return digestmd5.New(user, password) }
}

// saslServers runs f against a Collie and a ZooKeeper 3.8 server with
// the DIGEST-MD5 users bob and carol and the sasl ACL provider.
func saslServers(t *testing.T, f func(t *testing.T, addr string)) {
	jaas := filepath.Join(t.TempDir(), "jaas.conf")
	if err := os.WriteFile(jaas, []byte(saslJAAS), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("collie", func(t *testing.T) {
		srv := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
			c.MaxSessionTimeout = 10 * time.Second
			c.JAASConfigFile = jaas
			c.SASLUsers = map[string]string{"bob": "bobsecret", "carol": "carolsecret"}
			c.SASLAuthProvider = true
		}))
		f(t, srv.Addr())
	})
	t.Run("zookeeper", func(t *testing.T) {
		ref := zkref.Start(t, zkref.WithJVMArgs("-Djava.security.auth.login.config="+jaas),
			zkref.WithConfig("authProvider.1", config.SASLAuthenticationProvider))
		f(t, ref.Addr())
	})
}

func TestSASL(t *testing.T) {
	saslServers(t, func(t *testing.T, addr string) {
		ctx := testCtx(t)
		bob := dialT(t, addr, Config{SASL: digest("bob", "bobsecret"), Auth: []Auth{{Scheme: "digest", Data: []byte("dave:pw")}}})
		ids, err := bob.WhoAmI(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The auth packets follow the exchange: both identities are there.
		if !slices.Contains(ids, ClientInfo{AuthScheme: "sasl", User: "bob"}) || !slices.Contains(ids, ClientInfo{AuthScheme: "digest", User: "dave"}) {
			t.Fatalf("WhoAmI = %v, want sasl bob and digest dave", ids)
		}
		acl := []ACL{{Perms: PermAll, ID: ID{Scheme: "sasl", ID: "bob"}}}
		if _, _, err := bob.Create(ctx, "/bobs", []byte("b"), ModePersistent, acl); err != nil {
			t.Fatal(err)
		}
		if data, _, err := bob.Get(ctx, "/bobs"); err != nil || string(data) != "b" {
			t.Fatalf("bob reads his node: %q, %v", data, err)
		}
		carol := dialT(t, addr, Config{SASL: digest("carol", "carolsecret")})
		if _, _, err := carol.Get(ctx, "/bobs"); !errors.Is(err, ErrNoAuth) {
			t.Fatalf("carol reads bob's node: %v, want ErrNoAuth", err)
		}
	})
}

// A refused password fails Dial with ErrAuthFailed, as the Java client
// goes to AUTH_FAILED, on both servers.
func TestSASLRefused(t *testing.T) {
	saslServers(t, func(t *testing.T, addr string) {
		// ZooKeeper 3.8 checks an unknown user against the password of
		// the last known user that any connection named, so mallory's
		// password is nobody's.
		for _, cfg := range []Config{
			{SASL: digest("bob", "wrong")},
			{SASL: digest("mallory", "mallorysecret")},
		} {
			cfg.Logger = testLogger(t)
			c, err := Dial(testCtx(t), addr, cfg)
			if !errors.Is(err, ErrAuthFailed) {
				if c != nil {
					c.Close()
				}
				t.Fatalf("Dial: %v; want ErrAuthFailed", err)
			}
		}
	})
}

// After a connection loss the new connection authenticates again before
// anything else: the session is served as bob there too.
func TestSASLOnReconnection(t *testing.T) {
	srv := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
		c.MaxSessionTimeout = 10 * time.Second
		c.SASLUsers = map[string]string{"bob": "bobsecret"}
		c.SASLAuthProvider = true
	}))
	p := newProxy(t, srv.Addr())
	ctx := testCtx(t)
	c := dialT(t, p.Addr(), Config{SASL: digest("bob", "bobsecret")})
	states := c.StateChanges()
	defer states.Close()
	awaitState(t, states, StateConnected)
	p.Drop()
	awaitState(t, states, StateDisconnected)
	awaitState(t, states, StateReconnected, StateAuthFailed)
	ids, err := c.WhoAmI(ctx)
	if err != nil || !slices.Contains(ids, ClientInfo{AuthScheme: "sasl", User: "bob"}) {
		t.Fatalf("WhoAmI after reconnection = %v, %v", ids, err)
	}
}

// scriptedServer is a one-connection-at-a-time server whose test reads
// the client's packets and writes the replies itself.
type scriptedServer struct {
	ln    net.Listener
	conns chan *scriptedConn
}

type scriptedConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func startScripted(t testing.TB) *scriptedServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptedServer{ln: ln, conns: make(chan *scriptedConn, 4)}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				close(s.conns)
				return
			}
			s.conns <- &scriptedConn{t: t, nc: nc, br: bufio.NewReader(nc)}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for sc := range s.conns {
			sc.nc.Close()
		}
	})
	return s
}

// next accepts the next connection and answers its connect request with
// a session of the given timeout.
func (s *scriptedServer) next(t testing.TB, timeout time.Duration) *scriptedConn {
	t.Helper()
	sc := recv(t, s.conns, "a connection")
	t.Cleanup(func() { sc.nc.Close() })
	frame, err := readFrameFrom(sc.br)
	if err != nil {
		t.Fatalf("connect request: %v", err)
	}
	var req proto.ConnectRequest
	if err := proto.Unmarshal(frame, &req); err != nil {
		t.Fatal(err)
	}
	sc.write(&proto.ConnectResponse{TimeOut: int32(timeout / time.Millisecond), SessionID: 0x55, Passwd: make([]byte, proto.PasswordLen)}, nil)
	return sc
}

// write sends a frame of rec, after hdr when there is one.
func (sc *scriptedConn) write(rec proto.Record, hdr *proto.ReplyHeader) {
	var b []byte
	if hdr != nil {
		b = proto.AppendMarshal(b, hdr)
	}
	if rec != nil {
		b = proto.AppendMarshal(b, rec)
	}
	if _, err := sc.nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)); err != nil {
		sc.t.Errorf("write: %v", err)
	}
}

// read returns the next request's header and body.
func (sc *scriptedConn) read(t testing.TB) (proto.RequestHeader, []byte) {
	t.Helper()
	sc.nc.SetReadDeadline(time.Now().Add(testTimeout))
	frame, err := readFrameFrom(sc.br)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var hdr proto.RequestHeader
	d := proto.NewDecoder(frame)
	hdr.Decode(d)
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
	return hdr, frame[len(frame)-d.Remaining():]
}

// readSASL reads a sasl packet and returns its xid and token.
func (sc *scriptedConn) readSASL(t testing.TB) (int32, []byte) {
	t.Helper()
	hdr, body := sc.read(t)
	if hdr.Type != proto.OpSASL {
		t.Fatalf("packet %v, want a sasl packet", hdr)
	}
	var req proto.GetSASLRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return hdr.Xid, req.Token
}

// reconnectAndSync breaks the connection sc, reads the first sasl packet
// of the next one, and makes a Sync meanwhile, whose outcome it returns.
func reconnectAndSync(t testing.TB, s *scriptedServer, sc *scriptedConn, c *Client) (*scriptedConn, int32, <-chan error) {
	t.Helper()
	sc.nc.Close()
	sc = s.next(t, 3*time.Second)
	xid, _ := sc.readSASL(t)
	done := make(chan error, 1)
	go func() { done <- c.Sync(testCtx(t), "/") }()
	return sc, xid, done
}

// fakeMech answers every challenge "r<n>" and completes on "done".
type fakeMech struct{ done bool }

func (m *fakeMech) Name() string                 { return "FAKE" }
func (m *fakeMech) Start(string) ([]byte, error) { return []byte("hello"), nil }
func (m *fakeMech) Complete() bool               { return m.done }
func (m *fakeMech) Next(c []byte) ([]byte, error) {
	switch string(c) {
	case "done":
		m.done = true
		return nil, nil
	case "bad":
		return nil, errors.New("bad challenge")
	}
	return append([]byte("re:"), c...), nil
}

// The exchange is the first thing on a connection: sasl packets with the
// client's next xids, as the Java client numbers them, and every request
// made meanwhile waits for its end, auth packets included.
func TestSASLComesFirst(t *testing.T) {
	s := startScripted(t)
	ctx := testCtx(t)
	dialed := make(chan *Client, 1)
	go func() {
		c, err := Dial(ctx, s.ln.Addr().String(), Config{
			SASL: func() SASLMechanism { return &fakeMech{} }, Logger: testLogger(t),
			Auth: []Auth{{Scheme: "digest", Data: []byte("a:b")}},
		})
		if err != nil {
			t.Error(err)
		}
		dialed <- c
	}()
	sc := s.next(t, 3*time.Second)
	xid, token := sc.readSASL(t)
	if xid != 1 || string(token) != "hello" {
		t.Fatalf("first sasl packet: xid %d, token %q; want xid 1, the initial token", xid, token)
	}
	sc.write(&proto.SetSASLResponse{Token: []byte("c1")}, &proto.ReplyHeader{Xid: xid})
	if xid, token = sc.readSASL(t); xid != 2 || string(token) != "re:c1" {
		t.Fatalf("second sasl packet: xid %d, token %q", xid, token)
	}
	sc.write(&proto.SetSASLResponse{Token: []byte("done")}, &proto.ReplyHeader{Xid: xid})
	c := recv(t, dialed, "Dial")
	if c == nil {
		return
	}
	defer c.Close()
	if hdr, _ := sc.read(t); hdr.Xid != proto.XidAuth || hdr.Type != proto.OpAuth {
		t.Fatalf("after the exchange: %v, want the auth packet", hdr)
	}
	sc.write(nil, &proto.ReplyHeader{Xid: proto.XidAuth})

	// A reconnection: a request made while the exchange runs waits.
	var got <-chan error
	sc, xid, got = reconnectAndSync(t, s, sc, c)
	eventually(t, "the request queued", func() bool {
		c.queue.mu.Lock()
		defer c.queue.mu.Unlock()
		return len(c.queue.calls) == 1
	})
	sc.write(&proto.SetSASLResponse{Token: []byte("done")}, &proto.ReplyHeader{Xid: xid})
	if hdr, _ := sc.read(t); hdr.Type != proto.OpAuth {
		t.Fatalf("after the second exchange: %v, want the auth packet", hdr)
	}
	hdr, _ := sc.read(t)
	if hdr.Type != proto.OpSync {
		t.Fatalf("then %v, want the waiting sync", hdr)
	}
	sc.write(&proto.SyncResponse{Path: "/"}, &proto.ReplyHeader{Xid: hdr.Xid})
	if err := recv(t, got, "sync"); err != nil {
		t.Fatal(err)
	}
}

// A refusal on a reconnection ends the client in StateAuthFailed: what
// waited fails with ErrAuthFailed, as later requests do, watches end with
// it, and no connection is tried again.
func TestSASLRefusedOnReconnection(t *testing.T) {
	for _, refusal := range []string{"server", "mechanism"} {
		t.Run(refusal, func(t *testing.T) {
			s := startScripted(t)
			ctx := testCtx(t)
			dialed := make(chan *Client, 1)
			go func() {
				c, _ := Dial(ctx, s.ln.Addr().String(), Config{SASL: func() SASLMechanism { return &fakeMech{} }, Logger: testLogger(t)})
				dialed <- c
			}()
			sc := s.next(t, 3*time.Second)
			xid, _ := sc.readSASL(t)
			sc.write(&proto.SetSASLResponse{Token: []byte("done")}, &proto.ReplyHeader{Xid: xid})
			c := recv(t, dialed, "Dial")
			if c == nil {
				t.Fatal("Dial failed")
			}
			defer c.Close()
			states := c.StateChanges()
			defer states.Close()
			watch := make(chan (<-chan Event), 1)
			go func() {
				_, _, ch, err := c.ExistsW(ctx, "/w")
				if err != nil {
					t.Error(err)
				}
				watch <- ch
			}()
			hdr, _ := sc.read(t)
			sc.write(nil, &proto.ReplyHeader{Xid: hdr.Xid, Err: proto.ErrNoNode})
			events := recv(t, watch, "ExistsW")

			sc, xid, waiting := reconnectAndSync(t, s, sc, c)
			if refusal == "server" {
				sc.write(&proto.SetSASLResponse{}, &proto.ReplyHeader{Xid: xid, Err: proto.ErrAuthFailed})
			} else {
				sc.write(&proto.SetSASLResponse{Token: []byte("bad")}, &proto.ReplyHeader{Xid: xid})
			}
			awaitState(t, states, StateAuthFailed, StateReconnected)
			if err := recv(t, waiting, "the waiting sync"); !errors.Is(err, ErrAuthFailed) {
				t.Errorf("waiting request: %v, want ErrAuthFailed", err)
			}
			if _, _, err := c.Get(ctx, "/x"); !errors.Is(err, ErrAuthFailed) {
				t.Errorf("later request: %v, want ErrAuthFailed", err)
			}
			if err := c.Renew(ctx); !errors.Is(err, ErrAuthFailed) {
				t.Errorf("Renew: %v, want ErrAuthFailed", err)
			}
			if ev := recv(t, events, "the watch's end"); ev.Type != EventNotWatching || !errors.Is(ev.Err, ErrAuthFailed) {
				t.Errorf("watch: %v, want NotWatching with ErrAuthFailed", ev)
			}
			select {
			case sc := <-s.conns:
				t.Fatalf("a connection after the refusal from %v", sc.nc.RemoteAddr())
			default:
			}
		})
	}
}

// A server that does not answer a sasl packet loses the connection after
// the read timeout, and the client connects again.
func TestSASLBoundedByReadTimeout(t *testing.T) {
	s := startScripted(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	dialed := make(chan struct{})
	go func() {
		defer close(dialed)
		c, err := Dial(ctx, s.ln.Addr().String(), Config{SASL: func() SASLMechanism { return &fakeMech{} }, Logger: testLogger(t)})
		if err == nil {
			c.Close()
		}
	}()
	// The client logs to the test until it is closed: it must be before
	// the test ends.
	t.Cleanup(func() {
		cancel()
		<-dialed
	})
	sc := s.next(t, 300*time.Millisecond)
	sc.readSASL(t)
	sc.nc.SetReadDeadline(time.Now().Add(testTimeout))
	if _, err := sc.br.ReadByte(); err == nil {
		t.Fatal("the client sent more while its sasl packet was unanswered")
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the client kept the connection open")
	}
	// The next attempt starts the exchange again.
	sc = s.next(t, 3*time.Second)
	xid, token := sc.readSASL(t)
	if string(token) != "hello" {
		t.Fatalf("second connection's first token %q (xid %d)", token, xid)
	}
}

// FuzzSASLReplies answers a connection's sasl packets with arbitrary
// bytes, then closes it. Nothing may panic, and the client never
// authenticates with DIGEST-MD5: only a server that knows the password can
// produce the rspauth of the client's random cnonce.
func FuzzSASLReplies(f *testing.F) {
	reply := func(hdr proto.ReplyHeader, token []byte) []byte {
		b := proto.AppendMarshal(nil, &hdr)
		b = proto.AppendMarshal(b, &proto.SetSASLResponse{Token: token})
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
	}
	challenge := []byte(`realm="zk-sasl-md5",nonce="abc",charset=utf-8,algorithm=md5-sess`)
	f.Add(reply(proto.ReplyHeader{Xid: 1}, challenge))
	f.Add(slices.Concat(reply(proto.ReplyHeader{Xid: 1}, challenge), reply(proto.ReplyHeader{Xid: 2}, []byte("rspauth=00000000000000000000000000000000"))))
	f.Add(reply(proto.ReplyHeader{Xid: 1, Err: proto.ErrAuthFailed}, nil))
	f.Add(slices.Concat(reply(proto.ReplyHeader{Xid: proto.XidPing}, nil), reply(proto.ReplyHeader{Xid: 7}, challenge)))
	f.Add([]byte{0, 0, 0, 3, 1, 2, 3})
	f.Fuzz(func(t *testing.T, replies []byte) {
		cc, sc := net.Pipe()
		var wg sync.WaitGroup
		wg.Go(func() { io.Copy(io.Discard, sc) })
		wg.Go(func() {
			defer sc.Close()
			sc.Write(replies)
		})
		c := &Client{cfg: Config{SASL: digest("bob", "bobsecret"), MaxPacket: 1 << 16}, ctx: t.Context(), log: slog.New(slog.DiscardHandler)}
		c.watches.init()
		cn := &conn{c: c, nc: cc, br: bufio.NewReader(cc), addr: "zk1:2181"}
		err := c.authenticate(cn, testTimeout)
		cc.Close()
		wg.Wait()
		if err == nil {
			t.Fatal("authenticated by a server that does not know the password")
		}
	})
}
