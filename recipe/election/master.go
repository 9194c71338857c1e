package election

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/collie-io/collie/client"
)

// Master is a contender in the simplest election: whoever creates the
// ephemeral node at the path is master, until it resigns or its session
// ends, and the others wait for the node to go. The node holds the
// master's data (its address, say), which anyone can read with Current.
// It is safe for concurrent use.
//
// Every waiting contender watches the one node, so the node's deletion
// wakes them all; with many contenders, use a Latch.
//
// While it is master, a Master runs one goroutine that watches the
// session and the node, to end the term.
type Master struct {
	c    *client.Client
	path string
	data []byte

	// campaigning admits one Campaign at a time, so that concurrent ones
	// share one term.
	campaigning chan struct{}

	mu       sync.Mutex         // guards term and stop
	term     *Term              // the current term; nil when not master
	stop     context.CancelFunc // ends the term's watcher
	watching sync.WaitGroup
}

// NewMaster returns a contender for master at path, using c's session,
// whose node will hold data. A process that only reads who is master may
// use one that never campaigns.
func NewMaster(c *client.Client, path string, data []byte) *Master {
	return &Master{c: c, path: path, data: data, campaigning: make(chan struct{}, 1)}
}

// Path returns the master node's path.
func (m *Master) Path() string { return m.path }

