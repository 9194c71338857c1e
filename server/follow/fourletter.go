package follow

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/conn"
	"github.com/collie-io/collie/server/reqstats"
)

// stats are the request statistics srvr and mntr report.
type stats struct{ reqstats.Latency }

func (st *stats) observe(_ bool, latency time.Duration, _ int) { st.Observe(latency) }
func (st *stats) packet(int)                                   { st.Packet() }

// notServing is what ZooKeeper's four-letter words answer while the
// server serves no clients.
const notServing = "This ZooKeeper instance is not currently serving requests\n"

// mode is how srvr and mntr name this server's role, as a ZooKeeper
// observer names its own.
const mode = "observer"

// FourLetter answers ruok, isro, srvr, stat, mntr, conf and srst when
// 4lw.commands.whitelist allows them (isro always, as ZooKeeper allows
// it), in ZooKeeper's formats; the others are not served here.
func (s *Server) FourLetter(cmd string, _ func() (int64, bool)) (string, bool) {
	if !s.cfg.FourLetterWhitelist["*"] && !s.cfg.FourLetterWhitelist[cmd] && cmd != "isro" {
		return "", false
	}
	s.smu.Lock()
	serving := s.serving
	s.smu.Unlock()
	switch cmd {
	case "ruok":
		return "imok", true
	case "isro":
		if !serving {
			// As ZooKeeper's answer when it serves no clients.
			return "null", true
		}
		return "rw", true
	case "srvr", "stat", "mntr", "conf", "srst":
		if !serving {
			return notServing, true
		}
	default:
		return "", false
	}
	switch cmd {
	case "srvr":
		return s.srvr(false), true
	case "stat":
		return s.srvr(true), true
	case "mntr":
		return s.mntr(), true
	case "srst":
		s.stats.Reset()
		return "Server stats reset.\n", true
	}
	rt := config.Runtime{}
	if tcp, ok := s.Addr().(*net.TCPAddr); ok {
		rt.ClientPort = tcp.Port
	}
	return strings.Join(s.cfg.ConfLines(rt), "\n") + "\n", true
}

func (s *Server) connections() []*conn.Conn {
	s.smu.Lock()
	defer s.smu.Unlock()
	return slices.Collect(maps.Keys(s.conns))
}

// srvr is srvr's answer, and stat's with the clients listed, as a
// ZooKeeper observer prints them.
func (s *Server) srvr(withClients bool) string {
	conns := s.connections()
	r := reqstats.Srvr{Version: s.opts.Version, WithClients: withClients,
		Connections: len(conns), Outstanding: outstanding(conns), Mode: mode}
	if withClients {
		for _, c := range conns {
			r.Clients = append(r.Clients, c.ConsLine())
		}
	}
	s.mu.RLock()
	r.Zxid, r.Nodes = s.fsm.LastZxid(), s.fsm.Tree().ReportedCount()
	s.mu.RUnlock()
	return s.stats.Format(r)
}

func outstanding(conns []*conn.Conn) int {
	n := 0
	for _, c := range conns {
		n += c.Outstanding()
	}
	return n
}

// mntr lists the mntr lines that mean something for an observer's copy,
// under ZooKeeper's names.
func (s *Server) mntr() string {
	minL, avgL, maxL, recv, sent := s.stats.Summary()
	conns := s.connections()
	s.mu.RLock()
	t := s.fsm.Tree()
	nodes, ephemerals, size := t.ReportedCount(), t.EphemeralCount(), t.DataSize()
	s.mu.RUnlock()
	s.wmu.Lock()
	watches := s.watches.Count()
	s.wmu.Unlock()
	lines := [][2]string{
		{"zk_version", s.opts.Version},
		{"zk_server_state", mode},
		{"zk_avg_latency", avgL},
		{"zk_max_latency", fmt.Sprint(maxL)},
		{"zk_min_latency", fmt.Sprint(minL)},
		{"zk_packets_received", fmt.Sprint(recv)},
		{"zk_packets_sent", fmt.Sprint(sent)},
		{"zk_num_alive_connections", fmt.Sprint(len(conns))},
		{"zk_outstanding_requests", fmt.Sprint(outstanding(conns))},
		{"zk_znode_count", fmt.Sprint(nodes)},
		{"zk_watch_count", fmt.Sprint(watches)},
		{"zk_ephemerals_count", fmt.Sprint(ephemerals)},
		{"zk_approximate_data_size", fmt.Sprint(size)},
		{"zk_uptime", fmt.Sprint(time.Since(s.started).Milliseconds())},
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s\t%s\n", l[0], l[1])
	}
	return b.String()
}
