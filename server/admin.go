package server

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/collie-io/collie/server/admin"
	"github.com/collie-io/collie/server/tlsconfig"
	"github.com/collie-io/collie/server/tree"
)

// adminServer is the place in a Server of an HTTP port: the admin
// server's, or the metrics port's. Run starts it
// before the client listener, as ZooKeeper starts its AdminServer, and
// Shutdown or the end of Run closes it. Its handlers read the server
// through adminBackend, under the same locks as the four-letter words.
type adminServer struct {
	mu     sync.Mutex
	srv    *admin.Server // nil before the start, after the stop, or when disabled
	closed bool          // stopped: a late start must not open the port again
}

// startAdmin opens the admin port when admin.enableServer is true.
func (s *Server) startAdmin() error {
	if !s.cfg.AdminServerEnabled {
		return nil
	}
	h := admin.NewHandler((*adminBackend)(s), admin.Options{
		CommandURL:       s.cfg.AdminCommandURL,
		Pprof:            s.cfg.AdminPprof,
		SnapshotDisabled: !s.cfg.AdminSnapshotEnabled,
		SnapshotInterval: s.cfg.AdminRateLimiterInterval,
		Logger:           s.log,
	})
	https, err := s.adminHTTPS()
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(s.cfg.AdminServerAddress, strconv.Itoa(s.cfg.AdminServerPort))
	return s.admin.start(func() (*admin.Server, error) {
		srv, err := admin.Listen(addr, h, https, s.log)
		if err != nil {
			return nil, fmt.Errorf("server: start the admin server on %s (set admin.serverPort, or admin.enableServer=false): %w", addr, err)
		}
		s.log.Info("serving admin commands", "addr", srv.Addr().String(), "command_url", s.cfg.AdminCommandURL, "pprof", s.cfg.AdminPprof,
			"forceHttps", s.cfg.AdminForceHTTPS, "portUnification", s.cfg.AdminPortUnification, "needClientAuth", s.cfg.AdminNeedClientAuth)
		return srv, nil
	})
}

// start opens the port with open, unless stop came first.
func (a *adminServer) start(open func() (*admin.Server, error)) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ErrServerClosed
	}
	srv, err := open()
	if err != nil {
		return err
	}
	a.srv = srv
	return nil
}

// stop closes the port, if open, and waits for its goroutines.
func (a *adminServer) stop() {
	a.mu.Lock()
	srv := a.srv
	a.srv, a.closed = nil, true
	a.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// addr returns the port's address while it serves, or nil.
func (a *adminServer) addr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.srv == nil {
		return nil
	}
	return a.srv.Addr()
}

// adminHTTPS reads the ssl.quorum.* stores for the admin server when it
// serves HTTPS (admin.forceHttps, admin.portUnification), or returns nil.
// As in ZooKeeper, only the stores come from those keys: the versions and
// suites are the defaults (Jetty's there, Go's here), and a client
// certificate is asked for only with admin.needClientAuth. ZooKeeper reads
// the stores once, at the start.
func (s *Server) adminHTTPS() (*admin.HTTPS, error) {
	if !s.cfg.AdminHTTPS() {
		return nil, nil
	}
	stores := tlsconfig.Settings{
		KeyStore:   s.cfg.QuorumSSL.KeyStore,
		TrustStore: s.cfg.QuorumSSL.TrustStore,
		ClientAuth: tlsconfig.NoClientAuth,
	}
	if s.cfg.AdminNeedClientAuth {
		stores.ClientAuth = tlsconfig.NeedClientAuth
	}
	c, err := stores.ServerConfig()
	if err != nil {
		return nil, fmt.Errorf("server: HTTPS on the admin port (admin.forceHttps, admin.portUnification) with the ssl.quorum.* stores: %w", err)
	}
	c.MinVersion, c.MaxVersion, c.CipherSuites = tls.VersionTLS12, 0, nil
	s.log.Info("HTTPS on the admin port", "key_store", stores.KeyStore, "trust_store", stores.TrustStore)
	return &admin.HTTPS{Config: c, AcceptPlaintext: !s.cfg.AdminForceHTTPS}, nil
}

