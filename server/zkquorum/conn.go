package zkquorum

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/proto"
)

// protocolVersion is the learner protocol version ZooKeeper 3.4 and later
// speak (Zab 1.0: LEADERINFO and ACKEPOCH before the sync).
const protocolVersion = 0x10000

// Config says how to reach and follow a ZooKeeper ensemble.
type Config struct {
	// ServerID is this observer's id, the N of its server.N=...:observer
	// line in the ensemble's zoo.cfg. The leader logs an id it does not know
	// but lets it observe all the same.
	ServerID int64
	// Servers are the ensemble's voting members with their quorum addresses
	// (host:port, the first port of server.N). Only the leader listens there.
	Servers []Server
	// TickTime, InitLimit and SyncLimit are the ensemble's. A read waits at
	// most InitLimit ticks until the sync is done, SyncLimit ticks after
	// (ZooKeeper's learner socket timeouts); a write waits SyncLimit ticks.
	TickTime  time.Duration
	InitLimit int
	SyncLimit int
	// MaxPacket bounds a packet's data, and each string and buffer in a
	// snapshot; DefaultMaxPacket when 0. It must cover the ensemble's
	// jute.maxbuffer.
	MaxPacket int
	// Logger receives connection lifecycle at Info and packet detail at
	// Debug; nothing is logged when nil.
	Logger *slog.Logger
}

// A Server is a voting member of the ensemble.
type Server struct {
	ID   int64
	Addr string // the quorum address, host:port
}

func (c *Config) initTimeout() time.Duration { return c.TickTime * time.Duration(c.InitLimit) }
func (c *Config) syncTimeout() time.Duration { return c.TickTime * time.Duration(c.SyncLimit) }

func (c *Config) check() error {
	if c.TickTime <= 0 || c.InitLimit <= 0 || c.SyncLimit <= 0 {
		return errors.New("zkquorum: TickTime, InitLimit and SyncLimit must be positive")
	}
	if c.MaxPacket < 0 {
		return errors.New("zkquorum: MaxPacket must not be negative")
	}
	return nil
}

func (c *Config) maxPacket() int {
	if c.MaxPacket == 0 {
		return DefaultMaxPacket
	}
	return c.MaxPacket
}

