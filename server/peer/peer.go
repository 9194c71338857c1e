package peer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// peer is one other server, as seen from this one. Its goroutines, all
// started by start and all ending with ctx:
//
//   - runStream dials the peer and writes its queue to the connection; while
//     connected, a watcher goroutine waits for the peer to close it;
//   - runSnapshots sends snapshots, one at a time, each on a connection of
//     its own;
//   - runReports calls Unreachable and SnapshotStatus for what Send
//     dropped, so that Send, called from the raft loop, never calls back
//     into it.
//
// Connections from the peer are served by the transport's goroutines and
// tracked in in and inSnap.
type peer struct {
	t      *Transport
	id     uint64
	ctx    context.Context
	cancel context.CancelFunc

	addrMu sync.Mutex
	addr   string

	// queue holds what waits to be written to the stream connection.
	queue chan outgoing
	// snapc holds a snapshot waiting for the one being sent.
	snapc chan outSnapshot
	// redial asks runStream to connect again (the address changed).
	redial chan struct{}
	// wakeup cuts runStream's wait before it dials again short: the peer
	// has just connected to this server, so it is up.
	wakeup chan struct{}
	// unreachable, snapDropped and lost wake runReports.
	unreachable chan struct{}
	snapDropped chan struct{}
	lost        chan struct{}

	// connected is set while the stream connection is up: Send drops at
	// once otherwise, rather than fill the queue for a peer that is down.
	connected atomic.Bool
	// secure is set while the stream connection is up and TLS.
	secure atomic.Bool
	// cutOut drops every message to the peer, cutIn every message from
	// it (Transport.Cut, CutSends).
	cutOut, cutIn atomic.Bool
	// trusted is whether the peer's messages are taken. With Config.Auth
	// it is set once this server has connected to the peer, and cleared
	// while the peer refuses this server's authentication: a server
	// that cannot authenticate to its peers must not follow what they
	// say either (it would serve as a member of the ensemble while
	// nothing it sends gets through).
	trusted atomic.Bool

	in, inSnap slot

	sent, sentBytes         atomic.Uint64
	dropped, droppedBytes   atomic.Uint64
	received, receivedBytes atomic.Uint64
	snapsSent, snapsFailed  atomic.Uint64
	snapsReceived           atomic.Uint64
}

// outSnapshot is a MsgSnap to send (its Snapshot.Data empty) and the
// reader of its data, which the sender closes.
type outSnapshot struct {
	m    raftpb.Message
	data io.ReadCloser
	size int64
}

// outgoing is a queued message: raft's, or the application's.
type outgoing struct {
	m     raftpb.Message
	app   []byte
	isApp bool
}

func (o *outgoing) size() int {
	if o.isApp {
		return headerSize + len(o.app)
	}
	return headerSize + o.m.Size()
}

func newPeer(t *Transport, id uint64, addr string) *peer {
	p := &peer{
		t:           t,
		id:          id,
		addr:        addr,
		queue:       make(chan outgoing, t.cfg.QueueLen),
		snapc:       make(chan outSnapshot, 1),
		redial:      make(chan struct{}, 1),
		wakeup:      make(chan struct{}, 1),
		unreachable: make(chan struct{}, 1),
		snapDropped: make(chan struct{}, 1),
		lost:        make(chan struct{}, 1),
	}
	p.ctx, p.cancel = context.WithCancel(t.ctx)
	p.trusted.Store(t.cfg.Auth == nil)
	return p
}

// wake has runStream dial at once if it is waiting to, and this server
// does not take the peer's messages yet.
func (p *peer) wake() {
	if !p.trusted.Load() {
		signal(p.wakeup)
	}
}

// takes reports whether the peer's messages are handed over.
func (p *peer) takes() bool { return p.trusted.Load() && !p.cutIn.Load() }

// start starts the peer's goroutines. Called with t.mu held, before Close.
func (p *peer) start() {
	p.t.wg.Go(p.runStream)
	p.t.wg.Go(p.runSnapshots)
	p.t.wg.Go(p.runReports)
}