// stopAdmin closes the admin server and waits for its goroutines.
func (s *Server) stopAdmin() { s.admin.stop() }

// AdminAddr returns the admin server's address while it serves, or nil.
func (s *Server) AdminAddr() net.Addr { return s.admin.addr() }

// adminBackend is the Server as the admin commands see it. It answers
// from what the four-letter words compute, so both report the same.
type adminBackend Server

var _ admin.Backend = (*adminBackend)(nil)

func (a *adminBackend) Monitor() []admin.Metric {
	s := (*Server)(a)
	var out []admin.Metric
	for line := range strings.Lines(s.mntr()) {
		name, value, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		if ok {
			out = append(out, admin.Metric{Name: strings.TrimPrefix(name, "zk_"), Value: value})
		}
	}
	return out
}

func (a *adminBackend) LastZxid() int64 { return (*Server)(a).LastZxid() }

func (a *adminBackend) Serving() bool { return (*Server)(a).serving() }

func (a *adminBackend) ReadOnly() bool { return (*Server)(a).readOnlyMode() }

func (a *adminBackend) Connections() []admin.Connection {
	s := (*Server)(a)
	conns := s.connections()
	out := make([]admin.Connection, 0, len(conns))
	for _, c := range conns {
		received, sent := c.Counts()
		info := admin.Connection{
			RemoteAddr:  c.RemoteAddr().String(),
			Outstanding: int64(c.Outstanding()),
			Received:    received,
			Sent:        sent,
			Session:     c.Session(),
			Timeout:     c.Timeout(),
		}
		consDetails(c.ConsLine(), &info)
		out = append(out, info)
	}
	return out
}

