// Package follow owns a Collie server that follows a running Apache
// ZooKeeper 3.8 ensemble as one of its observers and serves its clients
// as a ZooKeeper observer does: it keeps a copy of the ensemble's state in
// memory, current with every transaction the leader commits, answers reads
// and watches from it, and forwards the sessions' writes, syncs, session
// creations and reconnections to the leader, answering each once the
// leader's answer has arrived and the copy has applied everything before
// it. At the cut-over marker (MarkerPath) it stops, and writes the data
// directory it goes on from as a member of a Collie ensemble.
//
// # Goroutines
//
// Run runs the follow loop, which alone changes the state, and the accept
// loop; each client connection runs in goroutines of its own (conn.Serve).
// The state is replaced or changed under mu's write lock and read under
// its read lock; a change fires its watches before the lock is released,
// so a client gets a watch event before any reply that shows the change.
// smu guards the set of connections and whether they are served: losing
// the leader closes every connection under it, and a session opened after
// that is refused until the copy is in sync again. Requests forwarded to
// the leader wait in pending (its own lock) until the follow loop takes
// their answers; lock order is mu, then pending's, then smu.
package follow

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/conn"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/localread"
	"github.com/collie-io/collie/server/session"
	"github.com/collie-io/collie/server/watch"
	"github.com/collie-io/collie/server/zkdata"
	"github.com/collie-io/collie/server/zkimport"
	"github.com/collie-io/collie/server/zkquorum"
)

// Options are what a Server needs besides its configuration.
type Options struct {
	// Version is what srvr, stat and mntr report as the ZooKeeper
	// version.
	Version string
	Logger  *slog.Logger
}

// A Server follows a ZooKeeper ensemble and serves its clients as the
// ensemble's observer.
type Server struct {
	cfg     config.Config
	opts    Options
	log     *slog.Logger
	quorum  zkquorum.Config
	fsmOpts fsm.Options
	started time.Time
	ids     *session.Generator
	// secret is the session secret of the copy's state machine, which
	// zkimport requires; the sessions served here have ZooKeeper's
	// passwords, which derive from their ids.
	secret []byte
	ln     net.Listener
	// perIP counts client connections by address (maxClientCnxns).
	perIP conn.IPLimit
	stats stats

	// mu guards fsm, which the follow loop replaces or changes.
	mu  sync.RWMutex
	fsm *fsm.FSM

	// leader is the Follower of the current round, which requests are
	// forwarded through; nil between rounds.
	leader atomic.Pointer[zkquorum.Follower]
	// cxid numbers forwarded requests (nextCxid).
	cxid atomic.Int64
	// pending are the forwarded requests the leader has not answered.
	pending *pending

	// wmu guards watches.
	wmu     sync.Mutex
	watches *watch.Registry[*conn.Conn]

	// smu guards serving and conns.
	smu     sync.Mutex
	serving bool
	conns   map[*conn.Conn]struct{}
	// sessions are the ensemble's sessions with a connection here.
	sessions map[int64]globalSession
	// ready is closed the first time the copy is in sync.
	ready     chan struct{}
	readyOnce sync.Once

	// marker is the cut-over marker the follow loop stopped at, and
	// cutOver what Run made of it.
	marker  *pendingCutOver
	cutOver *CutOver
}

// New checks that cfg describes a ZooKeeper ensemble that lists this
// server (myid) as an observer, and listens on its client port. Run
// follows and serves.
func New(cfg config.Config, opts Options) (*Server, error) {
	if err := checkServed(cfg); err != nil {
		return nil, err
	}
	if err := checkDataDir(cfg); err != nil {
		return nil, err
	}
	quorum, err := quorumConfig(cfg)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	quorum.Logger = opts.Logger.With("component", "zkquorum")
	secret := make([]byte, fsm.SecretLen)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("follow: session secret: %w", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.ClientPortAddress, strconv.Itoa(cfg.ClientPort)))
	if err != nil {
		return nil, fmt.Errorf("follow: %w", err)
	}
	now := time.Now()
	s := &Server{
		cfg:      cfg,
		opts:     opts,
		log:      opts.Logger,
		quorum:   quorum,
		fsmOpts:  fsm.Options{ExtendedTypes: cfg.ExtendedTypesEnabled},
		started:  now,
		ids:      session.NewGenerator(cfg.ServerID, now),
		secret:   secret,
		ln:       ln,
		perIP:    conn.IPLimit{Max: cfg.MaxClientCnxns},
		watches:  watch.New[*conn.Conn](),
		conns:    map[*conn.Conn]struct{}{},
		pending:  newPending(),
		sessions: map[int64]globalSession{},
		ready:    make(chan struct{}),
	}
	if s.fsm, err = s.emptyState(); err != nil {
		ln.Close()
		return nil, err
	}
	return s, nil
}

