package server

import (
	"crypto/tls"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/tree"
	"github.com/collie-io/collie/server/x500"
)

// authSchemes are the ACL schemes beyond digest and ip that cfg gives
// providers for (authProvider.N).
func authSchemes(cfg config.Config) []string {
	var schemes []string
	if cfg.SASLAuthProvider {
		schemes = append(schemes, tree.SchemeSASL)
	}
	if cfg.X509Scheme() {
		schemes = append(schemes, tree.SchemeX509)
	}
	return schemes
}

// fsmOptions are the state machine's options from cfg.
func fsmOptions(cfg config.Config) fsm.Options {
	return fsm.Options{ExtendedTypes: cfg.ExtendedTypesEnabled, SASLScheme: cfg.SASLAuthProvider, X509Scheme: cfg.X509Scheme()}
}

// certIdentities returns the identities a TLS client's certificate gives
// its connection, as ZooKeeper's X509AuthenticationProvider adds them once
// the handshake is done: x509:<subject>, the subject as Java's
// X500Principal.getName() writes it, after super:<subject> when that is
// X509AuthenticationProvider.superUser. A client that presented no
// certificate (clientAuth want or none) has none. ok is false when the
// connection must close instead, as ZooKeeper closes it: its provider,
// without a trust store, authenticates no certificate.
func (s *Server) certIdentities(tc *tls.Conn) (ids []proto.ID, ok bool) {
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 || !s.cfg.X509Scheme() {
		return nil, true
	}
	remote := tc.RemoteAddr().String()
	if s.cfg.SSL.TrustStore.Location == "" {
		s.log.Warn("closing a TLS connection: x509 authentication needs ssl.trustStore.location, as in ZooKeeper", "remote", remote)
		return nil, false
	}
	subject, err := x500.Name(certs[0].RawSubject)
	if err != nil {
		s.log.Info("closing a TLS connection: its certificate's subject", "remote", remote, "err", err)
		return nil, false
	}
	if s.cfg.X509SuperUser != "" && subject == s.cfg.X509SuperUser {
		ids = append(ids, proto.ID{Scheme: tree.SchemeSuper, ID: subject})
	}
	ids = append(ids, proto.ID{Scheme: tree.SchemeX509, ID: subject})
	s.log.Debug("TLS client authenticated", "remote", remote, "x509", subject, "super", len(ids) == 2)
	return ids, true
}