func (c *Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// maxUncommitted bounds the PROPOSALs of a sync held for their COMMIT. A
// ZooKeeper leader sends each committed proposal right before its commit;
// the bound keeps a broken one from filling memory.
const maxUncommitted = 64

// ErrNotSynced is returned by Forward and Revalidate before the leader has
// sent UPTODATE: the leader handles a learner's requests only after that.
var ErrNotSynced = errors.New("zkquorum: not synchronized with the leader")

// ErrClosed is returned (wrapped) by a Conn's Next, Forward and Revalidate
// after Close, and to the snapshot's copy that Close ends.
var ErrClosed = errors.New("zkquorum: connection closed")

// EventKind says what an Event carries.
type EventKind int

const (
	// EventSnapshot starts a sync by snapshot: Snapshot reads the leader's
	// database as of at least Zxid (ZooKeeper serializes it while it keeps
	// applying, so it may hold later txns too; those follow as EventTxn and
	// must be applied again). It replaces the caller's whole state.
	EventSnapshot EventKind = iota + 1
	// EventDiff starts a sync by diff: the EventTxn that follow bring the
	// caller's state to Zxid, the leader's last committed zxid, and beyond.
	EventDiff
	// EventTrunc starts a sync by truncation: the caller drops every txn
	// after Zxid; EventTxn follow.
	EventTrunc
	// EventTxn is one committed txn, in zxid order: during the sync and,
	// after EventUpToDate, from the leader's INFORM packets.
	EventTxn
	// EventUpToDate ends the sync: from now on the caller's state is the
	// ensemble's as of the leader's new epoch, it may serve clients, and
	// Forward and Revalidate work. Zxid is the epoch's first zxid
	// (epoch<<32); Config is the ensemble's configuration as the leader
	// sent it with NEWLEADER (server.N lines and version).
	EventUpToDate
	// EventSynced answers the oldest sync request (OpSync) forwarded on this
	// connection that is not yet answered: every txn committed before it was
	// delivered before this event.
	EventSynced
	// EventRevalidated answers Revalidate for SessionID: Valid says whether
	// the leader knows the session and has renewed it.
	EventRevalidated
	// EventDisconnected (Follower only) says the connection to the leader
	// broke, with Err saying why. Forwarded requests, syncs and
	// revalidations without an answer are lost: their txns may still be
	// committed and then arrive as EventTxn after the resync. The next event
	// starts a new sync.
	EventDisconnected
)

var eventNames = [...]string{"", "snapshot", "diff", "trunc", "txn", "uptodate", "synced", "revalidated", "disconnected"}

func (k EventKind) String() string {
	if k > 0 && int(k) < len(eventNames) {
		return eventNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// An Event is one step of following the leader; Kind says which fields are
// set.
type Event struct {
	Kind EventKind
	Zxid int64
	// Snapshot reads the SNAP payload (EventSnapshot): sessions and the
	// data tree in the jute layout of a ZooKeeper snapshot file, without
	// the file's header, digest and checksum. It is valid until the next
	// call of Next, which skips what the caller did not read; after Close
	// it fails with io.ErrClosedPipe.
	Snapshot  io.Reader
	Txn       Txn
	Config    string // EventUpToDate
	SessionID int64  // EventRevalidated
	Valid     bool   // EventRevalidated
	Err       error  // EventDisconnected
}

// connState is where a connection is in the protocol.
type connState int

const (
	stateSyncStart connState = iota // next packet is DIFF, SNAP or TRUNC
	stateSyncing                    // txns, NEWLEADER, UPTODATE
	stateBroadcast                  // after UPTODATE
)

// epochs are the two epochs a learner keeps (QuorumPeer's acceptedEpoch and
// currentEpoch), which it reports to every leader it connects to.
type epochs struct {
	accepted int64 // the highest epoch a leader proposed to us
	current  int64 // the epoch of the last leader we synced with
}

// A Conn is one learner connection to the leader, made by Dial. Next is
// called from one goroutine; Forward, Revalidate, Touch and Close may be
// called from any.
type Conn struct {
	cfg      Config
	addr     string
	log      *slog.Logger
	nc       net.Conn
	dr       *deadlineReader
	in       *juteReader
	newEpoch int64
	// epochs after the handshake, for the next connection.
	epochs epochs

	// Owned by the goroutine that calls Next.
	state     connState
	delivered int64 // zxid of the last txn delivered, or the sync's base
	proposals []Txn // PROPOSALs of the sync awaiting their COMMIT
	config    string
	snap      *snapshotTransfer // the SNAP payload being read, if any

	touches *touchTable
	synced  atomic.Bool

	wmu sync.Mutex // serializes writes to nc

	// mu guards snapPipe, which Close closes so that a snapshot's goroutine
	// blocked on a caller who no longer reads ends.
	mu       sync.Mutex
	snapPipe *io.PipeReader
	closed   bool
}

// errorf wraps err with the leader's address and the step that failed.
func (c *Conn) errorf(step string, err error) error {
	return fmt.Errorf("zkquorum: leader %s: %s: %w", c.addr, step, err)
}

// Dial connects to the ZooKeeper server at addr, a quorum address, and
// registers as an observer that has applied every txn up to lastZxid (0 for
// an empty state). It returns after the epoch handshake
// (OBSERVERINFO → LEADERINFO → ACKEPOCH); Next then runs the sync. A
// server that does not lead refuses the connection or closes it.
func Dial(ctx context.Context, cfg Config, addr string, lastZxid int64) (*Conn, error) {
	e := zxidEpoch(lastZxid)
	return dial(ctx, cfg, addr, lastZxid, epochs{accepted: e, current: e}, newTouchTable())
}

func dial(ctx context.Context, cfg Config, addr string, lastZxid int64, ep epochs, touches *touchTable) (*Conn, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: cfg.initTimeout()}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("zkquorum: leader %s: connect: %w", addr, err)
	}
	// ZooKeeper's learners disable Nagle (follower.nodelay), as Go's TCP
	// connections do by default.
	c := newConn(cfg, addr, nc, lastZxid, touches)
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	err = c.handshake(lastZxid, ep)
	if !stop() {
		err = ctx.Err()
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// newConn returns a Conn over nc, before the handshake.
func newConn(cfg Config, addr string, nc net.Conn, lastZxid int64, touches *touchTable) *Conn {
	dr := &deadlineReader{nc: nc}
	dr.timeout.Store(int64(cfg.initTimeout()))
	return &Conn{
		cfg:       cfg,
		addr:      addr,
		log:       cfg.logger().With("leader", addr),
		nc:        nc,
		dr:        dr,
		in:        &juteReader{r: bufio.NewReaderSize(dr, 64<<10), max: cfg.maxPacket()},
		delivered: lastZxid,
		touches:   touches,
	}
}

// handshake registers as an observer (Learner.registerWithLeader).
func (c *Conn) handshake(lastZxid int64, ep epochs) error {
	info := proto.NewEncoder(nil)
	info.Long(c.cfg.ServerID)
	info.Int(protocolVersion)
	info.Long(0) // configVersion: a static configuration's
	if err := c.write(Packet{Type: PacketObserverInfo, Zxid: makeZxid(ep.accepted, 0), Data: info.Bytes()}); err != nil {
		return c.errorf("send OBSERVERINFO", err)
	}
	p, err := readPacket(c.in)
	if err != nil {
		return c.errorf("read LEADERINFO", err)
	}
	if p.Type != PacketLeaderInfo {
		return c.errorf("read LEADERINFO", fmt.Errorf("%w: got %v", ErrMalformed, p.Type))
	}
	if len(p.Data) < 4 {
		return c.errorf("read LEADERINFO", fmt.Errorf("%w: %d bytes of protocol version", ErrMalformed, len(p.Data)))
	}
	if v := binary.BigEndian.Uint32(p.Data); v < protocolVersion {
		return c.errorf("read LEADERINFO", fmt.Errorf("leader speaks protocol %#x, need %#x", v, protocolVersion))
	}
	c.newEpoch = zxidEpoch(p.Zxid)
	// The epoch we acknowledge is our current one, or -1 when we already
	// accepted this leader's epoch (then the ack must not count twice).
	var ack int32
	switch {
	case c.newEpoch > ep.accepted:
		ack = int32(ep.current)
		ep.accepted = c.newEpoch
	case c.newEpoch == ep.accepted:
		ack = -1
	default:
		return c.errorf("read LEADERINFO", fmt.Errorf("leader's epoch %d is below the accepted epoch %d", c.newEpoch, ep.accepted))
	}
	c.epochs = ep
	data := binary.BigEndian.AppendUint32(nil, uint32(ack))
	if err := c.write(Packet{Type: PacketAckEpoch, Zxid: lastZxid, Data: data}); err != nil {
		return c.errorf("send ACKEPOCH", err)
	}
	c.log.Debug("registered as observer", "epoch", c.newEpoch, "zxid", zxidString(lastZxid))
	return nil
}

// Addr returns the leader's quorum address.
func (c *Conn) Addr() string { return c.addr }

// Epoch returns the leader's epoch.
func (c *Conn) Epoch() int64 { return c.newEpoch }

// Next returns the next event from the leader, answering pings and
// acknowledging the sync on the way. The first events are the sync:
// EventSnapshot, EventDiff or EventTrunc, then EventTxn, then
// EventUpToDate; after that EventTxn, EventSynced and EventRevalidated.
// Cancelling ctx closes the connection. Any error leaves the Conn unusable.
// Pings are answered only inside Next, and the leader drops an observer
// that stays silent for syncLimit ticks: call it without long pauses.
func (c *Conn) Next(ctx context.Context) (Event, error) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	ev, err := c.next()
	if !stop() {
		return Event{}, ctx.Err()
	}
	if err != nil {
		c.Close()
	}
	return ev, err
}

func (c *Conn) next() (Event, error) {
	if c.isClosed() {
		return Event{}, c.errorf("read", ErrClosed)
	}
	if c.snap != nil {
		if err := c.finishSnapshot(); err != nil {
			return Event{}, err
		}
	}
	for {
		p, err := readPacket(c.in)
		if err != nil {
			return Event{}, c.errorf("read "+c.state.expecting(), err)
		}
		c.log.Debug("received", "packet", p.Type, "zxid", zxidString(p.Zxid), "bytes", len(p.Data))
		ev, ok, err := c.handle(p)
		if err != nil || ok {
			return ev, err
		}
	}
}

func (s connState) expecting() string {
	switch s {
	case stateSyncStart:
		return "DIFF, SNAP or TRUNC"
	case stateSyncing:
		return "sync"
	default:
		return "packet"
	}
}

// handle processes one packet and returns the event it makes, if any.
func (c *Conn) handle(p Packet) (Event, bool, error) {
	switch c.state {
	case stateSyncStart:
		return c.handleSyncStart(p)
	case stateSyncing:
		return c.handleSyncing(p)
	default:
		return c.handleBroadcast(p)
	}
}

func (c *Conn) handleSyncStart(p Packet) (Event, bool, error) {
	c.state = stateSyncing
	switch p.Type {
	case PacketDiff:
		c.log.Info("sync by diff", "zxid", zxidString(p.Zxid), "from", zxidString(c.delivered))
		return Event{Kind: EventDiff, Zxid: p.Zxid}, true, nil
	case PacketTrunc:
		c.log.Info("sync by truncation", "zxid", zxidString(p.Zxid), "from", zxidString(c.delivered))
		c.delivered = p.Zxid
		return Event{Kind: EventTrunc, Zxid: p.Zxid}, true, nil
	case PacketSnap:
		c.log.Info("sync by snapshot", "zxid", zxidString(p.Zxid))
		c.delivered = p.Zxid
		c.snap = startSnapshot(c.in)
		c.mu.Lock()
		c.snapPipe = c.snap.pr
		if c.closed {
			c.snap.pr.CloseWithError(ErrClosed)
		}
		c.mu.Unlock()
		return Event{Kind: EventSnapshot, Zxid: p.Zxid, Snapshot: c.snap.pr}, true, nil
	default:
		return Event{}, false, c.errorf("sync", fmt.Errorf("%w: first packet is %v, not DIFF, SNAP or TRUNC", ErrMalformed, p.Type))
	}
}

// handleSyncing follows Learner.syncWithLeader: committed proposals, informs,
// NEWLEADER (acknowledged) and UPTODATE (acknowledged, ends the sync).
func (c *Conn) handleSyncing(p Packet) (Event, bool, error) {
	switch p.Type {
	case PacketProposal:
		t, err := parseTxn(p.Zxid, p.Data)
		if err != nil {
			return Event{}, false, c.errorf("sync PROPOSAL", err)
		}
		if len(c.proposals) == maxUncommitted {
			return Event{}, false, c.errorf("sync PROPOSAL", fmt.Errorf("%w: more than %d proposals without a commit", ErrMalformed, maxUncommitted))
		}
		c.proposals = append(c.proposals, t)
		return Event{}, false, nil
	case PacketCommit, PacketCommitAndActivate:
		if len(c.proposals) == 0 || c.proposals[0].Header.Zxid != p.Zxid {
			return Event{}, false, c.errorf("sync COMMIT", fmt.Errorf("%w: commit of %s is not of the next proposal", ErrMalformed, zxidString(p.Zxid)))
		}
		t := c.proposals[0]
		c.proposals = c.proposals[1:]
		return c.deliver(t, "sync COMMIT")
	case PacketInform, PacketInformAndActivate:
		return c.inform(p, "sync INFORM")
	case PacketNewLeader:
		c.config = string(p.Data)
		// From now on the leader expects us within syncLimit.
		c.dr.timeout.Store(int64(c.cfg.syncTimeout()))
		if err := c.write(Packet{Type: PacketAck, Zxid: makeZxid(c.newEpoch, 0)}); err != nil {
			return Event{}, false, c.errorf("acknowledge NEWLEADER", err)
		}
		return Event{}, false, nil
	case PacketUpToDate:
		if len(c.proposals) > 0 {
			c.log.Warn("proposals without commit at UPTODATE dropped", "count", len(c.proposals), "zxid", zxidString(c.proposals[0].Header.Zxid))
			c.proposals = nil
		}
		if err := c.write(Packet{Type: PacketAck, Zxid: makeZxid(c.newEpoch, 0)}); err != nil {
			return Event{}, false, c.errorf("acknowledge UPTODATE", err)
		}
		c.state = stateBroadcast
		c.epochs.current = c.newEpoch
		c.synced.Store(true)
		c.log.Info("up to date", "epoch", c.newEpoch, "zxid", zxidString(c.delivered))
		return Event{Kind: EventUpToDate, Zxid: makeZxid(c.newEpoch, 0), Config: c.config}, true, nil
	default:
		// A ZooKeeper learner ignores anything else here, PINGs included.
		c.log.Debug("ignored during sync", "packet", p.Type)
		return Event{}, false, nil
	}
}

// handleBroadcast follows Observer.processPacket.
func (c *Conn) handleBroadcast(p Packet) (Event, bool, error) {
	switch p.Type {
	case PacketPing:
		touches := c.touches.take()
		if err := c.write(Packet{Type: PacketPing, Zxid: p.Zxid, Data: touches, AuthInfo: p.AuthInfo}); err != nil {
			return Event{}, false, c.errorf("answer PING", err)
		}
		return Event{}, false, nil
	case PacketInform, PacketInformAndActivate:
		return c.inform(p, "INFORM")
	case PacketSync:
		return Event{Kind: EventSynced}, true, nil
	case PacketRevalidate:
		if len(p.Data) < 9 {
			return Event{}, false, c.errorf("REVALIDATE", fmt.Errorf("%w: answer of %d bytes", ErrMalformed, len(p.Data)))
		}
		return Event{Kind: EventRevalidated, SessionID: int64(binary.BigEndian.Uint64(p.Data)), Valid: p.Data[8] != 0}, true, nil
	default:
		// Observer.processPacket ignores PROPOSAL, COMMIT, UPTODATE and
		// unknown types too.
		c.log.Warn("ignored packet", "packet", p.Type, "zxid", zxidString(p.Zxid))
		return Event{}, false, nil
	}
}

// inform delivers the txn of an INFORM or INFORMANDACTIVATE packet; the
// latter (dynamic reconfiguration) prefixes the txn with the id of the
// designated leader.
func (c *Conn) inform(p Packet, step string) (Event, bool, error) {
	data := p.Data
	if p.Type == PacketInformAndActivate {
		if len(data) < 8 {
			return Event{}, false, c.errorf(step, fmt.Errorf("%w: INFORMANDACTIVATE of %d bytes", ErrMalformed, len(data)))
		}
		c.log.Info("reconfiguration committed", "zxid", zxidString(p.Zxid), "designatedLeader", int64(binary.BigEndian.Uint64(data)))
		data = data[8:]
	}
	t, err := parseTxn(p.Zxid, data)
	if err != nil {
		return Event{}, false, c.errorf(step, err)
	}
	return c.deliver(t, step)
}

// deliver hands out t, which must come after everything delivered before.
func (c *Conn) deliver(t Txn, step string) (Event, bool, error) {
	if t.Header.Zxid <= c.delivered {
		return Event{}, false, c.errorf(step, fmt.Errorf("%w: txn %s does not follow %s", ErrMalformed, zxidString(t.Header.Zxid), zxidString(c.delivered)))
	}
	c.delivered = t.Header.Zxid
	return Event{Kind: EventTxn, Zxid: t.Header.Zxid, Txn: t}, true, nil
}

// finishSnapshot skips what the caller left of the snapshot and checks the
// signature after it.
func (c *Conn) finishSnapshot() error {
	s := c.snap
	if _, err := io.Copy(io.Discard, s.pr); err != nil {
		s.wait()
		return c.errorf("read SNAP payload", err)
	}
	if err := s.wait(); err != nil {
		return c.errorf("read SNAP payload", err)
	}
	// The payload is whole: the caller's state is the snapshot's.
	c.snap = nil
	c.mu.Lock()
	c.snapPipe = nil
	c.mu.Unlock()
	sig, err := c.in.string("snapshot signature")
	if err != nil {
		return c.errorf("read SNAP signature", cutShort(err, "snapshot signature"))
	}
	if sig != snapshotSignature {
		return c.errorf("read SNAP signature", fmt.Errorf("%w: signature %q", ErrMalformed, sig))
	}
	return nil
}

// Applied returns the zxid the caller's state is at once it has applied
// every event Next returned, and false while a snapshot is being read (a
// state cut short in a snapshot is no state).
func (c *Conn) Applied() (int64, bool) {
	if c.snap != nil {
		return 0, false
	}
	return c.delivered, true
}

// A Request is a client request to forward to the leader, as an observer
// forwards every write, sync, createSession and closeSession.
type Request struct {
	SessionID int64
	Cxid      int32
	Type      proto.OpCode
	// Body is the request record as the client sent it after its
	// RequestHeader (a CreateRequest, ...); for OpCreateSession it is the
	// session timeout in ms as a 4-byte int.
	Body []byte
	// Auth are the session's identities, which the leader checks ACLs
	// against.
	Auth []proto.ID
}

// Forward sends req to the leader. The leader commits the txn it makes and
// informs every observer, this one included: the EventTxn whose
// Header.ClientID and Header.Cxid are req's SessionID and Cxid is its
// result (an ErrorTxn when it failed). A forwarded OpSync is answered by
// EventSynced instead, in the order the syncs were forwarded.
func (c *Conn) Forward(req Request) error {
	if !c.synced.Load() {
		return ErrNotSynced
	}
	e := proto.NewEncoder(make([]byte, 0, 16+len(req.Body)))
	e.Long(req.SessionID)
	e.Int(req.Cxid)
	e.Int(int32(req.Type))
	data := append(e.Bytes(), req.Body...)
	auth := req.Auth
	if auth == nil {
		// A null vector would reach the leader's ACL checks as a null list.
		auth = []proto.ID{}
	}
	if err := c.write(Packet{Type: PacketRequest, Zxid: -1, Data: data, AuthInfo: auth}); err != nil {
		return c.errorf("forward request", err)
	}
	return nil
}

// Revalidate asks the leader whether the session is still alive, renewing
// it for timeout, as an observer does when a client reconnects; the answer
// is an EventRevalidated.
func (c *Conn) Revalidate(sessionID int64, timeout time.Duration) error {
	if !c.synced.Load() {
		return ErrNotSynced
	}
	e := proto.NewEncoder(nil)
	e.Long(sessionID)
	e.Int(int32(timeout.Milliseconds()))
	if err := c.write(Packet{Type: PacketRevalidate, Zxid: -1, Data: e.Bytes()}); err != nil {
		return c.errorf("revalidate session", err)
	}
	return nil
}

// Touch records that the session was active here; the answer to the
// leader's next PING carries it, which keeps the session alive on the
// leader. timeout is the session's.
func (c *Conn) Touch(sessionID int64, timeout time.Duration) { c.touches.add(sessionID, timeout) }

// Close closes the connection. It is safe to call more than once and from
// any goroutine.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.snapPipe != nil {
		c.snapPipe.CloseWithError(ErrClosed)
	}
	return c.nc.Close()
}

