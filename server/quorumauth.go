package server

import (
	"crypto/rand"
	"fmt"

	"github.com/collie-io/collie/client/digestmd5"
	"github.com/collie-io/collie/server/metrics"
	"github.com/collie-io/collie/server/peer"
	"github.com/collie-io/collie/server/sasl"
)

// quorumAuth is how this server authenticates to the other servers of its
// ensemble, and them to it, from quorum.auth.*: nil without
// quorum.auth.enableSasl. ZooKeeper's learner is the side that dials, its
// server the side that accepts (see config.QuorumAuth).
func (s *Server) quorumAuth() *peer.Auth {
	q := s.cfg.QuorumAuth
	if !q.EnableSASL {
		return nil
	}
	a := &peer.Auth{Accept: s.acceptPeerAuth}
	if q.LearnerRequireSASL {
		a.Dial = func(uint64) peer.ClientExchange {
			return digestmd5.New(q.Username, q.Password, digestmd5.WithService(sasl.QuorumService.Protocol, sasl.QuorumService.ServerName))
		}
	}
	return a
}

// acceptPeerAuth judges a server that connects to this one: one that asks
// to authenticate does so against the users of the QuorumServer section;
// one that does not is taken unless quorum.auth.serverRequireSasl says
// otherwise.
func (s *Server) acceptPeerAuth(from uint64, asks bool) (peer.ServerExchange, *peer.Refusal) {
	q := s.cfg.QuorumAuth
	switch {
	case asks:
		users := func(user string) (string, bool) { p, ok := q.Users[user]; return p, ok }
		return &peerExchange{DigestMD5: sasl.NewDigestMD5For(sasl.QuorumService, users, rand.Reader), from: from, to: s.id, s: s}, nil
	case q.ServerRequireSASL:
		s.metrics.Counter(metrics.EnsembleAuthFail).Inc()
		return nil, &peer.Refusal{Reason: fmt.Sprintf(
			"server %d requires the servers that connect to it to authenticate (quorum.auth.serverRequireSasl=true), and server %d did not: it needs quorum.auth.enableSasl=true and quorum.auth.learnerRequireSasl=true, and a QuorumLearner section in its JAAS file",
			s.id, from)}
	}
	// As ZooKeeper's: a server that does not authenticate, taken
	// because authentication is not required.
	s.metrics.Counter(metrics.EnsembleAuthSkip).Inc()
	return nil, nil
}

// peerExchange tells a server that failed to authenticate what to check,
// without saying whether the user or the password was wrong; this
// server's log says which.
type peerExchange struct {
	*sasl.DigestMD5
	from, to uint64
	s        *Server
}

func (x *peerExchange) Next(token []byte) ([]byte, error) {
	out, err := x.DigestMD5.Next(token)
	switch {
	case err != nil:
		x.s.metrics.Counter(metrics.EnsembleAuthFail).Inc()
	case x.Complete():
		x.s.metrics.Counter(metrics.EnsembleAuthSuccess).Inc()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", &peer.Refusal{Reason: fmt.Sprintf(
			"server %d refused the SASL authentication of server %d: the username and password of server %d's QuorumLearner section (quorum.auth.learner.saslLoginContext) must be a user_ of server %d's QuorumServer section",
			x.to, x.from, x.from, x.to)}, err)
	}
	return out, nil
}
