package peer

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// Defaults of Config.
const (
	DefaultMaxFrame         = 64 << 20
	DefaultMaxSnapshot      = 4 << 30
	DefaultQueueLen         = 4096
	DefaultHandshakeTimeout = 5 * time.Second
	DefaultIOTimeout        = 10 * time.Second
	DefaultMaxBackoff       = 2 * time.Second
)

// minBackoff is the first wait before redialling a peer.
const minBackoff = 50 * time.Millisecond

// keepAlive detects a peer host that vanished without closing its
// connections (power loss, a partition) within about 20 seconds: streams
// may be idle for long, so there is no read deadline to notice it.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 5 * time.Second, Count: 3}

// Errors of the Transport's methods.
var (
	// ErrClosed is returned by methods of a closed Transport.
	ErrClosed = errors.New("peer: transport closed")
	// ErrUnknownPeer is returned for an id that is not a peer.
	ErrUnknownPeer = errors.New("peer: unknown peer")
	// ErrPeerExists is returned by AddPeer for an id already a peer.
	ErrPeerExists = errors.New("peer: peer already exists")
)

// Config configures a Transport.
type Config struct {
	// ID is this server's id (myid). Not zero.
	ID uint64
	// Describe returns what this server says about itself in each
	// handshake, either way (at most MaxDescription bytes). Nil says
	// nothing.
	Describe func() []byte
	// Admit judges the description of a peer in each handshake, either
	// way, before any message passes; a non-nil Refusal closes the
	// connection, and when this server is the receiver, the peer is told
	// why (Refused). Nil admits every peer. Called from the transport's
	// goroutines.
	Admit func(peer uint64, desc []byte) *Refusal
	// Refused is told when a peer refused this server's connection with
	// a Refusal. Called from the transport's goroutines; nil ignores it.
	Refused func(peer uint64, r *Refusal)
	// Auth authenticates the servers to each other in every handshake,
	// before descriptions are judged; nil neither authenticates nor runs
	// exchanges for diallers that ask. With Auth, a peer's messages are
	// taken only once this server has connected to it, and not while it
	// refuses this server's authentication.
	Auth *Auth
	// Listen is the address to listen on for peers, host:peerPort.
	Listen string
	// Peers are the other servers, id to host:peerPort. An entry for ID
	// itself is ignored, so the server list of the configuration can be
	// passed whole.
	Peers map[uint64]string

	// Raft is called with every raft message received, in the order each
	// peer sent them (snapshots, which travel apart, excepted). It is
	// called from the transport's goroutines, one per connection; while it
	// blocks, that peer's messages wait (and its sender eventually drops).
	// It must return once the receiving node has stopped, or Close waits
	// for it. Required.
	Raft func(m raftpb.Message)
	// StoreSnapshot, if set, receives the data of each snapshot as it
	// arrives, to write it where the node will find it (m's Snapshot.Data
	// is empty); Raft is then called with m once it returns nil. Without
	// it the data is read into memory and handed to Raft in m. It is
	// called from the snapshot connection's goroutine.
	StoreSnapshot func(m raftpb.Message, data io.Reader) error
	// App is called with every application message received, in order
	// with the raft messages of the same peer. data is the callee's. Nil
	// discards them.
	App func(from uint64, data []byte)
	// Unreachable is told when a message to id was dropped (no connection,
	// or its queue full): raft's ReportUnreachable. Reports of one peer
	// are coalesced while one is being made. Called from the transport's
	// goroutines, never from Send; nil ignores them.
	Unreachable func(id uint64)
	// SnapshotStatus is told when sending a snapshot to id ended: raft's
	// ReportSnapshot. Called from the transport's goroutines, never from
	// Send; nil ignores them.
	SnapshotStatus func(id uint64, failed bool)
	// Lost is told when the stream connection to id broke: the peer
	// closed it or went away. A follower that loses its leader this way
	// need not wait for raft's election timeout to suspect it. Called from
	// the transport's goroutines; nil ignores it.
	Lost func(id uint64)

	// TLS, when set, secures the connections between servers (see
	// TLS); nil keeps them all plaintext, and a peer that begins a TLS
	// handshake is refused.
	TLS *TLS

	Logger *slog.Logger

	// MaxFrame bounds every frame but the data of a snapshot, in both
	// directions (DefaultMaxFrame; at most 4 GiB - 1).
	MaxFrame int
	// MaxSnapshot bounds the data of a snapshot (DefaultMaxSnapshot).
	MaxSnapshot int64
	// QueueLen is the number of messages that may wait to be sent to one
	// peer (DefaultQueueLen); beyond it messages are dropped.
	QueueLen int
	// HandshakeTimeout bounds dialling and the handshake, both ways
	// (DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// IOTimeout is how long a write, a frame begun, or a snapshot transfer
	// may make no progress before its connection is closed
	// (DefaultIOTimeout).
	IOTimeout time.Duration
	// MaxBackoff caps the wait between two attempts to connect to a peer
	// (DefaultMaxBackoff).
	MaxBackoff time.Duration
}

