package peer_test

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/client/digestmd5"
	"github.com/collie-io/collie/server/peer"
	"github.com/collie-io/collie/server/sasl"
)

// quorumUsers is the QuorumServer section of the tests: user test,
// password secret.
func quorumUsers(user string) (string, bool) {
	if user == "test" {
		return "secret", true
	}
	return "", false
}

// saslStep is a server's setting of SASL between servers, as the steps of
// ZooKeeper's rolling enable set it.
type saslStep int

const (
	saslOff      saslStep = iota // quorum.auth.enableSasl=false
	saslEnabled                  // enableSasl: authenticates diallers that ask
	saslLearner                  // learnerRequireSasl: authenticates when it dials
	saslRequired                 // serverRequireSasl: refuses diallers that do not
)

func (s saslStep) String() string {
	return [...]string{"off", "enabled", "learnerRequire", "serverRequire"}[s]
}

// auth returns the Auth of step, whose dials authenticate with the
// password password() gives at the time.
func (s saslStep) auth(password func() string) *peer.Auth {
	if s == saslOff {
		return nil
	}
	a := &peer.Auth{
		Accept: func(from uint64, asks bool) (peer.ServerExchange, *peer.Refusal) {
			switch {
			case asks:
				return sasl.NewDigestMD5For(sasl.QuorumService, quorumUsers, rand.Reader), nil
			case s == saslRequired:
				return nil, &peer.Refusal{Reason: fmt.Sprintf("server %d did not authenticate, and this server requires it", from)}
			}
			return nil, nil
		},
	}
	if s >= saslLearner {
		a.Dial = func(uint64) peer.ClientExchange {
			return quorumClient("test", password())
		}
	}
	return a
}

func secret() string { return "secret" }

// quorumClient is the exchange a server dials with, as server.quorumAuth
// makes it.
func quorumClient(user, password string) *digestmd5.Mechanism {
	return digestmd5.New(user, password, digestmd5.WithService(sasl.QuorumService.Protocol, sasl.QuorumService.ServerName))
}

// checkNothingPasses sends n messages each way between a and b and
// checks that none is handed over: each is dropped by its sender or, once
// it has arrived, by its receiver.
func checkNothingPasses(t *testing.T, a, b *member) {
	t.Helper()
	const n = 4
	sendMixed(t, a, b.id, 0, n)
	sendMixed(t, b, a.id, 0, n)
	for _, d := range [][2]*member{{a, b}, {b, a}} {
		from, to := d[0], d[1]
		waitFor(t, fmt.Sprintf("the messages of %d to be dropped or to arrive at %d", from.id, to.id), func() bool {
			return peerStats(from.tr, to.id).Dropped+peerStats(to.tr, from.id).Received >= n
		})
		if got := to.rec.from(from.id); len(got) != 0 {
			t.Errorf("%d handed over %d messages of %d", to.id, len(got), from.id)
		}
	}
}

// waitPasses waits until messages pass between a and b both ways. A
// server takes a peer's messages once it has connected to it, which may
// come after the peer has connected to it: until then, the messages sent
// are dropped, so they are sent again at every poll.
func waitPasses(t *testing.T, a, b *member) {
	t.Helper()
	waitFor(t, fmt.Sprintf("messages between %d and %d both ways", a.id, b.id), func() bool {
		sendMixed(t, a, b.id, 0, 2)
		sendMixed(t, b, a.id, 0, 2)
		return len(a.rec.from(b.id)) > 0 && len(b.rec.from(a.id)) > 0
	})
}

// TestAuthRollingSteps pairs servers at each step of ZooKeeper's rolling
// enable of SASL between servers: servers one step apart exchange
// messages both ways, since every step can talk with the one before it;
// servers two or more steps apart exchange nothing, since one of them
// requires what the other cannot do.
func TestAuthRollingSteps(t *testing.T) {
	for x := saslOff; x <= saslRequired; x++ {
		for y := x; y <= saslRequired; y++ {
			t.Run(x.String()+"-"+y.String(), func(t *testing.T) {
				steps := []saslStep{x, y}
				ms := startMembers(t, 2, func(cfg *peer.Config) { cfg.Auth = steps[cfg.ID-1].auth(secret) })
				a, b := ms[0], ms[1]
				if y-x <= 1 {
					waitFor(t, "both connections", func() bool {
						return peerStats(a.tr, 2).Connected && peerStats(b.tr, 1).Connected
					})
					waitPasses(t, a, b)
					return
				}
				// The refusing side counts the refused connection.
				waitFor(t, "a refused connection", func() bool { return a.tr.Stats().Rejected+b.tr.Stats().Rejected > 0 })
				checkNothingPasses(t, a, b)
			})
		}
	}
}