// checkServed refuses settings a follower does not honour yet, rather
// than serve with less security or fewer limits than they ask for.
func checkServed(cfg config.Config) error {
	var refused []string
	if cfg.SecureClientPort != 0 || cfg.ClientPortUnification {
		refused = append(refused, "TLS for clients (secureClientPort, client.portUnification)")
	}
	if len(cfg.EnforceAuthSchemes) > 0 {
		refused = append(refused, "enforce.auth.schemes")
	}
	if cfg.QuorumTLS() || cfg.QuorumAuth.EnableSASL {
		refused = append(refused, "TLS or SASL between servers (sslQuorum, portUnification, quorum.auth.enableSasl)")
	}
	if len(refused) > 0 {
		return fmt.Errorf("follow: not served while following a ZooKeeper ensemble: %s", strings.Join(refused, "; "))
	}
	return nil
}

// quorumConfig is how zkquorum follows the ensemble cfg describes.
func quorumConfig(cfg config.Config) (zkquorum.Config, error) {
	q := zkquorum.Config{
		ServerID:  int64(cfg.ServerID),
		TickTime:  cfg.TickTime,
		InitLimit: cfg.InitLimit,
		SyncLimit: cfg.SyncLimit,
		MaxPacket: cfg.JuteMaxBuffer,
	}
	observer := false
	for _, s := range cfg.Servers {
		switch {
		case s.ID == cfg.ServerID:
			observer = s.Observer
		case !s.Observer:
			q.Servers = append(q.Servers, zkquorum.Server{ID: int64(s.ID), Addr: net.JoinHostPort(s.Host, strconv.Itoa(s.PeerPort))})
		}
	}
	switch {
	case cfg.ServerID == 0:
		return q, errors.New("follow: the configuration lists no ZooKeeper ensemble with this server in it (server.N lines and a myid file)")
	case !observer:
		return q, fmt.Errorf("follow: server.%d must be an observer of the ZooKeeper ensemble (server.%d=host:port:port:observer)", cfg.ServerID, cfg.ServerID)
	case len(q.Servers) == 0:
		return q, errors.New("follow: the configuration lists no ZooKeeper server to follow")
	}
	return q, nil
}

// Addr is the address the server listens on for clients.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Ready is closed once the server first serves clients.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run follows the ensemble and serves clients until ctx ends, then closes
// every connection and returns ctx's error once they are closed. At the
// cut-over marker it stops following and serving, writes the data
// directory the server goes on from as a member of the Collie ensemble,
// and returns nil; CutOver then says what it made.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { s.accept(ctx, &wg) })
	context.AfterFunc(ctx, func() { s.ln.Close() })
	err := s.follow(ctx)
	s.ln.Close()
	s.setServing(false)
	wg.Wait()
	if errors.Is(err, errCutOverNow) {
		s.cutOver, err = s.writeCutOver(s.marker)
	}
	return err
}

// CutOver is what the cut-over made of this server once Run has returned
// nil; nil before.
func (s *Server) CutOver() *CutOver { return s.cutOver }

// accept serves each client connection in goroutines of wg until the
// listener closes.
func (s *Server) accept(ctx context.Context, wg *sync.WaitGroup) {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		if !s.perIP.Admit(nc.RemoteAddr()) {
			s.log.Warn("too many connections from one address", "addr", nc.RemoteAddr().String(), "max", s.perIP.Max)
			nc.Close()
			continue
		}
		wg.Go(func() {
			defer s.perIP.Release(nc.RemoteAddr())
			conn.Serve(ctx, nc, s, conn.Config{
				MaxBuffer:        s.cfg.JuteMaxBuffer,
				HandshakeTimeout: min(10*time.Second, s.cfg.MaxSessionTimeout),
				Logger:           s.log,
				Observe:          s.stats.observe,
				Received:         s.stats.packet,
			})
		})
	}
}

// errResync says the copy must be dropped and taken again from scratch.
var errResync = errors.New("follow: resync from an empty state")

// follow keeps the copy current until ctx ends: from the state it has
// across leader changes, from an empty one when it cannot go on from there.
func (s *Server) follow(ctx context.Context) error {
	for {
		f, err := zkquorum.NewFollower(s.quorum, s.lastZxid())
		if err != nil {
			return fmt.Errorf("follow: %w", err)
		}
		s.leader.Store(f)
		err = s.followFrom(ctx, f)
		s.leader.Store(nil)
		f.Close()
		s.failPending()
		if !errors.Is(err, errResync) {
			// At the marker too: what the leader answers after it must
			// not be acknowledged here.
			return err
		}
		s.setServing(false)
		empty, err := s.emptyState()
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.fsm = empty
		s.mu.Unlock()
	}
}

