package server

import (
	"context"
	"crypto/rand"
	"github.com/collie-io/collie/server/metrics"
	"log/slog"
	"slices"
	"time"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/conn"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/krbname"
	"github.com/collie-io/collie/server/localread"
	"github.com/collie-io/collie/server/sasl"
	"github.com/collie-io/collie/server/session"
	"github.com/collie-io/collie/server/tree"
)

var _ conn.Backend = (*Server)(nil)

// LastZxid returns the zxid of the last applied transaction.
func (s *Server) LastZxid() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.fsm.LastZxid()
}

func (s *Server) negotiate(requested time.Duration) time.Duration {
	return session.Negotiate(requested, s.cfg.MinSessionTimeout, s.cfg.MaxSessionTimeout)
}

// OpenSession creates a session through the log, or a read-only session
// of this server alone while it is in read-only mode.
func (s *Server) OpenSession(ctx context.Context, c *conn.Conn, requested time.Duration, readOnly bool) (conn.Session, error) {
	s.metrics.Counter(metrics.ConnectionRequestCount).Inc()
	if !s.ready.Load() {
		return conn.Session{}, errNotServing
	}
	if s.refusing.Load() {
		if readOnly && s.cfg.ReadOnlyMode {
			return s.openReadOnlySession(c, requested)
		}
		return conn.Session{}, errNotServing
	}
	timeout := s.negotiate(requested)
	id := int64(s.ids.Next())
	w, done := awaitResult()
	s.smu.Lock()
	s.bySession[id] = c
	s.conns[c] = struct{}{}
	s.smu.Unlock()
	if !s.propose(&fsm.Entry{Type: fsm.EntryCreateSession, Session: id, Timeout: int32(timeout / time.Millisecond)}, w) {
		return conn.Session{}, errNoSessionDiskFull
	}
	select {
	case r := <-done:
		if r.Err != proto.OK {
			return conn.Session{}, r.Err
		}
	case <-ctx.Done():
		return conn.Session{}, ctx.Err()
	}
	s.log.Debug("session opened", "session", session.ID(id), "timeout", timeout)
	return conn.Session{ID: id, Passwd: session.Password(s.sessionSecret(), session.ID(id)), Timeout: timeout}, nil
}

// openReadOnlySession grants a session of this server alone, as
// ZooKeeper's read-only server does: nothing about it is replicated, it
// cannot be resumed (a client that reconnects asks for a new one), and it
// ends with its connection, or when a leader is back (see
// checkLeaderless), whichever comes first.
func (s *Server) openReadOnlySession(c *conn.Conn, requested time.Duration) (conn.Session, error) {
	id := int64(s.ids.Next())
	s.smu.Lock()
	defer s.smu.Unlock()
	// Checked again under smu, which checkLeaderless holds when it leaves
	// read-only mode: no read-only connection is registered after it has
	// closed them all.
	if !s.readOnlyMode() {
		return conn.Session{}, errNotServing
	}
	s.bySession[id] = c
	s.conns[c] = struct{}{}
	s.readOnly[c] = struct{}{}
	s.log.Debug("read-only session opened", "session", session.ID(id))
	return conn.Session{
		ID:       id,
		Passwd:   session.Password(s.sessionSecret(), session.ID(id)),
		Timeout:  s.negotiate(requested),
		ReadOnly: true,
	}, nil
}

// readOnlyMode reports whether this server serves read-only sessions now:
// it is configured to, and has known no leader for too long to serve the
// others.
func (s *Server) readOnlyMode() bool {
	return s.cfg.ReadOnlyMode && s.refusing.Load()
}

// serving reports whether this server serves clients: it has known a
// leader (see Run), and it is not a member of an ensemble that has known
// none for too long since (see checkLeaderless), or it serves read-only
// sessions then.
func (s *Server) serving() bool {
	return s.ready.Load() && (!s.refusing.Load() || s.cfg.ReadOnlyMode)
}

