package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/admin"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/metrics"
	"github.com/collie-io/collie/server/replication"
	"github.com/collie-io/collie/server/storage"
)

// counts are the server's counters and sizes that metrics read and no
// other part keeps.
type counts struct {
	tlsHandshaking atomic.Int64 // TLS handshakes in progress
	authFailed     atomic.Int64 // addauth and SASL failures
	writeErrors    atomic.Int64 // log writes that failed for another reason than space
	leaderSince    atomic.Int64 // Unix ns this server became leader; 0 while not leading
	snapLoad       atomic.Int64 // ns the start took to load the snapshot
	// plainRemote and plainLocal count the client connections without
	// TLS, from other hosts and from the loopback address.
	plainRemote, plainLocal atomic.Int64
	responses               bufferStats // client reply sizes
	proposals               bufferStats // entry sizes this leader appended
}

// bufferStats is ZooKeeper's BufferStats: the last, smallest and largest
// of a series of sizes, each -1 before the first.
type bufferStats struct {
	mu                sync.Mutex
	last, least, most int64
	set               bool
}

func (b *bufferStats) note(size int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.set || size < b.least {
		b.least = size
	}
	if !b.set || size > b.most {
		b.most = size
	}
	b.last, b.set = size, true
}

func (b *bufferStats) read() (last, least, most int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.set {
		return -1, -1, -1
	}
	return b.last, b.least, b.most
}

// countPlaintext counts a client connection without TLS, as ZooKeeper's
// Netty server counts them in non_mtls_remote_conn_count and
// non_mtls_local_conn_count.
func (s *Server) countPlaintext(nc net.Conn) {
	if tcp, ok := nc.RemoteAddr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		s.counts.plainRemote.Add(1)
		return
	}
	s.counts.plainLocal.Add(1)
}

// ms is a duration in milliseconds, ZooKeeper's unit for latencies,
// with the fraction a Go clock gives.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// newMetrics builds the server's metrics registry.
func (s *Server) newMetrics() *metrics.Registry {
	return metrics.New(metrics.Options{
		Member: strconv.FormatUint(s.id, 10),
		Read:   s.metricValues,
		Counters: map[string]func() float64{
			metrics.UnsuccessfulHandshake: func() float64 { return float64(s.tlsFailures.Load()) },
			metrics.SnapCount: func() float64 {
				var sent uint64
				if s.transport != nil {
					for _, p := range s.transport.Stats().Peers {
						sent += p.SnapshotsSent
					}
				}
				return float64(sent)
			},
		},
		Runtime: s.cfg.MetricsProviderExportJVM,
	})
}

// metricValues reads the gauges: ZooKeeper's from what mntr reports, so
// both agree, and those of the role this server has now. mntr's collie_
// lines, without the zk_ prefix, are left out: Collie's own metrics below
// say the same with labels.
func (s *Server) metricValues() metrics.Values {
	v := metrics.Values{Gauges: map[string]float64{}}
	role := ""
	for line := range strings.Lines(s.mntr()) {
		name, value, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		name, ok := strings.CutPrefix(name, "zk_")
		if name == "server_state" {
			role = value
		}
		if f, err := strconv.ParseFloat(value, 64); ok && err == nil {
			v.Gauges[name] = f
		}
	}
	g := v.Gauges
	g["max_file_descriptor_count"] = float64(maxFDs())
	g["connection_drop_probability"] = 0
	last, least, most := s.counts.responses.read()
	g["last_client_response_size"], g["min_client_response_size"], g["max_client_response_size"] = float64(last), float64(least), float64(most)
	g["outstanding_tls_handshake"] = float64(s.counts.tlsHandshaking.Load())
	g["auth_failed_count"] = float64(s.counts.authFailed.Load())
	g["non_mtls_remote_conn_count"] = float64(s.counts.plainRemote.Load())
	g["non_mtls_local_conn_count"] = float64(s.counts.plainLocal.Load())
	voters, _ := s.membership()
	switch role {
	case "leader":
		g["quorum_size"] = float64(len(voters))
		if since := s.counts.leaderSince.Load(); since != 0 {
			g["leader_uptime"] = float64(time.Since(time.Unix(0, since)).Milliseconds())
		} else {
			g["leader_uptime"] = 0
		}
		last, least, most := s.counts.proposals.read()
		g["last_proposal_size"], g["min_proposal_size"], g["max_proposal_size"] = float64(last), float64(least), float64(most)
	case "follower":
		g["quorum_size"] = float64(len(voters))
		// A follower serving observers (ZooKeeper's observer master);
		// Collie's observers take the log from the leader.
		g["synced_observers"] = 0
	case "observer":
		g["quorum_size"] = float64(len(voters))
	}
	s.mu.RLock()
	t := s.fsm.Tree()
	v.GaugeSets = metrics.Quotas(func(path string) ([]byte, []string, bool) {
		n, ok := t.Get(path)
		if !ok {
			return nil, nil, false
		}
		return n.Data, n.Children(), true
	})
	held := len(s.fsm.MembersWithLog())
	s.mu.RUnlock()
	v.Collie = s.collieMetrics(held)
	return v
}

