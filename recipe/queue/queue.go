// Package queue is a distributed queue, built on the client package and
// laid out as Apache Curator's DistributedQueue, DistributedPriorityQueue
// and DistributedDelayQueue, so that Curator producers and consumers of a
// queue of byte[] and Go ones can share a queue.
//
// # Layout
//
// Every item is one persistent sequential node under the queue path, named
// "queue-" then the server's 10-digit sequence number, whose data frames
// the item's values as Curator's ItemSerializer does (a version word, each
// value with its length, an end mark). A priority queue puts the priority
// between the two ("queue-1000000070000000042"), a delay queue the time
// the item is due ("queue-|18F3A2B1C00|0000000042"), both as Curator
// writes them. Consumers ignore children named otherwise. The queue path
// is created on first use, its missing parents as containers.
//
// Items come out in the order of their names: the order of Put for a
// Queue, lower priorities first (then the order of Put) for a
// PriorityQueue, earlier due times first for a DelayQueue, which hands out
// no item before it is due (by the consumer's clock: keep clocks in sync).
//
// # Producing and consuming
//
//	q := queue.New(c, "/app/queues/mail")
//	_, err := q.Put(ctx, []byte("hello"))
//
//	item, err := q.Take(ctx) // waits while the queue is empty
//	fmt.Printf("%s\n", item.Data)
//
// Take lists the queue without a watch and takes the first item it can; it
// sets a watch on the queue path only when it found nothing to take, and
// waits for it to fire. A consumer takes an item by deleting its node:
// only the one whose delete succeeds gets the item, so no two consumers
// ever get the same one. An item taken is no longer in the queue, so a
// consumer that dies before it has processed it loses it (at most once).
// A Queue remembers the rest of its last listing and tries those items
// first (they are older than any item put since), so that draining n items
// takes one listing rather than n; a priority or delay queue lists again
// for every item, so that a new, more urgent item is not passed over.
//
// When a delete's reply is lost (the connection broke, or ctx ended after
// it was sent) and the node is gone, the item may have been taken by this
// consumer or by another: Take returns an *UncertainError holding the
// item, for the caller to process (at least once) or drop (at most once).
//
// # Lock safety: processed at least once
//
// With the LockSafe option, as with Curator's lockPath, a consumer first
// creates an ephemeral lock node named as the item under the lock path;
// whoever creates it owns the item, which stays in the queue while it is
// processed:
//
//	q := queue.New(c, "/app/queues/mail", queue.LockSafe("/app/queues/mail-locks"))
//	err := q.Consume(ctx, func(ctx context.Context, item queue.Item) error {
//		return send(ctx, item.Data) // nil: the item is removed
//	})
//
// The item and its lock are removed in one transaction once the handler
// returns nil. When the handler fails the item is put back at the end of
// the queue in the same transaction (or dropped, with OnError(Delete));
// when ctx ends first the lock is released and the item stays where it is.
// When the consumer's session ends (a crash, a partition longer than the
// session timeout) the server deletes its lock and another consumer gets
// the item: items are processed at least once. The handler's context is
// cancelled when the session expires, and Consume then returns ErrLost.
// Waiting consumers watch the lock path as well, so they see a dead
// consumer's lock go.
//
// Every producer and consumer of a lock-safe queue must use the same lock
// path; Curator's consumers with the same lockPath take part too.
//
// # Producers
//
// Put creates the item node in one request. When its reply is lost the
// item may or may not be in the queue; putting it again may put it twice
// (Curator's names leave no room for a protected create).
package queue

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/recipe/internal/znode"
)

// retryDelay paces requests sent again after a connection loss.
const retryDelay = 50 * time.Millisecond

// ErrLost says that a lock-safe consumer's session ended before it had
// finished with an item: its lock is gone, and the item is, or will be,
// delivered to another consumer.
var ErrLost = errors.New("queue: item lock lost")

// UncertainError says that a consumer deleted an item's node and the reply
// was lost, and that the node is gone: this consumer or another one took
// the item.
type UncertainError struct {
	Item Item  // the item, as read before the delete
	Err  error // why the reply was lost
}

func (e *UncertainError) Error() string {
	return fmt.Sprintf("queue: item %s gone, taken by this consumer or another: %v", e.Item.Node, e.Err)
}

