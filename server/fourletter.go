package server

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/conn"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/reqstats"
	"github.com/collie-io/collie/server/session"
)

// Version is what the version lines of srvr, stat, mntr and envi report.
// Tools parse these lines for "3.8", so Collie states the ZooKeeper
// version it speaks, then its own.
var Version = "3.8.0-collie-dev"

// defaultTraceMask is ZooKeeper's trace mask before any stmk: client
// requests, server packets, sessions and warnings.
const defaultTraceMask = 1<<1 | 1<<4 | 1<<5 | 1<<8

// FourLetter answers the four-letter words allowed by
// 4lw.commands.whitelist, in ZooKeeper's formats; arg reads stmk's
// argument.
func (s *Server) FourLetter(cmd string, arg func() (int64, bool)) (string, bool) {
	allowed := s.cfg.FourLetterWhitelist["*"] || s.cfg.FourLetterWhitelist[cmd] ||
		// As in ZooKeeper: clients of read-only sessions look for a
		// server that has its leader back with isro.
		cmd == "isro" && s.cfg.ReadOnlyMode
	if !allowed {
		return "", false
	}
	if !s.serving() && cmd != "ruok" && cmd != "isro" && cmd != "envi" && cmd != "gtmk" && cmd != "stmk" {
		// As ZooKeeper's server without a quorum: these answer, the
		// others only say so.
		return notServing, true
	}
	switch cmd {
	case "ruok":
		return "imok", true
	case "gtmk":
		return strconv.FormatInt(s.traceMask.Load(), 10), true
	case "stmk":
		// ZooKeeper reads the mask's 8 bytes after the word and prints it
		// back; without them it closes the connection unanswered.
		if arg == nil {
			return "", true
		}
		mask, ok := arg()
		if !ok {
			return "", true
		}
		s.traceMask.Store(mask)
		return strconv.FormatInt(mask, 10), true
	case "hash":
		return s.hash(), true
	case "srvr":
		return s.srvr(false), true
	case "stat":
		return s.srvr(true), true
	case "mntr":
		return s.mntr(), true
	case "cons":
		var b strings.Builder
		for _, c := range s.connections() {
			b.WriteString(c.ConsLine())
		}
		b.WriteString("\n")
		return b.String(), true
	case "crst":
		for _, c := range s.connections() {
			c.ResetStats()
		}
		return "Connection stats reset.\n", true
	case "srst":
		s.latency.Reset()
		return "Server stats reset.\n", true
	case "envi":
		return s.envi(), true
	case "conf":
		return strings.Join(s.cfg.ConfLines(s.runtime()), "\n") + "\n", true
	case "isro":
		switch {
		case s.readOnlyMode():
			return "ro", true
		case !s.ready.Load() || s.refusing.Load():
			// As ZooKeeper's answer when it serves no clients.
			return "null", true
		}
		return "rw", true
	case "dirs":
		rt := s.runtime()
		return fmt.Sprintf("datadir_size: %d\nlogdir_size: %d\n", rt.DataDirSize, rt.DataLogSize), true
	case "wchs":
		s.wmu.Lock()
		sum := s.watches.Summary()
		s.wmu.Unlock()
		return fmt.Sprintf("%d connections watching %d paths\nTotal watches:%d\n", sum.Connections, sum.Paths, sum.Watches), true
	case "wchc":
		s.wmu.Lock()
		byWatcher := s.watches.ByWatcher()
		s.wmu.Unlock()
		var b strings.Builder
		for _, c := range sortedConns(byWatcher) {
			fmt.Fprintf(&b, "%s\n", session.ID(c.Session()))
			for _, p := range byWatcher[c] {
				fmt.Fprintf(&b, "\t%s\n", p)
			}
		}
		return b.String(), true
	case "wchp":
		s.wmu.Lock()
		byPath := s.watches.ByPath()
		s.wmu.Unlock()
		paths := make([]string, 0, len(byPath))
		for p := range byPath {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		var b strings.Builder
		for _, p := range paths {
			fmt.Fprintf(&b, "%s\n", p)
			for _, c := range byPath[p] {
				fmt.Fprintf(&b, "\t%s\n", session.ID(c.Session()))
			}
		}
		return b.String(), true
	case "dump":
		return s.dump(), true
	}
	return "", false
}

// notServing is what ZooKeeper's four-letter words answer while the
// server serves no clients.
const notServing = "This ZooKeeper instance is not currently serving requests\n"

func sortedConns(m map[*conn.Conn][]string) []*conn.Conn {
	out := make([]*conn.Conn, 0, len(m))
	for c := range m {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *conn.Conn) int {
		switch {
		case a.Session() < b.Session():
			return -1
		case a.Session() > b.Session():
			return 1
		}
		return 0
	})
	return out
}

