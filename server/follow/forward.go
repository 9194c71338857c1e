package follow

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/conn"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/zkquorum"
)

// errLeaderLost answers what was forwarded to a leader that is gone
// before it answered.
var errLeaderLost = errors.New("follow: lost the ZooKeeper leader before it answered")

// A waiter is told the result of a request this server forwarded. When
// its txn is applied it is called in the follow loop, with mu held, right
// after the txn, with a Reader of the state then: the reads its session
// sent after it are answered there, in order. When the leader is lost
// first it is called with ConnectionLoss and a nil Reader, from any
// goroutine.
type waiter func(fsm.Result, conn.Reader)

// txnKey names the txn the leader makes of a forwarded request: the
// session and cxid of its header are the request's.
type txnKey struct {
	session int64
	cxid    int32
}

// revalidation is the leader's answer about a session; lost when the
// leader went away without one.
type revalidation struct{ valid, lost bool }

// pending are the requests forwarded to the current leader that it has
// not answered yet. Each is registered under mu in the same critical
// section as its forwarding, so an answer, which the follow loop takes
// under mu too, always finds it, and syncs queue in the order they were
// sent, the order the leader answers them.
type pending struct {
	mu            sync.Mutex
	writes        map[txnKey]waiter
	syncs         []func(conn.Reader, error)
	revalidations map[int64][]chan revalidation
}

func newPending() *pending {
	return &pending{writes: map[txnKey]waiter{}, revalidations: map[int64][]chan revalidation{}}
}

// nextCxid numbers forwarded requests. The numbers are unique across this
// server's sessions, so a session that reconnects here never meets the
// txn of a request its previous connection forwarded; 0 is the
// createSession's, as ZooKeeper's learners send it.
func (s *Server) nextCxid() int32 {
	// The count does not wrap; the cxids do, within 1..MaxInt32.
	return int32((s.cxid.Add(1)-1)%math.MaxInt32) + 1
}

// forward sends req to the leader; w is told its txn's result.
func (s *Server) forward(req zkquorum.Request, w waiter) {
	p := s.pending
	p.mu.Lock()
	err := s.send(func(f *zkquorum.Follower) error { return f.Forward(req) })
	if err == nil {
		p.writes[txnKey{req.SessionID, req.Cxid}] = w
	}
	p.mu.Unlock()
	if err != nil {
		s.log.Debug("cannot forward a request", "session", req.SessionID, "op", req.Type, "err", err)
		w(fsm.Result{Err: proto.ErrConnectionLoss}, nil)
	}
}

// send calls fn with the Follower of the current round, if there is one.
func (s *Server) send(fn func(*zkquorum.Follower) error) error {
	f := s.leader.Load()
	if f == nil {
		return zkquorum.ErrNotSynced
	}
	return fn(f)
}

// cancelWrite forgets a forwarded request whose answer nobody waits for
// any more.
func (s *Server) cancelWrite(k txnKey) {
	s.pending.mu.Lock()
	delete(s.pending.writes, k)
	s.pending.mu.Unlock()
}

// answerTxn tells the waiter of a forwarded request, if any, the result
// of its txn. Called by the follow loop with mu held, right after the txn
// is applied.
func (s *Server) answerTxn(h zkquorum.TxnHeader, res fsm.Result) bool {
	k := txnKey{h.ClientID, h.Cxid}
	s.pending.mu.Lock()
	w, ok := s.pending.writes[k]
	delete(s.pending.writes, k)
	s.pending.mu.Unlock()
	if ok {
		w(res, (*copyState)(s))
	}
	return ok
}

// forwardSync forwards a sync for session; done is called once the
// leader's answer arrives, with the state holding everything committed
// before it.
func (s *Server) forwardSync(session int64, done func(conn.Reader, error)) {
	p := s.pending
	p.mu.Lock()
	// The leader reads no body for a sync: it answers once what it
	// committed before is sent.
	err := s.send(func(f *zkquorum.Follower) error {
		return f.Forward(zkquorum.Request{SessionID: session, Cxid: s.nextCxid(), Type: proto.OpSync})
	})
	if err == nil {
		p.syncs = append(p.syncs, done)
	}
	p.mu.Unlock()
	if err != nil {
		done(nil, fmt.Errorf("follow: sync: %w", err))
	}
}

// answerSync answers the oldest sync forwarded, as the leader's SYNC
// packet does. Called by the follow loop.
func (s *Server) answerSync() {
	p := s.pending
	p.mu.Lock()
	if len(p.syncs) == 0 {
		p.mu.Unlock()
		s.log.Warn("the leader answered a sync this server did not send")
		return
	}
	done := p.syncs[0]
	p.syncs = p.syncs[1:]
	p.mu.Unlock()
	s.View(func(rd conn.Reader) { done(rd, nil) })
}

// revalidate asks the leader whether session is alive, renewing it for
// timeout, as ZooKeeper's Learner.validateSession does when a client
// reconnects to an observer.
func (s *Server) revalidate(ctx context.Context, session int64, timeout time.Duration) revalidation {
	ch := make(chan revalidation, 1)
	p := s.pending
	p.mu.Lock()
	err := s.send(func(f *zkquorum.Follower) error { return f.Revalidate(session, timeout) })
	if err == nil {
		p.revalidations[session] = append(p.revalidations[session], ch)
	}
	p.mu.Unlock()
	if err != nil {
		return revalidation{lost: true}
	}
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		// The answer, when it comes, goes to a buffered channel nobody
		// reads.
		return revalidation{lost: true}
	}
}

// answerRevalidation hands the leader's answer about a session to every
// reconnection waiting for it. Called by the follow loop.
func (s *Server) answerRevalidation(session int64, valid bool) {
	p := s.pending
	p.mu.Lock()
	chs := p.revalidations[session]
	delete(p.revalidations, session)
	p.mu.Unlock()
	for _, ch := range chs {
		ch <- revalidation{valid: valid}
	}
}

// failPending answers everything forwarded to a leader that is gone: the
// outcome of a write is unknown (ConnectionLoss, as ZooKeeper's observer
// answers when it loses its leader), a sync or revalidation has no
// answer. Its txns may still arrive after the next sync, and are then
// applied with nobody waiting.
func (s *Server) failPending() {
	p := s.pending
	p.mu.Lock()
	writes, syncs, revalidations := p.writes, p.syncs, p.revalidations
	p.writes, p.syncs, p.revalidations = map[txnKey]waiter{}, nil, map[int64][]chan revalidation{}
	p.mu.Unlock()
	if n := len(writes) + len(syncs) + len(revalidations); n > 0 {
		s.log.Info("lost the leader: requests in flight end their connections", "requests", n)
	}
	for _, w := range writes {
		w(fsm.Result{Err: proto.ErrConnectionLoss}, nil)
	}
	for _, done := range syncs {
		done(nil, errLeaderLost)
	}
	for _, chs := range revalidations {
		for _, ch := range chs {
			ch <- revalidation{lost: true}
		}
	}
}
