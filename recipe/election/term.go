package election

import (
	"context"
	"errors"
	"sync"

	"github.com/collie-io/collie/client"
)

// ErrLost says that leadership ended before its holder gave it up: the
// connection broke, the session expired, or the leader's node was deleted.
// A Selector's function sees it as the cause of its context's
// cancellation.
var ErrLost = errors.New("election: leadership lost")

// ErrClosed is returned by a Latch that has been closed, or whose Start
// failed.
var ErrClosed = errors.New("election: closed")

// ErrNotStarted is returned by Await on a Latch not yet started.
var ErrNotStarted = errors.New("election: not started")

// ErrStarted is returned by a second Start of a Latch.
var ErrStarted = errors.New("election: already started")

// ErrNoLeader is returned by Leader when nobody takes part in an election.
var ErrNoLeader = errors.New("election: no leader")

// Term is one uninterrupted period of leadership: proof, while Lost is
// open, that its holder leads.
type Term struct {
	node  string
	token int64

	lost    chan struct{}
	endOnce sync.Once
}

func newTerm(node string, token int64) *Term {
	return &Term{node: node, token: token, lost: make(chan struct{})}
}

// Node returns the path of the leader's node.
func (t *Term) Node() string { return t.node }

// Token returns the term's fencing token, the zxid that created the
// leader's node: each new leader has a larger one than every leader before
// it. A term that a Latch regains with the same node, after a connection
// loss, has the token of the term before: nobody else led in between.
func (t *Term) Token() int64 { return t.token }

// Lost returns a channel closed when the term ends: the connection broke,
// the session expired, the client closed, the node was deleted, or the
// leader gave leadership up. It stays closed.
func (t *Term) Lost() <-chan struct{} { return t.lost }

// Context returns a copy of parent that is cancelled when the term ends,
// with ErrLost as its cause, or when the returned function is called.
// Call it once the context is no longer needed.
func (t *Term) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-t.lost:
			cancel(ErrLost)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// ended reports whether Lost is closed.
func (t *Term) ended() bool {
	select {
	case <-t.lost:
		return true
	default:
		return false
	}
}

// end closes Lost; a nil term has nothing to end.
func (t *Term) end() {
	if t != nil {
		t.endOnce.Do(func() { close(t.lost) })
	}
}

// watchNode watches the node at path that was created at zxid czxid from a
// goroutine of its own, started with wg, so that the caller can follow the
// session's states meanwhile: a request waits while the client is
// disconnected. The channel receives one event: the node's next change;
// EventNodeDeleted when the node is gone, or is another one; or
// EventNotWatching, with the error, when no watch could be set. The
// goroutine ends with ctx.
func watchNode(ctx context.Context, wg *sync.WaitGroup, c *client.Client, path string, czxid int64) <-chan client.Event {
	out := make(chan client.Event, 1)
	wg.Go(func() {
		ok, stat, changed, err := c.ExistsW(ctx, path)
		switch {
		case err != nil:
			out <- client.Event{Type: client.EventNotWatching, Path: path, Err: err}
		case !ok || stat.Czxid != czxid:
			out <- client.Event{Type: client.EventNodeDeleted, Path: path}
		default:
			select {
			case ev := <-changed:
				out <- ev
			case <-ctx.Done():
			}
		}
	})
	return out
}
