package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/collie-io/collie/server/metrics"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/conn"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/peer"
	"github.com/collie-io/collie/server/replication"
	"github.com/collie-io/collie/server/session"
	"github.com/collie-io/collie/server/tlsconfig"
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
	secure, err := s.quorumTLSConfig()
	if err != nil {
		return nil, err
	}
	t, err := peer.New(peer.Config{
		ID:       s.id,
		Describe: s.describe,
		Admit:    s.admitPeer,
		Refused:  s.refusedByPeer,
		Auth:     s.quorumAuth(),
		Listen:   listen,
		Peers:    peers,
		Raft:     func(m raftpb.Message) { s.node.Step(m) },
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
		TLS:            secure,
		Logger:         s.log,
	})
	if err != nil {
		return nil, fmt.Errorf("server: peer port: %w", err)
	}
	return t, nil
}

// quorumTLSConfig reads the ssl.quorum.* stores and returns how the peer
// transport uses TLS, as ZooKeeper's sslQuorum and portUnification say:
// nil when both are false. Handshakes take the stores' current contents,
// so a reload (sslQuorumReloadCertFiles) applies to new connections.
func (s *Server) quorumTLSConfig() (*peer.TLS, error) {
	if !s.cfg.QuorumTLS() {
		return nil, nil
	}
	settings := s.cfg.QuorumSSL
	for _, name := range settings.UnknownCipherSuites() {
		s.log.Warn("ssl.quorum.ciphersuites names a suite Go does not implement; it is left out", "suite", name)
	}
	r, err := tlsconfig.NewReloader(settings, s.log.With("stores", "ssl.quorum"))
	if err != nil {
		return nil, fmt.Errorf("server: TLS between servers (ssl.quorum.*): %w", err)
	}
	s.quorumTLS = r
	s.log.Info("TLS between servers", "sslQuorum", s.cfg.SSLQuorum, "portUnification", s.cfg.PortUnification,
		"key_store", settings.KeyStore, "trust_store", settings.TrustStore, "client_auth", settings.ClientAuth.String(),
		"hostname_verification", !settings.SkipHostnameVerification, "reload", s.cfg.SSLQuorumReloadCertFiles)
	return &peer.TLS{
		Config:          r.Current,
		Dial:            s.cfg.SSLQuorum,
		AcceptPlaintext: !s.cfg.SSLQuorum || s.cfg.PortUnification,
		VerifyName:      !settings.SkipHostnameVerification,
		ReverseLookup:   s.cfg.QuorumReverseDNS,
	}, nil
}

// reloadedQuorumTLS returns the quorum TLS configuration when its stores
// are to follow their files (sslQuorumReloadCertFiles), or nil.
func (s *Server) reloadedQuorumTLS() *tlsconfig.Reloader {
	if !s.cfg.SSLQuorumReloadCertFiles {
		return nil
	}
	return s.quorumTLS
}

// The peer transport streams snapshots from the file to the socket.
var _ replication.SnapshotStreamer = (*peer.Transport)(nil)

// Why a server refuses a peer in the handshake (peer.Refusal.Code).
const (
	refuseOtherEnsemble uint8 = 1 // the peer's data is another ensemble's
	refuseSetting       uint8 = 2 // a setting that changes how entries apply differs
	refuseLostLog       uint8 = 3 // the peer held the log and comes back without it
)

// describe is what this server tells its peers about itself in every
// handshake, as "key=value" lines: the ensemble its data belongs to (0
// before it has received any), whether it holds any of the log, and the
// settings that change how entries apply, which every server of an
// ensemble must share. An ensemble is named by what its first leader chose,
// not by how each server's zoo.cfg spells the addresses, so servers that
// list themselves as 0.0.0.0 or by another name form one ensemble.
func (s *Server) describe() []byte {
	b := fmt.Appendf(nil, "ensemble=%016x\nlog=%t\n", s.ensembleID.Load(), s.node != nil && s.node.HasLog())
	for _, kv := range s.applySettings() {
		b = fmt.Appendf(b, "%s=%s\n", kv[0], kv[1])
	}
	return b
}

// applySettings are the zoo.cfg settings that change how entries apply.
func (s *Server) applySettings() [][2]string {
	return [][2]string{{"extendedTypesEnabled", strconv.FormatBool(s.cfg.ExtendedTypesEnabled)}}
}

// parseDescription reads what describe wrote; lines it does not know are
// kept, for the settings a newer server may add.
func parseDescription(desc []byte) map[string]string {
	d := make(map[string]string)
	for line := range strings.SplitSeq(string(desc), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			d[k] = v
		}
	}
	return d
}

