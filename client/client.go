package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/proto"
)

// Config holds the settings of a Client. The zero value is usable.
type Config struct {
	// SessionTimeout is the session timeout to ask for; the server
	// negotiates it into its own bounds (by default 2 to 20 ticks).
	// Default 10s.
	SessionTimeout time.Duration
	// ReadOnly lets the client connect to a server that has lost its
	// quorum and serves reads only (ZooKeeper's canBeReadOnly). Such a
	// server keeps no session of the ensemble: the client gets a new
	// session there (StateReadOnly), looks for a server with a leader
	// meanwhile, and moves to it with another new session that keeps the
	// watches (StateReconnected). A session that the ensemble knows cannot
	// move to a read-only server; it waits for a server with a leader or
	// expires.
	ReadOnly bool
	// Auth is sent on every connection before any request, as if added
	// with AddAuth.
	Auth []Auth
	// Retry, when set, sends idempotent requests (reads, Sync, AddAuth,
	// AddWatch, WhoAmI) again when they fail with ErrConnectionLoss or
	// another error Retryable accepts, and paces CreateProtected. Writes
	// are never sent twice. Nil: no automatic retry.
	Retry RetryPolicy
	// RenewSession starts a new session as soon as the current one expires,
	// as Curator does; watches and ephemerals of the old one are gone all
	// the same. Without it the client stays expired until Renew.
	RenewSession bool
	// Logger receives the client's log: Info for sessions established,
	// resumed and closed and for connections lost, Warn for expiry, Debug
	// for failed connection attempts. Nil discards it.
	Logger *slog.Logger
	// Dial opens a connection to a server; default net.Dialer.DialContext.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// MaxPacket is the largest reply accepted; a larger one breaks the
	// connection. Default 4 MiB.
	MaxPacket int
	// TLS, when set, makes every connection a TLS one configured by it,
	// over what Dial opens, as ZooKeeper's Java client does with
	// zookeeper.client.secure=true: the servers' secure client port
	// (secureClientPort), or a client port with client.portUnification.
	// A client certificate goes in Certificates. When ServerName is
	// empty, each server's certificate is checked against the host of
	// its address in the connect string. Package tlsconfig reads
	// ZooKeeper's key and trust stores (JKS, PKCS12, PEM) into one.
	TLS *tls.Config
	// SASL, when set, authenticates every connection with the mechanism
	// it returns, a new one for each, right after the session is
	// established and before anything else is sent, as ZooKeeper's Java
	// client does with a JAAS Client section; requests wait meanwhile.
	// Package digestmd5 has ZooKeeper's DIGEST-MD5. When the server
	// refuses, or the mechanism fails, the client ends in
	// StateAuthFailed: Dial returns an error wrapping ErrAuthFailed, and
	// so do every request and watch after. Nil: no SASL.
	SASL func() SASLMechanism
}

const (
	defaultSessionTimeout = 10 * time.Second
	defaultMaxPacket      = 4 << 20
	// minConnectTimeout bounds one connection attempt from below, however
	// many servers share the session timeout.
	minConnectTimeout = 100 * time.Millisecond
	// firstBackoff and maxBackoff pace the rounds of connection attempts
	// after every server has failed once.
	firstBackoff = 10 * time.Millisecond
	maxBackoff   = time.Second
)

func (cfg *Config) setDefaults() {
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = defaultSessionTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Dial == nil {
		var d net.Dialer
		cfg.Dial = d.DialContext
	}
	if cfg.TLS != nil {
		cfg.Dial = dialTLS(cfg.Dial, cfg.TLS)
	}
	if cfg.MaxPacket <= 0 {
		cfg.MaxPacket = defaultMaxPacket
	}
}

// dialTLS returns a dial function that opens a connection with dial and
// makes a TLS handshake on it within ctx.
func dialTLS(dial func(context.Context, string, string) (net.Conn, error), cfg *tls.Config) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := cfg
		if c.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				nc.Close()
				return nil, err
			}
			c = cfg.Clone()
			c.ServerName = host
		}
		tc := tls.Client(nc, c)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		return tc, nil
	}
}

