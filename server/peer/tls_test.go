package peer_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/server/peer"
	"github.com/collie-io/collie/server/tlsconfig"
)

// pki is a CA the servers trust, the certificates it issued for
// 127.0.0.1, and one for another address; and a CA nobody trusts.
type pki struct {
	ca, other *tlstest.Authority
	// good name 127.0.0.1; elsewhere names 127.0.0.9 only; stranger is
	// the other CA's; expired expired.
	good, elsewhere, stranger, expired *tlstest.Identity
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	tlstest.Require(t)
	ca, other := tlstest.NewAuthority(t, "ca"), tlstest.NewAuthority(t, "other")
	return &pki{
		ca: ca, other: other,
		good:      ca.Issue("good", tlstest.Options{SAN: "IP:127.0.0.1"}),
		elsewhere: ca.Issue("elsewhere", tlstest.Options{SAN: "IP:127.0.0.9"}),
		stranger:  other.Issue("stranger", tlstest.Options{SAN: "IP:127.0.0.1"}),
		expired:   ca.Issue("expired", tlstest.Options{SAN: "IP:127.0.0.1", Expired: true}),
	}
}

// serverConfig is the TLS configuration of a server showing id's
// certificate and trusting the CA.
func (p *pki) serverConfig(t *testing.T, id *tlstest.Identity) *tls.Config {
	t.Helper()
	c, err := tlsconfig.Settings{
		KeyStore:   tlsconfig.Store{Location: id.KeyStore("PEM-plain")},
		TrustStore: tlsconfig.Store{Location: p.ca.Cert},
	}.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// secure is a peer.TLS with a fixed configuration: dial true dials with
// TLS; plaintext also accepts plaintext peers. Names are checked.
func secure(c *tls.Config, dial, plaintext bool) *peer.TLS {
	return &peer.TLS{Config: func() *tls.Config { return c }, Dial: dial, AcceptPlaintext: plaintext, VerifyName: true}
}

// logBuffer keeps what a transport logs, and shows it in the test's
// output too.
type logBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	out io.Writer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	return l.out.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// capture has cfg log into a buffer it returns.
func capture(t *testing.T, cfg *peer.Config) *logBuffer {
	l := &logBuffer{out: t.Output()}
	cfg.Logger = slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelInfo})).With("server", cfg.ID)
	return l
}

// waitLogged waits until the log has a line holding every part.
func waitLogged(t *testing.T, l *logBuffer, parts ...string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("a log line with %q", parts), func() bool {
		for line := range strings.SplitSeq(l.String(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return true
			}
		}
		return false
	})
}

// Two servers with certificates of the CA they trust, each dialling with
// TLS and refusing plaintext: messages pass both ways, on TLS
// connections.
func TestTLSMutualAuthentication(t *testing.T) {
	p := newPKI(t)
	c := p.serverConfig(t, p.good)
	ms := ensemble(t, 2, func(cfg *peer.Config) { cfg.TLS = secure(c, true, false) })
	a, b := ms[0], ms[1]
	if !peerStats(a.tr, 2).TLS || !peerStats(b.tr, 1).TLS {
		t.Fatalf("connections not TLS: %+v, %+v", peerStats(a.tr, 2), peerStats(b.tr, 1))
	}
	sendMixed(t, a, 2, 0, 20)
	sendMixed(t, b, 1, 0, 20)
	waitFor(t, "messages both ways", func() bool { return len(b.rec.from(1)) == 20 && len(a.rec.from(2)) == 20 })
	checkMixed(t, b.rec.from(1), 1, 2, 0)
	checkMixed(t, a.rec.from(2), 2, 1, 0)
	closeAll(t, ms...)
}

// A server whose certificate is not one its peer accepts never exchanges
// a message with it, either way, and both say why in their logs; given a
// good certificate (its configuration is read at every connection, as
// after a reload), it connects.
func TestTLSRefusesBadCertificates(t *testing.T) {
	p := newPKI(t)
	good := p.serverConfig(t, p.good)
	for _, tc := range []struct {
		name string
		id   *tlstest.Identity
		// what the server with the good certificate logs, and the
		// other one
		goodSays, badSays string
	}{
		{"another CA", p.stranger, "reason=\"unknown CA", "reason=\"the peer refused the TLS handshake"},
		{"expired", p.expired, "reason=\"expired", "reason=\"the peer refused the TLS handshake"},
		{"another address", p.elsewhere, "reason=\"name mismatch", "reason=\"name mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bad atomic.Pointer[tls.Config]
			bad.Store(p.serverConfig(t, tc.id))
			logs := map[uint64]*logBuffer{}
			ms := startMembers(t, 2, func(cfg *peer.Config) {
				logs[cfg.ID] = capture(t, cfg)
				cfg.TLS = secure(good, true, false)
				if cfg.ID == 2 {
					cfg.TLS.Config = func() *tls.Config { return bad.Load() }
				}
			})
			a, b := ms[0], ms[1]
			waitLogged(t, logs[1], "peer connection refused", "addr=127.0.0.1:", tc.goodSays)
			waitLogged(t, logs[1], "cannot connect to peer", tc.goodSays)
			waitLogged(t, logs[2], tc.badSays)
			sendMixed(t, a, 2, 0, 4)
			sendMixed(t, b, 1, 0, 4)
			if n := len(a.rec.from(2)) + len(b.rec.from(1)); n != 0 || peerStats(a.tr, 2).Connected || peerStats(b.tr, 1).Connected {
				t.Fatalf("%d messages passed, connected %v %v", n, peerStats(a.tr, 2).Connected, peerStats(b.tr, 1).Connected)
			}
			if a.tr.Stats().Rejected == 0 {
				t.Errorf("no rejected connection counted")
			}

			bad.Store(good)
			waitFor(t, "the servers to connect with good certificates", func() bool {
				return peerStats(a.tr, 2).Connected && peerStats(b.tr, 1).Connected
			})
			sendMixed(t, b, 1, 0, 4)
			waitFor(t, "messages", func() bool { return len(a.rec.from(2)) == 4 })
			closeAll(t, ms...)
		})
	}
}

