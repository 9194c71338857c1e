package zkquorum

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Backoff between rounds over the servers while no leader answers (an
// election takes a few ticks).
const (
	minRetryDelay = 50 * time.Millisecond
	maxRetryDelay = time.Second
)

// A Follower follows the ensemble's leader across leader changes. It finds
// the leader by trying every server's quorum address (in ZooKeeper 3.8 only
// the leader listens there), syncs from the last zxid its caller has
// applied, and when the connection breaks reports EventDisconnected and
// starts over with whichever server leads next.
//
// Next and Applied are called from one goroutine. Calling Next says the
// caller has applied every event Next returned before; a Follower resyncs
// from there. Forward, Revalidate, Touch and Close may be called from any
// goroutine.
type Follower struct {
	cfg     Config
	touches *touchTable

	// Owned by the goroutine that calls Next.
	applied int64 // zxid the caller's state is at
	ep      epochs

	conn connHolder
}

// NewFollower returns a Follower for a caller whose state has every txn up
// to lastZxid applied (0 for an empty state). It connects on the first
// call of Next.
func NewFollower(cfg Config, lastZxid int64) (*Follower, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if len(cfg.Servers) == 0 {
		return nil, errors.New("zkquorum: no servers to follow")
	}
	e := zxidEpoch(lastZxid)
	return &Follower{cfg: cfg, touches: newTouchTable(), applied: lastZxid, ep: epochs{accepted: e, current: e}}, nil
}

// Next returns the next event, connecting to the leader first when there is
// no connection. It returns an error only when ctx ends; a broken
// connection is the event EventDisconnected.
//
// After EventSnapshot the caller's state is replaced: if the snapshot
// cannot be read to its end, the caller must drop the partial state, since
// the resync after EventDisconnected then starts from an empty state.
func (f *Follower) Next(ctx context.Context) (Event, error) {
	c := f.conn.get()
	if c == nil {
		var err error
		if c, err = f.connect(ctx); err != nil {
			return Event{}, err
		}
		f.conn.set(c)
	}
	ev, err := c.Next(ctx)
	if err == nil {
		return ev, nil
	}
	f.drop(c)
	if ctx.Err() != nil {
		return Event{}, ctx.Err()
	}
	f.cfg.logger().Info("lost the leader", "leader", c.Addr(), "err", err)
	return Event{Kind: EventDisconnected, Err: err}, nil
}

// drop closes c and keeps what the caller will have applied and the epochs
// for the next connection.
func (f *Follower) drop(c *Conn) {
	if zxid, ok := c.Applied(); ok {
		f.applied = zxid
	} else {
		f.applied = 0
	}
	// The connection started from f.ep; its epochs only grow.
	f.ep = c.epochs
	f.conn.set(nil)
	c.Close()
}

// connect tries every server at once until one registers this observer,
// waiting a little longer after each round in which none did. Only ctx
// ends it.
func (f *Follower) connect(ctx context.Context) (*Conn, error) {
	delay := minRetryDelay
	for {
		c, err := f.connectRound(ctx)
		if c != nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		f.cfg.logger().Debug("no leader answered", "err", err, "retryIn", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, maxRetryDelay)
	}
}

// connectRound dials every server in parallel, so that a server that is
// down and drops packets does not hold up finding the leader, and returns
// the first that registers this observer. Only a leader listens on the
// quorum port, but an old leader may still accept for a moment after a new
// one was elected: a connection to it soon breaks, and the next round finds
// the new one.
func (f *Follower) connectRound(ctx context.Context) (*Conn, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		server Server
		conn   *Conn
		err    error
	}
	results := make(chan result, len(f.cfg.Servers))
	var wg sync.WaitGroup
	applied, ep := f.applied, f.ep
	for _, s := range f.cfg.Servers {
		wg.Go(func() {
			c, err := dial(ctx, f.cfg, s.Addr, applied, ep, f.touches)
			results <- result{s, c, err}
		})
	}
	var (
		won  *Conn
		errs []error
	)
	for range f.cfg.Servers {
		r := <-results
		switch {
		case r.err != nil:
			errs = append(errs, fmt.Errorf("server.%d: %w", r.server.ID, r.err))
		case won != nil:
			r.conn.Close()
		default:
			won = r.conn
			f.ep = won.epochs
			f.cfg.logger().Info("observing leader", "leader", r.server.Addr, "sid", r.server.ID, "epoch", won.Epoch(), "zxid", zxidString(f.applied))
			// The others are no leader, or a stale one.
			cancel()
		}
	}
	wg.Wait()
	if won != nil {
		return won, nil
	}
	return nil, errors.Join(errs...)
}

// Applied returns the zxid the Follower would resync from now. Call it
// from the goroutine that calls Next.
func (f *Follower) Applied() int64 {
	if c := f.conn.get(); c != nil {
		if zxid, ok := c.Applied(); ok {
			return zxid
		}
		return 0
	}
	return f.applied
}

// Forward forwards req to the current leader (see Conn.Forward); it fails
// with ErrNotSynced while there is no synced connection.
func (f *Follower) Forward(req Request) error {
	c := f.conn.get()
	if c == nil {
		return ErrNotSynced
	}
	return c.Forward(req)
}

// Revalidate asks the current leader about a session (see
// Conn.Revalidate).
func (f *Follower) Revalidate(sessionID int64, timeout time.Duration) error {
	c := f.conn.get()
	if c == nil {
		return ErrNotSynced
	}
	return c.Revalidate(sessionID, timeout)
}

// Touch records session activity for the next PING answer, whichever
// leader asks.
func (f *Follower) Touch(sessionID int64, timeout time.Duration) { f.touches.add(sessionID, timeout) }

// Close closes the current connection: a Next waiting on it returns
// EventDisconnected, and a later Next connects again. To stop following,
// end the context given to Next.
func (f *Follower) Close() error {
	if c := f.conn.get(); c != nil {
		return c.Close()
	}
	return nil
}
