package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/conn"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/metrics"
	"github.com/collie-io/collie/server/peer"
	"github.com/collie-io/collie/server/replication"
	"github.com/collie-io/collie/server/reqstats"
	"github.com/collie-io/collie/server/session"
	"github.com/collie-io/collie/server/storage"
	"github.com/collie-io/collie/server/tlsconfig"
	"github.com/collie-io/collie/server/tlssniff"
	"github.com/collie-io/collie/server/watch"
)

// ErrServerClosed is returned by Run after Shutdown.
var ErrServerClosed = errors.New("server: closed")

// Server is one Collie server.
type Server struct {
	cfg config.Config
	// authSchemes are the ACL schemes beyond digest and ip this server
	// has providers for, which every write's log entry carries.
	authSchemes []string
	log         *slog.Logger
	// quotaLog logs the quota limits local writes go past.
	quotaLog quotaLog
	id       uint64
	started  time.Time
	// legacySecret is the session secret an older server kept in the data
	// directory, or nil; secretSet is closed once the replicated secret is
	// set.
	legacySecret []byte
	secretSet    chan struct{}
	secretOnce   sync.Once

	// mu guards fsm. The replication apply goroutine writes; connections
	// read.
	mu  sync.RWMutex
	fsm *fsm.FSM

	// wmu guards watches.
	wmu     sync.Mutex
	watches *watch.Registry[*conn.Conn]

	node *replication.Node
	ids  *session.Generator

	// smu guards the fields below it.
	smu       sync.Mutex
	tracker   *session.Tracker
	conns     map[*conn.Conn]struct{}
	bySession map[int64]*conn.Conn
	// readOnly are the connections of read-only sessions (see
	// openReadOnlySession), which end when a leader is back.
	readOnly map[*conn.Conn]struct{}
	waiters  map[uint64]waiter
	reqSeq   uint64
	// touched are the sessions with activity since the last report to the
	// leader (ensembles only).
	touched map[session.ID]struct{}

	// peers carries messages to the other servers of an ensemble; nil for
	// a standalone server. transport is the same, as itself.
	peers     appSender
	transport *peer.Transport
	// ensembleID is the fsm's EnsembleID once known, for the peer
	// handshakes; heldLogProposed is when the leader last proposed that a
	// member has held the log, by member (owned by expireSessions).
	ensembleID      atomic.Uint64
	heldLogProposed map[uint64]time.Time
	// fatalc is closed, fatalErr set first, when the server must stop
	// for a reason of its own (see stopFatally).
	fatalOnce sync.Once
	fatalc    chan struct{}
	fatalErr  error
	// refusing is set while this server of an ensemble has known no leader
	// for too long to serve clients (checkLeaderless); leaderlessSince is
	// when it lost the last one, owned by expireSessions.
	refusing        atomic.Bool
	leaderlessSince time.Time
	// ready is set once this server has known a leader and the session
	// secret (see Run); before, it serves no clients. Never cleared.
	ready atomic.Bool
	// leaderChanged is closed, and replaced, when the leader as this
	// server knows it changes (see leaderChanges); lmu guards it.
	lmu           sync.Mutex
	leaderChanged chan struct{}

	// ln is the client port's listener, nil without one; tlsLn that of
	// the secure client port. Set by Run before lnReady is closed.
	ln net.Listener
	// perIP counts client connections by address (maxClientCnxns).
	perIP   conn.IPLimit
	tlsLn   net.Listener
	lnReady chan struct{}
	// tls configures the handshakes of TLS clients; nil when the server
	// serves none. tlsFailures counts the handshakes that failed.
	tls         *tls.Config
	tlsFailures atomic.Int64
	// krb accepts the Kerberos tickets of SASL clients, with a replay
	// cache that all connections share; nil when the JAAS section has no
	// Krb5LoginModule.
	krb *kerberos
	// tlsReloader, with client.certReload, keeps tls in step with the
	// key and trust store files; nil otherwise.
	tlsReloader *tlsconfig.Reloader
	// quorumTLS holds the TLS configuration between servers (the
	// ssl.quorum.* stores), nil when sslQuorum and portUnification are
	// both false; with sslQuorumReloadCertFiles, Run has it follow the
	// files.
	quorumTLS *tlsconfig.Reloader
	closing   chan struct{}
	// closeMu orders closing with the goroutines Run starts (see
	// goUnlessClosed): Shutdown waits for wg only once closing is closed.
	closeMu sync.Mutex
	wg      sync.WaitGroup
	latency reqstats.Latency
	admin   adminServer
	// metrics are what the metrics and admin ports serve at /metrics;
	// counts are the counters they read that no other part keeps;
	// metricsPort is the port of metricsProvider.httpPort.
	metrics     *metrics.Registry
	counts      counts
	metricsPort adminServer
	// disk is the storage of the node, for the scheduled purge.
	disk *storage.Disk
	// starting is set while New replays the data directory.
	starting atomic.Bool
	// traceMask is what gtmk reports and stmk sets. ZooKeeper's selects
	// what it traces; Collie traces requests at the debug log level, and
	// keeps the mask for the tools that set and read it.
	traceMask atomic.Int64
}