func (c *Conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *Conn) write(p Packet) error {
	if c.isClosed() {
		return ErrClosed
	}
	b := appendPacket(nil, p)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.cfg.syncTimeout())); err != nil {
		return err
	}
	_, err := c.nc.Write(b)
	return err
}

// deadlineReader gives every read from the leader its own deadline, as
// ZooKeeper's socket timeout does: a leader may take long in total (a big
// snapshot) but not between two reads.
type deadlineReader struct {
	nc      net.Conn
	timeout atomic.Int64 // time.Duration
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	if err := d.nc.SetReadDeadline(time.Now().Add(time.Duration(d.timeout.Load()))); err != nil {
		return 0, err
	}
	return d.nc.Read(p)
}

// snapshotTransfer runs scanSnapshot in its own goroutine, which writes the
// payload into a pipe the caller reads.
type snapshotTransfer struct {
	pr   *io.PipeReader
	done chan struct{}
	err  error // scanSnapshot's; read after done is closed
}

func startSnapshot(in *juteReader) *snapshotTransfer {
	pr, pw := io.Pipe()
	s := &snapshotTransfer{pr: pr, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		bw := bufio.NewWriterSize(pw, 64<<10)
		err := scanSnapshot(in.r, bw, in.max)
		if err == nil {
			err = bw.Flush()
		}
		s.err = err
		// nil closes the pipe with io.EOF.
		pw.CloseWithError(err)
	}()
	return s
}