// followFrom applies f's events until ctx ends or the copy must be taken
// again (errResync).
func (s *Server) followFrom(ctx context.Context, f *zkquorum.Follower) error {
	for {
		ev, err := f.Next(ctx)
		if err != nil {
			return err
		}
		switch ev.Kind {
		case zkquorum.EventSnapshot:
			if err := s.load(ev); errors.Is(err, errPastMarker) {
				return err
			} else if err != nil {
				s.log.Error("cannot read the leader's snapshot", "zxid", zxidString(ev.Zxid), "err", err)
				return errResync
			}
		case zkquorum.EventTrunc:
			if ev.Zxid < s.lastZxid() {
				// The copy has txns the new leader does not: it cannot
				// take them back, so it starts over.
				s.log.Info("the leader truncates the log behind this copy; taking the data again",
					"truncate_to", zxidString(ev.Zxid), "zxid", zxidString(s.lastZxid()))
				return errResync
			}
		case zkquorum.EventTxn:
			if err := s.apply(ev.Txn); errors.Is(err, errCutOverNow) {
				return err
			} else if err != nil {
				s.log.Error("cannot apply the leader's txn; taking the data again", "zxid", zxidString(ev.Txn.Header.Zxid), "err", err)
				return errResync
			}
		case zkquorum.EventUpToDate:
			s.log.Info("in sync with the ZooKeeper leader: serving clients", "zxid", zxidString(s.lastZxid()))
			s.setServing(true)
		case zkquorum.EventSynced:
			s.answerSync()
		case zkquorum.EventRevalidated:
			s.answerRevalidation(ev.SessionID, ev.Valid)
		case zkquorum.EventDisconnected:
			// As a ZooKeeper observer that loses its leader shuts its
			// server down: clients go elsewhere, and come back once this
			// copy is in sync again.
			s.failPending()
			s.setServing(false)
		}
	}
}

// load replaces the copy with the leader's snapshot.
func (s *Server) load(ev zkquorum.Event) error {
	dt, err := zkdata.ReadSnapshotBody(ev.Snapshot, s.cfg.ExtendedTypesEnabled)
	if err != nil {
		return err
	}
	dt.LastZxid = ev.Zxid
	res, err := zkimport.Convert(dt, zkimport.Options{FSM: s.fsmOpts, Secret: s.secret})
	if err != nil {
		return err
	}
	if err := pastMarker(res.FSM, ev.Zxid); err != nil {
		return err
	}
	s.mu.Lock()
	s.fsm = res.FSM
	s.mu.Unlock()
	s.log.Info("took the leader's snapshot", "zxid", zxidString(ev.Zxid), "nodes", res.Nodes, "sessions", res.Sessions)
	return nil
}

// apply applies one committed txn and fires the watches it triggers.
func (s *Server) apply(t zkquorum.Txn) error {
	txn, err := zkdata.DecodeTxn(t.Data)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if last := s.fsm.LastZxid(); txn.Zxid <= last {
		return fmt.Errorf("txn %s is not after the copy's last, %s", zxidString(txn.Zxid), zxidString(last))
	}
	res := s.fsm.ApplyZooKeeper(txn)
	if len(res.Events) > 0 {
		s.local().Notify(res.Events)
	}
	answered := s.answerTxn(t.Header, res)
	if res.Closed != 0 {
		s.sessionClosed(res.Closed, answered)
	}
	if m, ok := s.markerAt(txn); ok {
		s.log.Info("the cut-over marker: no longer following ZooKeeper", "zxid", zxidString(m.zxid), "members", idList(m.plan.Members))
		s.marker = m
		return errCutOverNow
	}
	return nil
}

// emptyState is the state of a ZooKeeper ensemble that has no data yet.
func (s *Server) emptyState() (*fsm.FSM, error) {
	res, err := zkimport.Convert(zkdata.NewDataTree(s.cfg.ExtendedTypesEnabled), zkimport.Options{FSM: s.fsmOpts, Secret: s.secret})
	if err != nil {
		return nil, fmt.Errorf("follow: %w", err)
	}
	return res.FSM, nil
}

// local is the state as localread sees it. Called with mu held.
func (s *Server) local() localread.State {
	return localread.State{FSM: s.fsm, WatchMu: &s.wmu, Watches: s.watches}
}

func (s *Server) lastZxid() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.fsm.LastZxid()
}

// setServing starts or stops serving clients; stopping closes every
// connection.
func (s *Server) setServing(on bool) {
	s.smu.Lock()
	s.serving = on
	var closing []*conn.Conn
	if !on {
		for c := range s.conns {
			closing = append(closing, c)
		}
	}
	s.smu.Unlock()
	if on {
		s.readyOnce.Do(func() { close(s.ready) })
	}
	for _, c := range closing {
		c.Close()
	}
}

func zxidString(z int64) string { return "0x" + strconv.FormatInt(z, 16) }