// Campaign returns once this contender is master, with the term, or fails
// when ctx ends, the session expires or the client closes. A contender
// already master gets its current term. The node of a master that lost its
// connection, but not its session, is still its own: Campaign then starts
// a new term at once, with the same token.
//
// When Campaign fails it leaves no node behind: a create still in flight
// when ctx ends is undone once it completes.
func (m *Master) Campaign(ctx context.Context) (*Term, error) {
	select {
	case m.campaigning <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-m.campaigning }()
	m.mu.Lock()
	if t := m.term; t != nil && !t.ended() {
		m.mu.Unlock()
		return t, nil
	}
	m.mu.Unlock()
	for {
		stat, err := m.claim(ctx)
		if err == nil {
			return m.begin(stat), nil
		}
		if !errors.Is(err, client.ErrNodeExists) {
			return nil, fmt.Errorf("campaign for %s: %w", m.path, err)
		}
		// Another's node (create has taken ours as created): wait for it
		// to go.
		ok, _, changed, err := m.c.ExistsW(ctx, m.path)
		switch {
		case err != nil:
			return nil, fmt.Errorf("campaign for %s: %w", m.path, err)
		case !ok:
			continue
		}
		select {
		case ev := <-changed:
			if ev.Type == client.EventNotWatching {
				return nil, fmt.Errorf("campaign for %s: %w", m.path, ev.Err)
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// claim creates the master node. The create runs to its end even when ctx
// ends first, so that a node it made is learnt of, and removed.
func (m *Master) claim(ctx context.Context) (client.Stat, error) {
	type result struct {
		stat client.Stat
		err  error
	}
	done := make(chan result, 1)
	go func() {
		stat, err := m.create(context.WithoutCancel(ctx))
		done <- result{stat, err}
	}()
	select {
	case r := <-done:
		return r.stat, r.err
	case <-ctx.Done():
		// Bounded by the session: the node goes with it at the latest.
		go func() {
			if r := <-done; r.err == nil {
				m.remove(context.WithoutCancel(ctx), r.stat.Czxid)
			}
		}()
		return client.Stat{}, ctx.Err()
	}
}

// create creates the master node, with missing parents as containers. A
// node that exists already and belongs to this session, because a create
// whose reply was lost made it, counts as created.
func (m *Master) create(ctx context.Context) (client.Stat, error) {
	for {
		_, stat, err := m.c.Create(ctx, m.path, m.data, client.ModeEphemeral, nil)
		switch {
		case err == nil:
			return stat, nil
		case errors.Is(err, client.ErrNoNode):
			if err := makeContainers(ctx, m.c, parentOf(m.path)); err != nil {
				return client.Stat{}, err
			}
		case errors.Is(err, client.ErrConnectionLoss):
			// Create again: ErrNodeExists will say whether it happened.
		case errors.Is(err, client.ErrNodeExists):
			ok, stat, xerr := m.c.Exists(ctx, m.path)
			if xerr == nil && ok && stat.EphemeralOwner == m.c.SessionID() {
				return stat, nil
			}
			return client.Stat{}, err
		default:
			return client.Stat{}, err
		}
	}
}

// begin starts a term for the node described by stat, and its watcher.
func (m *Master) begin(stat client.Stat) *Term {
	t := newTerm(m.path, stat.Czxid)
	ctx, stop := context.WithCancel(context.Background())
	// Subscribed before Campaign returns, so that a connection that breaks
	// right away is seen: the stream starts with the current state.
	states := m.c.StateChanges()
	m.mu.Lock()
	if m.stop != nil {
		m.stop()
	}
	m.term, m.stop = t, stop
	m.mu.Unlock()
	m.watching.Go(func() { m.watch(ctx, t, states) })
	return t
}

// watch ends t at the first sign that another may be master: a broken
// connection, an expired or closed session, or the node's deletion.
func (m *Master) watch(ctx context.Context, t *Term, states *client.Stream[client.State]) {
	defer states.Close()
	defer t.end()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	changed := watchNode(ctx, &m.watching, m.c, m.path, t.token)
	for {
		select {
		case s, ok := <-states.Events():
			if !ok || (s != client.StateConnected && s != client.StateReconnected) {
				return
			}
		case ev := <-changed:
			if ev.Type == client.EventNodeDeleted || ev.Type == client.EventNotWatching {
				return
			}
			changed = watchNode(ctx, &m.watching, m.c, m.path, t.token)
		case <-ctx.Done():
			return
		}
	}
}

// Resign gives up being master: the term ends and the node is removed if
// it is still this term's, sending the delete again across connection
// losses until ctx ends or the session does. A contender that is not
// master has nothing to do.
func (m *Master) Resign(ctx context.Context) error {
	m.mu.Lock()
	t, stop := m.term, m.stop
	m.term, m.stop = nil, nil
	m.mu.Unlock()
	if t == nil {
		return nil
	}
	stop()
	m.watching.Wait()
	if err := m.remove(ctx, t.token); err != nil {
		return fmt.Errorf("resign %s: %w", m.path, err)
	}
	return nil
}

// remove deletes the master node if it is the one created at zxid czxid
// and is still this session's. The version of the node read is the
// delete's condition, so that a successor's node, made after the read, is
// not deleted unless it was also given that version.
func (m *Master) remove(ctx context.Context, czxid int64) error {
	err := client.Retry(ctx, retryPolicy, func(ctx context.Context) error {
		ok, stat, err := m.c.Exists(ctx, m.path)
		if err != nil || !ok || stat.Czxid != czxid || stat.EphemeralOwner != m.c.SessionID() {
			return err
		}
		return m.c.Delete(ctx, m.path, stat.Version)
	})
	for _, gone := range []error{client.ErrNoNode, client.ErrSessionExpired, client.ErrClosed} {
		if errors.Is(err, gone) {
			return nil
		}
	}
	return err
}

// Info describes the master.
type Info struct {
	// Data is the master node's data.
	Data []byte
	// Session is the master's session id.
	Session int64
	// Token is the master's fencing token, the zxid that created its node.
	Token int64
}

// Current reads who is master; ok is false when nobody is.
func (m *Master) Current(ctx context.Context) (info Info, ok bool, err error) {
	data, stat, err := m.c.Get(ctx, m.path)
	if errors.Is(err, client.ErrNoNode) {
		return Info{}, false, nil
	}
	if err != nil {
		return Info{}, false, fmt.Errorf("master of %s: %w", m.path, err)
	}
	return Info{Data: data, Session: stat.EphemeralOwner, Token: stat.Czxid}, true, nil
}

// CurrentW is Current that also sets a one-shot watch: the channel
// receives one Event when the master node is created, changed or deleted
// (or EventNotWatching when the session ends first).
func (m *Master) CurrentW(ctx context.Context) (info Info, ok bool, changed <-chan client.Event, err error) {
	for {
		data, stat, changed, err := m.c.GetW(ctx, m.path)
		if err == nil {
			return Info{Data: data, Session: stat.EphemeralOwner, Token: stat.Czxid}, true, changed, nil
		}
		if !errors.Is(err, client.ErrNoNode) {
			return Info{}, false, nil, fmt.Errorf("master of %s: %w", m.path, err)
		}
		// Nobody is master: watch for the node's creation, unless it has
		// been created meanwhile.
		exists, _, changed, err := m.c.ExistsW(ctx, m.path)
		if err != nil {
			return Info{}, false, nil, fmt.Errorf("master of %s: %w", m.path, err)
		}
		if !exists {
			return Info{}, false, changed, nil
		}
	}
}
