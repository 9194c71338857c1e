package conn

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
)

// Backend is the server behind the connections: sessions, the replicated
// state and the watch registry.
type Backend interface {
	// LastZxid is the zxid of the last applied transaction.
	LastZxid() int64
	// OpenSession creates a session with a negotiated timeout. readOnly
	// says the client accepts a read-only session (ZooKeeper's
	// canBeReadOnly).
	OpenSession(ctx context.Context, c *Conn, requested time.Duration, readOnly bool) (Session, error)
	// ResumeSession attaches c to an existing session if the password is
	// right and the session is still open, and returns its timeout.
	ResumeSession(ctx context.Context, c *Conn, id int64, passwd []byte, requested time.Duration) (timeout time.Duration, ok bool)
	// Write submits a write request (including closeSession) to the log.
	// done is called exactly once. When the write is applied, it is
	// called from the apply goroutine at the write's place in the log:
	// after the write's watch events are queued and before the next
	// entry is applied, with a Reader of the state at that point. When
	// the write is refused before it reaches the log (the disk is full),
	// it is called before Write returns, with the refusal's code and a
	// Reader of the state as it is, as View gives one. When the write's
	// outcome cannot be known (its proposal was lost), it is called from
	// any goroutine with a nil Reader.
	Write(c *Conn, op proto.OpCode, body []byte, auth []proto.ID, done func(Reply, Reader))
	// Sync asks for a ReadIndex: done is called once the state has
	// applied everything committed when Sync was called, with a Reader
	// of the state as it is then; or with an error and no Reader when no
	// leader can say.
	Sync(c *Conn, done func(Reader, error))
	// View calls f with a Reader of the state as it is now; no entry is
	// applied while f runs.
	View(f func(Reader))
	// Authenticate checks an auth packet and returns the identities it
	// adds, or false when authentication fails.
	Authenticate(c *Conn, scheme string, auth []byte) ([]proto.ID, bool)
	// SASL starts the SASL exchange of a connection, at its first sasl
	// packet; nil when the server has no SASL users (no JAAS section),
	// and every sasl packet is then answered with an empty token, as
	// ZooKeeper answers it.
	SASL(c *Conn) SASLServer
	// Touch records activity of a session.
	Touch(session int64)
	// Detach is called once when a connection closes, whether or not it
	// got a session.
	Detach(c *Conn)
	// FourLetter answers a four-letter word, or returns false if it is not
	// one or is not allowed. arg reads the 8-byte argument that follows
	// stmk on the connection (false when it cannot); a backend calls it
	// only for stmk, once it has allowed it.
	FourLetter(cmd string, arg func() (int64, bool)) (string, bool)
}

// A Reader answers requests that do not go through the log (reads,
// watches, sync, whoAmI, ping) from the state it was handed with. It is
// valid only during the call that handed it over: the state cannot change
// meanwhile, and the reply is queued before the event of any later
// change, so a client sees the reply that set a watch before that watch's
// event.
type Reader interface {
	Read(c *Conn, op proto.OpCode, req proto.Record, auth []proto.ID) Reply
}

// SASLServer is the server side of one connection's SASL exchange. The
// connection calls it from its reader goroutine only.
type SASLServer interface {
	// Next takes the client's token and returns the server's. Once the
	// client has authenticated, ids are the identities that adds (sasl,
	// and super for a super user); nil before. An error fails the
	// exchange.
	Next(token []byte) (challenge []byte, ids []proto.ID, err error)
}

// ErrNotServing is what OpenSession returns, wrapped, while the server
// serves no sessions (an ensemble member without a leader): the connection
// closes and the client tries another server.
var ErrNotServing = errors.New("not serving clients")

// Session is what OpenSession grants a client.
type Session struct {
	ID      int64
	Passwd  []byte
	Timeout time.Duration
	// ReadOnly marks a session of a server in read-only mode: it lives on
	// this server alone, its reads are answered from what the server has,
	// and its writes and syncs fail with NOTREADONLY.
	ReadOnly bool
}

