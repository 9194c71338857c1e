package peer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/collie-io/collie/server/tlsconfig"
	"github.com/collie-io/collie/server/tlssniff"
)

// TLS says how a transport secures its connections, as ZooKeeper's
// sslQuorum and portUnification do: a server connects out either with TLS
// or in plaintext, and its port takes TLS peers, plaintext peers or both,
// so that an ensemble can move from one to the other a server at a time.
type TLS struct {
	// Config returns this server's TLS configuration as the receiving
	// side, called for each connection so that reloaded key and trust
	// stores take effect (a tlsconfig.Reloader's Current): its
	// certificates, ClientAuth (whether a peer that connects must show a
	// certificate) and ClientCAs (what peers' certificates must chain to;
	// the system's roots when nil). The dialling side uses the same
	// certificates, CAs, versions and suites (tlsconfig.DialConfig).
	// Required.
	Config func() *tls.Config
	// Dial connects to peers with TLS (sslQuorum); otherwise in
	// plaintext.
	Dial bool
	// AcceptPlaintext has the port take plaintext peers beside TLS ones
	// (portUnification): a connection whose first byte starts a TLS
	// record is TLS, any other plaintext. Without it a plaintext peer is
	// refused, with statusTLSRequired.
	AcceptPlaintext bool
	// VerifyName checks, both ways, that a peer's certificate names it
	// (tlsconfig.VerifyName): the address of the connection, or the host
	// of the peer's address in Config.Peers, or with ReverseLookup a name
	// a reverse lookup of the connection's address gives.
	VerifyName    bool
	ReverseLookup bool
}

// Why a receiver closes an incoming connection before its hello.
var (
	// errPlaintextPort: a TLS handshake on a port that takes plaintext
	// peers only.
	errPlaintextPort = errors.New("the peer began a TLS handshake, but this server takes plaintext peers only (it has neither sslQuorum nor portUnification)")
	// errTLSRequired: a plaintext hello on a port that takes TLS peers
	// only; the peer is told so (statusTLSRequired).
	errTLSRequired = errors.New("a plaintext peer, but this server takes TLS peers only")
)

// secureIncoming decides whether an incoming connection is TLS from its
// first byte and, if so, makes the TLS handshake. It returns the
// connection to read the hello from, and the TLS connection (nil for a
// plaintext one). A plaintext connection that TLS requires is returned
// too: the hello is read and answered with statusTLSRequired, so that the
// dialler can say why. Called with the handshake deadline set.
func (t *Transport) secureIncoming(conn net.Conn) (net.Conn, *tls.Conn, error) {
	conn, handshake, err := tlssniff.Sniff(conn)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: handshake: %w", errProtocol, err)
	}
	s := t.cfg.TLS
	if !handshake {
		return conn, nil, nil
	}
	if s == nil {
		return nil, nil, errPlaintextPort
	}
	tc := tls.Server(conn, s.Config())
	if err := tc.HandshakeContext(t.ctx); err != nil {
		return nil, nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, tc, nil
}

// plaintextRefused reports whether a plaintext peer must be refused.
func (t *Transport) plaintextRefused(tc *tls.Conn) bool {
	return tc == nil && t.cfg.TLS != nil && !t.cfg.TLS.AcceptPlaintext
}

// verifyIncoming checks the name in the certificate of a peer that
// connected with TLS and said it is p. A peer without a certificate
// (ClientAuth want or none) has no name to check.
func (t *Transport) verifyIncoming(tc *tls.Conn, p *peer) error {
	if tc == nil || !t.cfg.TLS.VerifyName {
		return nil
	}
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil
	}
	return t.verifyName(certs[0], tc.RemoteAddr(), p.address())
}

// verifyName checks cert against the address of a connection and the
// configured address of the peer.
func (t *Transport) verifyName(cert *x509.Certificate, remote net.Addr, configured string) error {
	var ip net.IP
	if a, ok := remote.(*net.TCPAddr); ok {
		ip = a.IP
	}
	host, _, _ := net.SplitHostPort(configured)
	ctx, cancel := context.WithTimeout(t.ctx, t.cfg.HandshakeTimeout)
	defer cancel()
	return tlsconfig.VerifyName(ctx, cert, ip, host, t.cfg.TLS.ReverseLookup)
}

// secureOutgoing makes the TLS handshake of a connection to the peer at
// addr, when the transport dials with TLS, and checks the peer's name.
// Called with the handshake deadline set.
func (p *peer) secureOutgoing(conn net.Conn, addr string) (net.Conn, error) {
	s := p.t.cfg.TLS
	if s == nil || !s.Dial {
		return conn, nil
	}
	tc := tls.Client(conn, tlsconfig.DialConfig(s.Config()))
	if err := tc.HandshakeContext(p.ctx); err != nil {
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	if s.VerifyName {
		if err := p.t.verifyName(tc.ConnectionState().PeerCertificates[0], conn.RemoteAddr(), addr); err != nil {
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
	}
	return tc, nil
}

// failureReason sums up why a handshake between servers failed, for the
// operator: what certificates and TLS settings usually get wrong. It
// returns "" for other failures.
func failureReason(err error) string {
	var (
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		name      *tlsconfig.NameError
		hostname  x509.HostnameError
		op        *net.OpError
		record    tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknownCA):
		return "unknown CA: the certificate is not signed by a CA of the trust store"
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return "expired: the certificate has expired or is not yet valid"
	case errors.As(err, &invalid):
		return "invalid certificate: " + invalid.Error()
	case err != nil && strings.Contains(err.Error(), "didn't provide a certificate"):
		// crypto/tls has no error type for it.
		return "no certificate: the peer showed none"
	case errors.As(err, &name), errors.As(err, &hostname):
		return "name mismatch: the certificate does not name the server's address"
	case errors.Is(err, errPlaintextPort):
		return "TLS peer on a plaintext port"
	case errors.Is(err, errTLSRequired), errors.Is(err, ErrTLSRequired):
		return "plaintext peer on a TLS-only port"
	case errors.Is(err, ErrBadName):
		return "name mismatch: the peer says this server's certificate does not name its address"
	case errors.As(err, &op) && op.Op == "remote error":
		return "the peer refused the TLS handshake (" + op.Err.Error() + "): it does not trust this server's certificate, or the versions or cipher suites differ"
	case errors.As(err, &record):
		return "not TLS: the peer does not speak TLS on this port"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "timed out"
	}
	return ""
}

// logKey is what the refusal log is limited by: the peer's host and the
// reason (or the error), without the ports, which change at every
// attempt.
func logKey(remote string, err error) string {
	host, _, splitErr := net.SplitHostPort(remote)
	if splitErr != nil {
		host = remote
	}
	if r := failureReason(err); r != "" {
		return host + " " + r
	}
	return host + " " + err.Error()
}

func isTLS(conn net.Conn) bool {
	_, ok := conn.(*tls.Conn)
	return ok
}