// Client is a session with a ZooKeeper-protocol server ensemble, kept
// alive across connections. It is safe for concurrent use; requests of all
// goroutines are pipelined on one connection.
//
// The goroutines of a Client: the session loop (connects, fails over,
// re-establishes the session, re-arms watches, declares expiry); a reader
// and a writer per connection (see conn); one per Stream to feed its
// channel. Close stops and waits for all of them.
type Client struct {
	cfg     Config
	servers []string // shuffled; tried in turn
	chroot  string
	log     *slog.Logger

	// ctx is the client's own context, cancelled when Close has ended the
	// session: it stops the session loop, connection attempts and streams.
	ctx    context.Context
	cancel context.CancelFunc

	xid      atomic.Int32
	lastZxid atomic.Int64 // the newest zxid seen in a reply; written by the reader only
	closing  atomic.Bool  // Close has begun: do not reconnect
	queue    sendQueue
	watches  watchRegistry

	mu        sync.Mutex // guards the fields below
	state     State
	session   int64
	passwd    []byte
	timeout   time.Duration // negotiated
	auths     []Auth        // sent on every connection
	stateSubs map[*Stream[State]]struct{}
	up        chan struct{} // closed while the session is connected; replaced when it is not
	wantRenew bool          // Renew is waiting for a new session
	// readOnlySession: the session is a read-only server's own, which no
	// other server knows; the next connection asks for a new session.
	readOnlySession bool
	// preferred is the index in servers of a server found to have a
	// leader while connected read-only; -1 when none.
	preferred int
	closed    bool  // no goroutine may be started any more
	lastErr   error // why the last connection attempt failed, for Dial
	// unannounced: the session was created on a connection whose SASL
	// exchange did not finish, so its user has not seen it connected yet.
	unannounced bool
	authErr     error         // why SASL failed, in StateAuthFailed
	failed      chan struct{} // closed at StateAuthFailed

	renew     chan struct{} // capacity 1: Renew was called
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Dial starts a client for connect, ZooKeeper's connect string: servers
// separated by commas, each host:port (port 2181 when omitted), then an
// optional chroot that every path is relative to:
//
//	"10.0.0.1:2181,10.0.0.2:2181,10.0.0.3:2181/app"
//
// Dial returns once a session is established, or fails when ctx ends
// first. The client then keeps the session alive until Close.
func Dial(ctx context.Context, connect string, cfg Config) (*Client, error) {
	servers, chroot, err := parseConnectString(connect)
	if err != nil {
		return nil, err
	}
	cfg.setDefaults()
	c := &Client{
		cfg:       cfg,
		servers:   servers,
		chroot:    chroot,
		log:       cfg.Logger,
		auths:     append([]Auth(nil), cfg.Auth...),
		stateSubs: map[*Stream[State]]struct{}{},
		up:        make(chan struct{}),
		failed:    make(chan struct{}),
		renew:     make(chan struct{}, 1),
		timeout:   cfg.SessionTimeout,
		preferred: -1,
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.queue.init()
	c.watches.init()
	up := c.up
	c.wg.Go(c.run)
	select {
	case <-up:
		return c, nil
	case <-c.failed:
		c.mu.Lock()
		err := c.authErr
		c.mu.Unlock()
		c.Close()
		return nil, fmt.Errorf("client: connect to %s: %w", connect, err)
	case <-ctx.Done():
		c.mu.Lock()
		last := c.lastErr
		c.mu.Unlock()
		c.Close()
		if last != nil {
			return nil, fmt.Errorf("client: connect to %s: %w (last attempt: %v)", connect, ctx.Err(), last)
		}
		return nil, fmt.Errorf("client: connect to %s: %w", connect, ctx.Err())
	}
}

// State returns the current state of the session.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// SessionID returns the id of the current session, 0 when there is none.
func (c *Client) SessionID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// SessionTimeout returns the session timeout the server granted (the one
// asked for, before the first session).
func (c *Client) SessionTimeout() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timeout
}

// StateChanges returns a stream of the session's states: first the
// current one, then every transition. Close it when done.
func (c *Client) StateChanges() *Stream[State] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return closedStream(StateClosed)
	}
	s := newStream[State]()
	s.push(c.state)
	c.stateSubs[s] = struct{}{}
	s.onClose = func() {
		c.mu.Lock()
		delete(c.stateSubs, s)
		c.mu.Unlock()
	}
	c.wg.Go(func() { s.forward(c.ctx.Done()) })
	return s
}

