package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/conn"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/peer"
	"github.com/collie-io/collie/server/replication"
	"github.com/collie-io/collie/server/session"
)

// appSender carries the server's own messages to another member of the
// ensemble, beside raft's.
type appSender interface {
	SendApp(to uint64, data []byte) error
}

// Messages between servers, beside raft's: a kind byte, then the body.
const (
	// appTouches lists sessions that had activity on a follower or an
	// observer since its last report: 8-byte big-endian ids. The leader,
	// which alone expires sessions, counts them as alive.
	appTouches byte = 1
)

// maxTouchesPerMessage bounds one touches message (64 KiB of ids).
const maxTouchesPerMessage = 8192

var errBadAppMessage = errors.New("server: malformed message from a peer")

// newTransport creates the peer transport of an ensemble member: it
// listens on this server's peer port (the host of its server.N line, as
// ZooKeeper without quorumListenOnAllIPs) and knows every other member.
// Its handlers hand over to the raft node, which exists by the time the
// transport is started.
func (s *Server) newTransport() (*peer.Transport, error) {
	var listen string
	peers := make(map[uint64]string, len(s.cfg.Servers))
	for _, m := range s.cfg.Servers {
		addr := net.JoinHostPort(m.Host, strconv.Itoa(m.PeerPort))
		if m.ID == s.id {
			listen = addr
		}
		peers[m.ID] = addr
	}
	if listen == "" {
		return nil, fmt.Errorf("server: no server.%d line for this server's id", s.id)
	}
	t, err := peer.New(peer.Config{
		ID:        s.id,
		ClusterID: clusterID(s.cfg.Servers),
		Listen:    listen,
		Peers:     peers,
		Raft:      func(m raftpb.Message) { s.node.Step(m) },
		// Snapshots go to disk as they arrive, not through memory.
		StoreSnapshot: func(m raftpb.Message, data io.Reader) error { return s.node.ReceiveSnapshot(m, data) },
		App: func(from uint64, data []byte) {
			if err := s.receiveApp(from, data); err != nil {
				s.log.Warn("dropped a message from a peer", "from", from, "err", err)
			}
		},
		Unreachable:    func(id uint64) { s.node.ReportUnreachable(id) },
		SnapshotStatus: func(id uint64, failed bool) { s.node.ReportSnapshot(id, failed) },
		Lost:           func(id uint64) { s.node.ReportLost(id) },
		Logger:         s.log,
	})
	if err != nil {
		return nil, fmt.Errorf("server: peer port: %w", err)
	}
	return t, nil
}

// The peer transport streams snapshots from the file to the socket.
var _ replication.SnapshotStreamer = (*peer.Transport)(nil)

// clusterID names the ensemble to the peer transport, which refuses
// connections between servers whose names differ. ZooKeeper has no such
// name; the members and their peer addresses, the same in every server's
// configuration, make one.
func clusterID(servers []config.Server) uint64 {
	var b strings.Builder
	for _, m := range servers {
		fmt.Fprintf(&b, "%d=%s:%d:%t;", m.ID, m.Host, m.PeerPort, m.Observer)
	}
	return peer.HashClusterID(b.String())
}

// membership returns the voters and learners (observers) of the
// configuration; a standalone server is its only voter.
func (s *Server) membership() (voters, learners []uint64) {
	if s.cfg.Standalone {
		return []uint64{s.id}, nil
	}
	for _, m := range s.cfg.Servers {
		if m.Observer {
			learners = append(learners, m.ID)
		} else {
			voters = append(voters, m.ID)
		}
	}
	return voters, learners
}

// observer reports whether this server is an observer of its ensemble.
func (s *Server) observer() bool {
	for _, m := range s.cfg.Servers {
		if m.ID == s.id {
			return m.Observer
		}
	}
	return false
}

// noteTouch remembers a session's activity for the next report to the
// leader. Called with smu held.
func (s *Server) noteTouch(id session.ID) {
	if s.peers == nil {
		return
	}
	if s.touched == nil {
		s.touched = make(map[session.ID]struct{})
	}
	s.touched[id] = struct{}{}
}

// reportTouches sends the sessions touched here since the last report to
// the leader, unless this server leads. Called once per half tick, so a
// session's activity reaches the leader well within its timeout.
func (s *Server) reportTouches(leader uint64) {
	s.smu.Lock()
	touched := s.touched
	s.touched = nil
	s.smu.Unlock()
	if len(touched) == 0 || leader == 0 || leader == s.id {
		return
	}
	msg := []byte{appTouches}
	for id := range touched {
		msg = binary.BigEndian.AppendUint64(msg, uint64(id))
		if (len(msg)-1)/8 == maxTouchesPerMessage {
			// A lost report costs nothing but, at worst, an expiry the
			// session's next activity would have prevented: the next
			// report goes to the leader known then.
			_ = s.peers.SendApp(leader, msg)
			msg = []byte{appTouches}
		}
	}
	if len(msg) > 1 {
		_ = s.peers.SendApp(leader, msg)
	}
}