// Refused handshakes are logged at Warn once per peer host and reason,
// not at every redial.
func TestTLSRefusalsLoggedOnce(t *testing.T) {
	p := newPKI(t)
	good, stranger := p.serverConfig(t, p.good), p.serverConfig(t, p.stranger)
	var logs *logBuffer
	ms := startMembers(t, 2, func(cfg *peer.Config) {
		cfg.TLS = secure(good, true, false)
		if cfg.ID == 1 {
			logs = capture(t, cfg)
		} else {
			cfg.TLS.Config = func() *tls.Config { return stranger }
		}
	})
	waitFor(t, "several refused connections", func() bool { return ms[0].tr.Stats().Rejected >= 5 })
	n := 0
	for line := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(line, `level=WARN msg="peer connection refused"`) && strings.Contains(line, `reason="unknown CA`) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d warnings for %d refusals of one reason, want 1:\n%s", n, ms[0].tr.Stats().Rejected, logs)
	}
	closeAll(t, ms...)
}

// A server that takes TLS peers only refuses a plaintext one and tells it
// so; a server that takes plaintext only refuses a TLS one; and bytes that
// are neither close that connection only.
func TestTLSPlaintextRefused(t *testing.T) {
	p := newPKI(t)
	c := p.serverConfig(t, p.good)
	logs := map[uint64]*logBuffer{}
	ms := startMembers(t, 2, func(cfg *peer.Config) {
		logs[cfg.ID] = capture(t, cfg)
		cfg.HandshakeTimeout = 500 * time.Millisecond
		if cfg.ID == 1 {
			cfg.TLS = secure(c, true, false)
		}
	})
	a, b := ms[0], ms[1]
	waitLogged(t, logs[1], "peer connection refused", `reason="plaintext peer on a TLS-only port"`)
	waitLogged(t, logs[2], "cannot connect to peer", `reason="plaintext peer on a TLS-only port"`, "takes TLS connections only")
	waitLogged(t, logs[2], "peer connection refused", `reason="TLS peer on a plaintext port"`)
	if peerStats(a.tr, 2).Connected || peerStats(b.tr, 1).Connected {
		t.Fatal("a plaintext server and a TLS-only one connected")
	}

	// A plaintext hello gets the TLS-only answer, status 9.
	conn, err := net.Dial("tcp", a.tr.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(helloBytes(2, 1, 2, 1, "")); err != nil {
		t.Fatal(err)
	}
	var r [8]byte
	if _, err := io.ReadFull(conn, r[:]); err != nil || string(r[:]) != "CLPR\x00\x02\x09\x00" {
		t.Fatalf("reply %q, %v; want status 9", r, err)
	}

	// A TLS record header and garbage, on both ports.
	for _, addr := range []string{a.tr.Addr().String(), b.tr.Addr().String()} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte("\x16\x03\x01\x00\x05junk!junk"))
		conn.SetReadDeadline(time.Now().Add(testTimeout))
		if _, err := io.ReadAll(conn); err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
			t.Errorf("%s: %v", addr, err)
		}
		conn.Close()
	}
	closeAll(t, ms...)
}

func isReset(err error) bool { return strings.Contains(err.Error(), "reset") }

// ZooKeeper's rolling switch to TLS with port unification: a server that
// still dials in plaintext and one that dials with TLS, both accepting
// either, exchange messages; so do the latter and a server that takes TLS
// only.
func TestTLSPortUnification(t *testing.T) {
	p := newPKI(t)
	c := p.serverConfig(t, p.good)
	steps := []*peer.TLS{
		secure(c, false, true), // 1: portUnification, no sslQuorum yet
		secure(c, true, true),  // 2: both
		secure(c, true, false), // 3: sslQuorum alone
	}
	ms := make([]*member, 3)
	for i := range ms {
		rec := newRecorder()
		cfg := testConfig(t, uint64(i+1), rec)
		cfg.TLS = steps[i]
		ms[i] = &member{id: uint64(i + 1), tr: newTransport(t, cfg), rec: rec}
	}
	link := func(x, y *member) {
		if err := x.tr.AddPeer(y.id, y.tr.Addr().String()); err != nil {
			t.Fatal(err)
		}
		if err := y.tr.AddPeer(x.id, x.tr.Addr().String()); err != nil {
			t.Fatal(err)
		}
	}
	link(ms[0], ms[1])
	link(ms[1], ms[2])
	for _, m := range ms {
		m.tr.Start()
	}
	for _, m := range ms {
		waitConnected(t, m.tr)
	}
	for _, l := range []struct {
		from, to uint64
		tls      bool
	}{{1, 2, false}, {2, 1, true}, {2, 3, true}, {3, 2, true}} {
		from, to := ms[l.from-1], ms[l.to-1]
		if got := peerStats(from.tr, l.to).TLS; got != l.tls {
			t.Errorf("connection from %d to %d: TLS %v, want %v", l.from, l.to, got, l.tls)
		}
		sendMixed(t, from, l.to, 0, 6)
		waitFor(t, fmt.Sprintf("messages from %d to %d", l.from, l.to), func() bool { return len(to.rec.from(l.from)) == 6 })
		checkMixed(t, to.rec.from(l.from), l.from, l.to, 0)
	}
	closeAll(t, ms...)
}