// collieMetrics are Collie's own metrics: raft, storage and the peers.
func (s *Server) collieMetrics(membersWithLog int) []metrics.Sample {
	st := s.node.Status()
	s.smu.Lock()
	pending := len(s.waiters)
	s.smu.Unlock()
	full := 0.0
	if s.node.DiskFull() != nil {
		full = 1
	}
	walDir := filepath.Join(s.cfg.DataLogDir, "wal")
	walBytes, segments := walUsage(walDir)
	out := []metrics.Sample{
		{Name: "collie_raft_term", Help: "The raft term this server is in.", Value: float64(st.Term)},
		{Name: "collie_raft_commit_index", Help: "The highest log index this server knows to be committed.", Value: float64(st.Commit)},
		{Name: "collie_raft_applied_index", Help: "The highest log index this server has applied.", Value: float64(st.Applied)},
		{Name: "collie_raft_leader_changes_total", Help: "Times this server came to know a new leader since it started.", Counter: true, Value: float64(st.LeaderChanges)},
		{Name: "collie_raft_proposals_pending", Help: "Entries this server proposed that are not applied yet.", Value: float64(pending)},
		{Name: "collie_raft_is_leader", Help: "1 while this server is the raft leader.", Value: boolGauge(s.node.IsLeader())},
		{Name: "collie_wal_bytes", Help: "Bytes of the write-ahead log's files, preallocated segments included.", Value: float64(walBytes)},
		{Name: "collie_wal_segments", Help: "Segment files of the write-ahead log.", Value: float64(segments)},
		{Name: "collie_wal_write_errors_total", Help: "Appends or fsyncs of the log that failed for another reason than a full disk (each stops raft).", Counter: true, Value: float64(s.counts.writeErrors.Load())},
		{Name: "collie_disk_full", Help: "1 while writes are refused because the disk holding the log is full.", Value: full},
		{Name: "collie_ready", Help: "1 while /ready answers 200: the server serves clients with a quorum.", Value: boolGauge(s.readiness(false) == "")},
	}
	if s.transport != nil {
		out = append(out, metrics.Sample{Name: "collie_members_with_log", Help: "Voters on record as having held the log.", Value: float64(membersWithLog)})
		for _, p := range s.transport.Stats().Peers {
			peer := []metrics.Label{{Name: "peer", Value: strconv.FormatUint(p.ID, 10)}}
			out = append(out,
				metrics.Sample{Name: "collie_peer_connected", Help: "1 while the connection to the peer is up.", Value: boolGauge(p.Connected), Labels: peer},
				metrics.Sample{Name: "collie_peer_sent_bytes_total", Help: "Bytes sent to the peer.", Counter: true, Value: float64(p.SentBytes), Labels: peer},
				metrics.Sample{Name: "collie_peer_received_bytes_total", Help: "Bytes received from the peer.", Counter: true, Value: float64(p.ReceivedBytes), Labels: peer},
				metrics.Sample{Name: "collie_peer_dropped_messages_total", Help: "Messages to the peer dropped (raft sends again).", Counter: true, Value: float64(p.Dropped), Labels: peer},
				metrics.Sample{Name: "collie_snapshots_sent_total", Help: "Snapshots sent to the peer to catch it up.", Counter: true, Value: float64(p.SnapshotsSent), Labels: peer},
				metrics.Sample{Name: "collie_snapshots_received_total", Help: "Snapshots received from the peer.", Counter: true, Value: float64(p.SnapshotsReceived), Labels: peer},
			)
		}
		for _, m := range s.node.Members() {
			out = append(out, metrics.Sample{Name: "collie_member_lag", Help: "Committed entries the member is known to lack (on the leader).",
				Value: float64(m.Lag), Labels: []metrics.Label{{Name: "peer", Value: strconv.FormatUint(m.ID, 10)}}})
		}
	}
	return out
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// walUsage returns the bytes and the number of the log's segment files.
func walUsage(dir string) (bytes int64, segments int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		bytes += info.Size()
		if strings.HasSuffix(e.Name(), ".wal") {
			segments++
		}
	}
	return bytes, segments
}