// failWaiters fails every request of this server still waiting for its
// entry to be applied, after the leader changed from old or a message to
// it was lost: a proposal forwarded to a leader that lost its leadership,
// or lost on the way, may never commit, and nothing would tell. Their
// connections close (see conn.Reply); a write that did commit is there
// when the client looks after reconnecting, as ZooKeeper allows after a
// connection loss.
func (s *Server) failWaiters(old uint64) {
	s.smu.Lock()
	waiters := s.waiters
	s.waiters = make(map[uint64]waiter)
	s.smu.Unlock()
	if len(waiters) > 0 {
		s.log.Info("leader changed: requests in flight end their connections", "old_leader", old, "requests", len(waiters))
	}
	for _, w := range waiters {
		w(fsm.Result{Err: proto.ErrConnectionLoss}, nil)
	}
}

// leaderChanges returns a channel closed at the next change of leader as
// this server knows it.
func (s *Server) leaderChanges() <-chan struct{} {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if s.leaderChanged == nil {
		s.leaderChanged = make(chan struct{})
	}
	return s.leaderChanged
}

// noteLeaderChange wakes whoever waits on leaderChanges.
func (s *Server) noteLeaderChange() {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if s.leaderChanged != nil {
		close(s.leaderChanged)
		s.leaderChanged = nil
	}
}

// errNotServing refuses a session while this server serves no clients.
var errNotServing = fmt.Errorf("server: no leader: this server does not serve clients until one is elected: %w", conn.ErrNotServing)

// checkLeaderless stops serving clients once this server of an ensemble has
// known no leader for longer than the shortest session timeout (with
// readonlymode.enabled, ZooKeeper's grace period: see leaderlessLimit):
// what it would read may be stale by then, and it cannot keep sessions
// alive. As a
// ZooKeeper server that lost its quorum, it closes its client connections
// and refuses sessions until a leader is back; clients move to a server
// that has one. The four-letter words still answer.
func (s *Server) checkLeaderless(now time.Time, leader uint64) {
	if s.cfg.Standalone {
		return
	}
	if leader != 0 {
		s.leaderlessSince = time.Time{}
		s.smu.Lock()
		wasRefusing := s.refusing.Swap(false)
		readOnly := slices.Collect(maps.Keys(s.readOnly))
		clear(s.readOnly)
		s.smu.Unlock()
		if wasRefusing {
			s.log.Info("a leader is known again: serving clients", "leader", leader, "read_only_sessions_closed", len(readOnly))
		}
		// As ZooKeeper's read-only server when it rejoins: its sessions
		// end, and their clients open ordinary ones.
		for _, c := range readOnly {
			c.Close()
		}
		return
	}
	if s.leaderlessSince.IsZero() {
		s.leaderlessSince = now
		return
	}
	if now.Sub(s.leaderlessSince) < s.leaderlessLimit() || s.refusing.Load() {
		return
	}
	s.refusing.Store(true)
	conns := s.connections()
	if s.cfg.ReadOnlyMode {
		s.log.Warn("no leader: read-only mode: closing client connections; serving reads to clients that ask for read-only sessions until a leader is elected", "without_leader", now.Sub(s.leaderlessSince).Round(time.Millisecond), "connections", len(conns))
	} else {
		s.log.Warn("no leader: closing client connections until one is elected", "without_leader", now.Sub(s.leaderlessSince).Round(time.Millisecond), "connections", len(conns))
	}
	for _, c := range conns {
		c.Close()
	}
}

// readOnlyGrace is the least time ZooKeeper waits without a leader before
// it starts its read-only server (QuorumPeer's grace period, at least a
// tick): shorter losses are elections, not partitions.
const readOnlyGrace = 2 * time.Second

// leaderlessLimit is how long this server serves its clients without a
// leader: the shortest session timeout, or with readonlymode.enabled
// ZooKeeper's grace period before it turns read-only.
func (s *Server) leaderlessLimit() time.Duration {
	if s.cfg.ReadOnlyMode {
		return max(readOnlyGrace, s.cfg.TickTime)
	}
	return s.cfg.MinSessionTimeout
}

// receiveApp handles a message from another server of the ensemble.
func (s *Server) receiveApp(from uint64, data []byte) error {
	if len(data) == 0 {
		return errBadAppMessage
	}
	switch data[0] {
	case appTouches:
		ids := data[1:]
		if len(ids)%8 != 0 || len(ids)/8 > maxTouchesPerMessage {
			return errBadAppMessage
		}
		if !s.node.IsLeader() {
			// Sent to a leader that has since stepped down; the sender
			// reports to the new one from now on.
			return nil
		}
		now := time.Now()
		s.smu.Lock()
		for i := 0; i < len(ids); i += 8 {
			s.tracker.Touch(session.ID(binary.BigEndian.Uint64(ids[i:])), now)
		}
		s.smu.Unlock()
		return nil
	}
	return errBadAppMessage
}

// IsLeader reports whether this server leads its ensemble (a standalone
// server always does).
func (s *Server) IsLeader() bool { return s.node.IsLeader() }

// CutSends drops (true) or lets through again (false) every message this
// server sends to server peer, while peer's messages still arrive: one
// direction of a link fails. For tests.
func (s *Server) CutSends(peer uint64, cut bool) {
	if s.transport != nil && peer != s.id {
		_ = s.transport.CutSends(peer, cut)
	}
}

// Isolate cuts (true) or restores (false) this server's links to every
// other server of its ensemble, in both directions as far as this server
// is concerned; cut the other ends too for a clean partition. For tests.
func (s *Server) Isolate(peers []uint64, cut bool) {
	if s.transport == nil {
		return
	}
	for _, id := range peers {
		if id != s.id {
			// Every id given is a configured member, known to the
			// transport.
			_ = s.transport.Cut(id, cut)
		}
	}
}
