package replication

import (
	"errors"
	"fmt"
	"time"

	"go.etcd.io/raft/v3"
)

// This file is what a node does while its disk is full.
//
// An append that finds no space (see Storage) changed nothing, and raft's
// entries cannot be dropped: raft has them in its unstable log, and may
// already have sent them to the followers. So the append goroutine keeps
// the appends it could not make, in order, and makes them again, after
// noSpaceRetryMin, then twice as long each time up to noSpaceRetryMax,
// together with those queued meanwhile, until the disk has room (a cut
// that could not make the next WAL segment is tried again each time).
// Nothing those appends promise (acknowledgements to the leader, votes,
// the entries' place in the log raft reads) is sent before they are made.
//
// Meanwhile new proposals are refused at once with ErrDiskFull, before
// they reach raft: the server answers their clients with an error rather
// than hold them for as long as the disk stays full. Proposals that
// reached raft before the disk filled wait for their append.
//
// A follower whose disk is full acknowledges nothing, and grants no vote:
// the leader commits with the others, if they are a quorum, and this
// follower applies nothing new. A leader whose disk is full hands its
// leadership to the voter furthest ahead (handOff): it could neither count
// itself toward a quorum nor apply what the others commit, and the leader
// alone expires sessions.
//
// A snapshot that finds no space is abandoned (its file is removed) and
// tried again after snapRetryMin, then twice as long each time up to
// snapRetryMax. The log grows meanwhile, as far as the space its segments
// were given in advance allows.
const (
	noSpaceRetryMin = 100 * time.Millisecond
	noSpaceRetryMax = 2 * time.Second
	snapRetryMin    = time.Second
	snapRetryMax    = time.Minute
)

// diskFull is why and since when the node's disk is full.
type diskFull struct {
	err   error
	since time.Time
}

// DiskFull returns, while the disk holding the log has no space for the
// appends raft hands over, an error matching ErrDiskFull that says where;
// nil otherwise. It is set when an append fails for want of space, and
// cleared when the appends held since then are made.
func (n *Node) DiskFull() error {
	if f := n.full.Load(); f != nil {
		return f.err
	}
	return nil
}

// noSpace reports whether a storage error says that the call changed
// nothing for want of space, and may be made again (see Storage).
func noSpace(err error) bool {
	var ns interface{ NoSpace() bool }
	return errors.As(err, &ns) && ns.NoSpace()
}

// noteSpace records whether the last appends were made (err nil) or
// found no space (err), and says so when that changes.
func (n *Node) noteSpace(err error) {
	f := n.full.Load()
	switch {
	case err == nil && f != nil:
		n.full.Store(nil)
		n.log.Info("the disk has space again: writes resume", "full_for", time.Since(f.since).Round(time.Millisecond))
	case err != nil && f == nil:
		n.full.Store(&diskFull{err: fmt.Errorf("%w: %w", ErrDiskFull, err), since: time.Now()})
		n.log.Error("the disk is full: writes are refused until space is freed on it", "err", err)
	}
}

// nextWait doubles a retry's wait, from least up to most.
func nextWait(wait, least, most time.Duration) time.Duration {
	return min(max(2*wait, least), most)
}

// handOff has a leader whose disk is full hand its leadership to the
// voter that is furthest ahead among those heard from lately. Raft drops
// proposals while a transfer goes on, and abandons one that takes longer
// than an election timeout; the next tick then tries again. Called by run
// once per tick.
func (n *Node) handOff() {
	if n.full.Load() == nil {
		n.handingOff = false
		return
	}
	bs := n.rn.BasicStatus()
	if bs.RaftState != raft.StateLeader || bs.LeadTransferee != raft.None {
		return
	}
	var to, match uint64
	for id, pr := range n.rn.Status().Progress {
		if id != n.cfg.ID && !pr.IsLearner && pr.RecentActive && (to == 0 || pr.Match > match) {
			to, match = id, pr.Match
		}
	}
	if to == 0 {
		return
	}
	if !n.handingOff {
		n.handingOff = true
		n.log.Warn("the disk is full: handing the leadership to another member", "to", to, "term", bs.Term)
	}
	n.rn.TransferLeader(to)
}