// startStream starts the goroutine of a stream, unless the client is
// closed. Called with c.mu held.
func (c *Client) startStreamLocked(s *Stream[Event]) bool {
	if c.closed {
		return false
	}
	c.wg.Go(func() { s.forward(c.ctx.Done()) })
	return true
}

// setStateLocked records a transition and tells the subscribers. Called
// with c.mu held.
func (c *Client) setStateLocked(s State) {
	c.state = s
	for sub := range c.stateSubs {
		sub.push(s)
	}
}

// Renew waits until the client has a session, starting a new one if the
// current one has expired. A new session has none of the old one's
// watches or ephemerals. It returns nil at once when connected.
func (c *Client) Renew(ctx context.Context) error {
	c.mu.Lock()
	if c.closed || c.closing.Load() {
		c.mu.Unlock()
		return ErrClosed
	}
	if c.state.Connected() {
		c.mu.Unlock()
		return nil
	}
	if c.state == StateAuthFailed {
		err := c.authErr
		c.mu.Unlock()
		return err
	}
	c.wantRenew = true
	up := c.up
	c.mu.Unlock()
	select {
	case c.renew <- struct{}{}:
	default:
	}
	select {
	case <-up:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return ErrClosed
	}
}

// keepAuth records credentials the server accepted, for later connections.
func (c *Client) keepAuth(a Auth) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, have := range c.auths {
		if have.Scheme == a.Scheme && string(have.Data) == string(a.Data) {
			return
		}
	}
	c.auths = append(c.auths, a)
}

// forgetAuth drops credentials the server refused.
func (c *Client) forgetAuth(a Auth) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.auths = slices.DeleteFunc(c.auths, func(have Auth) bool {
		return have.Scheme == a.Scheme && string(have.Data) == string(a.Data)
	})
}

// nextXid returns the xid of a new request: positive, as negative ones are
// reserved, and wrapping back to 1.
func (c *Client) nextXid() int32 {
	for {
		x := c.xid.Add(1)
		if x > 0 {
			return x
		}
		c.xid.CompareAndSwap(x, 0)
	}
}

// readTimeout is how long a connection may stay silent: two thirds of the
// session timeout, as in ZooKeeper's client, so that a dead connection is
// noticed while the session still has a third of its timeout to fail over.
func readTimeout(session time.Duration) time.Duration { return session * 2 / 3 }