func (p *peer) address() string {
	p.addrMu.Lock()
	defer p.addrMu.Unlock()
	return p.addr
}

func (p *peer) setAddr(addr string) {
	p.addrMu.Lock()
	p.addr = addr
	p.addrMu.Unlock()
	signal(p.redial)
}

// signal wakes the goroutine waiting on c, unless it is already due to
// wake: signals coalesce.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (p *peer) enqueue(o outgoing) {
	if !p.connected.Load() || p.cutOut.Load() {
		p.drop(&o)
		return
	}
	select {
	case p.queue <- o:
	default:
		p.drop(&o)
	}
}

func (p *peer) drop(o *outgoing) {
	p.dropped.Add(1)
	p.droppedBytes.Add(uint64(o.size()))
	signal(p.unreachable)
}

func (p *peer) sendSnapshot(s outSnapshot) {
	if p.cutOut.Load() {
		s.data.Close()
		p.snapsFailed.Add(1)
		p.dropped.Add(1)
		signal(p.snapDropped)
		return
	}
	select {
	case p.snapc <- s:
	default:
		// Raft sends one snapshot at a time to a peer, until told how the
		// last one ended; a second one waiting means raft moved on.
		s.data.Close()
		p.snapsFailed.Add(1)
		p.dropped.Add(1)
		signal(p.snapDropped)
	}
}

func (p *peer) stats() PeerStats {
	return PeerStats{
		ID:                p.id,
		Addr:              p.address(),
		Connected:         p.connected.Load(),
		TLS:               p.secure.Load(),
		Inbound:           p.in.active(),
		Queued:            len(p.queue),
		Sent:              p.sent.Load(),
		SentBytes:         p.sentBytes.Load(),
		Dropped:           p.dropped.Load(),
		DroppedBytes:      p.droppedBytes.Load(),
		Received:          p.received.Load(),
		ReceivedBytes:     p.receivedBytes.Load(),
		SnapshotsSent:     p.snapsSent.Load(),
		SnapshotsFailed:   p.snapsFailed.Load(),
		SnapshotsReceived: p.snapsReceived.Load(),
	}
}

func (p *peer) runReports() {
	cfg := &p.t.cfg
	for {
		select {
		case <-p.unreachable:
			if cfg.Unreachable != nil {
				cfg.Unreachable(p.id)
			}
		case <-p.snapDropped:
			if cfg.SnapshotStatus != nil {
				cfg.SnapshotStatus(p.id, true)
			}
		case <-p.lost:
			if cfg.Lost != nil {
				cfg.Lost(p.id)
			}
		case <-p.ctx.Done():
			return
		}
	}
}

// runStream keeps a stream connection to the peer and writes the queue to
// it.
func (p *peer) runStream() {
	log := p.t.log.With("peer", p.id)
	var b backoff
	var lastErr string
	for {
		// The address read next is the newest: a request to redial made
		// before it is met already.
		select {
		case <-p.redial:
		default:
		}
		addr := p.address()
		conn, stop, err := p.dial(addr, kindStream)
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			msg := "cannot connect to peer"
			if errors.Is(err, ErrUnauthenticated) {
				p.trusted.Store(false)
				msg = "cannot authenticate to peer: its messages are dropped until this server can"
			}
			// A peer that is down is retried every MaxBackoff: say so
			// once, not every time.
			level := slog.LevelDebug
			if s := err.Error(); s != lastErr {
				lastErr = s
				level = slog.LevelWarn
			}
			log.Log(p.ctx, level, msg, "addr", addr, "reason", failureReason(err), "err", err)
			if !p.pause(&b) {
				return
			}
			continue
		}
		b.reset()
		lastErr = ""
		p.trusted.Store(true)
		log.Info("connected to peer", "addr", addr, "tls", isTLS(conn))
		p.secure.Store(isTLS(conn))
		err = p.stream(conn)
		p.secure.Store(false)
		stop()
		conn.Close()
		if p.ctx.Err() != nil {
			return
		}
		log.Info("connection to peer lost", "addr", addr, "err", err)
		signal(p.lost)
		if !p.pause(&b) {
			return
		}
	}
}

