package admin

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/server/tlssniff"
)

// HTTPS says how the admin port uses TLS, as ZooKeeper's admin.forceHttps
// and admin.portUnification do.
type HTTPS struct {
	// Config is the server's TLS configuration: its certificate and, when
	// clients must show one (admin.needClientAuth), ClientAuth and
	// ClientCAs. Required.
	Config *tls.Config
	// AcceptPlaintext serves HTTP beside HTTPS on the same port
	// (admin.portUnification): a connection whose first byte starts a TLS
	// record is HTTPS, any other HTTP. Without it the port serves HTTPS
	// only (admin.forceHttps), and plain HTTP gets 400.
	AcceptPlaintext bool
}

// stsHeader is the Strict-Transport-Security header ZooKeeper's Jetty adds
// to every HTTPS answer of its admin server: a day, subdomains included.
const stsHeader = "max-age=86400; includeSubDomains"

// secure makes s serve HTTPS on ln as https says, and returns the listener
// to serve.
func (s *Server) secure(ln net.Listener, https *HTTPS) net.Listener {
	handler := s.http.Handler
	if !https.AcceptPlaintext {
		// Serving a *tls.Conn, net/http bounds its handshake by
		// ReadHeaderTimeout and answers plain HTTP with 400.
		s.http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Strict-Transport-Security", stsHeader)
			handler.ServeHTTP(w, r)
		})
		return tls.NewListener(ln, https.Config)
	}
	s.http.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, unifiedConnKey{}, c)
	}
	s.http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(unifiedConnKey{}).(*unifiedConn); ok && c.isTLS() {
			w.Header().Set("Strict-Transport-Security", stsHeader)
		}
		handler.ServeHTTP(w, r)
	})
	return &unifiedListener{Listener: ln, config: https.Config, log: s.log}
}

type unifiedConnKey struct{}

// unifiedListener accepts connections that are HTTP or HTTPS. Its Accept
// returns at once; a connection tells which it is when net/http first reads
// from it, within the deadline net/http has set for the request's header.
type unifiedListener struct {
	net.Listener
	config *tls.Config
	log    *slog.Logger
}

func (l *unifiedListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &unifiedConn{Conn: nc, config: l.config, log: l.log}, nil
}

// unifiedConn is a connection of a unified port. Its first Read peeks at
// the first byte and, when it starts a TLS record, makes the handshake;
// reads and writes then go to the TLS connection or to the plain one.
type unifiedConn struct {
	net.Conn
	config *tls.Config
	log    *slog.Logger

	once sync.Once
	// After once: the connection to use, and whether it is TLS. A failed
	// handshake leaves err, which every read and write returns.
	conn net.Conn
	tls  bool
	err  error
	// started is set once conn, tls and err are: Close, which must not
	// wait for a handshake in progress, reads them only then.
	started atomic.Bool
}

// handshakeWriteTimeout bounds the writes of a handshake, which net/http's
// read deadline does not: a client that never reads would hold them.
const handshakeWriteTimeout = readHeaderTimeout

func (c *unifiedConn) start() {
	defer c.started.Store(true)
	peeked, handshake, err := tlssniff.Sniff(c.Conn)
	if err != nil {
		c.err = err
		return
	}
	if !handshake {
		c.conn = peeked
		return
	}
	tc := tls.Server(peeked, c.config)
	c.Conn.SetWriteDeadline(time.Now().Add(handshakeWriteTimeout))
	if err := tc.Handshake(); err != nil {
		c.log.Info("admin server: TLS handshake failed", "remote", c.RemoteAddr().String(), "err", err)
		c.err = err
		return
	}
	c.Conn.SetWriteDeadline(time.Time{})
	c.conn, c.tls = tc, true
}

func (c *unifiedConn) Read(p []byte) (int, error) {
	c.once.Do(c.start)
	if c.err != nil {
		return 0, c.err
	}
	return c.conn.Read(p)
}

func (c *unifiedConn) Write(p []byte) (int, error) {
	c.once.Do(c.start)
	if c.err != nil {
		return 0, c.err
	}
	return c.conn.Write(p)
}

// Close closes the TLS connection when there is one, so that the client
// gets its close_notify; otherwise the connection itself, which also ends
// a first read or handshake in progress.
func (c *unifiedConn) Close() error {
	if c.started.Load() && c.tls {
		return c.conn.Close()
	}
	return c.Conn.Close()
}

// isTLS reports whether the connection turned out to be HTTPS; called
// once a request has been read from it.
func (c *unifiedConn) isTLS() bool {
	c.once.Do(c.start)
	return c.tls
}
