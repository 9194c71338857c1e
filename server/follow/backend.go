package follow

import (
	"context"
	"fmt"
	"time"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/conn"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/localread"
	"github.com/collie-io/collie/server/session"
	"github.com/collie-io/collie/server/tree"
	"github.com/collie-io/collie/server/zkquorum"
)

var _ conn.Backend = (*Server)(nil)

// errNotServing refuses a session while the copy is not in sync.
var errNotServing = fmt.Errorf("follow: not in sync with a ZooKeeper leader: %w", conn.ErrNotServing)

// LastZxid is the zxid of the last txn the copy has.
func (s *Server) LastZxid() int64 { return s.lastZxid() }

// A globalSession is a session of the ensemble with its connection here.
// Every session here is one: the leader's sessions are global, as
// ZooKeeper's are without localSessionsEnabled.
type globalSession struct {
	c       *conn.Conn
	timeout time.Duration
}

// OpenSession opens a session of the ensemble as a ZooKeeper observer
// does: it makes the id (this server's id in its top byte), negotiates
// the timeout with this server's bounds, forwards createSession to the
// leader and answers once its txn is applied. A client that accepts a
// read-only session (canBeReadOnly) gets the same: ZooKeeper gives
// read-only sessions only while it has no leader, and this server serves
// no session then.
func (s *Server) OpenSession(ctx context.Context, c *conn.Conn, requested time.Duration, _ bool) (conn.Session, error) {
	if !s.isServing() {
		return conn.Session{}, errNotServing
	}
	id := s.ids.Next()
	timeout := session.Negotiate(requested, s.cfg.MinSessionTimeout, s.cfg.MaxSessionTimeout)
	body := proto.NewEncoder(make([]byte, 0, 4))
	body.Int(int32(timeout.Milliseconds()))
	created := make(chan fsm.Result, 1)
	req := zkquorum.Request{SessionID: int64(id), Type: proto.OpCreateSession, Body: body.Bytes()}
	s.forward(req, func(r fsm.Result, _ conn.Reader) { created <- r })
	var r fsm.Result
	select {
	case r = <-created:
	case <-ctx.Done():
		s.cancelWrite(txnKey{req.SessionID, req.Cxid})
		return conn.Session{}, fmt.Errorf("follow: createSession: %w", ctx.Err())
	}
	if r.Err != proto.OK {
		return conn.Session{}, fmt.Errorf("follow: the leader did not create the session: %v: %w", r.Err, conn.ErrNotServing)
	}
	if !s.register(c, int64(id), timeout) {
		return conn.Session{}, errNotServing
	}
	s.log.Debug("session opened", "session", id, "timeout", timeout)
	return conn.Session{ID: int64(id), Passwd: session.ZooKeeperPassword(id), Timeout: timeout}, nil
}

// ResumeSession reconnects a session of the ensemble as a ZooKeeper
// observer does: with ZooKeeper's password for the id, the leader
// revalidates it (Learner.validateSession), and it resumes with the
// timeout this server negotiates, or has expired; so has any session
// presented with another password. A connection the session had here
// before closes first, as ZooKeeper closes it (CLIENT_RECONNECT). While the copy is not in sync, or when the
// leader is lost before it answers, the connection closes and the client
// tries another server.
func (s *Server) ResumeSession(ctx context.Context, c *conn.Conn, id int64, passwd []byte, requested time.Duration) (time.Duration, bool) {
	if !s.isServing() {
		c.Close()
		return 0, false
	}
	s.smu.Lock()
	prev, had := s.sessions[id]
	delete(s.sessions, id)
	s.smu.Unlock()
	if had {
		prev.c.Close()
	}
	if !session.CheckZooKeeperPassword(session.ID(id), passwd) {
		return 0, false
	}
	timeout := session.Negotiate(requested, s.cfg.MinSessionTimeout, s.cfg.MaxSessionTimeout)
	r := s.revalidate(ctx, id, timeout)
	switch {
	case r.lost:
		c.Close()
		return 0, false
	case !r.valid:
		return 0, false
	case !s.register(c, id, timeout):
		c.Close()
		return 0, false
	}
	return timeout, true
}