func (e *UncertainError) Unwrap() error { return e.Err }

// Item is one item taken from a queue.
type Item struct {
	// Node is the path the item had in the queue.
	Node string
	// Data is the item's value: the first of Values.
	Data []byte
	// Values are all the item's values: one for Put, those given to
	// PutMulti (or Curator's putMulti), or the node's data as it is when
	// it is not in Curator's framing.
	Values [][]byte
}

// Handler processes one item for Consume. ctx ends when Consume's does and,
// in a lock-safe queue, when the session that holds the item's lock ends.
type Handler func(ctx context.Context, item Item) error

// ErrorMode says what a lock-safe queue does with an item whose handler
// failed.
type ErrorMode int

const (
	// Requeue puts the item back at the end of the queue, as Curator's
	// ErrorMode.REQUEUE (the default). It keeps its priority or due time,
	// which Curator's requeue drops.
	Requeue ErrorMode = iota
	// Delete drops the item, as Curator's ErrorMode.DELETE.
	Delete
)

// Option configures a queue.
type Option func(*options)

type options struct {
	lockPath  string
	errorMode ErrorMode
}

// LockSafe makes consumers lock an item, under lockPath, while they process
// it, and remove it only once processed (see the package doc).
func LockSafe(lockPath string) Option {
	return func(o *options) { o.lockPath = lockPath }
}

// OnError sets what Consume does, in a lock-safe queue, with an item whose
// handler failed.
func OnError(mode ErrorMode) Option {
	return func(o *options) { o.errorMode = mode }
}

// order says how a kind of queue sorts and shows its items.
type order int

const (
	fifo order = iota
	byPriority
	byDueTime
)

// base is what the three kinds of queue share: producing, listing,
// claiming and completing items.
type base struct {
	c     *client.Client
	path  string
	order order
	opts  options

	ready atomic.Bool // the queue and lock paths exist

	mu      sync.Mutex // guards pending
	pending []string   // fifo: names of the last listing not tried yet, in order
}

func newBase(c *client.Client, path string, o order, opts []Option) *base {
	q := &base{c: c, path: path, order: o}
	for _, opt := range opts {
		opt(&q.opts)
	}
	return q
}

// put creates an item node named "queue-" + middle + sequence holding
// values.
func (q *base) put(ctx context.Context, middle string, values [][]byte) (string, error) {
	prefix := proto.Join(q.path, itemName+middle)
	data := encodeValues(values)
	for {
		if err := q.ensure(ctx); err != nil {
			return "", fmt.Errorf("put in queue %s: %w", q.path, err)
		}
		node, _, err := q.c.Create(ctx, prefix, data, client.ModePersistentSequential, nil)
		if err == nil {
			return node, nil
		}
		if !errors.Is(err, client.ErrNoNode) {
			return "", fmt.Errorf("put in queue %s: %w", q.path, err)
		}
		q.ready.Store(false)
	}
}

// ensure creates the queue path and the lock path, as Curator's start does,
// once.
func (q *base) ensure(ctx context.Context) error {
	if q.ready.Load() {
		return nil
	}
	for _, p := range []string{q.path, q.opts.lockPath} {
		if p == "" {
			continue
		}
		if err := createPath(ctx, q.c, p); err != nil {
			return err
		}
	}
	q.ready.Store(true)
	return nil
}

// createPath creates path as a persistent node, and its missing ancestors
// as containers. A path that exists is fine.
func createPath(ctx context.Context, c *client.Client, path string) error {
	err := znode.Create(ctx, c, path, nil, client.ModePersistent)
	if errors.Is(err, client.ErrNodeExists) {
		return nil
	}
	return err
}

// claim is an item a consumer owns: deleted already, or locked (lock set)
// and still in the queue.
type claim struct {
	name    string
	item    Item
	raw     []byte // the node's data
	lock    string // the lock node, in a lock-safe queue
	token   []byte // the lock node's data, which tells this claim's lock from others of the session
	session int64  // the session that created the lock
}