// New opens the data directory, replays snapshot and log into the state
// machine, and starts raft. It does not listen yet: Run does.
func New(cfg config.Config, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.DynamicConfigFile != "" {
		return nil, fmt.Errorf("server: dynamicConfigFile %q is not supported: put the server.N lines in the main configuration file", cfg.DynamicConfigFile)
	}
	s := &Server{
		cfg:         cfg,
		authSchemes: authSchemes(cfg),
		log:         logger,
		quotaLog:    quotaLog{log: logger},
		id:          max(cfg.ServerID, 1),
		started:     time.Now(),
		fsm:         fsm.New(fsmOptions(cfg)),
		watches:     watch.New[*conn.Conn](),
		conns:       make(map[*conn.Conn]struct{}),
		bySession:   make(map[int64]*conn.Conn),
		readOnly:    make(map[*conn.Conn]struct{}),
		perIP:       conn.IPLimit{Max: cfg.MaxClientCnxns},
		waiters:     make(map[uint64]waiter),
		lnReady:     make(chan struct{}),
		fatalc:      make(chan struct{}),
		closing:     make(chan struct{}),
		secretSet:   make(chan struct{}),
	}
	if cfg.ServesTLS() {
		for _, name := range cfg.SSL.UnknownCipherSuites() {
			logger.Warn("ssl.ciphersuites names a suite Go does not implement; it is left out", "suite", name)
		}
		if cfg.ClientCertReload {
			r, err := tlsconfig.NewReloader(cfg.SSL, logger)
			if err != nil {
				return nil, fmt.Errorf("server: TLS for clients: %w", err)
			}
			s.tls, s.tlsReloader = r.Config(), r
		} else {
			c, err := cfg.SSL.ServerConfig()
			if err != nil {
				return nil, fmt.Errorf("server: TLS for clients: %w", err)
			}
			s.tls = c
		}
	}
	if k := cfg.SASLKerberos; k != nil {
		krb, err := newKerberos(k, logger)
		if err != nil {
			return nil, err
		}
		s.krb = krb
		logger.Info("SASL clients authenticate with Kerberos (GSSAPI)", "principal", k.Principal, "keytab", k.KeytabFile)
		if len(cfg.SASLUsers) > 0 {
			logger.Warn("the JAAS section's DIGEST-MD5 users cannot authenticate: with a Krb5LoginModule in the section, only Kerberos is offered, as in ZooKeeper",
				"section", cfg.SASLServerSection)
		}
	}
	s.metrics = s.newMetrics()
	s.traceMask.Store(defaultTraceMask)
	s.starting.Store(true)
	defer s.starting.Store(false)
	s.tracker = session.NewTracker(cfg.TickTime, s.started)
	s.ids = session.NewGenerator(cfg.ServerID, s.started)
	for _, dir := range []string{cfg.DataDir, cfg.DataLogDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("server: create data directory: %w", err)
		}
	}
	// Servers before the secret was replicated kept it in this file: it
	// is proposed as the replicated one, so their sessions stay valid.
	legacy, err := readLegacySecret(filepath.Join(cfg.DataDir, "secret"))
	if err != nil {
		return nil, err
	}
	s.legacySecret = legacy
	who := storage.Identity{Server: s.id, Replicated: !cfg.Standalone}
	disk, err := storage.OpenDisk(filepath.Join(cfg.DataLogDir, "wal"), filepath.Join(cfg.DataDir, "snap"), who, cfg.AutopurgeSnapRetainCount, cfg.PreAllocSize, logger)
	if err != nil {
		return nil, fmt.Errorf("server: open storage: %w", s.damaged(err))
	}
	s.disk = disk
	if cfg.AutopurgePurgeInterval > 0 {
		disk.PurgeOnSchedule()
	}
	var store replication.Storage = disk
	if testHookStorage != nil {
		store = testHookStorage(disk)
	}
	store = measuredStorage{Storage: store, s: s}
	var transport *peer.Transport
	if !cfg.Standalone {
		if transport, err = s.newTransport(); err != nil {
			disk.Close()
			return nil, err
		}
		s.peers = transport
	}
	voters, learners := s.membership()
	rcfg := replication.Config{
		ID:             s.id,
		Voters:         voters,
		Learners:       learners,
		TickInterval:   cfg.TickTime / 10,
		ElectionTicks:  10,
		HeartbeatTicks: 1,
		SnapCount:      uint64(cfg.SnapCount),
		Storage:        store,
		FSM:            (*stateMachine)(s),
		Logger:         logger,
	}
	if transport != nil {
		rcfg.Transport = transport
	}
	node, err := replication.Start(rcfg)
	if err != nil {
		disk.Close()
		if transport != nil {
			transport.Close()
		}
		return nil, fmt.Errorf("server: start raft: %w", s.damaged(err))
	}
	s.node = node
	if transport != nil {
		// Peers judge this server by the ensemble its data belongs to,
		// which its own log may say: replay it before the first
		// handshake.
		select {
		case <-node.Replayed():
		case <-node.Done():
			transport.Close()
			return nil, fmt.Errorf("server: replay the log: %w", node.Err())
		}
		s.transport = transport
		transport.Start()
	}
	select {
	case <-node.Replayed():
		took := time.Since(s.started)
		s.metrics.Summary(metrics.DBInitTime).Observe(ms(took))
		s.metrics.Summary(metrics.StartupTxnsLoadTime).Observe(ms(took - time.Duration(s.counts.snapLoad.Load())))
	default:
	}
	// Sessions alive before a restart get a fresh full timeout to
	// reconnect, as ZooKeeper gives them after a leader change.
	// The node applies entries from here on, and Apply tracks sessions
	// under smu too.
	now := time.Now()
	s.mu.RLock()
	s.smu.Lock()
	for _, sess := range s.fsm.Sessions() {
		s.tracker.Add(session.ID(sess.ID), time.Duration(sess.Timeout)*time.Millisecond, now)
	}
	s.smu.Unlock()
	s.mu.RUnlock()
	return s, nil
}