// TestAuthWrongPassword: a server whose password is wrong cannot
// authenticate to the others, which refuse its connections; their own
// connections to it go through, but it takes nothing from them, so it
// cannot follow an ensemble it cannot answer. Once its password is
// right, it joins without a restart.
func TestAuthWrongPassword(t *testing.T) {
	var mu sync.Mutex
	password := "wrong"
	current := func() string {
		mu.Lock()
		defer mu.Unlock()
		return password
	}
	logs := &syncWriter{}
	ms := startMembers(t, 3, func(cfg *peer.Config) {
		cfg.Logger = slogTo(logs, t).With("server", cfg.ID)
		if cfg.ID == 3 {
			cfg.Auth = saslRequired.auth(current)
			return
		}
		cfg.Auth = saslRequired.auth(secret)
	})
	a, b, c := ms[0], ms[1], ms[2]
	waitFor(t, "1 and 2 to connect", func() bool { return peerStats(a.tr, 2).Connected && peerStats(b.tr, 1).Connected })
	waitFor(t, "3's connections to be refused", func() bool { return a.tr.Stats().Rejected > 0 && b.tr.Stats().Rejected > 0 })
	waitFor(t, "3 to say why", func() bool {
		s := logs.String()
		return strings.Contains(s, `server=1 component=peer addr=`) && strings.Contains(s, `from 3: peer: authentication between servers failed: sasl: DIGEST-MD5 authentication failed: wrong response for user \"test\" (wrong password)`) &&
			strings.Contains(s, `server=3 component=peer peer=2 addr=`) && strings.Contains(s, "cannot authenticate to peer")
	})
	if s := logs.String(); strings.Contains(s, "secret") {
		t.Errorf("the log shows a password:\n%s", s)
	}
	checkNothingPasses(t, a, c)
	checkNothingPasses(t, b, c)
	sendMixed(t, a, 2, 0, 4)
	waitFor(t, "messages between 1 and 2", func() bool { return len(b.rec.from(1)) == 4 })

	mu.Lock()
	password = "secret"
	mu.Unlock()
	waitFor(t, "3 to connect to both", func() bool { return peerStats(c.tr, 1).Connected && peerStats(c.tr, 2).Connected })
	waitPasses(t, a, c)
	closeAll(t, ms...)
}

// syncWriter is a log destination the test reads while servers write.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestHostileAuthentication speaks the exchange by hand to a server that
// requires it: whatever a dialler sends costs it its connection only, and
// only a dialler that knows the password gets the reply that admits it.
func TestHostileAuthentication(t *testing.T) {
	const hostile = 3 // a configured peer whose server is not running
	ms := ensemble(t, 2, func(cfg *peer.Config) {
		cfg.Auth = saslRequired.auth(secret)
		cfg.HandshakeTimeout = 300 * time.Millisecond
		if cfg.ID == 1 {
			cfg.Peers = map[uint64]string{hostile: deadAddr(t)}
			cfg.Describe = func() []byte { return []byte("a") }
		}
	})
	a := ms[0]
	asking := helloBytes(2, 1, hostile, 1, "")
	binary.BigEndian.PutUint64(asking[8:], 1)

	// dialHostile opens a connection and sends b.
	dialHostile := func(t *testing.T, b []byte) net.Conn {
		c, err := net.Dial("tcp", a.tr.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(testTimeout))
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// challenge reads the reply asking to authenticate and the first token.
	challenge := func(t *testing.T, c net.Conn) []byte {
		got := make([]byte, 8+1+2)
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
		if string(got[:8]) != "CLPR\x00\x02\x07\x00" || got[8] != 0 {
			t.Fatalf("answer %q, want the reply with status 7 and a token to answer", got)
		}
		token := make([]byte, binary.BigEndian.Uint16(got[9:]))
		if _, err := io.ReadFull(c, token); err != nil {
			t.Fatal(err)
		}
		return token
	}
	block := func(b []byte) []byte { return append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...) }
	closed := func(t *testing.T, c net.Conn, want string) {
		t.Helper()
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("%v after %q", err, got)
		}
		if !strings.Contains(string(got), want) {
			t.Errorf("answer %q, want it to hold %q", got, want)
		}
	}
	rejected := func(t *testing.T, before uint64) {
		waitFor(t, "the connection counted as rejected", func() bool { return a.tr.Stats().Rejected > before })
	}

	t.Run("not asking", func(t *testing.T) {
		before := a.tr.Stats().Rejected
		c := dialHostile(t, helloBytes(2, 1, hostile, 1, ""))
		// No description of the receiver before authentication.
		closed(t, c, "CLPR\x00\x02\x08\x00\x00\x00\x00")
		rejected(t, before)
	})
	// answer asks to authenticate and answers the challenge with password.
	answer := func(t *testing.T, password string) (net.Conn, *digestmd5.Mechanism) {
		c := dialHostile(t, asking)
		cl := quorumClient("test", password)
		resp, err := cl.Next(challenge(t, c))
		if err != nil {
			t.Fatal(err)
		}
		c.Write(block(resp))
		return c, cl
	}
	t.Run("wrong password", func(t *testing.T) {
		before := a.tr.Stats().Rejected
		c, _ := answer(t, "guess")
		closed(t, c, "\x02")
		rejected(t, before)
	})
	// Answers to the challenge that break the exchange; nil stalls.
	for name, answer := range map[string][]byte{"oversized token": {0xff, 0xff}, "stalled exchange": nil, "token cut short": {0, 9, 'x'}} {
		t.Run(name, func(t *testing.T) {
			before := a.tr.Stats().Rejected
			c := dialHostile(t, asking)
			challenge(t, c)
			c.Write(answer)
			closed(t, c, "")
			rejected(t, before)
		})
	}
	t.Run("right password", func(t *testing.T) {
		c, cl := answer(t, "secret")
		var state [3]byte
		if _, err := io.ReadFull(c, state[:]); err != nil || state[0] != 1 {
			t.Fatalf("state %v, %v; want 1, done", state, err)
		}
		rspauth := make([]byte, binary.BigEndian.Uint16(state[1:]))
		io.ReadFull(c, rspauth)
		if _, err := cl.Next(rspauth); err != nil || !cl.Complete() {
			t.Fatalf("rspauth: %v", err)
		}
		// Then the reply that admits it, with the receiver's description.
		got := make([]byte, len(reply(0)))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != string(reply(0)) {
			t.Fatalf("reply %q, %v; want %q", got, err, reply(0))
		}
	})
	closeAll(t, ms...)
}