// pause waits before the next dial, cut short by a new address; it returns
// false once the peer is stopped.
func (p *peer) pause(b *backoff) bool {
	select {
	case <-time.After(b.next(p.t.cfg.MaxBackoff)):
		return true
	case <-p.redial:
		return true
	case <-p.wakeup:
		return true
	case <-p.ctx.Done():
		return false
	}
}

var (
	errPeerClosed = errors.New("peer closed the connection")
	errRedial     = errors.New("peer address changed")
)

// stream writes the queue to conn until it breaks. Messages are written
// through a buffer, which is flushed whenever the queue is empty: a burst
// goes out in few system calls, a lone heartbeat at once.
func (p *peer) stream(conn net.Conn) error {
	broken := make(chan struct{})
	p.t.wg.Go(func() {
		// The receiver never writes on a stream connection after the
		// handshake: a read ends only when it closes or goes away.
		var b [1]byte
		conn.Read(b[:])
		close(broken)
	})
	defer func() {
		conn.Close()
		<-broken
		p.connected.Store(false)
		// What is queued now has no connection to go on.
		for {
			select {
			case o := <-p.queue:
				p.drop(&o)
			default:
				return
			}
		}
	}()
	p.connected.Store(true)
	bw := bufio.NewWriterSize(deadlineWriter{conn, p.t.cfg.IOTimeout}, 64<<10)
	var scratch []byte
	write := func(o *outgoing) error {
		// A frame that fits is encoded straight into the buffer; a larger
		// one into scratch, which bufio then writes through.
		inBuf := o.size() <= bw.Available()
		dst := scratch[:0]
		if inBuf {
			dst = bw.AvailableBuffer()
		}
		b, err := p.encode(dst, o)
		if err != nil {
			// Too large for the peer to accept: it would only break the
			// connection.
			p.t.log.Warn("dropped a message to peer", "peer", p.id, "err", err)
			p.drop(o)
			return nil
		}
		if _, err := bw.Write(b); err != nil {
			return err
		}
		p.sent.Add(1)
		p.sentBytes.Add(uint64(len(b)))
		if !inBuf {
			// Keep the grown scratch, unless a rare huge frame grew it.
			scratch = b
			if cap(scratch) > 4*chunkSize {
				scratch = nil
			}
		}
		return nil
	}
	for {
		select {
		case o := <-p.queue:
			// Everything queued now goes out with one flush.
			for more := true; more; {
				if err := write(&o); err != nil {
					return err
				}
				select {
				case o = <-p.queue:
				default:
					more = false
				}
			}
			if err := bw.Flush(); err != nil {
				return err
			}
		case <-broken:
			return errPeerClosed
		case <-p.redial:
			return errRedial
		case <-p.ctx.Done():
			return p.ctx.Err()
		}
	}
}

// encode appends the frame of o to b.
func (p *peer) encode(b []byte, o *outgoing) ([]byte, error) {
	if o.isApp {
		if len(o.app) > p.t.cfg.MaxFrame {
			return b, fmt.Errorf("app message of %d bytes, over the limit of %d", len(o.app), p.t.cfg.MaxFrame)
		}
		b = appendHeader(b, frameApp, len(o.app))
		return append(b, o.app...), nil
	}
	if n := o.m.Size(); n > p.t.cfg.MaxFrame {
		return b, fmt.Errorf("%v of %d bytes, over the limit of %d", o.m.Type, n, p.t.cfg.MaxFrame)
	}
	return appendRaftFrame(b, &o.m)
}