// testHookStorage, when set, stands between the node and the disk.
var testHookStorage func(replication.Storage) replication.Storage

// damaged adds to an error that found this server's files damaged what the
// operator can do about it.
func (s *Server) damaged(err error) error {
	if !errors.Is(err, storage.ErrCorrupt) {
		return err
	}
	if !s.cfg.Standalone {
		// Raft counts on a voter keeping what it acknowledged; an
		// observer that forgot would be sent commit indexes beyond its
		// log, which raft treats as a lost log and panics on.
		return fmt.Errorf("%w; this member must not rejoin with its log as it is, cut, or emptied: the ensemble may count writes it acknowledged as committed, and raft relies on its keeping them. Keep it stopped and rebuild it from its peers with collie datadir rebuild (see \"A member that lost its data\" in Collie's README); the ensemble goes on serving while a majority of its voters runs", err)
	}
	advice := "restore the data directories from a backup"
	var ce *storage.CorruptError
	if errors.As(err, &ce) {
		if size, remove, ok := ce.Cut(); ok {
			var steps []string
			if size >= 0 {
				steps = append(steps, fmt.Sprintf("truncate -s %d %s", size, ce.Path))
			}
			if len(remove) > 0 {
				steps = append(steps, "rm "+strings.Join(remove, " "))
			}
			advice += fmt.Sprintf("; or, giving up for good every write logged from offset %d of %s on, cut the log there and start the server again: collie datadir truncate -at %s:%d -backup DIR keeps a copy first (by hand: %s)",
				ce.Offset, ce.Path, filepath.Base(ce.Path), ce.Offset, strings.Join(steps, " && "))
		}
	}
	return fmt.Errorf("%w; the log is damaged: %s", err, advice)
}