// run is the session loop.
func (c *Client) run() {
	defer c.shutdown()
	next := 0     // index of the next server to try
	failures := 0 // consecutive failed connection attempts
	var deadline time.Time
	for {
		if c.closing.Load() {
			// Close is ending the session: no new connection.
			<-c.ctx.Done()
			return
		}
		if !c.awaitRenewal() {
			return
		}
		c.mu.Lock()
		hasSession := c.session != 0
		c.mu.Unlock()
		if hasSession && !deadline.IsZero() && time.Now().After(deadline) {
			c.expire("no server reached within the session timeout")
			deadline = time.Time{}
			continue
		}
		c.mu.Lock()
		if c.preferred >= 0 {
			next, c.preferred = c.preferred, -1
		}
		c.mu.Unlock()
		addr := c.servers[next]
		next = (next + 1) % len(c.servers)
		cn, resp, err := c.connect(addr)
		if c.ctx.Err() != nil {
			if cn != nil {
				cn.nc.Close()
			}
			return
		}
		if errors.Is(err, ErrSessionExpired) {
			c.expire("the server says the session has expired")
			deadline = time.Time{}
			failures = 0
			continue
		}
		if err != nil {
			c.mu.Lock()
			c.lastErr = err
			c.mu.Unlock()
			c.log.Debug("connection attempt failed", "peer", addr, "err", err)
			failures++
			if failures%len(c.servers) == 0 {
				delay := backoffDelay(failures/len(c.servers), firstBackoff, maxBackoff)
				if hasSession && !deadline.IsZero() {
					delay = min(delay, time.Until(deadline))
				}
				if !c.sleep(delay) {
					return
				}
			}
			continue
		}
		failures = 0
		c.serve(cn, resp)
		if c.ctx.Err() != nil {
			return
		}
		if c.State() == StateAuthFailed {
			<-c.ctx.Done()
			return
		}
		c.mu.Lock()
		deadline = cn.lastHeard.Add(c.timeout)
		c.mu.Unlock()
		if c.closing.Load() {
			// Close has sent closeSession: the session is over, and what
			// still waits must not wait for a connection.
			c.queue.refuse(ErrClosed)
		}
	}
}

// sleep waits for d, and reports false when the client closes meanwhile.
func (c *Client) sleep(d time.Duration) bool {
	if d <= 0 {
		return c.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// awaitRenewal returns at once unless the session has expired; then it
// waits until a new session is wanted. It reports false when the client
// closes.
func (c *Client) awaitRenewal() bool {
	for {
		c.mu.Lock()
		if c.state != StateExpired {
			c.mu.Unlock()
			return c.ctx.Err() == nil
		}
		if c.cfg.RenewSession || c.wantRenew {
			c.queue.reopen(ErrClosed)
			c.mu.Unlock()
			return c.ctx.Err() == nil
		}
		c.mu.Unlock()
		select {
		case <-c.renew:
		case <-c.ctx.Done():
			return false
		}
	}
}

// connect dials addr and performs the handshake: a new session, or the
// current one resumed with its id and password and the last zxid seen, so
// that a server that is behind refuses it.
func (c *Client) connect(addr string) (*conn, *proto.ConnectResponse, error) {
	c.mu.Lock()
	timeout := max(c.timeout/time.Duration(len(c.servers)), minConnectTimeout)
	req := proto.ConnectRequest{
		LastZxidSeen: c.lastZxid.Load(),
		TimeOut:      int32(c.cfg.SessionTimeout / time.Millisecond),
		SessionID:    c.session,
		Passwd:       c.passwd,
		ReadOnly:     c.cfg.ReadOnly,
	}
	if c.readOnlySession {
		// As ZooKeeper's client: a read-only session is never resumed,
		// a new one is asked for, and the watches carry over to it.
		req.SessionID, req.Passwd = 0, nil
	}
	c.mu.Unlock()
	if req.Passwd == nil {
		req.Passwd = make([]byte, proto.PasswordLen)
	}
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	nc, err := c.cfg.Dial(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	// The deadline bounds the handshake; ending ctx (Close) cuts it short.
	deadline, _ := ctx.Deadline()
	nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	resp, br, err := c.handshake(nc, &req)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = nc.SetDeadline(time.Time{})
	}
	if err == nil && resp.TimeOut <= 0 {
		if req.SessionID != 0 {
			err = ErrSessionExpired
		} else {
			err = errors.New("the server refused a new session")
		}
	}
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	cn := &conn{c: c, nc: nc, br: br, addr: addr, dead: make(chan struct{}), lastHeard: time.Now()}
	return cn, resp, nil
}

func (c *Client) handshake(nc net.Conn, req *proto.ConnectRequest) (*proto.ConnectResponse, *bufio.Reader, error) {
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 64), 0)
	frame = proto.AppendMarshal(frame, req)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	if _, err := nc.Write(frame); err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(nc, readBufferSize)
	var lenBuf [4]byte
	if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
		return nil, nil, fmt.Errorf("connect response: %w", err)
	}
	n := int(int32(binary.BigEndian.Uint32(lenBuf[:])))
	if n < 0 || n > c.cfg.MaxPacket {
		return nil, nil, fmt.Errorf("connect response of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, nil, fmt.Errorf("connect response: %w", err)
	}
	var resp proto.ConnectResponse
	if err := proto.Unmarshal(body, &resp); err != nil {
		return nil, nil, fmt.Errorf("connect response: %w", err)
	}
	return &resp, br, nil
}