// Reply is the outcome of one request.
type Reply struct {
	Zxid int64
	Err  proto.Code
	Resp proto.Record
	// Close closes the connection after this reply (closeSession).
	Close bool
}

// Config holds the limits of a connection.
type Config struct {
	// MaxBuffer is jute.maxbuffer: the largest frame accepted.
	MaxBuffer int
	// HandshakeTimeout bounds the wait for the connect request.
	HandshakeTimeout time.Duration
	// CertIDs are the identities the connection has from its TLS client's
	// certificate (x509, and super for X509AuthenticationProvider's super
	// user), after its address's, from the start.
	CertIDs []proto.ID
	// MaxOutstanding bounds the requests of one connection in flight.
	MaxOutstanding int
	// MaxQueued bounds the bytes waiting to be written to a client that
	// does not read; past it the connection is closed.
	MaxQueued int
	// LinearizableReads makes every read of an ordinary session wait for
	// a ReadIndex, as a sync does.
	LinearizableReads bool
	// EnforceAuthSchemes are the schemes a connection must hold an
	// identity of before any request but auth and sasl packets is served
	// (enforce.auth.schemes). Any other request is then answered with
	// SessionClosedRequireSASL and the connection closed, as ZooKeeper
	// does; the session stays until it expires. Nil serves everyone.
	EnforceAuthSchemes []string
	// AllowSASLFailed keeps the connection of a client whose SASL
	// exchange failed, answering it with an empty token instead of
	// AuthFailed (allowSaslFailedClients), unless sasl is enforced.
	AllowSASLFailed bool
	Logger          *slog.Logger
	// Observe, if set, is told of every reply: whether its request was
	// a write, its latency and its size in bytes. Received is told of
	// every request packet and its size, Notified of every watch event
	// sent and its size, AuthFailed of every authentication that failed
	// (addauth or SASL). They feed the server's statistics.
	Observe    func(write bool, latency time.Duration, bytes int)
	Received   func(bytes int)
	Notified   func(bytes int)
	AuthFailed func()
}

