package election

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
)

// latchName is what Curator's LeaderLatch names its nodes, before the
// protection prefix and after it the sequence number.
const latchName = "latch-"

type latchState int

const (
	latchIdle latchState = iota
	latchStarted
	latchClosed
)

// Latch is one participant of a leader election on one path, compatible
// with Curator's LeaderLatch. Start joins the election; the latch then
// leads whenever its node is first in line, until Close. It is safe for
// concurrent use.
//
// A started latch runs one goroutine, the campaign, which owns its node:
// it creates it, watches the node before it (or, while leading, its own),
// follows the session's state, and removes the node when the latch closes.
type Latch struct {
	c    *client.Client
	path string
	id   string
	name string // latchName, or lockName for a Selector's turn

	mu      sync.Mutex // guards the fields below
	state   latchState
	term    *Term              // the current term; nil while not leading
	elected chan struct{}      // closed when a term begins, replaced when it ends
	node    string             // the latch's node; "" while it has none
	stop    context.CancelFunc // ends the campaign; set by Start
	done    chan struct{}      // closed when the campaign has ended; set by Start

	// cause says why the campaign ended by itself (the client closed, or
	// the first create failed). The campaign writes it before closing
	// done; it is read only after done is closed.
	cause error
}

// NewLatch returns a latch on path (the parent of the participants' nodes)
// for the participant id, using c's session. The id is the data of the
// latch's node, which Participants and Curator's getParticipants read.
func NewLatch(c *client.Client, path, id string) *Latch {
	return newLatch(c, path, id, latchName)
}

func newLatch(c *client.Client, path, id, name string) *Latch {
	return &Latch{c: c, path: path, id: id, name: name, elected: make(chan struct{})}
}

// Path returns the election's path.
func (l *Latch) Path() string { return l.path }

// ID returns the participant id.
func (l *Latch) ID() string { return l.id }

// Start joins the election: it returns once the latch's node is in line,
// and the latch then leads whenever its node is first. When ctx ends
// first, or the node cannot be created, Start fails, the latch is closed
// and leaves no node behind (a create still in flight is undone once it
// completes). A latch is started once.
func (l *Latch) Start(ctx context.Context) error {
	l.mu.Lock()
	switch l.state {
	case latchStarted:
		l.mu.Unlock()
		return ErrStarted
	case latchClosed:
		l.mu.Unlock()
		return ErrClosed
	}
	campaignCtx, stop := context.WithCancel(context.Background())
	l.state, l.stop, l.done = latchStarted, stop, make(chan struct{})
	l.mu.Unlock()

	joined := make(chan error, 1)
	go l.campaign(campaignCtx, joined)
	var err error
	select {
	case err = <-joined:
	case <-ctx.Done():
		err = ctx.Err()
	}
	l.mu.Lock()
	if err == nil && l.state == latchClosed {
		err = ErrClosed // Close came first
	}
	if err != nil {
		l.state = latchClosed
	}
	l.mu.Unlock()
	if err != nil {
		stop()
		return fmt.Errorf("start latch %s: %w", l.path, err)
	}
	return nil
}

// Close leaves the election: leadership ends, if the latch leads, and its
// node is removed, sent again across connection losses until the session
// ends. It returns once the node is gone, or with ctx's error when ctx
// ends first; the node is still removed in the background. Calling Close
// again waits again.
func (l *Latch) Close(ctx context.Context) error {
	l.mu.Lock()
	l.state = latchClosed
	stop, done := l.stop, l.done
	l.mu.Unlock()
	if done == nil {
		return nil
	}
	stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close latch %s: %w", l.path, ctx.Err())
	}
}