// TestAuthDiallerRefusesUnprovenReceiver: a dialler that authenticates
// goes no further with a receiver that takes it without an exchange, or
// that does not prove it knows the password.
func TestAuthDiallerRefusesUnprovenReceiver(t *testing.T) {
	const challenge = `realm="zk-quorum-sasl-md5",nonce="n",charset=utf-8,algorithm=md5-sess`
	step := func(state byte, token string) []byte {
		return append(binary.BigEndian.AppendUint16([]byte{state}, uint16(len(token))), token...)
	}
	authenticate := []byte("CLPR\x00\x02\x07\x00")
	for _, tc := range []struct {
		name    string
		receive func(c net.Conn) // the fake receiver, once it has read the hello
		want    string           // in the dialler's log
	}{
		{"takes it without an exchange", func(c net.Conn) { c.Write(reply(0)) }, "without authenticating this server"},
		{"judges it without an exchange", func(c net.Conn) { c.Write(refusedReply(1, "lost your data")) }, "without authenticating this server"},
		{"ends before proving itself", func(c net.Conn) {
			c.Write(append(append(authenticate, step(1, challenge)...), reply(0)...))
		}, "ended the exchange before proving itself"},
		{"wrong proof", func(c net.Conn) {
			c.Write(append(authenticate, step(0, challenge)...))
			var n [2]byte
			io.ReadFull(c, n[:])
			io.ReadFull(c, make([]byte, binary.BigEndian.Uint16(n[:])))
			c.Write(append(step(1, "rspauth=00000000000000000000000000000000"), reply(0)...))
		}, "does not know the password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			defer wg.Wait()
			defer ln.Close()
			wg.Go(func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.SetDeadline(time.Now().Add(testTimeout))
					io.ReadFull(c, make([]byte, 34))
					tc.receive(c)
					c.Close()
				}
			})
			logs := &syncWriter{}
			var refused []*peer.Refusal
			var mu sync.Mutex
			cfg := testConfig(t, 1, newRecorder())
			cfg.Logger = slogTo(logs, t)
			cfg.Peers = map[uint64]string{2: ln.Addr().String()}
			cfg.Auth = saslLearner.auth(secret)
			cfg.Refused = func(_ uint64, r *peer.Refusal) { mu.Lock(); refused = append(refused, r); mu.Unlock() }
			tr := newTransport(t, cfg)
			tr.Start()
			waitFor(t, "the dialler to say why it went no further", func() bool { return strings.Contains(logs.String(), tc.want) })
			if peerStats(tr, 2).Connected {
				t.Error("connected to an unproven receiver")
			}
			tr.Close()
			mu.Lock()
			defer mu.Unlock()
			if len(refused) != 0 {
				t.Errorf("a refusal of an unproven receiver was taken: %v", refused[0])
			}
		})
	}
}

// slogTo logs to w and to the test's output.
func slogTo(w io.Writer, t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.MultiWriter(w, t.Output()), &slog.HandlerOptions{Level: slog.LevelInfo}))
}
