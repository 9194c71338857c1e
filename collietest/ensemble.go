package collietest

import (
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/server/config"
)

// Ensemble is an ensemble of in-process servers on 127.0.0.1, each with
// its own data directory, client port and peer port, configured as a
// zoo.cfg with server.N lines would configure them.
type Ensemble struct {
	tb      testing.TB
	servers []*Server
}

// StartEnsemble starts voters participants and observers observers, ids
// 1 to voters+observers in that order, and waits until every one serves
// clients. The options apply to every server.
func StartEnsemble(tb testing.TB, voters, observers int, opts ...Option) *Ensemble {
	tb.Helper()
	return StartEnsembleFrom(tb, voters, observers, nil, opts...)
}

// StartEnsembleFrom is StartEnsemble with prepare called on each server's
// final configuration (its data directory, id and membership) before any
// server starts: to write the data directories the servers start from,
// as a restore from a backup does. A nil prepare does nothing.
func StartEnsembleFrom(tb testing.TB, voters, observers int, prepare func(config.Config), opts ...Option) *Ensemble {
	tb.Helper()
	n := voters + observers
	cfgs := make([]config.Config, n)
	members := make([]config.Server, n)
	for i := range cfgs {
		cfgs[i] = Config(tb)
		for _, o := range opts {
			o(&cfgs[i])
		}
		if cfgs[i].AdminServerEnabled && cfgs[i].AdminServerPort == 0 {
			cfgs[i].AdminServerPort = FreePort(tb)
		}
		if cfgs[i].SecureClientPort == -1 {
			cfgs[i].SecureClientPort = FreePort(tb)
		}
		members[i] = config.Server{
			ID:            uint64(i + 1),
			Host:          "127.0.0.1",
			PeerPort:      FreePort(tb),
			ElectionPort:  FreePort(tb),
			Observer:      i >= voters,
			ClientAddress: cfgs[i].ClientPortAddress,
			ClientPort:    cfgs[i].ClientPort,
		}
	}
	e := &Ensemble{tb: tb}
	for i := range cfgs {
		cfgs[i].ServerID = uint64(i + 1)
		cfgs[i].Servers = members
		cfgs[i].Standalone = false
		e.servers = append(e.servers, &Server{tb: tb, cfg: cfgs[i]})
	}
	tb.Cleanup(e.Stop)
	if prepare != nil {
		for _, s := range e.servers {
			prepare(s.cfg)
		}
	}
	for _, s := range e.servers {
		s.launch()
	}
	for _, s := range e.servers {
		s.awaitReady()
	}
	return e
}

// Servers returns the servers, in id order (server i+1 at index i).
func (e *Ensemble) Servers() []*Server { return e.servers }

// ConnectString returns the client addresses of every server, as a
// client's connect string.
func (e *Ensemble) ConnectString() string {
	addrs := make([]string, len(e.servers))
	for i, s := range e.servers {
		addrs[i] = s.Addr()
	}
	return strings.Join(addrs, ",")
}

// Leader waits until one running server leads and returns it.
func (e *Ensemble) Leader() *Server {
	e.tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, s := range e.servers {
			if s.srv != nil && s.srv.IsLeader() {
				return s
			}
		}
		if time.Now().After(deadline) {
			e.tb.Fatal("collietest: no leader after 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop stops every server.
func (e *Ensemble) Stop() {
	for _, s := range e.servers {
		s.Stop()
	}
}

// Isolate cuts server i (from 0) off the others, in both directions, as a
// network partition would, until Heal: it keeps its client connections,
// but no message passes between it and any other server.
func (e *Ensemble) Isolate(i int) { e.partition(i, true) }

// Heal ends Isolate(i).
func (e *Ensemble) Heal(i int) { e.partition(i, false) }

// CutLink drops every message server from sends to server to (both from
// 0), while to's messages still reach from, until HealLink: an asymmetric
// partition. from keeps hearing its leader, say, while nothing it sends
// the leader arrives.
func (e *Ensemble) CutLink(from, to int) { e.link(from, to, true) }

// HealLink ends CutLink(from, to).
func (e *Ensemble) HealLink(from, to int) { e.link(from, to, false) }

func (e *Ensemble) link(from, to int, cut bool) {
	if s := e.servers[from]; s.srv != nil {
		s.srv.CutSends(uint64(to+1), cut)
	}
}

func (e *Ensemble) partition(i int, cut bool) {
	ids := make([]uint64, len(e.servers))
	for j := range e.servers {
		ids[j] = uint64(j + 1)
	}
	target := uint64(i + 1)
	for j, s := range e.servers {
		if s.srv == nil {
			continue
		}
		if j == i {
			s.srv.Isolate(ids, cut)
		} else {
			s.srv.Isolate([]uint64{target}, cut)
		}
	}
}