// Await waits until the latch leads and returns the term. It returns at
// once when the latch leads already. It fails when ctx ends, when the latch
// is closed or not started, or when its client has closed; the latch stays
// in the election when ctx ends.
func (l *Latch) Await(ctx context.Context) (*Term, error) {
	for {
		l.mu.Lock()
		state, term, elected, done := l.state, l.term, l.elected, l.done
		l.mu.Unlock()
		switch {
		case state == latchIdle:
			return nil, ErrNotStarted
		case state == latchClosed:
			return nil, ErrClosed
		case term != nil:
			return term, nil
		}
		select {
		case <-elected:
		case <-done:
			if l.cause == nil {
				return nil, ErrClosed // closed meanwhile
			}
			return nil, fmt.Errorf("latch %s: %w", l.path, l.cause)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Elected returns a channel that is closed while the latch leads: already
// closed when it leads now, otherwise closed when it next does. Term then
// returns the term, unless it has ended meanwhile. Ask again after the term
// ends.
func (l *Latch) Elected() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.elected
}

// Term returns the current term, or nil when the latch does not lead.
func (l *Latch) Term() *Term {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.term
}

// IsLeader reports whether the latch leads, as far as it knows (Curator's
// hasLeadership).
func (l *Latch) IsLeader() bool { return l.Term() != nil }

// Node returns the path of the latch's node, or "" while it has none
// (Curator's getOurPath).
func (l *Latch) Node() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.node
}

// Participants lists the election's participants in line order, the
// leader first, reading the ensemble (Curator's getParticipants). It may
// disagree with IsLeader, which is what the latch knows.
func (l *Latch) Participants(ctx context.Context) ([]Participant, error) {
	return participants(ctx, l.c, l.path, l.name)
}

// Leader returns the participant who leads, reading the ensemble; it fails
// with ErrNoLeader when nobody takes part.
func (l *Latch) Leader(ctx context.Context) (Participant, error) {
	return leader(ctx, l.c, l.path, l.name)
}

// lead makes node's term the current one; a term of the same node that has
// not ended goes on.
func (l *Latch) lead(node string, token int64) *Term {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term != nil {
		if l.term.node == node {
			return l.term
		}
		l.endLocked()
	}
	l.term = newTerm(node, token)
	close(l.elected)
	return l.term
}

// follow ends the current term, if any.
func (l *Latch) follow() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLocked()
}

func (l *Latch) endLocked() {
	if l.term == nil {
		return
	}
	l.term.end()
	l.term = nil
	l.elected = make(chan struct{})
}

func (l *Latch) setNode(node string) {
	l.mu.Lock()
	l.node = node
	l.mu.Unlock()
}

// campaign runs from Start until the latch closes or its client does. It
// reports the first create's outcome to joined; a failed first create ends
// it. On its way out it ends the term, then removes the node, so that the
// term has ended before anyone else can lead.
func (l *Latch) campaign(ctx context.Context, joined chan<- error) {
	defer close(l.done)
	states := l.c.StateChanges()
	defer states.Close()
	cd := &candidate{l: l, states: states}
	defer cd.watchers.Wait()
	err := cd.join(ctx)
	joined <- err
	if err != nil {
		l.cause = err
		return
	}
	for ctx.Err() == nil && cd.step(ctx) {
	}
	l.follow()
	if cd.node != "" {
		// Bounded by the session, as every request is: the node goes with
		// it at the latest.
		removeNode(context.WithoutCancel(ctx), l.c, cd.node)
	}
	l.setNode("")
}

// candidate is the campaign's state; only the campaign goroutine uses it.
type candidate struct {
	l      *Latch
	states *client.Stream[client.State]
	node   string // the latch's node; "" while it has none
	owner  int64  // the session that created node
	up     bool   // the session serves requests, as far as states has said

	failures int            // unexpected failures in a row, to pace the next attempt
	watchers sync.WaitGroup // watches of the node set again while leading
}

// join creates the latch's node. The create runs to its end even when the
// campaign ends meanwhile, so that the campaign learns of every node it
// must remove.
func (cd *candidate) join(ctx context.Context) error {
	l := cd.l
	node, stat, err := joinLine(context.WithoutCancel(ctx), l.c, l.path, l.name, l.id)
	if err != nil {
		return err
	}
	cd.node, cd.owner = node, stat.EphemeralOwner
	l.setNode(node)
	return nil
}

// forget records that the latch's node has gone, with its session or by
// someone's delete, and with it any term.
func (cd *candidate) forget() {
	cd.l.follow()
	cd.node, cd.owner = "", 0
	cd.l.setNode("")
}

// down records that the session does not serve requests: the latch does
// not lead until it does again.
func (cd *candidate) down() {
	cd.l.follow()
	cd.up = false
}