// register keeps c and its session, so that losing the leader closes it
// and the leader's closing the session ends it; false when this server no
// longer serves. Checked under smu, which setServing holds when it closes
// every connection: none is registered after that.
func (s *Server) register(c *conn.Conn, id int64, timeout time.Duration) bool {
	s.smu.Lock()
	defer s.smu.Unlock()
	if !s.serving {
		return false
	}
	s.conns[c] = struct{}{}
	s.sessions[id] = globalSession{c: c, timeout: timeout}
	return true
}

func (s *Server) isServing() bool {
	s.smu.Lock()
	defer s.smu.Unlock()
	return s.serving
}

// sessionClosed forgets a session the leader closed. A close its own
// client asked for here was answered, and the connection closes after
// that reply; one the leader expired, or a client closed elsewhere, ends
// its connection here as ZooKeeper's FinalRequestProcessor ends it.
// Called by the follow loop with mu held.
func (s *Server) sessionClosed(id int64, answered bool) {
	s.smu.Lock()
	g, ok := s.sessions[id]
	delete(s.sessions, id)
	s.smu.Unlock()
	if ok && !answered {
		s.log.Debug("session closed by the leader", "session", id)
		g.c.Close()
	}
}

// Write forwards a write, closeSession included, to the leader, and
// answers with the result of its txn once that is applied.
func (s *Server) Write(c *conn.Conn, op proto.OpCode, body []byte, auth []proto.ID, done func(conn.Reply, conn.Reader)) {
	// In the order a ZooKeeper observer sends its connection's
	// identities, the order the leader expands an "auth" ACL to.
	req := zkquorum.Request{SessionID: c.Session(), Cxid: s.nextCxid(), Type: op, Body: body, Auth: tree.ConnOrder(auth)}
	s.forward(req, func(r fsm.Result, rd conn.Reader) {
		done(conn.Reply{Zxid: r.Zxid, Err: r.Err, Resp: r.Resp, Close: op == proto.OpCloseSession}, rd)
	})
}

// Sync forwards a sync to the leader and answers once the leader's answer
// has arrived, everything committed before it applied.
func (s *Server) Sync(c *conn.Conn, done func(conn.Reader, error)) {
	s.forwardSync(c.Session(), done)
}

// View calls f with the copy held still: no txn is applied while f runs,
// so a reply f queues comes before the event of any later change.
func (s *Server) View(f func(conn.Reader)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f((*copyState)(s))
}

// copyState is the Server as a conn.Reader: handed out only while mu is
// held, by View, and by the follow loop to the waiter of a forwarded
// request right after its txn.
type copyState Server

func (c *copyState) Read(cn *conn.Conn, op proto.OpCode, req proto.Record, auth []proto.ID) conn.Reply {
	s := (*Server)(c)
	var r conn.Reply
	if op == proto.OpSync {
		// Reached once the leader's answer to the forwarded sync is in.
		r.Resp = &proto.SyncResponse{Path: req.(*proto.SyncRequest).Path}
	} else {
		r = s.local().Answer(cn, op, req, auth)
	}
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

// Touch reports activity of a session with the answer to the leader's
// next ping, which keeps it alive there.
func (s *Server) Touch(id int64) {
	s.smu.Lock()
	g, ok := s.sessions[id]
	s.smu.Unlock()
	if f := s.leader.Load(); ok && f != nil {
		f.Touch(id, g.timeout)
	}
}

// Detach forgets a closed connection and its watches.
func (s *Server) Detach(c *conn.Conn) {
	// Not local: mu is not held here, and Forget needs no state.
	localread.State{WatchMu: &s.wmu, Watches: s.watches}.Forget(c)
	s.smu.Lock()
	delete(s.conns, c)
	if g, ok := s.sessions[c.Session()]; ok && g.c == c {
		delete(s.sessions, c.Session())
	}
	s.smu.Unlock()
}