// claimNext waits until it owns an item. It tries the items it knows of in
// order; when none is left to try it lists the queue, first without a
// watch, then, when that listing too offers nothing it can take, with a
// watch on the queue path (and the lock path, for locked items) and waits
// for the watch, or for the next due time of a delay queue.
func (q *base) claimNext(ctx context.Context) (*claim, error) {
	if err := q.ensure(ctx); err != nil {
		return nil, err
	}
	watch := false
	for {
		names, fromCache := q.takePending(), true
		var changed [2]<-chan client.Event
		var due time.Time
		if len(names) == 0 {
			fromCache = false
			var err error
			names, changed, due, err = q.list(ctx, watch)
			if errors.Is(err, client.ErrNoNode) {
				// The queue path was deleted: make it again, as put does.
				err = q.ensure(ctx)
				if err == nil {
					continue
				}
			}
			if err != nil {
				return nil, err
			}
		}
		for i, name := range names {
			cl, err := q.claim(ctx, name)
			if cl != nil || err != nil {
				q.keepPending(names[i+1:])
				return cl, err
			}
		}
		if fromCache {
			continue
		}
		if !watch {
			watch = true
			continue
		}
		if err := waitChange(ctx, changed, due); err != nil {
			return nil, err
		}
		watch = false
	}
}

// takePending returns the names left from a fifo queue's last listing,
// which are older than any item not listed yet, and forgets them.
func (q *base) takePending() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	names := q.pending
	q.pending = nil
	return names
}

// keepPending remembers names not tried yet, for a fifo queue's next take.
func (q *base) keepPending(names []string) {
	if q.order != fifo || len(names) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = names
}

// list returns the names of the items that may be taken now, in order.
// With watch, it sets a child watch on the queue path, and on the lock path
// when some items are listed (they may be locked); due is when the next
// item of a delay queue not due yet is due (zero if none).
func (q *base) list(ctx context.Context, watch bool) (names []string, changed [2]<-chan client.Event, due time.Time, err error) {
	var children []string
	if watch {
		children, _, changed[0], err = q.c.ChildrenW(ctx, q.path)
	} else {
		children, _, err = q.c.Children(ctx, q.path)
	}
	if err != nil {
		if errors.Is(err, client.ErrNoNode) {
			q.ready.Store(false)
		}
		return nil, changed, time.Time{}, err
	}
	names, due = q.visible(children, time.Now())
	if watch && q.opts.lockPath != "" && len(names) > 0 {
		if _, _, changed[1], err = q.c.ChildrenW(ctx, q.opts.lockPath); err != nil {
			return nil, changed, time.Time{}, err
		}
	}
	return names, changed, due, nil
}

// visible returns, in the order they are to be taken, the item names among
// children that may be taken at now; and when the first item not due yet
// will be.
func (q *base) visible(children []string, now time.Time) ([]string, time.Time) {
	names := slices.DeleteFunc(children, func(name string) bool { return !strings.HasPrefix(name, itemName) })
	if q.order != byDueTime {
		// Curator sorts the names as strings; the sequence numbers, and
		// the priorities before them, are of fixed width.
		slices.Sort(names)
		return names, time.Time{}
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(dueOf(a), dueOf(b)), strings.Compare(a, b))
	})
	nowMs := now.UnixMilli()
	i := slices.IndexFunc(names, func(name string) bool { return dueOf(name) > nowMs })
	if i < 0 {
		return names, time.Time{}
	}
	return names[:i], time.UnixMilli(dueOf(names[i]))
}