func (s *Server) connections() []*conn.Conn {
	s.smu.Lock()
	defer s.smu.Unlock()
	out := make([]*conn.Conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// mode is the server's role as ZooKeeper names it in srvr and mntr.
func (s *Server) mode() string {
	switch {
	case s.cfg.Standalone:
		return "standalone"
	case s.readOnlyMode():
		return "read-only"
	case s.observer():
		return "observer"
	case s.node.IsLeader():
		return "leader"
	}
	return "follower"
}

func (s *Server) srvr(withClients bool) string {
	conns := s.connections()
	r := reqstats.Srvr{Version: VersionLine(), ReadOnly: s.readOnlyMode(), WithClients: withClients,
		Connections: len(conns), Mode: s.mode()}
	for _, c := range conns {
		if withClients {
			r.Clients = append(r.Clients, c.ConsLine())
		}
		r.Outstanding += c.Outstanding()
	}
	s.mu.RLock()
	r.Zxid, r.Nodes = s.fsm.LastZxid(), s.fsm.Tree().ReportedCount()
	s.mu.RUnlock()
	return s.latency.Format(r)
}

func (s *Server) mntr() string {
	minL, avgL, maxL, recv, sent := s.latency.Summary()
	conns := s.connections()
	outstanding := 0
	for _, c := range conns {
		outstanding += c.Outstanding()
	}
	s.mu.RLock()
	t := s.fsm.Tree()
	nodes, ephemerals, size := t.ReportedCount(), t.EphemeralCount(), t.DataSize()
	s.mu.RUnlock()
	s.wmu.Lock()
	watches := s.watches.Count()
	s.wmu.Unlock()
	s.smu.Lock()
	sessions := s.tracker.Len()
	s.smu.Unlock()
	lines := [][2]string{
		{"zk_version", VersionLine()},
		{"zk_server_state", s.mode()},
		{"zk_avg_latency", avgL},
		{"zk_max_latency", fmt.Sprint(maxL)},
		{"zk_min_latency", fmt.Sprint(minL)},
		{"zk_packets_received", fmt.Sprint(recv)},
		{"zk_packets_sent", fmt.Sprint(sent)},
		{"zk_num_alive_connections", fmt.Sprint(len(conns))},
		{"zk_outstanding_requests", fmt.Sprint(outstanding)},
		{"zk_znode_count", fmt.Sprint(nodes)},
		{"zk_watch_count", fmt.Sprint(watches)},
		{"zk_ephemerals_count", fmt.Sprint(ephemerals)},
		{"zk_global_sessions", fmt.Sprint(sessions)},
		{"zk_local_sessions", "0"},
		{"zk_approximate_data_size", fmt.Sprint(size)},
		{"zk_open_file_descriptor_count", fmt.Sprint(openFDs())},
		{"zk_uptime", fmt.Sprint(time.Since(s.started).Milliseconds())},
		// 1 while writes are refused because the disk holding the log is
		// full.
		{"collie_disk_full", diskFullGauge(s.node.DiskFull())},
	}
	if s.tls != nil {
		// ZooKeeper's counter of TLS handshakes that failed: a client
		// refused, or one that is not TLS on a TLS port.
		lines = append(lines, [2]string{"zk_unsuccessful_handshake", fmt.Sprint(s.tlsFailures.Load())})
	}
	if s.mode() == "leader" {
		lines = append(lines, s.leaderLines()...)
	}
	if s.transport != nil {
		var sent, received uint64
		for _, p := range s.transport.Stats().Peers {
			sent += p.SnapshotsSent
			received += p.SnapshotsReceived
		}
		s.mu.RLock()
		held := len(s.fsm.MembersWithLog())
		s.mu.RUnlock()
		lines = append(lines,
			[2]string{"collie_snapshots_sent", fmt.Sprint(sent)},
			[2]string{"collie_snapshots_received", fmt.Sprint(received)},
			// The voters on record as having held the log: those that
			// must never come back without it.
			[2]string{"collie_members_with_log", fmt.Sprint(held)})
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s\t%s\n", l[0], l[1])
	}
	return b.String()
}

// leaderLines are the lines of mntr only a leader has, as ZooKeeper's,
// then Collie's own: each member's lag, in committed entries it lacks.
func (s *Server) leaderLines() [][2]string {
	var learners, followers, observers, pending int
	members := s.node.Members()
	for _, m := range members {
		if m.Active {
			learners++
		}
		switch {
		case m.Sending:
			pending++
		case m.Synced && m.Learner:
			observers++
		case m.Synced:
			followers++
		}
	}
	lines := [][2]string{
		{"zk_learners", fmt.Sprint(learners)},
		{"zk_synced_followers", fmt.Sprint(followers)},
		{"zk_synced_non_voting_followers", "0"},
		{"zk_synced_observers", fmt.Sprint(observers)},
		{"zk_pending_syncs", fmt.Sprint(pending)},
	}
	for _, m := range members {
		lines = append(lines, [2]string{fmt.Sprintf("collie_member_%d_lag", m.ID), fmt.Sprint(m.Lag)})
	}
	return lines
}

func (s *Server) envi() string {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	lines := []string{
		"Environment:",
		"zookeeper.version=" + VersionLine(),
		"host.name=" + host,
		"go.version=" + runtime.Version(),
		"os.name=" + runtime.GOOS,
		"os.arch=" + runtime.GOARCH,
		"user.dir=" + wd,
		fmt.Sprintf("os.procs=%d", runtime.NumCPU()),
	}
	return strings.Join(lines, "\n") + "\n"
}

// dump lists sessions by expiry bucket, then ephemeral nodes by session,
// in the layout of ZooKeeper's dump.
func (s *Server) dump() string {
	var b strings.Builder
	s.smu.Lock()
	infos := s.tracker.Sessions()
	s.smu.Unlock()
	buckets := map[time.Time][]session.ID{}
	var times []time.Time
	for _, in := range infos {
		if _, ok := buckets[in.Expires]; !ok {
			times = append(times, in.Expires)
		}
		buckets[in.Expires] = append(buckets[in.Expires], in.ID)
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	b.WriteString("SessionTracker dump:\n")
	fmt.Fprintf(&b, "Session Sets (%d)/(%d):\n", len(times), len(infos))
	for _, at := range times {
		fmt.Fprintf(&b, "%d expire at %s:\n", len(buckets[at]), at.Format(javaDate))
		for _, id := range buckets[at] {
			fmt.Fprintf(&b, "\t%s\n", id)
		}
	}
	s.mu.RLock()
	t := s.fsm.Tree()
	ids := t.EphemeralSessions()
	fmt.Fprintf(&b, "ephemeral nodes dump:\nSessions with Ephemerals (%d):\n", len(ids))
	for _, id := range ids {
		fmt.Fprintf(&b, "%s:\n", session.ID(id))
		for _, p := range t.Ephemerals(id) {
			fmt.Fprintf(&b, "\t%s\n", p)
		}
	}
	s.mu.RUnlock()
	conns := s.connections()
	fmt.Fprintf(&b, "Connections dump:\nConnections Sets (%d)/(%d):\n", min(1, len(conns)), len(conns))
	if len(conns) > 0 {
		fmt.Fprintf(&b, "%d expire at %s:\n", len(conns), time.Now().Format(javaDate))
		for _, c := range conns {
			fmt.Fprintf(&b, "\tip: /%s sessionId: %s\n", c.RemoteAddr(), session.ID(c.Session()))
		}
	}
	return b.String()
}

// javaDate is the layout of Java's Date.toString.
const javaDate = "Mon Jan 02 15:04:05 MST 2006"

func (s *Server) runtime() config.Runtime {
	snapDir, _ := filepath.Abs(filepath.Join(s.cfg.DataDir, "snap"))
	walDir, _ := filepath.Abs(filepath.Join(s.cfg.DataLogDir, "wal"))
	rt := config.Runtime{DataDir: snapDir, DataDirSize: dirSize(snapDir), DataLogDir: walDir, DataLogSize: dirSize(walDir)}
	if tcp, ok := s.Addr().(*net.TCPAddr); ok {
		rt.ClientPort = tcp.Port
	}
	if tcp, ok := s.SecureAddr().(*net.TCPAddr); ok {
		rt.SecureClientPort = tcp.Port
	}
	return rt
}

func dirSize(dir string) int64 {
	var total int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

func openFDs() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries)
}

var buildDate = "1970-01-01 00:00 UTC"

// VersionLine is the version as srvr, mntr and envi report it, with the
// build date after it, as ZooKeeper's.
func VersionLine() string { return Version + ", built on " + buildDate }

// hash lists the digest log as ZooKeeper's hash does: a line of the zxid
// in hex and the tree's digest after it, for every 128th transaction.
func (s *Server) hash() string {
	var b strings.Builder
	for _, d := range s.digests() {
		fmt.Fprintf(&b, "%x: %d\n", d.Zxid, d.Digest)
	}
	return b.String()
}

func (s *Server) digests() []fsm.ZxidDigest {
	if !s.cfg.DigestEnabled {
		// As ZooKeeper with zookeeper.digest.enabled=false, which
		// computes no digests.
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.fsm.Digests()
}