// Transport carries messages between the servers of an ensemble. Its
// methods are safe for concurrent use.
//
// Its goroutines, all counted in wg and all ending with ctx: accept, one
// serve per incoming connection (which calls Raft and App), and those of
// each peer (see peer). Close cancels ctx, which closes every connection
// through context.AfterFunc, so that no goroutine stays blocked in I/O.
type Transport struct {
	cfg Config
	log *slog.Logger
	ln  net.Listener
	// localAddr is the address connections to peers come from: the
	// listener's, when it listens on one address, so that peers see this
	// server at the address its server.N line gives (their logs name it,
	// and a certificate for it passes their name check) rather than at
	// whatever address routing picks, 127.0.0.1 for every loopback
	// address. Nil when listening on all addresses.
	localAddr net.Addr

	// ctx ends at Close; every connection and goroutine hangs off it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// peers is replaced whole under mu, so Send reads it without locking.
	peers atomic.Pointer[map[uint64]*peer]
	// refusals limits the logging of refused handshakes.
	refusals logLimiter

	mu      sync.Mutex // guards started, closed and the writes of peers
	started bool
	closed  bool

	isClosed       atomic.Bool
	unknownDropped atomic.Uint64
	rejected       atomic.Uint64

	closeOnce sync.Once
}

// New checks cfg and listens on cfg.Listen. Nothing is accepted, dialled or
// called back before Start, so the handlers may refer to a raft node that
// is created after the transport (it needs the transport to send).
func New(cfg Config) (*Transport, error) {
	if cfg.ID == 0 {
		return nil, errors.New("peer: ID must not be 0")
	}
	if cfg.Raft == nil {
		return nil, errors.New("peer: Raft handler is required")
	}
	if cfg.TLS != nil && cfg.TLS.Config == nil {
		return nil, errors.New("peer: TLS.Config is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = DefaultMaxFrame
	}
	cfg.MaxFrame = min(cfg.MaxFrame, math.MaxUint32)
	if cfg.MaxSnapshot <= 0 {
		cfg.MaxSnapshot = DefaultMaxSnapshot
	}
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = DefaultQueueLen
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.IOTimeout <= 0 {
		cfg.IOTimeout = DefaultIOTimeout
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	t := &Transport{cfg: cfg, log: cfg.Logger.With("component", "peer")}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	peers := make(map[uint64]*peer, len(cfg.Peers))
	for id, addr := range cfg.Peers {
		if id == cfg.ID {
			continue
		}
		if err := checkPeer(id, addr); err != nil {
			t.cancel()
			return nil, err
		}
		peers[id] = newPeer(t, id, addr)
	}
	t.peers.Store(&peers)
	lc := net.ListenConfig{KeepAliveConfig: keepAlive}
	ln, err := lc.Listen(t.ctx, "tcp", cfg.Listen)
	if err != nil {
		t.cancel()
		return nil, fmt.Errorf("peer: listen: %w", err)
	}
	t.ln = ln
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsUnspecified() {
		t.localAddr = &net.TCPAddr{IP: a.IP, Zone: a.Zone}
	}
	return t, nil
}

func checkPeer(id uint64, addr string) error {
	if id == 0 {
		return errors.New("peer: peer id must not be 0")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("peer: address of peer %d: %w", id, err)
	}
	return nil
}

// Addr returns the address the transport listens on.
func (t *Transport) Addr() net.Addr { return t.ln.Addr() }

// Start accepts peers' connections and connects to the peers. Calling it
// again, or after Close, does nothing.
func (t *Transport) Start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started || t.closed {
		return
	}
	t.started = true
	t.wg.Go(t.accept)
	for _, p := range *t.peers.Load() {
		p.start()
	}
	t.log.Info("peer transport started", "id", t.cfg.ID, "addr", t.ln.Addr().String(), "peers", len(*t.peers.Load()))
}

// Close stops accepting, closes every connection, and returns once every
// goroutine of the transport has exited (handlers included). Messages not
// yet sent are lost. It is safe to call more than once.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		t.isClosed.Store(true)
		t.cancel()
		t.ln.Close()
	})
	t.wg.Wait()
	return nil
}

