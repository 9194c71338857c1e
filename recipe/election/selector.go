package election

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/collie-io/collie/client"
)

// lockName is what Curator's InterProcessMutex names its nodes, and so its
// LeaderSelector, which takes leadership by locking one.
const lockName = "lock-"

// Selector is a participant of a leader election on one path, compatible
// with Curator's LeaderSelector: each turn of leadership runs a function,
// and leadership passes to the next in line when the function returns.
// Between turns the participant has no node, so it is not in line. It is
// safe for concurrent use, though one Selector runs one turn at a time in
// practice: concurrent Leads queue one node each, like separate
// participants.
type Selector struct {
	c    *client.Client
	path string
	id   string

	mu   sync.Mutex // guards term
	term *Term      // the term a function runs in; nil between turns
}

// NewSelector returns a selector on path (the parent of the participants'
// nodes) for the participant id, using c's session. The id is the data of
// the selector's node, which Participants and Curator's getParticipants
// read.
func NewSelector(c *client.Client, path, id string) *Selector {
	return &Selector{c: c, path: path, id: id}
}

// Path returns the election's path.
func (s *Selector) Path() string { return s.path }

// ID returns the participant id.
func (s *Selector) ID() string { return s.id }

// Lead takes one turn: it queues a node, waits until it is first in line,
// runs fn, then removes the node, so that the next in line leads. fn's
// context is cancelled, with cause ErrLost, as soon as leadership is lost
// (the connection broke, the session expired, the node was deleted), and
// when ctx ends: fn must then stop acting as leader and return. Leadership
// is given up only once fn has returned.
//
// Lead returns fn's error, once its node is gone. When leadership was lost
// before fn returned, the error wraps ErrLost too. When ctx ends before the
// turn comes, Lead returns ctx's error, and no node behind.
func (s *Selector) Lead(ctx context.Context, fn func(ctx context.Context, term *Term) error) error {
	l := newLatch(s.c, s.path, s.id, lockName)
	// Waits for the node to go, even one whose create was still in flight
	// when Start failed. Bounded by the session, as every request is: the
	// node goes with it at the latest.
	defer l.Close(context.WithoutCancel(ctx))
	if err := l.Start(ctx); err != nil {
		return fmt.Errorf("selector %s: %w", s.path, err)
	}
	term, err := l.Await(ctx)
	if err != nil {
		return fmt.Errorf("selector %s: %w", s.path, err)
	}
	s.setTerm(term)
	leading, cancel := term.Context(ctx)
	err = fn(leading, term)
	cancel()
	s.setTerm(nil)
	if term.ended() {
		if err == nil {
			return fmt.Errorf("selector %s: %w", s.path, ErrLost)
		}
		return fmt.Errorf("selector %s: %w: %w", s.path, ErrLost, err)
	}
	return err
}

// Run takes turns until ctx ends, queueing again after each one, as
// Curator's LeaderSelector does with autoRequeue: after fn returns nil,
// after leadership was lost, and after the session expired (once the
// client has a session again). It returns ctx's error, or fn's error when
// fn fails while still leading, or the error that ended the client.
func (s *Selector) Run(ctx context.Context, fn func(ctx context.Context, term *Term) error) error {
	for {
		err := s.Lead(ctx, fn)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil, errors.Is(err, ErrLost):
		case errors.Is(err, client.ErrSessionExpired), errors.Is(err, client.ErrConnectionLoss):
			if err := awaitSession(ctx, s.c); err != nil {
				return fmt.Errorf("selector %s: %w", s.path, err)
			}
		default:
			return err
		}
	}
}

// IsLeader reports whether a function of the selector runs with a term
// that has not ended (Curator's hasLeadership).
func (s *Selector) IsLeader() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.term != nil && !s.term.ended()
}

// Participants lists the election's participants in line order, the
// leader first, reading the ensemble (Curator's getParticipants).
func (s *Selector) Participants(ctx context.Context) ([]Participant, error) {
	return participants(ctx, s.c, s.path, lockName)
}

// Leader returns the participant who leads, reading the ensemble; it fails
// with ErrNoLeader when nobody takes part.
func (s *Selector) Leader(ctx context.Context) (Participant, error) {
	return leader(ctx, s.c, s.path, lockName)
}

func (s *Selector) setTerm(t *Term) {
	s.mu.Lock()
	s.term = t
	s.mu.Unlock()
}

// awaitSession waits until c's session serves requests.
func awaitSession(ctx context.Context, c *client.Client) error {
	states := c.StateChanges()
	defer states.Close()
	for {
		select {
		case s, ok := <-states.Events():
			if !ok {
				return client.ErrClosed
			}
			if s == client.StateConnected || s == client.StateReconnected {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