func (s *snapshotTransfer) wait() error {
	<-s.done
	return s.err
}

// touchTable collects session touches between two pings
// (LearnerSessionTracker's touch table).
type touchTable struct {
	mu      sync.Mutex
	touched map[int64]int32 // session id → timeout in ms
}

func newTouchTable() *touchTable { return &touchTable{touched: make(map[int64]int32)} }

func (t *touchTable) add(sessionID int64, timeout time.Duration) {
	t.mu.Lock()
	t.touched[sessionID] = int32(timeout.Milliseconds())
	t.mu.Unlock()
}

// take returns the touches as a PING's data (long sessionId, int timeout,
// repeated) and forgets them.
func (t *touchTable) take() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	// Never nil: the leader reads a PING's data without checking for null.
	b := make([]byte, 0, 12*len(t.touched))
	for id, to := range t.touched {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint32(b, uint32(to))
	}
	clear(t.touched)
	return b
}

func makeZxid(epoch, counter int64) int64 { return epoch<<32 | counter&0xffffffff }
func zxidEpoch(zxid int64) int64          { return int64(uint64(zxid) >> 32) }
func zxidString(zxid int64) string        { return fmt.Sprintf("%#x", zxid) }

// connHolder is the current connection of a Follower, read by any
// goroutine and replaced by the one that calls Next.
type connHolder struct{ p atomic.Pointer[Conn] }

func (h *connHolder) get() *Conn  { return h.p.Load() }
func (h *connHolder) set(c *Conn) { h.p.Store(c) }
