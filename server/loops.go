package server

import (
	"context"
	"time"

	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/metrics"
	"github.com/collie-io/collie/server/session"
)

// expireSessions proposes the closing of every session whose timeout has
// passed without activity, checking twice per tick as ZooKeeper's tracker.
// Only the leader expires sessions; the other servers of an ensemble report
// their sessions' activity to it instead. A server that becomes leader
// gives every session a fresh timeout, as ZooKeeper's new leader does: it
// has not seen their activity so far. When the leader changes, or a
// message to it is lost, requests still waiting for their entries end
// their connections (failWaiters).
func (s *Server) expireSessions(ctx context.Context) {
	t := time.NewTicker(s.cfg.TickTime / 2)
	defer t.Stop()
	leading := s.node.IsLeader()
	if leading && !s.cfg.Standalone {
		s.counts.leaderSince.Store(time.Now().UnixNano())
	}
	leader := s.node.Leader()
	// refused are expired sessions whose closing was refused for a full
	// disk: the tracker hands a session out once, so they are kept here
	// and proposed again once the disk has space.
	var refused []session.ID
	// observe acts on what the node says of the leader.
	observe := func(now time.Time) {
		if l := s.node.Leader(); l != leader {
			if leader != 0 {
				s.failWaiters(leader)
			}
			leader = l
			s.noteLeaderChange()
		}
		s.checkLeaderless(now, leader)
		wasLeading := leading
		leading = s.node.IsLeader()
		if leading && !wasLeading {
			s.smu.Lock()
			s.tracker.ResetAll(now)
			s.smu.Unlock()
			if !s.cfg.Standalone {
				s.counts.leaderSince.Store(now.UnixNano())
			}
		}
		if !leading && wasLeading {
			s.counts.leaderSince.Store(0)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		case <-s.node.LeaderChanges():
			// At once rather than at the next tick: requests waiting on a
			// leader that is gone end now, and a new leader starts
			// tracking sessions now.
			observe(time.Now())
		case <-s.node.ForwardsLost():
			// A write forwarded to the leader may have been lost on the
			// way, and raft never sends it again: as a ZooKeeper follower
			// that loses its leader's connection, end the connections of
			// the requests in flight.
			s.failWaiters(s.node.Leader())
		case now := <-t.C:
			observe(now)
			if !leading {
				refused = nil
				s.reportTouches(leader)
				continue
			}
			if s.node.DiskFull() != nil {
				// Closing a session is a write: sessions whose time is up
				// stay open until the disk has space, and expire then.
				continue
			}
			s.recordMembersWithLog(now)
			s.smu.Lock()
			expired := s.tracker.Expired(now)
			s.smu.Unlock()
			expired, refused = append(refused, expired...), nil
			for _, id := range expired {
				s.log.Info("session expired", "session", id)
				s.metrics.Counter(metrics.StaleSessionsExpired).Inc()
				if !s.propose(&fsm.Entry{Type: fsm.EntryCloseSession, Session: int64(id)}, nil) {
					refused = append(refused, id)
				}
			}
		}
	}
}

// sweepContainers deletes empty containers and expired TTL nodes, as
// ZooKeeper's ContainerManager: at most maxPerMinute per minute.
func (s *Server) sweepContainers(ctx context.Context) {
	interval := s.cfg.ContainerCheckInterval
	if interval <= 0 {
		interval = time.Minute
	}
	s.every(ctx, interval, func(now time.Time) {
		// The leader alone proposes the deletions, once each.
		if !s.node.IsLeader() {
			return
		}
		s.mu.RLock()
		candidates := s.fsm.Tree().Candidates(now.UnixMilli())
		s.mu.RUnlock()
		limit := s.cfg.ContainerMaxPerMinute
		if limit > 0 {
			limit = max(1, int(int64(limit)*int64(interval)/int64(time.Minute)))
		}
		for i, path := range candidates {
			if limit > 0 && i >= limit {
				break
			}
			s.propose(&fsm.Entry{Type: fsm.EntryDeleteContainer, Body: []byte(path), Time: now.UnixMilli()}, nil)
		}
	})
}

// purgeOnSchedule removes, every autopurge.purgeInterval, the snapshots
// beyond the newest autopurge.snapRetainCount and the log segments only
// they needed, as ZooKeeper's DatadirCleanupManager does. A purge that
// fails is logged and tried again at the next interval.
func (s *Server) purgeOnSchedule(ctx context.Context) {
	s.every(ctx, s.cfg.AutopurgePurgeInterval, func(time.Time) {
		if err := s.disk.Purge(); err != nil {
			s.log.Error("purging old snapshots and log segments failed; trying again at the next interval", "err", err,
				"interval", s.cfg.AutopurgePurgeInterval)
			return
		}
		s.log.Debug("purged old snapshots and log segments", "retain", s.cfg.AutopurgeSnapRetainCount)
	})
}

// every calls f every interval, with the tick's time, until ctx ends or
// the server closes.
func (s *Server) every(ctx context.Context, interval time.Duration, f func(now time.Time)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		case now := <-t.C:
			f(now)
		}
	}
}