func maxFDs() int64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return -1
	}
	return int64(lim.Cur)
}

// readiness says why the server is not ready, or "" when it is: it serves
// clients, and (in an ensemble) knows a leader it hears from and has
// applied everything it knew to be committed when asked. Under writes a
// member is always a few entries from applying the newest commit it
// knows; with wait, readiness gives it up to a tenth of a tick (at least
// 50 ms) to apply what was committed when asked, so that a member keeping
// up is not reported behind.
func (s *Server) readiness(wait bool) string {
	switch {
	case !s.ready.Load():
		if s.cfg.Standalone {
			return "replaying the log"
		}
		return "waiting for a leader"
	case s.cfg.Standalone:
		return ""
	case s.readOnlyMode():
		return "read-only mode: no leader"
	case s.refusing.Load() || s.node.Leader() == 0:
		return "no leader"
	}
	st := s.node.Status()
	if st.Applied >= st.Commit {
		return ""
	}
	if wait {
		deadline := time.Now().Add(max(s.cfg.TickTime/10, 50*time.Millisecond))
		for time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
			if s.node.Status().Applied >= st.Commit {
				return ""
			}
		}
	}
	return fmt.Sprintf("applying the log: %d of %d committed entries applied", s.node.Status().Applied, st.Commit)
}

// Metrics and Ready serve the admin and metrics ports.
func (a *adminBackend) Metrics(w io.Writer) error { return a.metrics.Write(w) }

func (a *adminBackend) Ready() (bool, string) {
	reason := (*Server)(a).readiness(true)
	return reason == "", reason
}

// startMetrics opens the port of metricsProvider.httpPort, when
// metricsProvider.className asks for ZooKeeper's Prometheus provider.
func (s *Server) startMetrics() error {
	if !s.cfg.PrometheusMetrics {
		return nil
	}
	addr := net.JoinHostPort(s.cfg.MetricsProviderHTTPHost, strconv.Itoa(s.cfg.MetricsProviderHTTPPort))
	return s.metricsPort.start(func() (*admin.Server, error) {
		srv, err := admin.Listen(addr, admin.NewMetricsHandler((*adminBackend)(s)), nil, s.log)
		if err != nil {
			return nil, fmt.Errorf("server: serve metrics on %s (set metricsProvider.httpPort): %w", addr, err)
		}
		s.log.Info("serving Prometheus metrics", "addr", srv.Addr().String())
		return srv, nil
	})
}

// stopMetrics closes the metrics port.
func (s *Server) stopMetrics() { s.metricsPort.stop() }

// MetricsAddr returns the metrics port's address while it serves, or nil.
func (s *Server) MetricsAddr() net.Addr { return s.metricsPort.addr() }

// observeReply feeds a client reply to the latency metrics.
func (s *Server) observeReply(write bool, latency time.Duration, size int) {
	s.latency.Observe(latency)
	if write {
		s.metrics.Summary(metrics.UpdateLatency).Observe(ms(latency))
	} else {
		s.metrics.Summary(metrics.ReadLatency).Observe(ms(latency))
	}
	s.metrics.Counter(metrics.ResponseBytes).Add(float64(size))
	s.counts.responses.note(int64(size))
}

// observeRequest counts a client's request packet.
func (s *Server) observeRequest(size int) {
	s.latency.Packet()
	s.metrics.Counter(metrics.BytesReceivedCount).Add(float64(size))
}

// observeApplied counts applied entries: on the leader as proposals
// committed, elsewhere as proposals and commits received; and the time
// since each was proposed (its entry's clock), everywhere as ZooKeeper's
// propagation latency and, where it was proposed, as its proposal latency.
func (s *Server) observeApplied(e time.Time, origin bool, leading bool) {
	lat := ms(time.Since(e))
	s.metrics.Summary(metrics.PropagationLatency).Observe(lat)
	if origin {
		s.metrics.Summary(metrics.ProposalLatency).Observe(lat)
	}
	switch {
	case s.cfg.Standalone:
		// ZooKeeper counts these in its Leader and Learner, which a
		// standalone server does not have.
	case leading:
		s.metrics.Counter(metrics.CommitCount).Inc()
	default:
		s.metrics.Counter(metrics.LearnerCommitReceivedCount).Inc()
	}
}

// observeWatches counts the watches one event fired, by its type.
func (s *Server) observeWatches(t proto.EventType, fired int) {
	name := ""
	switch t {
	case proto.EventNodeCreated:
		name = metrics.NodeCreatedWatchCount
	case proto.EventNodeDeleted:
		name = metrics.NodeDeletedWatchCount
	case proto.EventNodeDataChanged:
		name = metrics.NodeChangedWatchCount
	case proto.EventNodeChildrenChanged:
		name = metrics.NodeChildrenWatchCount
	default:
		return
	}
	s.metrics.Summary(name).Observe(float64(fired))
}