// admitPeer judges a peer's description in a handshake, whichever side
// dialled. It refuses a server of another ensemble, one whose settings
// that change how entries apply differ from this server's, and a voter
// this ensemble knows to have held the log that comes back without it: its
// data directory was lost or replaced, and taking it for a new member
// could let it vote twice in a term, or help elect a leader that lacks an
// acknowledged write. Nothing passes between the two before this returns.
func (s *Server) admitPeer(from uint64, desc []byte) *peer.Refusal {
	d := parseDescription(desc)
	mine := s.ensembleID.Load()
	theirs, err := strconv.ParseUint(d["ensemble"], 16, 64)
	if err != nil {
		return &peer.Refusal{Code: refuseOtherEnsemble, Reason: fmt.Sprintf("server %d did not say which ensemble it belongs to (%q): it runs a Collie this server cannot work with", from, desc)}
	}
	if mine != 0 && theirs != 0 && mine != theirs {
		return &peer.Refusal{Code: refuseOtherEnsemble, Reason: fmt.Sprintf(
			"server %d holds the data of another ensemble (%016x) than server %d (%016x): either a server.%d line names a server of another ensemble, or that server's data directory is another ensemble's",
			from, theirs, s.id, mine, from)}
	}
	for _, kv := range s.applySettings() {
		if v, ok := d[kv[0]]; !ok || v != kv[1] {
			if !ok {
				v = "not known"
			}
			return &peer.Refusal{Code: refuseSetting, Reason: fmt.Sprintf(
				"%s is %s on server %d and %s on server %d: every server of an ensemble must set it alike, since it changes how the log applies",
				kv[0], v, from, kv[1], s.id)}
		}
	}
	if mine != 0 && d["log"] == "false" && s.memberHeldLog(from) {
		return &peer.Refusal{Code: refuseLostLog, Reason: fmt.Sprintf(
			"server %d has held this ensemble's log (server %d has it on record), but comes back without any of it: its data directory was lost, emptied or replaced. It must not rejoin as a new member, which could lose acknowledged writes; see \"A member that lost its data\" in Collie's README",
			from, s.id)}
	}
	return nil
}

// memberHeldLog reports whether the ensemble has recorded that voter id
// held the log.
func (s *Server) memberHeldLog(id uint64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.fsm.HeldLog(id)
}

// refusedByPeer hears why a peer refused this server. A server that lost
// its data and learns so from a peer stops: it must not take part in the
// ensemble at all.
func (s *Server) refusedByPeer(from uint64, r *peer.Refusal) {
	if r.Code == refuseLostLog && s.ensembleID.Load() == 0 {
		s.stopFatally(fmt.Errorf("server: this server's data is lost: %s", r.Reason))
	}
}

// stopFatally makes Run return err.
func (s *Server) stopFatally(err error) {
	s.fatalOnce.Do(func() {
		s.log.Error("stopping", "err", err)
		s.fatalErr = err
		close(s.fatalc)
	})
}

// recordMembersWithLog has the leader record, once each, the voters that
// have held the log: itself, and every voter known to hold an entry past
// the initial state. A proposal not applied within a few seconds is made
// again. Called from expireSessions while leading.
func (s *Server) recordMembersWithLog(now time.Time) {
	if s.peers == nil || s.ensembleID.Load() == 0 {
		return
	}
	holders := []uint64{s.id}
	for _, m := range s.node.Members() {
		if !m.Learner && m.Match > 1 {
			holders = append(holders, m.ID)
		}
	}
	if s.observer() {
		holders = holders[1:]
	}
	for _, id := range holders {
		if s.memberHeldLog(id) || now.Sub(s.heldLogProposed[id]) < 5*time.Second {
			continue
		}
		if s.heldLogProposed == nil {
			s.heldLogProposed = make(map[uint64]time.Time)
		}
		s.heldLogProposed[id] = now
		s.propose(fsm.MemberLogEntry(id), nil)
	}
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
		if !s.leaderlessSince.IsZero() {
			s.leaderKnown(now.Sub(s.leaderlessSince), leader == s.id)
		}
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
		s.metrics.Counter(metrics.LookingCount).Inc()
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

// ElectWhenConnected calls an election as soon as this voter has
// connections both ways with enough voters to make a quorum, unless a
// leader is known by then, rather than leave it to raft's election
// timeout (one to two tickTimes): for the first start of a new
// ensemble's members, whose clients are waiting to write (a cut-over from
// ZooKeeper). It returns at once; the watch ends with ctx, a leader, or a
// minute.
func (s *Server) ElectWhenConnected(ctx context.Context) {
	if s.transport == nil || s.observer() {
		return
	}
	voters, _ := s.membership()
	go func() {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if s.node.Leader() != 0 {
				return
			}
			up := 1
			for _, p := range s.transport.Stats().Peers {
				if p.Connected && p.Inbound && slices.Contains(voters, p.ID) {
					up++
				}
			}
			if up > len(voters)/2 {
				s.node.CallElection()
				return
			}
		}
	}()
}