// consDetails fills in what a connection tells only through its cons line:
//
//	/127.0.0.1:5555[1](queued=0,recved=8,sent=8,sid=0x1,lop=GETD,est=1700000000000,to=10000,
//	  lcxid=0x7,lzxid=0x3,lresp=1700000000100,llat=0,minlat=0,avglat=1,maxlat=4)
func consDetails(line string, info *admin.Connection) {
	open := strings.IndexByte(line, '(')
	if open < 0 {
		return
	}
	stats := strings.TrimSuffix(strings.TrimSpace(line[open+1:]), ")")
	num := func(v string) int64 {
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	ms := func(v string) time.Duration { return time.Duration(num(v)) * time.Millisecond }
	for kv := range strings.SplitSeq(stats, ",") {
		key, v, _ := strings.Cut(kv, "=")
		switch key {
		case "lop":
			info.LastOp = v
		case "est":
			info.Established = time.UnixMilli(num(v))
		case "lresp":
			info.LastResponse = time.UnixMilli(num(v))
		case "lcxid", "lzxid":
			n, _ := strconv.ParseUint(v, 0, 64)
			if key == "lcxid" {
				info.LastCxid = int64(int32(n))
			} else {
				info.LastZxid = int64(n)
			}
		case "llat":
			info.LastLatency = ms(v)
		case "minlat":
			info.MinLatency = ms(v)
		case "avglat":
			info.AvgLatency = ms(v)
		case "maxlat":
			info.MaxLatency = ms(v)
		}
	}
}

func (a *adminBackend) Configuration() admin.Configuration {
	s := (*Server)(a)
	rt := s.runtime()
	c := admin.Configuration{
		ClientPort:        rt.ClientPort,
		DataDir:           rt.DataDir,
		DataLogDir:        rt.DataLogDir,
		TickTime:          s.cfg.TickTime,
		MaxClientCnxns:    s.cfg.MaxClientCnxns,
		MinSessionTimeout: s.cfg.MinSessionTimeout,
		MaxSessionTimeout: s.cfg.MaxSessionTimeout,
		ListenBacklog:     s.cfg.ClientPortListenBacklog,
	}
	if c.ClientPort == 0 {
		// ZooKeeper reports -1 without a client port.
		c.ClientPort = cmp.Or(s.cfg.ClientPort, -1)
	}
	if !s.cfg.Standalone {
		c.ServerID = s.cfg.ServerID
	}
	return c
}

func (a *adminBackend) Dirs() admin.Dirs {
	rt := (*Server)(a).runtime()
	return admin.Dirs{DataDirSize: rt.DataDirSize, LogDirSize: rt.DataLogSize}
}

func (a *adminBackend) Sessions() []admin.Session {
	s := (*Server)(a)
	s.smu.Lock()
	infos := s.tracker.Sessions()
	s.smu.Unlock()
	out := make([]admin.Session, len(infos))
	for i, in := range infos {
		out[i] = admin.Session{ID: int64(in.ID), Expires: in.Expires}
	}
	return out
}

func (a *adminBackend) Ephemerals() map[int64][]string {
	s := (*Server)(a)
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.fsm.Tree()
	out := map[int64][]string{}
	for _, id := range t.EphemeralSessions() {
		out[id] = t.Ephemerals(id)
	}
	return out
}

func (a *adminBackend) Watches() admin.Watches {
	s := (*Server)(a)
	s.wmu.Lock()
	byWatcher, byPath, sum := s.watches.ByWatcher(), s.watches.ByPath(), s.watches.Summary()
	s.wmu.Unlock()
	w := admin.Watches{
		BySession:   map[int64][]string{},
		ByPath:      map[string][]int64{},
		Connections: sum.Connections,
		Paths:       sum.Paths,
		Total:       sum.Watches,
	}
	for _, c := range sortedConns(byWatcher) {
		w.BySession[c.Session()] = append(w.BySession[c.Session()], byWatcher[c]...)
	}
	for p, conns := range byPath {
		for _, c := range conns {
			w.ByPath[p] = append(w.ByPath[p], c.Session())
		}
	}
	return w
}

func (a *adminBackend) Environment() []admin.Property {
	var out []admin.Property
	for line := range strings.Lines((*Server)(a).envi()) {
		key, value, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
		if ok {
			out = append(out, admin.Property{Key: key, Value: value})
		}
	}
	return out
}

func (a *adminBackend) InitialConfiguration() string { return a.cfg.Initial }

// LastSnapshot finds the newest snapshot file. Files are named
// term-index.snap in hex, and a zxid is the raft index of its entry, so
// the index is the zxid of the last transaction the snapshot holds.
func (a *adminBackend) LastSnapshot() (admin.Snapshot, bool) {
	dir := filepath.Join(a.cfg.DataDir, "snap")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return admin.Snapshot{}, false
	}
	var newest admin.Snapshot
	found := false
	for _, e := range entries {
		var term, index uint64
		if _, err := fmt.Sscanf(e.Name(), "%016x-%016x.snap", &term, &index); err != nil || !strings.HasSuffix(e.Name(), ".snap") {
			continue
		}
		info, err := e.Info()
		if err != nil || found && int64(index) <= newest.Zxid {
			continue
		}
		newest, found = admin.Snapshot{Zxid: int64(index), ModTime: info.ModTime()}, true
	}
	return newest, found
}

func (a *adminBackend) ResetServerStats() { a.latency.Reset() }

func (a *adminBackend) ResetConnectionStats() {
	for _, c := range (*Server)(a).connections() {
		c.ResetStats()
	}
}

func (a *adminBackend) TraceMask() int64 { return a.traceMask.Load() }

func (a *adminBackend) SetTraceMask(mask int64) { a.traceMask.Store(mask) }

func (a *adminBackend) Digests() []admin.Digest {
	var out []admin.Digest
	for _, d := range (*Server)(a).digests() {
		out = append(out, admin.Digest{Zxid: d.Zxid, Version: tree.DigestVersion, Digest: d.Digest})
	}
	return out
}