// checkPassword reports whether passwd is the password of session id,
// which the state machine has as sess when open: ZooKeeper's for a session
// a ZooKeeper ensemble opened, Collie's, made from secret, otherwise.
func checkPassword(secret []byte, sess fsm.Session, open bool, id int64, passwd []byte) bool {
	if open && sess.ZooKeeper {
		return session.CheckZooKeeperPassword(session.ID(id), passwd)
	}
	return session.CheckPassword(secret, session.ID(id), passwd)
}

// ResumeSession reattaches a session after a reconnect. Moving the
// session here, or learning of it when it was opened through another
// server a moment ago, needs a leader: a resume that arrives while there
// is none (the client's server was the leader, and died) waits for the
// election, within the session's timeout, as ZooKeeper's clients ride
// through a leader change.
func (s *Server) ResumeSession(ctx context.Context, c *conn.Conn, id int64, passwd []byte, requested time.Duration) (time.Duration, bool) {
	s.metrics.Counter(metrics.ConnectionRequestCount).Inc()
	if !s.ready.Load() || s.refusing.Load() {
		// Not an expiry: the client must try another server.
		c.Close()
		return 0, false
	}
	s.mu.RLock()
	sess, open := s.fsm.Session(id)
	s.mu.RUnlock()
	// A wrong password is refused before any catching up: a client
	// guessing costs no round trip to the leader.
	if secret := s.sessionSecret(); secret != nil && !checkPassword(secret, sess, open, id, passwd) {
		return 0, false
	}
	wait := s.negotiate(requested)
	if open {
		wait = time.Duration(sess.Timeout) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if !open && !s.cfg.Standalone {
		// The session may have been opened through another server a
		// moment ago, and this one not have applied it yet: it catches up
		// with what the leader has committed before it says the session
		// is gone, as a ZooKeeper follower asks its leader.
		err := s.withLeader(ctx, func() error { return s.sync(ctx) })
		if err != nil {
			// No leader to ask: the client must try again, not be told
			// its session expired.
			c.Close()
			return 0, false
		}
		s.mu.RLock()
		sess, open = s.fsm.Session(id)
		s.mu.RUnlock()
	}
	// Checked again once the session is known, its creation coming after
	// the secret the password derives from, for a server that had none.
	if !open || !checkPassword(s.sessionSecret(), sess, open, id, passwd) {
		return 0, false
	}
	if sess.Owner != s.id {
		// The session comes from another server of the ensemble: its
		// writes go through this one from now on.
		var code proto.Code
		err := s.withLeader(ctx, func() error {
			w, done := awaitResult()
			s.propose(&fsm.Entry{Type: fsm.EntryMoveSession, Session: id}, w)
			select {
			case r := <-done:
				code = r.Err
				if code == proto.ErrConnectionLoss {
					return code
				}
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		switch {
		case err != nil:
			// No leader took the move in time: the client must try
			// again, not be told its session is gone.
			c.Close()
			return 0, false
		case code == proto.ErrSessionExpired:
			return 0, false
		case code != proto.OK:
			c.Close()
			return 0, false
		}
	}
	s.smu.Lock()
	if !s.tracker.Touch(session.ID(id), time.Now()) {
		s.smu.Unlock()
		return 0, false
	}
	s.noteTouch(session.ID(id))
	old := s.bySession[id]
	s.bySession[id] = c
	s.conns[c] = struct{}{}
	s.smu.Unlock()
	if old != nil && old != c {
		old.Close()
	}
	return s.negotiate(requested), true
}

// testHookAwaitLeader, when set, is called each time withLeader waits
// for a leader. For tests.
var testHookAwaitLeader func()

// withLeader runs op, which needs a leader, until it succeeds: each time
// it fails (no leader takes proposals or answers a ReadIndex now, or the
// one it went to is gone), it waits for the leader to change, or a tick at
// most (a lost message fails op with the leader unchanged), then tries
// again. It gives up when ctx ends, this server stops serving clients for
// want of a leader, or it shuts down.
func (s *Server) withLeader(ctx context.Context, op func() error) error {
	for {
		changed := s.leaderChanges()
		err := op()
		if err == nil || ctx.Err() != nil {
			return err
		}
		if hook := testHookAwaitLeader; hook != nil {
			hook()
		}
		t := time.NewTimer(s.cfg.TickTime)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
		case <-s.closing:
		}
		t.Stop()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case s.refusing.Load():
			return errNotServing
		}
		select {
		case <-s.closing:
			return ErrServerClosed
		default:
		}
	}
}

// Touch records activity of a session.
func (s *Server) Touch(id int64) {
	if id == 0 || !s.ready.Load() || s.refusing.Load() {
		// Without a leader there is no one to report activity to; a new
		// leader gives every session a fresh timeout anyway.
		return
	}
	s.smu.Lock()
	s.tracker.Touch(session.ID(id), time.Now())
	s.noteTouch(session.ID(id))
	s.smu.Unlock()
}

// Detach forgets a closed connection and its watches.
func (s *Server) Detach(c *conn.Conn) {
	// Not localState: mu is not held here, and Forget needs no state.
	localread.State{WatchMu: &s.wmu, Watches: s.watches}.Forget(c)
	s.smu.Lock()
	delete(s.conns, c)
	delete(s.readOnly, c)
	if s.bySession[c.Session()] == c {
		delete(s.bySession, c.Session())
	}
	s.smu.Unlock()
}

// Write proposes a client's write.
func (s *Server) Write(c *conn.Conn, op proto.OpCode, body []byte, auth []proto.ID, done func(conn.Reply, conn.Reader)) {
	e := &fsm.Entry{Type: fsm.EntryRequest, Session: c.Session(), Op: op, Auth: auth, AuthSchemes: s.authSchemes,
		EnforceQuota: s.cfg.EnforceQuota, Body: body}
	if op == proto.OpCloseSession {
		e = &fsm.Entry{Type: fsm.EntryCloseSession, Session: c.Session()}
	}
	s.propose(e, func(r fsm.Result, rd conn.Reader) {
		done(conn.Reply{Zxid: r.Zxid, Err: r.Err, Resp: r.Resp, Close: op == proto.OpCloseSession}, rd)
	})
}

// Authenticate handles an auth packet: digest (and the super digest from
// the configuration), ip, and x509 on a connection with a certificate.
// The identities come in the order ZooKeeper adds them to its connection,
// super before digest, which decides where they fall in the order it
// lists them (tree.ConnOrder).
func (s *Server) Authenticate(c *conn.Conn, scheme string, auth []byte) ([]proto.ID, bool) {
	if ids, ok := tree.AuthIdentities(scheme, auth, c.RemoteIP(), s.cfg.SuperDigest); ok {
		return ids, true
	}
	// ZooKeeper's X509AuthenticationProvider ignores the packet's data
	// and authenticates the connection's certificate again: the
	// identities it already has, or a failure without one.
	if ids := c.CertIDs(); scheme == tree.SchemeX509 && len(ids) > 0 && s.cfg.X509Scheme() {
		return ids, true
	}
	return nil, false
}

// SASL starts a connection's SASL exchange: GSSAPI when the JAAS
// section logs in with Kerberos, else DIGEST-MD5 with its users; nil
// without a section.
func (s *Server) SASL(c *conn.Conn) conn.SASLServer {
	x := &saslExchange{superUsers: s.cfg.SASLSuperUsers, names: s.cfg.Krb5.Mapping(), log: s.log}
	switch {
	case s.krb != nil:
		x.m = gssapiMechanism{s.krb.exchange()}
	case s.cfg.SASLUsers != nil:
		x.m = digestMechanism{sasl.NewDigestMD5(s.saslPassword, rand.Reader)}
	default:
		return nil
	}
	return x
}

// saslPassword looks a SASL user's password up as ZooKeeper's
// SaslServerCallbackHandler does: the super user's comes from
// SASLAuthenticationProvider.superPassword when that is set.
func (s *Server) saslPassword(user string) (string, bool) {
	p, ok := s.cfg.SASLUsers[user]
	if ok && user == "super" && s.cfg.SASLSuperPassword != "" {
		p = s.cfg.SASLSuperPassword
	}
	return p, ok
}

// saslMechanism is the server side of one mechanism's exchange.
type saslMechanism interface {
	Next(token []byte) ([]byte, error)
	Complete() bool
	// AuthenticationID is who the client proved to be: a DIGEST-MD5
	// user, a Kerberos principal.
	AuthenticationID() string
}

type digestMechanism struct{ *sasl.DigestMD5 }

func (d digestMechanism) AuthenticationID() string { return d.Username() }

type gssapiMechanism struct{ *sasl.GSSAPI }

func (g gssapiMechanism) AuthenticationID() string { return g.Principal() }

// saslExchange turns a completed exchange into identities as ZooKeeper's
// SaslServerCallbackHandler and processSasl do: the authentication id
// mapped by the Kerberos name rules (auth_to_local,
// kerberos.remove*FromPrincipal) becomes sasl:<id>, then super for an id
// superUser names.
type saslExchange struct {
	m          saslMechanism
	superUsers []string
	names      krbname.Mapping
	log        *slog.Logger
}

func (x *saslExchange) Next(token []byte) ([]byte, []proto.ID, error) {
	out, err := x.m.Next(token)
	if err != nil || !x.m.Complete() {
		return out, nil, err
	}
	authn := x.m.AuthenticationID()
	user, err := x.names.Identity(authn)
	if err != nil {
		// ZooKeeper then keeps the authorization id the client asked
		// for, which may name anyone; Collie keeps the name the client
		// proved.
		x.log.Warn("SASL: no Kerberos name rule maps the client; its identity is its full name", "name", authn, "err", err)
		user = authn
	}
	ids := []proto.ID{{Scheme: tree.SchemeSASL, ID: user}}
	if slices.Contains(x.superUsers, user) {
		ids = append(ids, proto.ID{Scheme: tree.SchemeSuper, ID: ""})
	}
	return out, ids, nil
}

// View calls f with the state held still: no entry is applied while f
// runs, so a reply f queues comes before the event of any later change.
func (s *Server) View(f func(conn.Reader)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f((*appliedState)(s))
}

// Sync waits for a ReadIndex without blocking the caller: done runs in
// the apply goroutine once everything committed now is applied.
func (s *Server) Sync(c *conn.Conn, done func(conn.Reader, error)) {
	s.node.ReadIndex(func(_ uint64, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		s.View(func(rd conn.Reader) { done(rd, nil) })
	})
}

// appliedState is the Server as a conn.Reader: handed out only while mu
// is held, by View or by Apply.
type appliedState Server

// Read answers a request that does not go through the log.
func (a *appliedState) Read(c *conn.Conn, op proto.OpCode, req proto.Record, auth []proto.ID) conn.Reply {
	s := (*Server)(a)
	var r conn.Reply
	if op == proto.OpSync {
		r.Resp = &proto.SyncResponse{Path: req.(*proto.SyncRequest).Path}
	} else {
		r = s.local(c, op, req, auth)
	}
	r.Zxid = s.fsm.LastZxid()
	return r
}

// local answers a local request. Called with mu held for reading.
func (s *Server) local(c *conn.Conn, op proto.OpCode, req proto.Record, auth []proto.ID) conn.Reply {
	return s.localState().Answer(c, op, req, auth)
}

// localState is the state as localread sees it. Called with mu held.
func (s *Server) localState() localread.State {
	return localread.State{FSM: s.fsm, WatchMu: &s.wmu, Watches: s.watches,
		ObserveRead: s.observeRead, ObserveWatches: s.observeWatches}
}

// sync waits until this server has applied everything committed when the
// sync arrived.
func (s *Server) sync(ctx context.Context) error {
	done := make(chan error, 1)
	s.node.ReadIndex(func(_ uint64, err error) { done <- err })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