// waitChange waits for one of the watches to fire, or until due (unless
// zero), or for ctx to end.
func waitChange(ctx context.Context, changed [2]<-chan client.Event, due time.Time) error {
	var timer <-chan time.Time
	if !due.IsZero() {
		t := time.NewTimer(time.Until(due))
		defer t.Stop()
		timer = t.C
	}
	select {
	case ev := <-changed[0]:
		if ev.Type == client.EventNotWatching {
			return ev.Err
		}
	case ev := <-changed[1]:
		if ev.Type == client.EventNotWatching {
			return ev.Err
		}
	case <-timer:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// claim tries to own the item called name. It returns nil and no error
// when another consumer has it, and a claim with an *UncertainError when
// the item is gone and may be this consumer's.
func (q *base) claim(ctx context.Context, name string) (*claim, error) {
	node := proto.Join(q.path, name)
	if q.opts.lockPath != "" {
		return q.lockItem(ctx, name, node)
	}
	data, stat, err := q.c.Get(ctx, node)
	if errors.Is(err, client.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cl := newClaim(name, node, data)
	owned, err := q.remove(ctx, node, stat.Version)
	if err != nil {
		var uncertain *UncertainError
		if errors.As(err, &uncertain) {
			uncertain.Item = cl.item
			return cl, err
		}
		return nil, err
	}
	if !owned {
		return nil, nil
	}
	return cl, nil
}

func newClaim(name, node string, data []byte) *claim {
	values, err := decodeValues(data)
	if err != nil {
		values = [][]byte{data}
	}
	it := Item{Node: node, Values: values}
	if len(values) > 0 {
		it.Data = values[0]
	}
	return &claim{name: name, item: it, raw: data}
}

// remove deletes an item node read at version and reports whether this
// consumer's delete removed it. When the reply is lost it looks whether
// the node is still there: if not, the outcome is an *UncertainError; if
// so, the delete is sent again while ctx lasts, and should that one find
// the node gone, the outcome is uncertain too (the lost one may have been
// applied since).
func (q *base) remove(ctx context.Context, node string, version int32) (bool, error) {
	// lost is the error of an earlier attempt whose reply was lost: that
	// delete may still be applied, after any check, by a leader elected
	// meanwhile that commits what its predecessor had replicated.
	var lost error
	for {
		err := q.c.Delete(ctx, node, version)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, client.ErrNoNode), errors.Is(err, client.ErrBadVersion):
			if lost != nil {
				return false, &UncertainError{Err: lost}
			}
			return false, nil
		case !client.Retryable(err) && ctx.Err() == nil:
			return false, err
		}
		lost = err
		// A sync first, so that the server has what the leader had
		// committed: a delete still on its way may be in it.
		var exists bool
		cerr := client.Retry(context.WithoutCancel(ctx), client.RetryForever(retryDelay), func(ctx context.Context) error {
			if err := q.c.Sync(ctx, node); err != nil {
				return err
			}
			var err error
			exists, _, err = q.c.Exists(ctx, node)
			return err
		})
		switch {
		case cerr != nil:
			return false, errors.Join(err, cerr)
		case !exists:
			return false, &UncertainError{Err: err}
		case ctx.Err() != nil:
			return false, ctx.Err()
		}
	}
}

// lockItem creates the lock of the item called name and reads the item.
// It returns nil when another consumer holds the lock or the item is gone.
func (q *base) lockItem(ctx context.Context, name, node string) (*claim, error) {
	lock := proto.Join(q.opts.lockPath, name)
	token := []byte(rand.Text())
	session := q.c.SessionID()
	for {
		_, _, err := q.c.Create(ctx, lock, token, client.ModeEphemeral, nil)
		if errors.Is(err, client.ErrNodeExists) {
			// Ours only when an attempt whose reply was lost made it.
			var data []byte
			var stat client.Stat
			data, stat, err = q.c.Get(ctx, lock)
			mine := err == nil && stat.EphemeralOwner == session && bytes.Equal(data, token)
			if errors.Is(err, client.ErrNoNode) || err == nil && !mine {
				return nil, nil
			}
		}
		if err == nil {
			break
		}
		if client.Retryable(err) {
			select {
			case <-time.After(retryDelay):
				continue
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		// A create whose outcome is unknown may have made the lock: it must
		// not stay, holding an item nobody processes.
		q.unlock(ctx, lock, token, session)
		return nil, err
	}
	data, _, err := q.c.Get(ctx, node)
	if err != nil {
		q.unlock(ctx, lock, token, session)
		if errors.Is(err, client.ErrNoNode) {
			return nil, nil
		}
		return nil, err
	}
	cl := newClaim(name, node, data)
	cl.lock, cl.token, cl.session = lock, token, session
	return cl, nil
}

// unlock deletes a lock if it is the one made with token by session. It
// runs to its end even when ctx has ended, across connection losses, and
// gives up when the session ends, which deletes the lock anyway.
func (q *base) unlock(ctx context.Context, lock string, token []byte, session int64) error {
	return client.Retry(context.WithoutCancel(ctx), client.RetryForever(retryDelay), func(ctx context.Context) error {
		data, stat, err := q.c.Get(ctx, lock)
		if errors.Is(err, client.ErrNoNode) {
			return nil
		}
		if err != nil || stat.EphemeralOwner != session || !bytes.Equal(data, token) {
			return err
		}
		err = q.c.Delete(ctx, lock, stat.Version)
		if errors.Is(err, client.ErrNoNode) {
			return nil
		}
		return err
	})
}

// finish ends a lock-safe claim: it removes the item (putting it back at
// the end of the queue with requeue) and its lock in one transaction. It
// runs to its end even when ctx has ended, so that an item processed is
// not delivered again, and fails with ErrLost when the lock went with its
// session.
func (q *base) finish(ctx context.Context, cl *claim, requeue bool) error {
	ctx = context.WithoutCancel(ctx)
	ops := []client.Op{client.DeleteOp(cl.item.Node, client.AnyVersion)}
	if requeue {
		prefix := proto.Join(q.path, itemName+middleOf(cl.name))
		ops = append(ops, client.CreateOp(prefix, cl.raw, client.ModePersistentSequential, nil))
	}
	ops = append(ops, client.DeleteOp(cl.lock, client.AnyVersion))
	for {
		if q.c.SessionID() != cl.session {
			return ErrLost
		}
		results, err := q.c.Multi(ctx, ops...)
		switch {
		case err == nil:
			return nil
		case client.Retryable(err):
			// Applied or not: the next attempt tells.
			time.Sleep(retryDelay)
		case len(results) > 0 && errors.Is(results[0].Err, client.ErrNoNode):
			// Gone with an earlier attempt whose reply was lost, or taken
			// by a consumer that ignores locks.
			return q.unlock(ctx, cl.lock, cl.token, cl.session)
		case errors.Is(err, client.ErrSessionExpired),
			len(results) > 0 && errors.Is(results[len(results)-1].Err, client.ErrNoNode):
			return fmt.Errorf("%w: %w", ErrLost, err)
		default:
			return err
		}
	}
}

// take claims the next item and, in a lock-safe queue, removes it.
func (q *base) take(ctx context.Context) (Item, error) {
	cl, err := q.claimNext(ctx)
	if err == nil && cl.lock != "" {
		err = q.finish(ctx, cl, false)
	}
	if err != nil {
		return Item{}, fmt.Errorf("take from queue %s: %w", q.path, err)
	}
	return cl.item, nil
}

// consume claims the next item and runs fn on it; see Queue.Consume.
func (q *base) consume(ctx context.Context, fn Handler) error {
	cl, err := q.claimNext(ctx)
	if err != nil {
		return fmt.Errorf("consume from queue %s: %w", q.path, err)
	}
	if cl.lock == "" {
		return fn(ctx, cl.item)
	}
	fnCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := q.watchSession(cancel)
	fnErr := fn(fnCtx, cl.item)
	if lost := stop(); lost {
		return fmt.Errorf("consume %s: %w", cl.item.Node, errors.Join(ErrLost, fnErr))
	}
	switch {
	case fnErr == nil:
		err = q.finish(ctx, cl, false)
	case ctx.Err() != nil:
		// Consume was cancelled: the item stays first in line.
		err = q.unlock(ctx, cl.lock, cl.token, cl.session)
	default:
		err = q.finish(ctx, cl, q.opts.errorMode == Requeue)
	}
	if err != nil {
		return fmt.Errorf("consume %s: %w", cl.item.Node, errors.Join(fnErr, err))
	}
	return fnErr
}

// watchSession calls cancel when the client's session expires or the
// client closes, until stop is called; stop reports whether it did.
func (q *base) watchSession(cancel context.CancelFunc) (stop func() (lost bool)) {
	states := q.c.StateChanges()
	done := make(chan struct{})
	var lost atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case s, ok := <-states.Events():
				// The stream ends by itself only when the client closes.
				if ok && s != client.StateExpired && s != client.StateClosed {
					continue
				}
				lost.Store(true)
				cancel()
			case <-done:
			}
			return
		}
	})
	return func() bool {
		close(done)
		wg.Wait()
		states.Close()
		return lost.Load()
	}
}

// size counts the items in the queue, due or not.
func (q *base) size(ctx context.Context) (int, error) {
	children, _, err := q.c.Children(ctx, q.path)
	if errors.Is(err, client.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("queue %s: %w", q.path, err)
	}
	n := 0
	for _, name := range children {
		if strings.HasPrefix(name, itemName) {
			n++
		}
	}
	return n, nil
}
