// Package counter holds numbers that many processes share: a SharedCount
// and an AtomicLong laid out as Apache Curator's SharedCount and
// DistributedAtomicLong (so that Curator and Go processes can share them),
// and IDs, which hands out ids that are unique across processes.
//
// # SharedCount
//
// A SharedCount is an int32 in one node, as 4 big-endian bytes. Every
// value comes with the version of its node, and TrySet writes only over
// the version it was given, so that a read-modify-write loses no update:
//
//	sc := counter.NewSharedCount(c, "/app/workers", 0) // created with 0 if missing
//	cur, err := sc.Get(ctx)
//	for {
//		next, ok, err := sc.TrySet(ctx, cur, cur.Value+1)
//		if err != nil { ... }
//		if ok { break }
//		cur = next // someone else wrote first: try again over their value
//	}
//
// Watch streams the value as it changes:
//
//	w := sc.Watch(ctx)
//	for cnt := range w.Values() { ... }
//	err = w.Err() // why it ended: ctx, or the client closed
//
// # AtomicLong
//
// An AtomicLong is an int64 in one node, as 8 big-endian bytes, updated
// optimistically: read the value and its version, write the new value
// over that version, and on a conflict (another writer got in between)
// start again, as often as its client.RetryPolicy allows:
//
//	n := counter.NewAtomicLong(c, "/app/hits", nil) // nil: DefaultRetry
//	v, err := n.Increment(ctx)
//	if errors.Is(err, counter.ErrContention) { ... } // the policy gave up
//
// A missing node reads as 0 and is created, its parents as containers, by
// the first update.
//
// # Lost replies
//
// A write whose reply is lost (the connection broke, or ctx ended after it
// was sent) may or may not have happened. An AtomicLong reads the node
// again to find out: if the value and version show the write did not
// happen it tries again, and otherwise it returns an error wrapping
// ErrUncertain rather than risk counting twice. SharedCount's Set and
// TrySet return the connection's error, for the caller to read again.
//
// # IDs
//
// IDs hands out int64 ids unique across every process that uses the same
// path, whatever their prefixes: see IDs.
package counter

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/internal/znode"
)

// retryDelay paces requests sent again after a connection loss.
const retryDelay = 50 * time.Millisecond

// ErrCorrupt says that a counter node holds data too short for its number.
var ErrCorrupt = errors.New("counter: corrupt value")

// Count is a SharedCount's value and the version of its node, which TrySet
// compares.
type Count struct {
	Value   int32
	Version int32
}

// SharedCount is a shared int32, Curator's SharedCount. It is safe for
// concurrent use.
type SharedCount struct {
	c    *client.Client
	path string
	seed int32
}

// NewSharedCount returns the shared count at path, using c's session. The
// node is created holding seed, its parents as containers, when it is
// first used and missing.
func NewSharedCount(c *client.Client, path string, seed int32) *SharedCount {
	return &SharedCount{c: c, path: path, seed: seed}
}

// Path returns the count's node.
func (s *SharedCount) Path() string { return s.path }

// Get returns the count, creating its node holding the seed if missing.
func (s *SharedCount) Get(ctx context.Context) (Count, error) {
	cnt, err := s.get(ctx)
	if err != nil {
		return Count{}, fmt.Errorf("shared count %s: %w", s.path, err)
	}
	return cnt, nil
}

func (s *SharedCount) get(ctx context.Context) (Count, error) {
	for {
		data, stat, err := s.c.Get(ctx, s.path)
		if errors.Is(err, client.ErrNoNode) {
			err = znode.Create(ctx, s.c, s.path, encode32(s.seed), client.ModePersistent)
			if err == nil || errors.Is(err, client.ErrNodeExists) {
				continue
			}
		}
		if err != nil {
			return Count{}, err
		}
		return decodeCount(data, stat)
	}
}

// Set writes value whatever the count holds, as Curator's setCount, and
// returns the new count.
func (s *SharedCount) Set(ctx context.Context, value int32) (Count, error) {
	version, err := forceWrite(ctx, s.c, s.path, encode32(value))
	if err != nil {
		return Count{}, fmt.Errorf("set shared count %s: %w", s.path, err)
	}
	return Count{Value: value, Version: version}, nil
}

// TrySet writes value only if the count's node is still at prev.Version,
// as Curator's trySetCount. It reports whether it wrote, and returns the
// count as it now is: the one it wrote, or the newer one that made it
// fail, to try again over.
func (s *SharedCount) TrySet(ctx context.Context, prev Count, value int32) (Count, bool, error) {
	if prev.Version < 0 {
		// The server would read a negative version as "any version".
		return Count{}, false, fmt.Errorf("try set shared count %s: %w: version %d", s.path, client.ErrBadArguments, prev.Version)
	}
	stat, err := s.c.Set(ctx, s.path, encode32(value), prev.Version)
	if err == nil {
		return Count{Value: value, Version: stat.Version}, true, nil
	}
	if !errors.Is(err, client.ErrBadVersion) && !errors.Is(err, client.ErrNoNode) {
		return Count{}, false, fmt.Errorf("try set shared count %s: %w", s.path, err)
	}
	cur, err := s.get(ctx)
	if err != nil {
		return Count{}, false, fmt.Errorf("try set shared count %s: %w", s.path, err)
	}
	return cur, false, nil
}