// readLegacySecret reads the session secret that servers before the
// replicated one kept in the data directory; nil when there is none.
func readLegacySecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil && len(b) == fsm.SecretLen:
		return b, nil
	case err == nil:
		return nil, fmt.Errorf("server: session secret %s is damaged (%d bytes): remove it to start with a new one; open sessions will then have to start over", path, len(b))
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("server: read session secret: %w", err)
	}
	return nil, nil
}

// sessionSecret returns the replicated secret session passwords are
// derived from. Clients are served only once it is set.
func (s *Server) sessionSecret() []byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.fsm.Secret()
}

// ensureSecret waits until the replicated session secret is set, proposing
// it first when this server leads and none is.
func (s *Server) ensureSecret(ctx context.Context) error {
	if s.sessionSecret() != nil {
		return nil
	}
	if s.node.IsLeader() {
		secret := s.legacySecret
		if secret == nil {
			secret = make([]byte, fsm.SecretLen)
			rand.Read(secret)
		}
		s.propose(&fsm.Entry{Type: fsm.EntrySetSecret, Body: secret}, nil)
	}
	select {
	case <-s.secretSet:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.node.Done():
		return fmt.Errorf("raft stopped: %w", s.node.Err())
	}
}

// Addr returns the client listener's address once Run has started
// listening, or nil; nil too for a server that serves TLS clients only
// (see SecureAddr).
func (s *Server) Addr() net.Addr {
	select {
	case <-s.lnReady:
		if s.ln == nil {
			return nil
		}
		return s.ln.Addr()
	default:
		return nil
	}
}

// SecureAddr returns the address of the TLS client listener
// (secureClientPort) once Run has started listening, or nil.
func (s *Server) SecureAddr() net.Addr {
	select {
	case <-s.lnReady:
		if s.tlsLn == nil {
			return nil
		}
		return s.tlsLn.Addr()
	default:
		return nil
	}
}

// Ready is closed once the server accepts clients.
func (s *Server) Ready() <-chan struct{} { return s.lnReady }

// A listener is one client port and how its connections begin.
type listener struct {
	net.Listener
	mode connMode
}

// connMode says how a client port's connections begin.
type connMode int

const (
	plainConns   connMode = iota // ZooKeeper's protocol at once
	tlsConns                     // a TLS handshake first (secureClientPort)
	unifiedConns                 // either, told by the first byte (client.portUnification)
)