// Send queues raft messages for their peers and returns at once: it never
// waits for a network or a peer. A message to a peer that is not connected,
// or whose queue is full, is dropped, and Unreachable told (raft resends);
// a MsgSnap goes on a connection of its own and ends with SnapshotStatus.
// Messages to ids that are not peers are dropped and counted. Send keeps
// no reference to msgs itself, only to the messages' contents.
func (t *Transport) Send(msgs []raftpb.Message) {
	if t.isClosed.Load() {
		return
	}
	peers := *t.peers.Load()
	for i := range msgs {
		m := &msgs[i]
		p := peers[m.To]
		switch {
		case p == nil:
			t.unknownDropped.Add(1)
			t.log.Debug("dropped message to an unknown peer", "peer", m.To, "type", m.Type)
		case m.Type == raftpb.MsgSnap:
			var data []byte
			if m.Snapshot != nil {
				data = m.Snapshot.Data
			}
			p.sendSnapshot(outSnapshot{m: *m, data: io.NopCloser(bytes.NewReader(data)), size: int64(len(data))})
		default:
			p.enqueue(outgoing{m: *m})
		}
	}
}

// SendSnapshot queues a MsgSnap whose data is read from data, size bytes,
// as the connection takes it: a snapshot of hundreds of megabytes is
// never held in memory. m's Snapshot.Data is not sent. The transport
// closes data, and reports how the transfer ended as for Send.
func (t *Transport) SendSnapshot(m raftpb.Message, data io.ReadCloser, size int64) {
	p := (*t.peers.Load())[m.To]
	if t.isClosed.Load() || p == nil || m.Type != raftpb.MsgSnap || m.Snapshot == nil {
		data.Close()
		if p == nil {
			t.unknownDropped.Add(1)
		}
		return
	}
	p.sendSnapshot(outSnapshot{m: m, data: data, size: size})
}

// errCut refuses a snapshot from a peer whose link is cut, or whose
// messages this server does not take (see peer.trusted).
var errCut = errors.New("peer: the link to this peer is cut")

// Cut drops (cut true) or lets through again (false) every message to and
// from peer id, as a network partition would, while the connections stay
// up. It is for tests that partition an ensemble.
func (t *Transport) Cut(id uint64, cut bool) error {
	p, err := t.lookup(id)
	if err != nil {
		return err
	}
	p.cutOut.Store(cut)
	p.cutIn.Store(cut)
	return nil
}

// CutSends drops (cut true) or lets through again (false) every message to
// peer id, while those from it still arrive: one direction of a link fails,
// as in an asymmetric partition. It is for tests.
func (t *Transport) CutSends(id uint64, cut bool) error {
	p, err := t.lookup(id)
	if err != nil {
		return err
	}
	p.cutOut.Store(cut)
	return nil
}

// lookup returns the peer of id, or ErrUnknownPeer when id is not one.
func (t *Transport) lookup(id uint64) (*peer, error) {
	if p := (*t.peers.Load())[id]; p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownPeer, id)
}

// SendApp queues an application message for peer to, as Send does; it is
// delivered in order with the raft messages sent to that peer. data must
// not be changed afterwards. It returns ErrUnknownPeer for an id that is
// not a peer; a message dropped for any other reason is reported to
// Unreachable and counted.
func (t *Transport) SendApp(to uint64, data []byte) error {
	if t.isClosed.Load() {
		return ErrClosed
	}
	p, err := t.lookup(to)
	if err != nil {
		t.unknownDropped.Add(1)
		return err
	}
	p.enqueue(outgoing{app: data, isApp: true})
	return nil
}