// Watch streams the count: its value now, then every new value, until ctx
// ends or the client closes. A reader that lags gets the latest value, not
// each one in between (as with any ZooKeeper watch, values that follow
// each other closely may be seen as one). Across a connection loss the
// watch carries on; when the session expires it waits for the client's
// next session (Config.RenewSession, or Renew) and carries on.
func (s *SharedCount) Watch(ctx context.Context) *Watcher {
	w := &Watcher{values: make(chan Count), done: make(chan struct{})}
	go w.run(ctx, s)
	return w
}

// Watcher is the stream of a SharedCount's values started by Watch.
type Watcher struct {
	values chan Count
	done   chan struct{} // closed, after err is set, when the watcher ends
	err    error
}

// Values returns the channel of the count's values, closed when the watcher
// ends.
func (w *Watcher) Values() <-chan Count { return w.values }

// Err returns why the watcher ended: ctx's error, client.ErrClosed, or a
// corrupt value. It is nil while the watcher runs.
func (w *Watcher) Err() error {
	select {
	case <-w.done:
		return w.err
	default:
		return nil
	}
}

// run reads the count with a watch, offers the value to the reader, and
// reads again when the watch fires. It owns the values channel.
func (w *Watcher) run(ctx context.Context, s *SharedCount) {
	defer func() {
		close(w.done)
		close(w.values)
	}()
	var (
		pending  Count
		offering bool  // pending is to be sent
		seen     int64 // the Mzxid of the last value read: a newer write has a larger one
	)
	for {
		cnt, stat, changed, err := s.readW(ctx)
		switch {
		case err == nil:
		case errors.Is(err, client.ErrSessionExpired):
			if err = awaitSession(ctx, s.c); err == nil {
				continue
			}
			fallthrough
		case !client.Retryable(err):
			w.err = fmt.Errorf("watch shared count %s: %w", s.path, err)
			return
		default:
			select {
			case <-time.After(retryDelay):
				continue
			case <-ctx.Done():
				w.err = fmt.Errorf("watch shared count %s: %w", s.path, ctx.Err())
				return
			}
		}
		if stat.Mzxid > seen {
			seen, pending, offering = stat.Mzxid, cnt, true
		}
		for fired := false; !fired; {
			var out chan Count
			if offering {
				out = w.values
			}
			select {
			case out <- pending:
				offering = false
			case ev := <-changed:
				if ev.Type == client.EventNotWatching && errors.Is(ev.Err, client.ErrClosed) {
					w.err = fmt.Errorf("watch shared count %s: %w", s.path, ev.Err)
					return
				}
				fired = true
			case <-ctx.Done():
				w.err = fmt.Errorf("watch shared count %s: %w", s.path, ctx.Err())
				return
			}
		}
	}
}

// readW reads the count with a watch. A missing node is created with the
// seed, so that there is always a value to watch.
func (s *SharedCount) readW(ctx context.Context) (Count, client.Stat, <-chan client.Event, error) {
	for {
		data, stat, changed, err := s.c.GetW(ctx, s.path)
		if errors.Is(err, client.ErrNoNode) {
			err = znode.Create(ctx, s.c, s.path, encode32(s.seed), client.ModePersistent)
			if err == nil || errors.Is(err, client.ErrNodeExists) {
				continue
			}
		}
		if err != nil {
			return Count{}, client.Stat{}, nil, err
		}
		cnt, err := decodeCount(data, stat)
		return cnt, stat, changed, err
	}
}

// awaitSession waits until the client is connected with a session again.
func awaitSession(ctx context.Context, c *client.Client) error {
	states := c.StateChanges() // starting with the state now
	defer states.Close()
	for {
		select {
		case s, ok := <-states.Events():
			if !ok || s == client.StateClosed {
				return client.ErrClosed
			}
			if s.Connected() {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func decodeCount(data []byte, stat client.Stat) (Count, error) {
	// Curator reads the first 4 bytes and ignores the rest.
	if len(data) < 4 {
		return Count{}, fmt.Errorf("%w: %d bytes, want 4", ErrCorrupt, len(data))
	}
	return Count{Value: int32(binary.BigEndian.Uint32(data)), Version: stat.Version}, nil
}

func encode32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// forceWrite writes data to path whatever its version, creating the node
// (and its parents) when missing, and returns the node's new version.
func forceWrite(ctx context.Context, c *client.Client, path string, data []byte) (int32, error) {
	for {
		stat, err := c.Set(ctx, path, data, client.AnyVersion)
		if !errors.Is(err, client.ErrNoNode) {
			return stat.Version, err
		}
		err = znode.Create(ctx, c, path, data, client.ModePersistent)
		if !errors.Is(err, client.ErrNodeExists) {
			return 0, err
		}
	}
}
