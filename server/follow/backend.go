package follow

import (
	"context"
	"fmt"
	"time"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/conn"
	"github.com/collie-io/collie/server/localread"
	"github.com/collie-io/collie/server/session"
	"github.com/collie-io/collie/server/tree"
)

var _ conn.Backend = (*Server)(nil)

// errNotServing refuses a session while the copy is not in sync.
var errNotServing = fmt.Errorf("follow: not in sync with a ZooKeeper leader: %w", conn.ErrNotServing)

// errReadOnly refuses a client that does not accept a read-only session:
// like ZooKeeper's read-only server, this one closes its connection, and
// the client tries another server.
var errReadOnly = fmt.Errorf("follow: this server serves read-only sessions only, and the client does not accept one: %w", conn.ErrNotServing)

// LastZxid is the zxid of the last txn the copy has.
func (s *Server) LastZxid() int64 { return s.lastZxid() }

// OpenSession grants a read-only session of this server alone, as
// ZooKeeper's read-only server does: it lives with its connection and
// cannot be resumed.
func (s *Server) OpenSession(_ context.Context, c *conn.Conn, requested time.Duration, readOnly bool) (conn.Session, error) {
	if !readOnly {
		return conn.Session{}, errReadOnly
	}
	id := s.ids.Next()
	s.smu.Lock()
	defer s.smu.Unlock()
	// Checked under smu, which setServing holds when it closes every
	// connection: none is registered after that.
	if !s.serving {
		return conn.Session{}, errNotServing
	}
	s.conns[c] = struct{}{}
	s.log.Debug("read-only session opened", "session", id)
	return conn.Session{
		ID:       int64(id),
		Passwd:   session.Password(s.secret, id),
		Timeout:  session.Negotiate(requested, s.cfg.MinSessionTimeout, s.cfg.MaxSessionTimeout),
		ReadOnly: true,
	}, nil
}

// ResumeSession answers as ZooKeeper's read-only server: a session of the
// ensemble is its leader's to revalidate, so the connection closes and
// the client tries another server; any other session, a read-only one of
// this server included (they end with their connection), has expired.
// While the copy is not in sync the connection closes whatever the
// session: this server cannot tell.
func (s *Server) ResumeSession(_ context.Context, c *conn.Conn, id int64, _ []byte, _ time.Duration) (time.Duration, bool) {
	s.smu.Lock()
	serving := s.serving
	s.smu.Unlock()
	s.mu.RLock()
	_, global := s.fsm.Session(id)
	s.mu.RUnlock()
	if !serving || global {
		c.Close()
	}
	return 0, false
}

// Write refuses: every session here is read-only, and the connection
// answers their writes itself; this is for one that reaches here anyway.
func (s *Server) Write(_ *conn.Conn, _ proto.OpCode, _ []byte, _ []proto.ID, done func(conn.Reply, conn.Reader)) {
	s.View(func(rd conn.Reader) {
		done(conn.Reply{Zxid: s.fsm.LastZxid(), Err: proto.ErrNotReadOnly}, rd)
	})
}

// Sync fails: there is no leader to ask on behalf of a read-only session.
func (s *Server) Sync(_ *conn.Conn, done func(conn.Reader, error)) {
	done(nil, errNotServing)
}

// View calls f with the copy held still: no txn is applied while f runs,
// so a reply f queues comes before the event of any later change.
func (s *Server) View(f func(conn.Reader)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f((*copyState)(s))
}

// copyState is the Server as a conn.Reader: handed out only while mu is
// held, by View.
type copyState Server

func (c *copyState) Read(cn *conn.Conn, op proto.OpCode, req proto.Record, auth []proto.ID) conn.Reply {
	s := (*Server)(c)
	r := s.local().Answer(cn, op, req, auth)
	r.Zxid = s.fsm.LastZxid()
	return r
}

// Authenticate takes digest (and the super digest of the configuration)
// and ip, as Collie's ensemble servers do.
func (s *Server) Authenticate(c *conn.Conn, scheme string, auth []byte) ([]proto.ID, bool) {
	return tree.AuthIdentities(scheme, auth, c.RemoteIP(), s.cfg.SuperDigest)
}

// SASL is not served here: nil answers every sasl packet as a ZooKeeper
// server without SASL does.
func (s *Server) SASL(*conn.Conn) conn.SASLServer { return nil }

// Touch does nothing: a read-only session lives with its connection.
func (s *Server) Touch(int64) {}

// Detach forgets a closed connection and its watches.
func (s *Server) Detach(c *conn.Conn) {
	// Not local: mu is not held here, and Forget needs no state.
	localread.State{WatchMu: &s.wmu, Watches: s.watches}.Forget(c)
	s.smu.Lock()
	delete(s.conns, c)
	s.smu.Unlock()
}