// listen opens the client ports: clientPort unless it is 0, and
// secureClientPort when set.
func (s *Server) listen() ([]listener, error) {
	var lns []listener
	closeAll := func() {
		for _, l := range lns {
			l.Close()
		}
	}
	if s.cfg.ClientPort != 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.ClientPortAddress, fmt.Sprint(s.cfg.ClientPort)))
		if err != nil {
			return nil, fmt.Errorf("server: listen on client port: %w", err)
		}
		mode := plainConns
		if s.cfg.ClientPortUnification {
			mode = unifiedConns
		}
		lns = append(lns, listener{ln, mode})
		s.ln = ln
	}
	if s.cfg.SecureClientPort != 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.SecureClientPortAddress, fmt.Sprint(s.cfg.SecureClientPort)))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("server: listen on secure client port: %w", err)
		}
		lns = append(lns, listener{ln, tlsConns})
		s.tlsLn = ln
	}
	return lns, nil
}

// Run listens on the client ports and serves until ctx ends or Shutdown is
// called. A member of an ensemble listens at once, as a ZooKeeper server
// does, and serves clients once it knows a leader and the session secret;
// until then it refuses sessions and its four-letter words and admin
// commands say it is not serving.
func (s *Server) Run(ctx context.Context) error {
	if s.cfg.Standalone {
		if err := s.node.WaitLeader(ctx); err != nil {
			return fmt.Errorf("server: wait for leadership: %w", err)
		}
		if err := s.ensureSecret(ctx); err != nil {
			return fmt.Errorf("server: set the session secret: %w", err)
		}
		s.ready.Store(true)
	}
	if err := s.startAdmin(); err != nil {
		return err
	}
	defer s.stopAdmin()
	if err := s.startMetrics(); err != nil {
		return err
	}
	defer s.stopMetrics()
	lns, err := s.listen()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-ctx.Done():
		case <-s.closing:
		case <-s.node.Done():
		case <-s.fatalc:
		}
		for _, l := range lns {
			l.Close()
		}
	}()
	var addrs []string
	for _, l := range lns {
		addrs = append(addrs, l.Addr().String())
	}
	if !s.ready.Load() {
		s.log.Info("listening for clients; serving them once a leader is known", "addr", strings.Join(addrs, ","))
	}
	s.goUnlessClosed(func() {
		if !s.ready.Load() {
			if err := s.node.AwaitLeader(ctx); err != nil {
				return
			}
			if err := s.ensureSecret(ctx); err != nil {
				return
			}
			s.ready.Store(true)
		}
		close(s.lnReady)
		s.log.Info("serving clients", "addr", strings.Join(addrs, ","), "data_dir", s.cfg.DataDir)
		s.wg.Go(func() { s.expireSessions(ctx) })
		s.wg.Go(func() { s.sweepContainers(ctx) })
		if s.cfg.AutopurgePurgeInterval > 0 {
			s.wg.Go(func() { s.purgeOnSchedule(ctx) })
		}
		// What the start read and replayed (the snapshot's stream, the
		// log's entries) is garbage now: hand it back to the system at
		// once rather than over minutes, since a server is sized by its
		// resident memory.
		s.wg.Go(debug.FreeOSMemory)
	})
	for _, r := range []*tlsconfig.Reloader{s.tlsReloader, s.reloadedQuorumTLS()} {
		if r == nil {
			continue
		}
		s.goUnlessClosed(func() {
			// Without the watch the server still serves, with the stores
			// it read at start, as ZooKeeper does when its watch fails.
			if err := r.Watch(ctx); err != nil {
				s.log.Error("TLS key and trust stores will not be reloaded", "err", err)
			}
		})
	}
	// Every port's loop ends when its listener closes; the first to end
	// says why Run returns, and closes the others.
	errc := make(chan error, len(lns))
	for _, l := range lns {
		if !s.goUnlessClosed(func() { errc <- s.accept(ctx, l) }) {
			return ErrServerClosed
		}
	}
	err = <-errc
	cancel()
	return err
}