// AddPeer makes id a peer at addr, host:peerPort.
func (t *Transport) AddPeer(id uint64, addr string) error {
	if id == t.cfg.ID {
		return fmt.Errorf("peer: %d is this server", id)
	}
	if err := checkPeer(id, addr); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	old := *t.peers.Load()
	if old[id] != nil {
		return fmt.Errorf("%w: %d", ErrPeerExists, id)
	}
	peers := maps.Clone(old)
	p := newPeer(t, id, addr)
	peers[id] = p
	t.peers.Store(&peers)
	if t.started {
		p.start()
	}
	return nil
}

// RemovePeer forgets peer id: what is queued for it is dropped, its
// connections are closed, and it is refused from then on. It does not wait
// for the peer's goroutines (they may be calling back into the caller);
// Close does.
func (t *Transport) RemovePeer(id uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	old := *t.peers.Load()
	p := old[id]
	if p == nil {
		return fmt.Errorf("%w: %d", ErrUnknownPeer, id)
	}
	peers := maps.Clone(old)
	delete(peers, id)
	t.peers.Store(&peers)
	p.cancel()
	return nil
}

// UpdatePeer changes the address of peer id; its connection is made again
// to the new address. A snapshot being sent finishes on the old one.
func (t *Transport) UpdatePeer(id uint64, addr string) error {
	if err := checkPeer(id, addr); err != nil {
		return err
	}
	if t.isClosed.Load() {
		return ErrClosed
	}
	p, err := t.lookup(id)
	if err != nil {
		return err
	}
	p.setAddr(addr)
	return nil
}

// Stats are counters of a transport, for operators.
type Stats struct {
	ID   uint64
	Addr string
	// Peers are ordered by id.
	Peers []PeerStats
	// UnknownDropped counts messages sent to ids that are not peers.
	UnknownDropped uint64
	// Rejected counts incoming connections closed for a refused or broken
	// handshake or a frame that broke the wire format.
	Rejected uint64
}

// PeerStats are the counters of one peer. Messages count as sent once
// handed to the connection; those lost with a connection that broke
// afterwards are not counted as dropped.
type PeerStats struct {
	ID   uint64
	Addr string
	// Connected is whether the connection to the peer is up; Inbound,
	// whether the peer's connection to this server is.
	Connected, Inbound bool
	// TLS is whether the connection to the peer is TLS.
	TLS bool
	// Queued is the number of messages waiting to be sent.
	Queued int
	// Message and byte counts; bytes count whole frames.
	Sent, SentBytes         uint64
	Dropped, DroppedBytes   uint64
	Received, ReceivedBytes uint64
	// Snapshots sent (and acknowledged), failed to send, and received.
	SnapshotsSent, SnapshotsFailed, SnapshotsReceived uint64
}

// Stats returns the transport's counters.
func (t *Transport) Stats() Stats {
	s := Stats{
		ID:             t.cfg.ID,
		Addr:           t.ln.Addr().String(),
		UnknownDropped: t.unknownDropped.Load(),
		Rejected:       t.rejected.Load(),
	}
	for _, p := range *t.peers.Load() {
		s.Peers = append(s.Peers, p.stats())
	}
	slices.SortFunc(s.Peers, func(a, b PeerStats) int { return cmp.Compare(a.ID, b.ID) })
	return s
}

// accept serves incoming connections until Close.
func (t *Transport) accept() {
	var b backoff
	for {
		conn, err := t.ln.Accept()
		if err != nil {
			if t.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, most likely: wait rather than spin.
			d := b.next(t.cfg.MaxBackoff)
			t.log.Warn("cannot accept peer connections", "err", err, "retry_in", d)
			select {
			case <-time.After(d):
			case <-t.ctx.Done():
				return
			}
			continue
		}
		b.reset()
		t.wg.Go(func() { t.serve(conn) })
	}
}