// statOverhead is what ZooKeeper adds to every read's bytes for its Stat.
const statOverhead = 6*8 + 5*4

// observeRead counts the bytes of a successful read by the top-level
// znode it is under, as ZooKeeper's DataTree does: the path, the data or
// the children's names, and a Stat.
func (s *Server) observeRead(req, resp proto.Record) {
	var path string
	var bytes int
	switch r := req.(type) {
	case *proto.GetDataRequest:
		path, bytes = r.Path, len(resp.(*proto.GetDataResponse).Data)
	case *proto.ExistsRequest:
		path = r.Path
	case *proto.GetChildrenRequest:
		path, bytes = r.Path, namesLen(resp.(*proto.GetChildrenResponse).Children)
	case *proto.GetChildren2Request:
		path, bytes = r.Path, namesLen(resp.(*proto.GetChildren2Response).Children)
	default:
		return
	}
	if ns := metrics.Namespace(path); ns != "" {
		s.metrics.SummarySet(metrics.ReadPerNamespace).WithLabelValues(ns).Observe(float64(len(path) + bytes + statOverhead))
	}
}

func namesLen(names []string) int {
	n := 0
	for _, name := range names {
		n += len(name)
	}
	return n
}

// observeWrites counts the bytes an applied write changed by the
// top-level znode they are under, as ZooKeeper's DataTree does: the path
// and the data of a node created or set, the path of one deleted. Called
// with mu held.
func (s *Server) observeWrites(events []fsm.Event) {
	for _, ev := range events {
		bytes := 0
		switch ev.Type {
		case proto.EventNodeCreated, proto.EventNodeDataChanged:
			if n, ok := s.fsm.Tree().Get(ev.Path); ok {
				bytes = len(n.Data)
			}
		case proto.EventNodeDeleted:
		default:
			continue
		}
		if ns := metrics.Namespace(ev.Path); ns != "" {
			s.metrics.SummarySet(metrics.WritePerNamespace).WithLabelValues(ns).Observe(float64(len(ev.Path) + bytes))
		}
	}
}

// leaderKnown notes, when a leader is known again after none, the time
// without one as ZooKeeper's election and unavailable times.
func (s *Server) leaderKnown(without time.Duration, leading bool) {
	s.metrics.Summary(metrics.ElectionTime).Observe(ms(without))
	s.metrics.Summary(metrics.UnavailableTime).Observe(ms(without))
	if leading {
		s.metrics.Summary(metrics.LeaderUnavailableTime).Observe(ms(without))
	}
}

// measuredStorage times the node's storage work for the metrics.
type measuredStorage struct {
	replication.Storage
	s *Server
}

func (m measuredStorage) ReadLog() (raftpb.HardState, []raftpb.Entry, error) {
	st, ents, err := m.Storage.ReadLog()
	if err == nil {
		m.s.metrics.Summary(metrics.StartupTxnsLoaded).Observe(float64(len(ents)))
	}
	return st, ents, err
}

func (m measuredStorage) Save(st raftpb.HardState, ents []raftpb.Entry) error {
	start := time.Now()
	err := m.Storage.Save(st, ents)
	if err != nil {
		if !errors.Is(err, storage.ErrNoSpace) {
			m.s.counts.writeErrors.Add(1)
		}
		return err
	}
	if len(ents) == 0 && raft.IsEmptyHardState(st) {
		return nil
	}
	reg := m.s.metrics
	reg.Summary(metrics.FsyncTime).Observe(ms(time.Since(start)))
	if len(ents) == 0 {
		return nil
	}
	reg.Summary(metrics.SyncProcessorBatchSize).Observe(float64(len(ents)))
	switch {
	case m.s.cfg.Standalone:
	case m.s.counts.leaderSince.Load() != 0:
		reg.Counter(metrics.ProposalCount).Add(float64(len(ents)))
		for _, e := range ents {
			m.s.counts.proposals.note(int64(len(e.Data)))
		}
	default:
		reg.Counter(metrics.LearnerProposalReceivedCount).Add(float64(len(ents)))
	}
	return nil
}

func (m measuredStorage) WriteSnapshot(meta raftpb.SnapshotMetadata, write func(io.Writer) error) (int64, error) {
	start := time.Now()
	n, err := m.Storage.WriteSnapshot(meta, write)
	if err == nil {
		m.s.metrics.Summary(metrics.SnapshotTime).Observe(ms(time.Since(start)))
	}
	return n, err
}