// accept serves the connections of one client port until its listener
// closes.
func (s *Server) accept(ctx context.Context, ln listener) error {
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.closing:
				return ErrServerClosed
			default:
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if nerr := s.node.Err(); nerr != nil {
				return fmt.Errorf("server: raft stopped: %w", nerr)
			}
			select {
			case <-s.fatalc:
				return s.fatalErr
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("server: accept: %w", err)
		}
		delay = 0
		if !s.admit(nc) {
			continue
		}
		started := s.goUnlessClosed(func() {
			s.serveConn(ctx, nc, ln.mode)
			s.release(nc)
		})
		if !started {
			nc.Close()
			s.release(nc)
			return ErrServerClosed
		}
	}
}

// handshakeTimeout bounds the start of a connection: its TLS handshake,
// and then its connect request. A client that has not sent its connect
// request within the longest session timeout it could ask for is gone.
func (s *Server) handshakeTimeout() time.Duration {
	return min(10*time.Second, s.cfg.MaxSessionTimeout)
}

// serveConn serves one client connection until it closes; one that starts
// with a TLS handshake is served once the handshake has succeeded.
func (s *Server) serveConn(ctx context.Context, nc net.Conn, mode connMode) {
	var certIDs []proto.ID
	if mode != plainConns {
		var ok bool
		if nc, ok = s.startTLS(ctx, nc, mode); !ok {
			nc.Close()
			return
		}
		if tc, isTLS := nc.(*tls.Conn); isTLS {
			if certIDs, ok = s.certIdentities(tc); !ok {
				nc.Close()
				return
			}
		}
	}
	if _, isTLS := nc.(*tls.Conn); !isTLS {
		s.countPlaintext(nc)
	}
	conn.Serve(ctx, nc, s, conn.Config{
		CertIDs:            certIDs,
		MaxBuffer:          s.cfg.JuteMaxBuffer,
		HandshakeTimeout:   s.handshakeTimeout(),
		Logger:             s.log,
		LinearizableReads:  s.cfg.LinearizableReads,
		EnforceAuthSchemes: s.cfg.EnforceAuthSchemes,
		AllowSASLFailed:    s.cfg.AllowSASLFailedClients,
		Observe:            s.observeReply,
		Received:           s.observeRequest,
		Notified:           func(n int) { s.metrics.Counter(metrics.WatchBytes).Add(float64(n)) },
		AuthFailed:         func() { s.counts.authFailed.Add(1) },
	})
}

// startTLS performs the TLS handshake of a connection (on a unified port,
// once its first byte shows one) within the handshake timeout, and returns
// the connection to serve. A failed handshake, or garbage, costs that
// connection only.
func (s *Server) startTLS(ctx context.Context, nc net.Conn, mode connMode) (net.Conn, bool) {
	nc.SetDeadline(time.Now().Add(s.handshakeTimeout()))
	if mode == unifiedConns {
		pc, isTLS, err := tlssniff.Sniff(nc)
		if err != nil {
			return nc, false
		}
		nc = pc
		if !isTLS {
			// conn.Serve sets its own deadlines.
			nc.SetDeadline(time.Time{})
			return nc, true
		}
	}
	tc := tls.Server(nc, s.tls)
	s.counts.tlsHandshaking.Add(1)
	err := tc.HandshakeContext(ctx)
	s.counts.tlsHandshaking.Add(-1)
	if err != nil {
		s.log.Info("TLS handshake failed", "remote", nc.RemoteAddr().String(), "err", err)
		s.tlsFailures.Add(1)
		return nc, false
	}
	nc.SetDeadline(time.Time{})
	return tc, true
}

// goUnlessClosed runs f in a goroutine of the server, unless Shutdown has
// begun, and reports whether it did. A goroutine Run starts must be counted
// in wg before Shutdown waits for wg (a WaitGroup's Add must not race its
// Wait); those the server's goroutines start are counted while their
// starter is.
func (s *Server) goUnlessClosed(f func()) bool {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	select {
	case <-s.closing:
		return false
	default:
	}
	s.wg.Go(f)
	return true
}