// serve runs one established connection until it ends or the client
// closes, then fails the calls it had sent.
func (c *Client) serve(cn *conn, resp *proto.ConnectResponse) {
	c.mu.Lock()
	resumed := c.session != 0 && c.session == resp.SessionID && !c.unannounced
	// What a read-only session watched, the session that follows it
	// watches: to its user it is one session, which has moved.
	resumed = resumed || c.readOnlySession
	c.readOnlySession = resp.ReadOnly
	c.session, c.passwd = resp.SessionID, resp.Passwd
	c.timeout = time.Duration(resp.TimeOut) * time.Millisecond
	cn.readTimeout = readTimeout(c.timeout)
	state := StateConnected
	switch {
	case resp.ReadOnly:
		state = StateReadOnly
	case resumed:
		state = StateReconnected
	}
	auths := append([]Auth(nil), c.auths...)
	c.mu.Unlock()

	if c.cfg.SASL != nil {
		if err := c.authenticate(cn, cn.readTimeout); err != nil {
			cn.nc.Close()
			if c.ctx.Err() != nil {
				return
			}
			if isSASLFailure(err) {
				c.log.Error("SASL authentication failed; no connection will be tried again", "session", sessionID(resp.SessionID), "peer", cn.addr, "err", err)
				c.authFailed(err)
				return
			}
			c.log.Debug("connection lost during SASL authentication", "session", sessionID(resp.SessionID), "peer", cn.addr, "err", err)
			c.mu.Lock()
			c.lastErr = fmt.Errorf("SASL authentication: %w", err)
			c.unannounced = !resumed
			c.mu.Unlock()
			return
		}
	}
	c.mu.Lock()
	c.wantRenew = false
	c.lastErr = nil
	c.unannounced = false
	c.mu.Unlock()

	cn.primers = c.primers(auths, resumed)
	if len(cn.primers) > len(auths) {
		cn.replayed = map[proto.WatcherEvent]bool{}
	}
	// Persistent watches hear of the reconnection before any event it
	// brings; the state subscribers and waiters hear of it with them.
	c.watches.session(state)
	c.mu.Lock()
	c.setStateLocked(state)
	close(c.up)
	c.mu.Unlock()
	if resumed {
		c.log.Info("session resumed", "session", sessionID(resp.SessionID), "peer", cn.addr, "timeout", c.timeout)
	} else {
		c.log.Info("session established", "session", sessionID(resp.SessionID), "peer", cn.addr, "timeout", c.timeout, "read_only", resp.ReadOnly)
	}

	cn.wg.Go(cn.read)
	cn.wg.Go(cn.write)
	if resp.ReadOnly && len(c.servers) > 1 {
		cn.wg.Go(func() { c.seekReadWrite(cn) })
	}
	select {
	case <-cn.dead:
	case <-c.ctx.Done():
		cn.kill(ErrClosed)
	}
	cn.wg.Wait()
	for _, cl := range cn.pending.drain() {
		if !cl.noWait {
			cl.fail(callSent, ErrConnectionLoss)
		}
	}
	if c.ctx.Err() != nil || c.closing.Load() {
		return
	}
	c.log.Info("connection lost", "session", sessionID(resp.SessionID), "peer", cn.addr, "err", cn.cause)
	c.mu.Lock()
	c.up = make(chan struct{})
	c.setStateLocked(StateDisconnected)
	c.mu.Unlock()
	c.watches.session(StateDisconnected)
}