// serve handles one incoming connection: the handshake, then frames until
// the connection ends.
func (t *Transport) serve(raw net.Conn) {
	// Closing the TCP connection ends a TLS one at once, without the
	// close_notify alert a TLS Close would try to write.
	defer raw.Close()
	stop := context.AfterFunc(t.ctx, func() { raw.Close() })
	defer stop()
	remote := raw.RemoteAddr().String()
	p, kind, conn, err := t.accepted(raw)
	if err != nil {
		if t.ctx.Err() == nil {
			t.rejected.Add(1)
			// A refused peer redials every MaxBackoff: say why once a
			// minute, not every time.
			level := slog.LevelDebug
			if t.refusals.fresh(logKey(remote, err), time.Now()) {
				level = slog.LevelWarn
			}
			t.log.Log(t.ctx, level, "peer connection refused", "addr", remote, "reason", failureReason(err), "err", err)
		}
		return
	}
	// Removing the peer ends its connections.
	stopPeer := context.AfterFunc(p.ctx, func() { raw.Close() })
	defer stopPeer()
	log := t.log.With("peer", p.id, "addr", remote)
	br := bufio.NewReaderSize(conn, 64<<10)
	fr := &frameReader{br: br, conn: conn, timeout: t.cfg.IOTimeout, maxFrame: t.cfg.MaxFrame}
	switch kind {
	case kindStream:
		release := p.in.claim(raw)
		defer release()
		log.Info("peer connected to this server", "tls", isTLS(conn))
		err = t.readStream(p, fr)
	case kindSnapshot:
		release := p.inSnap.claim(raw)
		defer release()
		err = t.readSnapshot(p, fr, conn)
	}
	switch {
	case t.ctx.Err() != nil || p.ctx.Err() != nil:
	case errors.Is(err, errProtocol):
		t.rejected.Add(1)
		log.Warn("closed a peer connection that broke the protocol", "kind", kind, "err", err)
	case kind == kindStream:
		log.Info("peer connection to this server lost", "err", err)
	case err != nil:
		log.Warn("receiving a snapshot failed", "err", err)
	}
}

// logLimiter tells whether a message was not logged in the last minute.
type logLimiter struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func (l *logLimiter) fresh(msg string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.last[msg]; ok && now.Sub(at) < time.Minute {
		return false
	}
	if l.last == nil || len(l.last) >= 256 {
		l.last = make(map[string]time.Time)
	}
	l.last[msg] = now
	return true
}

// describe returns this server's description.
func (t *Transport) describe() []byte {
	if t.cfg.Describe == nil {
		return nil
	}
	return t.cfg.Describe()
}

// errRefusedPeer marks a connection this server refused through
// Config.Admit.
var errRefusedPeer = errors.New("this server refused the peer")

// accepted makes the handshakes of an incoming connection, TLS's if it
// begins one and then the hello's, and returns the connection to read
// frames from.
func (t *Transport) accepted(conn net.Conn) (*peer, connKind, net.Conn, error) {
	if err := conn.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout)); err != nil {
		return nil, 0, nil, err
	}
	conn, tc, err := t.secureIncoming(conn)
	if err != nil {
		return nil, 0, nil, err
	}
	p, kind, err := t.handshake(conn, tc)
	return p, kind, conn, err
}