func (c *Config) setDefaults() {
	if c.MaxBuffer <= 0 {
		c.MaxBuffer = proto.DefaultMaxBuffer
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.MaxOutstanding <= 0 {
		c.MaxOutstanding = 1000
	}
	if c.MaxQueued <= 0 {
		c.MaxQueued = 64 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Observe == nil {
		c.Observe = func(bool, time.Duration, int) {}
	}
	if c.Received == nil {
		c.Received = func(int) {}
	}
	if c.Notified == nil {
		c.Notified = func(int) {}
	}
	if c.AuthFailed == nil {
		c.AuthFailed = func() {}
	}
}

// Conn is one client connection.
type Conn struct {
	cfg     Config
	backend Backend
	nc      net.Conn
	log     *slog.Logger
	ctx     context.Context
	cancel  context.CancelFunc
	// remoteIP is the client's address, its "ip" identity.
	remoteIP string
	started  time.Time

	// Set once by the handshake before the pipeline starts.
	session int64
	timeout time.Duration
	// readOnly is set by the handshake too, but read by the server, which
	// knows the connection from OpenSession on.
	readOnly atomic.Bool

	// auth is written by the reader goroutine only and read by any; each
	// request carries the slice current when it was read. Slices are never
	// modified once stored.
	auth atomic.Pointer[[]proto.ID]
	// ids models the set ZooKeeper would keep auth's identities in, to
	// tell which identities given again auth must record (addAuth). The
	// reader goroutine's only; nil until the first auth packet.
	ids *tree.IDSet
	// sasl is the connection's SASL exchange, from its first sasl packet
	// on; the reader goroutine's only. saslStarted tells a server without
	// SASL users (sasl stays nil) from one not asked yet.
	sasl        SASLServer
	saslStarted bool

	requests chan *item
	// wake tells process that held writes may be proposed.
	wake  chan struct{}
	slots chan struct{}

	// pmu guards the session's pipeline (see pipeline.go).
	pmu sync.Mutex
	// pending are the requests not answered yet, in request order.
	// Invariant: once drained, pending[0] is a write not yet applied or
	// an indexed request not yet ready.
	pending []*item
	// unindexed counts the indexed requests in pending not ready yet;
	// held the writes in pending not proposed yet. Invariant: a write is
	// held exactly when an indexed request before it is not ready, or
	// an earlier write is held.
	unindexed, held int
	// ended is set when the pipeline stops: the session closed or the
	// connection is going away.
	ended bool

	out outQueue

	closeOnce  sync.Once
	wg         sync.WaitGroup
	writerDone chan struct{}

	stats Stats
}

// Stats are a connection's counters for the cons four-letter word.
type Stats struct {
	mu                                   sync.Mutex
	Received, Sent                       int64
	LastOp                               string
	LastCxid                             int32
	LastZxid                             int64
	LastLatency                          time.Duration
	MinLatency, MaxLatency, totalLatency time.Duration
	completed                            int64
}

// Serve runs a connection until it closes. It returns when every goroutine
// of the connection has exited.
func Serve(ctx context.Context, nc net.Conn, backend Backend, cfg Config) {
	cfg.setDefaults()
	c := &Conn{cfg: cfg, backend: backend, nc: nc, started: time.Now(), writerDone: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.remoteIP = ipIdentity(nc.RemoteAddr())
	c.log = cfg.Logger.With("remote", nc.RemoteAddr().String())
	c.out.init(cfg.MaxQueued)
	c.auth.Store(new(append([]proto.ID{{Scheme: "ip", ID: c.remoteIP}}, cfg.CertIDs...)))
	// Made before the handshake: the server knows the connection from
	// OpenSession on, and its statistics read slots from then.
	c.slots = make(chan struct{}, cfg.MaxOutstanding)
	stop := context.AfterFunc(ctx, c.Close)
	defer stop()

	if !c.handshake() {
		c.finish()
		// OpenSession may have registered c before the handshake failed.
		backend.Detach(c)
		return
	}
	c.requests = make(chan *item, cfg.MaxOutstanding)
	c.wake = make(chan struct{}, 1)
	c.wg.Go(c.process)
	c.read()
	c.finish()
	backend.Detach(c)
}

// finish ends a connection whose reader has stopped: a final reply queued
// with closeAfterDrain (a refused auth) still reaches the client, then
// everything closes.
func (c *Conn) finish() {
	if c.out.draining() {
		select {
		case <-c.writerDone:
		case <-time.After(c.cfg.HandshakeTimeout):
		}
	}
	c.Close()
	c.wg.Wait()
}

// setSession records the connection's session. The server knows the
// connection from OpenSession on, so cons may read them concurrently:
// under the lock ConsLine takes.
func (c *Conn) setSession(id int64, timeout time.Duration) {
	c.stats.mu.Lock()
	defer c.stats.mu.Unlock()
	c.session, c.timeout = id, timeout
}

// Auth returns the identities the connection has authenticated as, its
// address ("ip") first, then in the order they came, one given again where
// that changes ZooKeeper's order (see maxAuthIDs). Safe for concurrent
// use; do not modify the result.
func (c *Conn) Auth() []proto.ID { return *c.auth.Load() }

// CertIDs returns the identities the connection has from its TLS client's
// certificate (Config.CertIDs); do not modify the result.
func (c *Conn) CertIDs() []proto.ID { return c.cfg.CertIDs }

// Session returns the connection's session id (0 before the handshake).
// Safe for concurrent use.
func (c *Conn) Session() int64 {
	c.stats.mu.Lock()
	defer c.stats.mu.Unlock()
	return c.session
}

// ReadOnly reports whether the connection's session is a read-only one
// (see Session.ReadOnly).
func (c *Conn) ReadOnly() bool { return c.readOnly.Load() }

// Timeout returns the negotiated session timeout. Safe for concurrent
// use.
func (c *Conn) Timeout() time.Duration {
	c.stats.mu.Lock()
	defer c.stats.mu.Unlock()
	return c.timeout
}

// RemoteAddr returns the client's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// RemoteIP returns the client's address as its "ip" identity, in Java's
// notation (see ipIdentity).
func (c *Conn) RemoteIP() string { return c.remoteIP }

// ipIdentity returns the "ip" identity of a client at addr: its address as
// Java's InetAddress.getHostAddress writes it, which is what ZooKeeper
// makes the identity of a connection and of an "ip" auth packet, shows in
// whoAmI and matches ip ACLs against. An address that is not TCP (a pipe,
// in tests) gives its host, or its whole text.
func ipIdentity(addr net.Addr) string {
	if ta, ok := addr.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			return javaHostAddress(ip, scopeID(ta.Zone))
		}
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// IPIdentity returns the "ip" identity of a client at addr, as the
// connections of the client port name it.
func IPIdentity(addr net.Addr) string { return ipIdentity(addr) }

// javaHostAddress writes ip as Java's InetAddress.getHostAddress does. An
// IPv4 address is dotted, and so is an IPv4-mapped IPv6 one, which Java
// accepts as IPv4. An IPv6 address is eight groups of lowercase hex
// without leading zeros, never shortened with "::" (0:0:0:0:0:0:0:1),
// then "%" and scope when scope is not empty.
func javaHostAddress(ip netip.Addr, scope string) string {
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	b := ip.As16()
	var s strings.Builder
	for i := 0; i < len(b); i += 2 {
		if i > 0 {
			s.WriteByte(':')
		}
		s.WriteString(strconv.FormatUint(uint64(b[i])<<8|uint64(b[i+1]), 16))
	}
	if scope != "" {
		s.WriteString("%" + scope)
	}
	return s.String()
}

// scopeID returns the scope of an IPv6 address as Java has it for a
// connection it accepted: the number of the interface (%4), where Go names
// the interface when it can (%eth0).
func scopeID(zone string) string {
	if zone == "" {
		return ""
	}
	if _, err := strconv.ParseUint(zone, 10, 32); err == nil {
		return zone
	}
	if ifc, err := net.InterfaceByName(zone); err == nil {
		return strconv.Itoa(ifc.Index)
	}
	return zone
}

// Close closes the connection; its goroutines then exit. Safe to call more
// than once and from any goroutine.
func (c *Conn) Close() {
	c.closeOnce.Do(func() {
		c.cancel()
		c.out.close()
		c.nc.Close()
	})
}

// Notify queues a watch event. It never blocks: the Backend calls it while
// applying a change. Like ZooKeeper, the notification carries zxid -1.
func (c *Conn) Notify(ev proto.WatcherEvent) {
	b := frame(&proto.ReplyHeader{Xid: proto.XidNotification, Zxid: -1}, &ev)
	if !c.out.push(b) {
		c.Close()
		return
	}
	c.cfg.Notified(len(b))
}

// frame encodes a length-prefixed reply.
func frame(hdr *proto.ReplyHeader, body proto.Record) []byte {
	b := make([]byte, 4, 64)
	e := proto.NewEncoder(b)
	hdr.Encode(e)
	if body != nil {
		body.Encode(e)
	}
	b = e.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// readFrame reads one length-prefixed frame, refusing lengths outside
// [0, MaxBuffer].
func (c *Conn) readFrame(r io.Reader, lenBuf []byte) ([]byte, error) {
	if _, err := io.ReadFull(r, lenBuf[:4]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(lenBuf[:4]))
	if n < 0 || int(n) > c.cfg.MaxBuffer {
		return nil, fmt.Errorf("frame of %d bytes: %w", n, errFrameTooLarge)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

var errFrameTooLarge = errors.New("larger than jute.maxbuffer")

// handshake reads the connect request (or a four-letter word) and answers
// it. It reports whether the connection has a session.
func (c *Conn) handshake() bool {
	c.nc.SetReadDeadline(time.Now().Add(c.cfg.HandshakeTimeout))
	var lenBuf [4]byte
	if _, err := io.ReadFull(c.nc, lenBuf[:]); err != nil {
		return false
	}
	if cmd := string(lenBuf[:]); isFourLetter(cmd) {
		c.fourLetter(cmd)
		return false
	}
	n := int32(binary.BigEndian.Uint32(lenBuf[:]))
	if n < 0 || int(n) > c.cfg.MaxBuffer {
		c.log.Debug("closing connection: connect request too large", "len", n)
		return false
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c.nc, b); err != nil {
		return false
	}
	var req proto.ConnectRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		c.log.Debug("closing connection: bad connect request", "err", err)
		return false
	}
	c.nc.SetReadDeadline(time.Time{})
	if last := c.backend.LastZxid(); req.LastZxidSeen > last {
		// The client has seen a newer state than ours: answering it could
		// take it back in time. It will try another server.
		c.log.Info("refusing session: client has seen a newer zxid",
			"client_zxid", fmt.Sprintf("%#x", req.LastZxidSeen), "zxid", fmt.Sprintf("%#x", last))
		return false
	}
	requested := time.Duration(req.TimeOut) * time.Millisecond
	resp := proto.ConnectResponse{ProtocolVersion: 0, ReadOnly: false}
	ok := true
	if req.SessionID == 0 {
		sess, err := c.backend.OpenSession(c.ctx, c, requested, req.ReadOnly)
		if err != nil {
			level := slog.LevelWarn
			if errors.Is(err, ErrNotServing) {
				// Routine while a member waits for a leader: the client
				// tries another server.
				level = slog.LevelDebug
			}
			c.log.Log(c.ctx, level, "cannot open session", "err", err)
			return false
		}
		c.setSession(sess.ID, sess.Timeout)
		c.readOnly.Store(sess.ReadOnly)
		resp.SessionID, resp.Passwd, resp.TimeOut = sess.ID, sess.Passwd, int32(sess.Timeout/time.Millisecond)
		resp.ReadOnly = sess.ReadOnly
	} else {
		timeout, valid := c.backend.ResumeSession(c.ctx, c, req.SessionID, req.Passwd, requested)
		if valid {
			c.setSession(req.SessionID, timeout)
			resp.SessionID, resp.Passwd, resp.TimeOut = req.SessionID, req.Passwd, int32(timeout/time.Millisecond)
		} else {
			// An expired or unknown session: the client learns it from a
			// zero timeout, as from ZooKeeper, and the connection closes.
			resp.Passwd = make([]byte, proto.PasswordLen)
			ok = false
		}
	}
	b = make([]byte, 4, 64)
	e := proto.NewEncoder(b)
	resp.Encode(e)
	b = e.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.out.push(b)
	c.wg.Go(c.write)
	if !ok {
		c.out.closeAfterDrain()
	}
	return ok
}

// read decodes requests until the connection fails.
func (c *Conn) read() {
	var lenBuf [4]byte
	// Buffered, so a request usually costs one read system call, not one
	// for its length and one for its body.
	br := bufio.NewReaderSize(c.nc, 64<<10)
	readOnly := c.readOnly.Load() // set by the handshake, before this
	for {
		if readOnly {
			// No leader expires a read-only session: a client silent for
			// its whole timeout is gone, and so is the session.
			c.nc.SetReadDeadline(time.Now().Add(c.timeout))
		}
		b, err := c.readFrame(br, lenBuf[:])
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
				c.log.Debug("closing connection", "err", err, "session", sessionHex(c.session))
			}
			return
		}
		d := proto.NewDecoder(b)
		var hdr proto.RequestHeader
		hdr.Decode(d)
		if d.Err() != nil {
			return
		}
		c.stats.mu.Lock()
		c.stats.Received++
		c.stats.mu.Unlock()
		c.cfg.Received(4 + len(b))
		body := b[len(b)-d.Remaining():]
		c.backend.Touch(c.session)
		if hdr.Type == proto.OpAuth {
			if !c.authenticate(hdr.Xid, body) {
				return
			}
			continue
		}
		if hdr.Type == proto.OpSASL {
			if !c.saslPacket(hdr.Xid, body) {
				return
			}
			continue
		}
		if !c.authenticated() {
			// As ZooKeeper: every other packet, pings included, is refused
			// with this code until the connection has an identity of a
			// required scheme, and the connection closes.
			c.log.Debug("closing connection: authentication required", "session", sessionHex(c.session),
				"schemes", c.cfg.EnforceAuthSchemes)
			c.out.push(frame(&proto.ReplyHeader{Xid: hdr.Xid, Err: proto.ErrSessionClosedRequireSASL}, nil))
			c.out.closeAfterDrain()
			return
		}
		it := &item{xid: hdr.Xid, op: hdr.Type, start: nanotime(), auth: c.Auth(), kind: local}
		req, known := proto.NewRequest(hdr.Type)
		if hdr.Type == proto.OpDeleteContainer {
			req, known = &proto.DeleteRequest{}, true
		}
		switch {
		case !known:
			it.kind = answered
			it.reply = Reply{Err: proto.ErrUnimplemented, Zxid: c.backend.LastZxid()}
		case req != nil:
			if err := proto.Unmarshal(body, req); err != nil {
				c.log.Debug("closing connection: malformed request", "op", hdr.Type, "err", err, "session", sessionHex(c.session))
				return
			}
			it.req = req
		}
		switch {
		case it.kind == answered:
		case readOnly && hdr.Type == proto.OpCloseSession:
			// A read-only session lives on this server alone: nothing to
			// replicate, and nothing of it outlives the connection.
			it.kind = answered
			it.reply = Reply{Zxid: c.backend.LastZxid(), Close: true}
		case readOnly && (isWrite(hdr.Type) || hdr.Type == proto.OpSync):
			// As ZooKeeper's read-only server: no write, and no sync, which
			// would need a leader.
			it.kind = answered
			it.reply = Reply{Zxid: c.backend.LastZxid(), Err: proto.ErrNotReadOnly}
		case isWrite(hdr.Type):
			it.kind = write
			it.req = nil
			it.body = body
		case hdr.Type == proto.OpSync, c.cfg.LinearizableReads && !readOnly && hdr.Type.IsRead():
			it.kind = indexed
		}
		select {
		case c.slots <- struct{}{}:
		case <-c.ctx.Done():
			return
		}
		select {
		case c.requests <- it:
		case <-c.ctx.Done():
			return
		}
	}
}

func isWrite(op proto.OpCode) bool {
	switch op {
	case proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL,
		proto.OpDelete, proto.OpSetData, proto.OpSetACL, proto.OpCheck, proto.OpMulti,
		proto.OpCloseSession:
		return true
	}
	return false
}

func (c *Conn) authenticate(xid int32, body []byte) bool {
	var pkt proto.AuthPacket
	if err := proto.Unmarshal(body, &pkt); err != nil {
		return false
	}
	ids, ok := c.backend.Authenticate(c, pkt.Scheme, pkt.Auth)
	if ok && !c.addAuth(ids) {
		c.log.Debug("closing connection: too many identities", "session", sessionHex(c.session))
		ok = false
	}
	if !ok {
		c.cfg.AuthFailed()
		c.out.push(frame(&proto.ReplyHeader{Xid: xid, Err: proto.ErrAuthFailed}, nil))
		c.out.closeAfterDrain()
		return false
	}
	c.out.push(frame(&proto.ReplyHeader{Xid: xid}, nil))
	return true
}

// authenticated reports whether the connection may be served: it holds
// an identity of a scheme EnforceAuthSchemes names, or none is named.
func (c *Conn) authenticated() bool {
	if len(c.cfg.EnforceAuthSchemes) == 0 {
		return true
	}
	for _, id := range c.Auth() {
		if slices.Contains(c.cfg.EnforceAuthSchemes, id.Scheme) {
			return true
		}
	}
	return false
}

// saslPacket answers a sasl packet at once, with the client's xid, as
// ZooKeeper does, and reports whether the connection goes on. The replies
// carry zxid 0, and a failure carries a nil token: the Java client reads
// the token whatever the error code and fails its exchange on a nil one.
func (c *Conn) saslPacket(xid int32, body []byte) bool {
	var req proto.GetSASLRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		c.log.Debug("closing connection: malformed sasl packet", "err", err, "session", sessionHex(c.session))
		return false
	}
	if !c.saslStarted {
		c.saslStarted = true
		c.sasl = c.backend.SASL(c)
	}
	reply := func(code proto.Code, token []byte) {
		c.out.push(frame(&proto.ReplyHeader{Xid: xid, Err: code}, &proto.SetSASLResponse{Token: token}))
	}
	if c.sasl == nil {
		reply(proto.OK, nil)
		return true
	}
	token, ids, err := c.sasl.Next(req.Token)
	if err == nil && ids != nil && !c.addAuth(ids) {
		err = errors.New("too many identities")
	}
	if err == nil {
		if ids != nil {
			c.log.Debug("SASL authenticated", "ids", ids, "session", sessionHex(c.session))
		}
		reply(proto.OK, token)
		return true
	}
	required := slices.Contains(c.cfg.EnforceAuthSchemes, tree.SchemeSASL)
	c.log.Info("SASL authentication failed", "err", err, "session", sessionHex(c.session))
	c.cfg.AuthFailed()
	if c.cfg.AllowSASLFailed && !required {
		reply(proto.OK, nil)
		return true
	}
	code := proto.ErrAuthFailed
	if required {
		code = proto.ErrSessionClosedRequireSASL
	}
	reply(code, nil)
	c.out.closeAfterDrain()
	return false
}

// maxAuthIDs bounds the identities a connection records. ZooKeeper sets
// no bound, but it keeps a set, where a connection here keeps the sequence
// of its identities as they came, which tree.ConnOrder needs to list them
// in ZooKeeper's order and which every write's log entry carries. An
// identity given again is recorded only when ZooKeeper's set changes on it
// (tree.IDSet.Add): when it sits eighth or deeper in a list bucket, which
// then becomes a tree or makes a small table grow. A bucket of eight or
// more does that at most once between two growths of the table, so the
// sequence grows with the distinct identities, not with the auth packets,
// and the order is ZooKeeper's exactly, whatever the client sends, up to
// the bound: far more than any client uses (an address and one or two
// digest users), and little for a log entry to carry. Past it, the auth
// packet fails with AuthFailed and closes the connection, as an auth
// ZooKeeper refuses does.
const maxAuthIDs = 256

// addAuth records the identities an auth packet gave, each of them, in
// order, unless given before and changing nothing (see maxAuthIDs). It
// reports false, recording none, when the connection would then hold more
// than maxAuthIDs.
func (c *Conn) addAuth(ids []proto.ID) bool {
	old := c.Auth()
	if c.ids == nil {
		c.ids = new(tree.IDSet)
		for _, id := range old {
			c.ids.Add(id)
		}
	}
	// Clipped, so appending copies: requests read before hold old.
	auth := slices.Clip(old)
	for _, id := range ids {
		if !c.ids.Add(id) {
			continue
		}
		if len(auth) == maxAuthIDs {
			// The set is ahead of auth now; it does not matter, as the
			// connection closes.
			return false
		}
		auth = append(auth, id)
	}
	if len(auth) != len(old) {
		c.auth.Store(&auth)
	}
	return true
}

// process admits requests in order and proposes the writes held behind
// indexed requests once those have their index (see pipeline.go).
func (c *Conn) process() {
	for {
		select {
		case <-c.ctx.Done():
			c.pmu.Lock()
			c.end()
			c.pmu.Unlock()
			return
		case it := <-c.requests:
			c.admit(it)
		case <-c.wake:
			c.proposeHeld()
		}
	}
}

// reply queues the reply of a request and reports whether the connection
// goes on.
func (c *Conn) reply(it *item) bool {
	if it.reply.Err == proto.ErrConnectionLoss {
		// ZooKeeper never answers with this code: a request whose outcome
		// the server cannot know ends the connection (see unknownOutcome).
		c.log.Debug("closing connection: outcome of a request unknown", "session", sessionHex(c.session), "xid", it.xid)
		c.Close()
		return false
	}
	if it.reply.Err == proto.ErrSessionMoved {
		// As ZooKeeper (ZOOKEEPER-710): a connection-level error. The
		// connection is stale, or its server's claim on the session lost
		// a race with another's that committed later; either way the
		// client must reconnect, which claims the session again through
		// the server it reaches, rather than be told to retry here.
		c.log.Debug("closing connection: session moved", "session", sessionHex(c.session), "xid", it.xid)
		c.Close()
		return false
	}
	if it.op == proto.OpCheck && it.reply.Err == proto.OK {
		// ZooKeeper cannot answer a successful check sent outside a multi
		// (it has no Stat to return) and drops the connection; clients
		// rely on check only inside a multi.
		c.log.Debug("closing connection: check outside a multi", "session", sessionHex(c.session))
		c.Close()
		return false
	}
	hdr := proto.ReplyHeader{Xid: it.xid, Zxid: it.reply.Zxid, Err: it.reply.Err}
	var body proto.Record
	if it.reply.Err == proto.OK || it.op == proto.OpMulti || it.op == proto.OpMultiRead {
		body = it.reply.Resp
	}
	b := frame(&hdr, body)
	if !c.out.push(b) {
		c.Close()
		return false
	}
	lat := time.Duration(nanotime() - it.start)
	c.cfg.Observe(isWrite(it.op), lat, len(b))
	s := &c.stats
	s.mu.Lock()
	s.Sent++
	op, ok := shortOp[it.op]
	if !ok {
		op = "NA"
	}
	s.LastOp, s.LastCxid, s.LastZxid, s.LastLatency = op, it.xid, it.reply.Zxid, lat
	if s.completed == 0 || lat < s.MinLatency {
		s.MinLatency = lat
	}
	if lat > s.MaxLatency {
		s.MaxLatency = lat
	}
	s.totalLatency += lat
	s.completed++
	s.mu.Unlock()
	return true
}

// write drains the outbound queue to the socket.
func (c *Conn) write() {
	defer close(c.writerDone)
	defer c.Close()
	_, plain := c.nc.(*net.TCPConn)
	var joined []byte
	for {
		bufs, ok := c.out.pop()
		if !ok {
			return
		}
		if plain || len(bufs) == 1 {
			if _, err := (*net.Buffers)(&bufs).WriteTo(c.nc); err != nil {
				return
			}
			continue
		}
		// Another connection (TLS) takes no writev: net.Buffers would make
		// a record and a system call of each frame, so frames queued
		// together go in writes of up to joinedWriteBytes.
		for _, b := range bufs {
			if len(joined) > 0 && len(joined)+len(b) > joinedWriteBytes {
				if _, err := c.nc.Write(joined); err != nil {
					return
				}
				joined = joined[:0]
			}
			joined = append(joined, b...)
		}
		if _, err := c.nc.Write(joined); err != nil {
			return
		}
		if cap(joined) > joinedWriteBytes {
			joined = nil // a large frame's buffer is not kept
		} else {
			joined = joined[:0]
		}
	}
}

// joinedWriteBytes bounds the writes of frames joined for a TLS
// connection: four TLS records.
const joinedWriteBytes = 64 << 10

func sessionHex(id int64) string { return fmt.Sprintf("0x%x", uint64(id)) }

// epoch is the origin of nanotime.
var epoch = time.Now()

// nanotime is a monotonic clock reading for latencies.
func nanotime() int64 { return int64(time.Since(epoch)) }