// primers returns the packets that prepare a new connection before any
// request: the credentials, then, for a resumed session, the watches to
// re-arm relative to the last zxid seen.
func (c *Client) primers(auths []Auth, resumed bool) []*call {
	var out []*call
	for i := range auths {
		cl, e := newCall(proto.XidAuth, proto.OpAuth)
		pkt := proto.AuthPacket{Scheme: auths[i].Scheme, Auth: auths[i].Data}
		pkt.Encode(e)
		cl.seal()
		cl.noWait = true
		cl.auth = &auths[i]
		out = append(out, cl)
	}
	if resumed {
		for _, rec := range c.watches.rearm(c.lastZxid.Load()) {
			op := proto.OpSetWatches
			if _, ok := rec.(*proto.SetWatches2); ok {
				op = proto.OpSetWatches2
			}
			cl, e := newCall(proto.XidSetWatches, op)
			rec.Encode(e)
			cl.seal()
			cl.noWait = true
			out = append(out, cl)
		}
	}
	for _, cl := range out {
		cl.state.Store(callQueued)
	}
	return out
}

// expire ends the session: everything waiting fails and every watch ends.
func (c *Client) expire(why string) {
	c.mu.Lock()
	id := c.session
	c.session, c.passwd = 0, nil
	c.readOnlySession = false
	c.setStateLocked(StateExpired)
	c.mu.Unlock()
	c.queue.refuse(ErrSessionExpired)
	c.watches.endAll(ErrSessionExpired, c.chroot, false)
	c.log.Warn("session expired", "session", sessionID(id), "reason", why)
}

// shutdown is the session loop's last act: nothing is accepted any more,
// every watch and stream ends.
func (c *Client) shutdown() {
	c.queue.refuse(ErrClosed)
	c.watches.endAll(ErrClosed, c.chroot, true)
	c.mu.Lock()
	id := c.session
	c.setStateLocked(StateClosed)
	for sub := range c.stateSubs {
		sub.halt()
	}
	c.mu.Unlock()
	c.log.Info("client closed", "session", sessionID(id))
}

// Close ends the session (closeSession, sent after the requests already
// made, so its ephemeral nodes go at once) and stops every goroutine of the
// client. A client disconnected at that moment sends nothing and leaves
// the session to expire. Requests still waiting fail with ErrClosed;
// one-shot watches receive EventNotWatching with ErrClosed; streams are
// closed. Calling Close again returns the first call's result.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.closeSession()
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.cancel()
		c.wg.Wait()
	})
	return c.closeErr
}

// closeSession sends closeSession after every request already made and
// waits for its reply, at most a read timeout. Without a connection it
// sends nothing: the session will expire on its own.
func (c *Client) closeSession() error {
	c.closing.Store(true)
	c.mu.Lock()
	live, wait := c.state.Connected(), readTimeout(c.timeout)
	c.mu.Unlock()
	if !live {
		c.queue.refuse(ErrClosed)
		return nil
	}
	cl, _ := newCall(c.nextXid(), proto.OpCloseSession)
	cl.seal()
	if err := c.queue.pushLast(cl, ErrClosed); err != nil {
		cl.release()
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-cl.done:
	case <-t.C:
		if cl.state.CompareAndSwap(callQueued, callAbandoned) || cl.state.CompareAndSwap(callSent, callAbandoned) {
			return fmt.Errorf("client: close session: no reply within %v", wait)
		}
		<-cl.done
	}
	err := cl.result()
	cl.release()
	if err != nil && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("client: close session: %w", err)
	}
	return nil
}

// sessionID logs a session id in hex, as ZooKeeper prints it.
type sessionID int64

func (s sessionID) LogValue() slog.Value { return slog.StringValue(fmt.Sprintf("0x%x", uint64(s))) }

// backoffDelay returns the delay before retry n (from 1): base doubled
// n-1 times, at most max, then jittered down by up to half, so clients
// that failed together do not retry together.
func backoffDelay(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