// admit enforces maxClientCnxns per client address.
func (s *Server) admit(nc net.Conn) bool {
	if !s.perIP.Admit(nc.RemoteAddr()) {
		host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
		s.log.Warn("too many connections from one address", "addr", host, "max", s.perIP.Max)
		s.metrics.Counter(metrics.ConnectionRejected).Inc()
		nc.Close()
		return false
	}
	return true
}

func (s *Server) release(nc net.Conn) { s.perIP.Release(nc.RemoteAddr()) }

// Shutdown stops accepting clients, closes every connection (their
// sessions stay valid for reconnecting to a restarted server) and stops
// raft. It returns ctx.Err() if ctx ends first.
func (s *Server) Shutdown(ctx context.Context) error {
	// Run closes its listener once closing is: Run may be listening, or
	// about to, and only Run knows.
	s.closeMu.Lock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	s.closeMu.Unlock()
	s.stopAdmin()
	s.stopMetrics()
	s.smu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.smu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		s.node.Stop()
		if s.transport != nil {
			s.transport.Close()
		}
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A waiter is told the result of an entry this server proposed. When the
// entry is applied it is called in the apply goroutine, with mu held, at
// the entry's place in the log, with a Reader of the state right after
// it: the requests a connection holds behind the entry are answered there
// (see package conn). When the disk is full and the entry is refused, it
// is called with errDiskFull by propose, with mu held for reading and a
// Reader of the state as it is. When the entry cannot be proposed
// otherwise, or its fate is unknown, it is called with ErrConnectionLoss
// and a nil Reader, from any goroutine.
type waiter func(fsm.Result, conn.Reader)

// propose wraps and proposes an entry; done, if not nil, waits for it. It
// reports false when the entry was refused because the disk is full: done
// has then been called, before propose returns, with errDiskFull and a
// Reader of the state as it is (the entry will never take a place in the
// log, so its requests are answered where they stand).
func (s *Server) propose(e *fsm.Entry, done waiter) bool {
	s.smu.Lock()
	s.reqSeq++
	e.ReqID = s.reqSeq
	if done != nil {
		s.waiters[e.ReqID] = done
	}
	s.smu.Unlock()
	e.Origin = s.id
	if e.Time == 0 {
		e.Time = time.Now().UnixMilli()
	}
	id := e.ReqID
	accepted := true
	s.node.Propose(e.Marshal(), func(err error) {
		s.smu.Lock()
		w := s.waiters[id]
		delete(s.waiters, id)
		s.smu.Unlock()
		if errors.Is(err, replication.ErrDiskFull) {
			accepted = false
			if w != nil {
				s.View(func(rd conn.Reader) { w(fsm.Result{Err: errDiskFull, Zxid: s.fsm.LastZxid()}, rd) })
			}
			return
		}
		if w != nil {
			w(fsm.Result{Err: proto.ErrConnectionLoss}, nil)
		}
	})
	return accepted
}

// awaitResult is a waiter that hands the result to a channel, for a
// proposer that blocks until its entry is applied.
func awaitResult() (waiter, <-chan fsm.Result) {
	ch := make(chan fsm.Result, 1)
	return func(r fsm.Result, _ conn.Reader) { ch <- r }, ch
}

// stateMachine is the Server as raft's state machine.
type stateMachine Server

func (sm *stateMachine) Apply(ents []raftpb.Entry) {
	s := (*Server)(sm)
	// closed are sessions ended by expiry or by another server: their
	// local connection, if any, is dropped. A session closed by its own
	// client's request is answered and closed by its connection.
	var closed []int64
	var ended []int64
	var opened []fsm.Entry
	s.mu.Lock()
	for _, ent := range ents {
		if ent.Type != raftpb.EntryNormal || len(ent.Data) == 0 {
			s.fsm.Skip(ent.Index)
			continue
		}
		e, err := fsm.UnmarshalEntry(ent.Data)
		if err != nil {
			// Applying what we cannot read would diverge from the other
			// replicas: stop here, loudly.
			s.mu.Unlock()
			panic(fmt.Sprintf("server: entry %d: %v", ent.Index, err))
		}
		res := s.fsm.Apply(ent.Index, e)
		if len(res.Events) > 0 {
			s.notify(res)
			s.observeWrites(res.Events)
		}
		if e.Time > 0 {
			s.observeApplied(time.UnixMilli(e.Time), e.Origin == s.id, s.counts.leaderSince.Load() != 0)
		}
		switch e.Type {
		case fsm.EntryCreateSession:
			opened = append(opened, *e)
		}
		if e.Origin == s.id {
			// As ZooKeeper's leader, which checks every write, logs them.
			for _, q := range res.QuotaExceeded {
				s.quotaLog.report(q.String(), time.Now())
			}
		}
		var w waiter
		if e.Origin == s.id && e.ReqID != 0 {
			s.smu.Lock()
			w = s.waiters[e.ReqID]
			delete(s.waiters, e.ReqID)
			s.smu.Unlock()
			if w != nil {
				// Here, before the next entry: the reply, and the reads its
				// session sent after it, take their place in the log.
				w(res, (*appliedState)(s))
			}
		}
		if res.Closed != 0 {
			ended = append(ended, res.Closed)
			if w == nil {
				closed = append(closed, res.Closed)
			}
		}
	}
	secretSet := s.fsm.Secret() != nil
	if secretSet && s.ensembleID.Load() == 0 {
		s.ensembleID.Store(s.fsm.EnsembleID())
	}
	s.mu.Unlock()
	if secretSet {
		s.secretOnce.Do(func() { close(s.secretSet) })
	}
	if len(opened) > 0 || len(ended) > 0 {
		now := time.Now()
		s.smu.Lock()
		for _, e := range opened {
			s.tracker.Add(session.ID(e.Session), time.Duration(e.Timeout)*time.Millisecond, now)
		}
		for _, id := range ended {
			s.tracker.Remove(session.ID(id))
		}
		var toClose []*conn.Conn
		for _, id := range closed {
			if c := s.bySession[id]; c != nil {
				toClose = append(toClose, c)
			}
		}
		s.smu.Unlock()
		for _, c := range toClose {
			c.Close()
		}
	}
}

// notify queues the watch events of one applied entry. Called with mu held.
func (s *Server) notify(res fsm.Result) {
	s.localState().Notify(res.Events)
}

// BeginSnapshot freezes the state between two applies and returns the
// encoding, which reads the frozen state a chunk at a time under the read
// lock, so applies go on between chunks.
func (sm *stateMachine) BeginSnapshot() func(io.Writer) error {
	s := (*Server)(sm)
	s.mu.Lock()
	f := s.fsm
	job := f.BeginSnapshot()
	s.mu.Unlock()
	return func(w io.Writer) error {
		err := job.Write(w, s.mu.RLock, s.mu.RUnlock)
		s.mu.Lock()
		f.EndSnapshot()
		s.mu.Unlock()
		return err
	}
}

func (sm *stateMachine) Restore(r io.Reader) error {
	s := (*Server)(sm)
	start := time.Now()
	f, err := fsm.Restore(fsmOptions(s.cfg), r)
	if err != nil {
		return err
	}
	switch took := ms(time.Since(start)); {
	case s.starting.Load():
		s.counts.snapLoad.Store(int64(time.Since(start)))
		s.metrics.Summary(metrics.StartupSnapLoadTime).Observe(took)
	case s.observer():
		s.metrics.Summary(metrics.ObserverSyncTime).Observe(took)
	default:
		s.metrics.Summary(metrics.FollowerSyncTime).Observe(took)
	}
	s.mu.Lock()
	s.fsm = f
	s.ensembleID.Store(f.EnsembleID())
	s.mu.Unlock()
	if f.Secret() != nil {
		s.secretOnce.Do(func() { close(s.secretSet) })
	}
	return nil
}