// handshake reads the hello of an incoming connection and answers it; tc
// is the connection's TLS, nil for a plaintext one.
func (t *Transport) handshake(conn net.Conn, tc *tls.Conn) (*peer, connKind, error) {
	var b [helloSize]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		return nil, 0, fmt.Errorf("%w: handshake: %w", errProtocol, err)
	}
	h, err := parseHello(b[:])
	if err != nil {
		// Not a peer of any version: no answer.
		return nil, 0, err
	}
	if h.version != wireVersion {
		// Another version's hello may go on differently: answer with
		// ours, which it can read, and stop.
		if _, err := conn.Write(reply{version: wireVersion, status: statusBadVersion}.append(nil)); err != nil {
			return nil, 0, fmt.Errorf("handshake reply: %w", err)
		}
		return nil, 0, fmt.Errorf("from %d (version %d): %w", h.from, h.version, ErrBadVersion)
	}
	desc, err := readBlock(conn, "description")
	if err != nil {
		return nil, 0, err
	}
	p := (*t.peers.Load())[h.from]
	st := statusAccepted
	var refusal *Refusal
	var nameErr error
	if p != nil && h.to == t.cfg.ID && !t.plaintextRefused(tc) {
		nameErr = t.verifyIncoming(tc, p)
	}
	switch {
	case t.plaintextRefused(tc):
		st = statusTLSRequired
	case h.kind != kindStream && h.kind != kindSnapshot:
		st = statusBadKind
	case h.to != t.cfg.ID:
		st = statusWrongReceiver
	case p == nil:
		st = statusUnknownSender
	case nameErr != nil:
		st = statusBadName
		refusal = &Refusal{Reason: nameErr.Error()}
	}
	// The dialler authenticates before its description is judged, and
	// before this server describes itself.
	var authErr error
	if st == statusAccepted {
		var ran bool
		if ran, refusal, authErr = t.acceptAuth(conn, h); authErr != nil && (ran || refusal == nil) {
			return nil, 0, authErr
		}
		if refusal != nil {
			st = statusUnauthenticated
		}
	}
	if st == statusAccepted && t.cfg.Admit != nil {
		if refusal = t.cfg.Admit(h.from, desc); refusal != nil {
			st = statusRefused
		}
	}
	var mine []byte
	if st != statusUnauthenticated {
		mine = t.describe()
	}
	answer := reply{version: wireVersion, status: st}.append(nil)
	answer = appendAnswer(answer, mine, refusal)
	if _, err := conn.Write(answer); err != nil {
		return nil, 0, fmt.Errorf("handshake reply: %w", err)
	}
	switch {
	case authErr != nil:
		return nil, 0, authErr
	case st == statusTLSRequired:
		return nil, 0, fmt.Errorf("from %d: %w", h.from, errTLSRequired)
	case st == statusBadName:
		return nil, 0, fmt.Errorf("from %d: %w", h.from, nameErr)
	case refusal != nil:
		return nil, 0, fmt.Errorf("from %d: %w: %w", h.from, errRefusedPeer, refusal)
	case st != statusAccepted:
		return nil, 0, fmt.Errorf("from %d (to %d, version %d, kind %v): %w", h.from, h.to, h.version, h.kind, st.err())
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return nil, 0, err
	}
	p.wake()
	return p, h.kind, nil
}

// readStream hands the frames of a stream connection to the handlers.
func (t *Transport) readStream(p *peer, fr *frameReader) error {
	for {
		kind, payload, err := fr.next()
		if err != nil {
			return err
		}
		p.received.Add(1)
		p.receivedBytes.Add(uint64(headerSize + len(payload)))
		switch kind {
		case frameRaft:
			m, err := decodeRaft(payload)
			if err != nil {
				return err
			}
			if err := checkMessage(&m, p.id, t.cfg.ID, kindStream); err != nil {
				return err
			}
			if p.takes() {
				t.cfg.Raft(m)
			}
		case frameApp:
			if t.cfg.App != nil && p.takes() {
				t.cfg.App(p.id, bytes.Clone(payload))
			}
		}
	}
}

// readSnapshot receives the snapshot of a snapshot connection, hands it to
// Raft, and acknowledges it.
func (t *Transport) readSnapshot(p *peer, fr *frameReader, conn net.Conn) error {
	m, size, err := fr.readSnapshotHeader(t.cfg.MaxSnapshot)
	if err != nil {
		return err
	}
	if err := checkMessage(&m, p.id, t.cfg.ID, kindSnapshot); err != nil {
		return err
	}
	if !p.takes() {
		return errCut
	}
	if t.cfg.StoreSnapshot != nil {
		data := fr.snapshotData(size)
		if err := t.cfg.StoreSnapshot(m, data); err != nil {
			return fmt.Errorf("store the snapshot: %w", err)
		}
		if rest, _ := io.Copy(io.Discard, data); rest != 0 {
			return fmt.Errorf("%w: the snapshot store left %d bytes unread", errProtocol, rest)
		}
	} else if m.Snapshot.Data, err = fr.read(nil, size); err != nil {
		return err
	}
	p.received.Add(1)
	p.receivedBytes.Add(uint64(headerSize+m.Size()) + uint64(size))
	p.snapsReceived.Add(1)
	t.log.Info("received a snapshot", "peer", p.id, "index", m.Snapshot.Metadata.Index, "bytes", size)
	t.cfg.Raft(m)
	if err := conn.SetWriteDeadline(time.Now().Add(t.cfg.IOTimeout)); err != nil {
		return err
	}
	_, err = conn.Write([]byte{byte(statusAccepted)})
	return err
}