// dial connects to the peer and makes the handshake. The connection is
// closed when the peer is stopped until stop is called.
func (p *peer) dial(addr string, kind connKind) (conn net.Conn, stop func() bool, err error) {
	cfg := &p.t.cfg
	d := net.Dialer{Timeout: cfg.HandshakeTimeout, KeepAliveConfig: keepAlive, LocalAddr: p.t.localAddr}
	raw, err := d.DialContext(p.ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	// Closing the TCP connection ends a TLS one at once, whatever it is
	// doing.
	stop = context.AfterFunc(p.ctx, func() { raw.Close() })
	fail := func(err error) (net.Conn, func() bool, error) {
		stop()
		raw.Close()
		return nil, nil, err
	}
	if err := raw.SetDeadline(time.Now().Add(cfg.HandshakeTimeout)); err != nil {
		return fail(err)
	}
	conn, err = p.secureOutgoing(raw, addr)
	if err != nil {
		return fail(err)
	}
	h := hello{version: wireVersion, kind: kind, from: cfg.ID, to: p.id}
	var ex ClientExchange
	if cfg.Auth != nil && cfg.Auth.Dial != nil {
		ex = cfg.Auth.Dial(p.id)
		h.flags |= flagAuthenticate
	}
	if _, err := conn.Write(appendBlock(h.append(nil), p.t.describe())); err != nil {
		return fail(fmt.Errorf("handshake: %w", err))
	}
	r, err := readReply(conn)
	if err != nil {
		return fail(err)
	}
	authenticated := false
	if r.status == statusAuthenticate && ex != nil {
		if err := dialAuth(conn, ex, p.id); err != nil {
			return fail(err)
		}
		authenticated = true
		if r, err = readReply(conn); err != nil {
			return fail(err)
		}
	}
	if r.status == statusAuthenticate {
		return fail(r.status.err())
	}
	desc, refusal, err := readAnswer(conn)
	if err != nil {
		return fail(err)
	}
	switch {
	case r.status == statusUnauthenticated:
		reason := "(no reason given)"
		if refusal != nil {
			reason = refusal.Reason
		}
		return fail(fmt.Errorf("%w: server %d refused this server: %s", ErrUnauthenticated, p.id, reason))
	case ex != nil && !authenticated && (r.status == statusAccepted || r.status == statusRefused):
		// A receiver that takes, or judges, this server without an
		// exchange has not proved itself: what it says is not trusted.
		return fail(fmt.Errorf("%w: server %d answered without authenticating this server, which requires it: it does not run SASL between servers", ErrUnauthenticated, p.id))
	}
	if r.status == statusRefused {
		if refusal == nil {
			return fail(fmt.Errorf("%w: a refusal without a reason", errProtocol))
		}
		if cfg.Refused != nil {
			cfg.Refused(p.id, refusal)
		}
		return fail(refusal)
	}
	if r.status == statusBadName && refusal != nil {
		return fail(fmt.Errorf("%w: %s", ErrBadName, refusal.Reason))
	}
	if err := r.status.err(); err != nil {
		return fail(err)
	}
	if cfg.Admit != nil {
		if refusal := cfg.Admit(p.id, desc); refusal != nil {
			return fail(fmt.Errorf("%w: %w", errRefusedPeer, refusal))
		}
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return fail(err)
	}
	return conn, stop, nil
}

// readReply reads the 8 bytes of a reply and checks its version.
func readReply(conn net.Conn) (reply, error) {
	var b [replySize]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		return reply{}, fmt.Errorf("handshake: %w", err)
	}
	r, err := parseReply(b[:])
	if err != nil {
		return reply{}, err
	}
	if r.version != wireVersion {
		return reply{}, fmt.Errorf("%w: the peer speaks version %d, this server %d", ErrBadVersion, r.version, wireVersion)
	}
	return r, nil
}

// runSnapshots sends the snapshots raft hands to Send, one at a time.
func (p *peer) runSnapshots() {
	log := p.t.log.With("peer", p.id)
	for {
		select {
		case s := <-p.snapc:
			start := time.Now()
			err := p.transferSnapshot(s)
			s.data.Close()
			if p.ctx.Err() != nil {
				return
			}
			if err != nil {
				p.snapsFailed.Add(1)
				log.Warn("sending a snapshot failed", "index", s.m.Snapshot.Metadata.Index, "err", err)
			} else {
				p.snapsSent.Add(1)
				log.Info("sent a snapshot", "index", s.m.Snapshot.Metadata.Index, "bytes", s.size, "took", time.Since(start))
			}
			if sf := p.t.cfg.SnapshotStatus; sf != nil {
				sf(p.id, err != nil)
			}
		case <-p.ctx.Done():
			return
		}
	}
}