// step takes one step of the campaign: wait for the session, create a
// node, or find the node's place in line and wait there. It reports false
// when the campaign must end because the client has closed.
func (cd *candidate) step(ctx context.Context) bool {
	l := cd.l
	switch {
	case !cd.up:
		return cd.awaitSession(ctx)
	case cd.node == "":
		if err := cd.join(ctx); err != nil {
			return cd.failed(ctx, err)
		}
		return true
	}
	children, _, err := l.c.Children(ctx, l.path)
	if errors.Is(err, client.ErrNoNode) {
		// The path went, and the node with it.
		cd.forget()
		return true
	}
	if err != nil {
		return cd.failed(ctx, err)
	}
	sortBySequence(children, l.name)
	switch i := slices.Index(children, nameOf(cd.node)); {
	case i < 0:
		cd.forget()
		return true
	case i == 0:
		return cd.lead(ctx)
	default:
		return cd.wait(ctx, proto.Join(l.path, children[i-1]))
	}
}

// lead holds a term while the node is first in line: until the connection
// breaks or the node is deleted.
func (cd *candidate) lead(ctx context.Context) bool {
	l := cd.l
	ok, stat, changed, err := l.c.ExistsW(ctx, cd.node)
	if err != nil {
		return cd.failed(ctx, err)
	}
	if !ok {
		cd.forget()
		return true
	}
	cd.failures = 0
	l.lead(cd.node, stat.Czxid)
	watching, stop := context.WithCancel(ctx)
	defer stop()
	for {
		select {
		case s, ok := <-cd.states.Events():
			if !ok {
				return cd.closed()
			}
			if cd.observe(s); !cd.up || cd.node == "" {
				return true
			}
		case ev := <-changed:
			switch ev.Type {
			case client.EventNodeDeleted:
				cd.forget()
				return true
			case client.EventNotWatching:
				l.follow()
				return cd.failed(ctx, ev.Err)
			}
			// The data changed. Watch again from a goroutine, so that a
			// connection that breaks meanwhile ends the term at once.
			changed = watchNode(watching, &cd.watchers, l.c, cd.node, stat.Czxid)
		case <-ctx.Done():
			return false
		}
	}
}

// wait waits for the node before the latch's own to change. A broken
// connection does not end the wait: the client sets the watch again when
// the session resumes, and tells of a deletion missed meanwhile.
func (cd *candidate) wait(ctx context.Context, predecessor string) bool {
	l := cd.l
	l.follow()
	// Get rather than Exists: Get sets no watch on a node already gone, so
	// no watch outlives its use.
	_, _, changed, err := l.c.GetW(ctx, predecessor)
	if errors.Is(err, client.ErrNoNode) {
		return true
	}
	if err != nil {
		return cd.failed(ctx, err)
	}
	cd.failures = 0
	for {
		select {
		case s, ok := <-cd.states.Events():
			if !ok {
				return cd.closed()
			}
			if cd.observe(s); cd.node == "" {
				return true
			}
		case ev := <-changed:
			if ev.Type == client.EventNotWatching {
				return cd.failed(ctx, ev.Err)
			}
			return true
		case <-ctx.Done():
			return false
		}
	}
}

// awaitSession waits for the next state of the session.
func (cd *candidate) awaitSession(ctx context.Context) bool {
	select {
	case s, ok := <-cd.states.Events():
		if !ok {
			return cd.closed()
		}
		cd.observe(s)
		return true
	case <-ctx.Done():
		return false
	}
}

// observe takes in a state of the session. Only a connected session
// counts as up: a read-only server is cut off from the ensemble, which may
// elect someone else meanwhile. A node whose session has ended is gone.
func (cd *candidate) observe(s client.State) {
	switch s {
	case client.StateConnected, client.StateReconnected:
		cd.up = true
		if cd.node != "" && cd.owner != cd.l.c.SessionID() {
			cd.forget()
		}
	case client.StateExpired:
		cd.down()
		cd.forget()
	default:
		cd.down()
	}
}

// failed takes in a request's failure and reports whether the campaign
// goes on.
func (cd *candidate) failed(ctx context.Context, err error) bool {
	switch {
	case ctx.Err() != nil:
		return false
	case errors.Is(err, client.ErrClosed):
		return cd.closed()
	case errors.Is(err, client.ErrSessionExpired):
		// The node went with the session; states tells when there is a
		// new one.
		cd.down()
		cd.forget()
	case errors.Is(err, client.ErrConnectionLoss):
		// states tells of the disconnection, then of what follows.
		cd.down()
	default:
		// Nothing to wait for: pace the next attempt.
		cd.failures++
		delay, _ := retryPolicy.Delay(cd.failures)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// closed records that the client has closed, ending the campaign.
func (cd *candidate) closed() bool {
	cd.l.cause = client.ErrClosed
	cd.forget()
	return false
}