// transferSnapshot sends s on a new connection, its data streamed from its
// reader, and waits until the peer has handed it to raft.
func (p *peer) transferSnapshot(s outSnapshot) error {
	cfg := &p.t.cfg
	m := &s.m
	if m.Snapshot == nil {
		return errors.New("snapshot message without a snapshot")
	}
	if s.size > cfg.MaxSnapshot {
		return fmt.Errorf("snapshot of %d bytes, over the limit of %d", s.size, cfg.MaxSnapshot)
	}
	header, err := snapshotHeader(m, s.size)
	if err != nil {
		return err
	}
	if len(header)-headerSize-snapLenSize > cfg.MaxFrame {
		return fmt.Errorf("snapshot message of %d bytes, over the limit of %d", len(header), cfg.MaxFrame)
	}
	conn, stop, err := p.dial(p.address(), kindSnapshot)
	if err != nil {
		return err
	}
	defer stop()
	defer conn.Close()
	w := deadlineWriter{conn, cfg.IOTimeout}
	if _, err := w.Write(header); err != nil {
		return err
	}
	buf := make([]byte, chunkSize)
	for left := s.size; left > 0; {
		n, err := io.ReadFull(s.data, buf[:min(left, chunkSize)])
		if err != nil {
			return fmt.Errorf("read the snapshot: %w", unexpected(err))
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		left -= int64(n)
		if h := snapshotChunkHook; h != nil {
			h(p.id)
		}
	}
	if err := conn.SetReadDeadline(time.Now().Add(cfg.IOTimeout)); err != nil {
		return err
	}
	var ack [1]byte
	if _, err := io.ReadFull(conn, ack[:]); err != nil {
		return fmt.Errorf("no acknowledgement: %w", err)
	}
	if status(ack[0]) != statusAccepted {
		return fmt.Errorf("%w: snapshot acknowledgement %d", errProtocol, ack[0])
	}
	p.sent.Add(1)
	p.sentBytes.Add(uint64(int64(len(header)) + s.size))
	return nil
}

// snapshotChunkHook, when set by a test, is called after each chunk of
// snapshot data is written.
var snapshotChunkHook func(to uint64)

// deadlineWriter bounds every write to a connection: a peer that stops
// reading (or a host that vanished) fails the write rather than hold the
// writer forever.
type deadlineWriter struct {
	conn    net.Conn
	timeout time.Duration
}

func (w deadlineWriter) Write(b []byte) (int, error) {
	if err := w.conn.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		return 0, err
	}
	return w.conn.Write(b)
}

// slot holds the one connection of a kind a peer may have to this server:
// a newer connection replaces an older one (the peer redialled after
// losing it, maybe before this side noticed), which is closed, and waited
// for, so that messages are handed over in the order they were sent.
type slot struct {
	mu   sync.Mutex
	cur  *held
	open atomic.Bool
}

type held struct {
	conn net.Conn
	done chan struct{}
}

// claim makes conn the slot's connection once the previous one is served
// no more. release must be called when conn is done with.
func (s *slot) claim(conn net.Conn) (release func()) {
	h := &held{conn: conn, done: make(chan struct{})}
	s.mu.Lock()
	prev := s.cur
	s.cur = h
	s.open.Store(true)
	s.mu.Unlock()
	if prev != nil {
		prev.conn.Close()
		<-prev.done
	}
	return func() {
		s.mu.Lock()
		if s.cur == h {
			s.cur = nil
			s.open.Store(false)
		}
		s.mu.Unlock()
		close(h.done)
	}
}

func (s *slot) active() bool { return s.open.Load() }

// backoff is a capped exponential backoff with jitter, so that the servers
// of an ensemble restarted together do not redial in step.
type backoff struct{ n int }

func (b *backoff) next(maxWait time.Duration) time.Duration {
	base := min(minBackoff, maxWait)
	d := base << min(b.n, 20)
	if d > maxWait || d <= 0 {
		d = maxWait
	} else {
		b.n++
	}
	return d/2 + rand.N(d/2+1)
}

func (b *backoff) reset() { b.n = 0 }
