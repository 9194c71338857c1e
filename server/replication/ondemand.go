package replication

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// snapWaiters are the callers of TakeSnapshot waiting for a snapshot that
// holds everything applied when they asked. The apply goroutine adds to
// them; the append goroutine answers them once a snapshot is recorded.
type snapWaiters struct {
	mu      sync.Mutex
	waiting []snapWaiter
}

type snapWaiter struct {
	// index is what the snapshot must hold: the applied index at the time
	// of asking.
	index uint64
	done  chan snapOutcome
}

type snapOutcome struct {
	meta raftpb.SnapshotMetadata
	err  error
}

// snapshotTask asks the apply goroutine for a snapshot of what it has
// applied.
type snapshotTask struct{ done chan snapOutcome }

// TakeSnapshot has the node write a snapshot of everything it has applied
// now, as its own snapshots every SnapCount entries are written (the state
// frozen between two applies, encoded beside them), and returns the
// snapshot's metadata and a reader of its data, whose size is the
// reader's Size. When nothing was applied since the newest snapshot, that
// one is returned. The caller closes the reader; the file stays readable
// even if it is purged meanwhile.
func (n *Node) TakeSnapshot(ctx context.Context) (raftpb.SnapshotMetadata, SizedReadCloser, error) {
	for attempt := 0; ; attempt++ {
		done := make(chan snapOutcome, 1)
		n.applyq.push(applyTask{snapshot: &snapshotTask{done: done}})
		var out snapOutcome
		select {
		case out = <-done:
		case <-ctx.Done():
			return raftpb.SnapshotMetadata{}, nil, ctx.Err()
		case <-n.donec:
			return raftpb.SnapshotMetadata{}, nil, n.stoppedErr()
		}
		if out.err != nil {
			return raftpb.SnapshotMetadata{}, nil, out.err
		}
		r, err := n.cfg.Storage.OpenSnapshot(out.meta)
		if err != nil {
			// Purged already, by snapshots taken since: ask again, a few
			// times.
			if attempt < 3 && n.snapIndex.Load() > out.meta.Index {
				continue
			}
			return raftpb.SnapshotMetadata{}, nil, fmt.Errorf("replication: open snapshot %d: %w", out.meta.Index, err)
		}
		sized, ok := r.(SizedReadCloser)
		if !ok {
			r.Close()
			return raftpb.SnapshotMetadata{}, nil, errors.New("replication: the storage's snapshot reader does not tell its size")
		}
		return out.meta, sized, nil
	}
}

// SizedReadCloser is a snapshot's data and its length.
type SizedReadCloser interface {
	io.ReadCloser
	Size() int64
}

func (n *Node) stoppedErr() error {
	if err := n.Err(); err != nil {
		return err
	}
	return ErrStopped
}

// askSnapshot runs on the apply goroutine: it answers at once when the
// newest snapshot holds everything applied, and otherwise queues the ask
// for the append goroutine's answer and has maybeSnapshot start one.
func (n *Node) askSnapshot(t *snapshotTask) {
	if n.applied <= n.snapIndex.Load() && !n.snapping.Load() {
		snap, err := n.mem.Snapshot()
		if err == nil && snap.Metadata.Index >= n.applied {
			t.done <- snapOutcome{meta: snap.Metadata}
			return
		}
	}
	if at := n.snapRetryAt.Load(); at != 0 && time.Now().UnixNano() < at {
		t.done <- snapOutcome{err: fmt.Errorf("replication: the last snapshot found no space on the disk; the next is tried at %s", time.Unix(0, at).Format(time.RFC3339))}
		return
	}
	n.snapAsks.mu.Lock()
	n.snapAsks.waiting = append(n.snapAsks.waiting, snapWaiter{index: n.applied, done: t.done})
	n.snapAsks.mu.Unlock()
	n.wantSnapshot.Store(true)
	// A snapshot being written when this ask came may have finished since,
	// its asks answered before this one was queued: answer it here if that
	// snapshot holds enough; maybeSnapshot starts one otherwise.
	if !n.snapping.Load() && n.applied <= n.snapIndex.Load() {
		n.answerSnapshotAsks(nil)
	}
}

// answerSnapshotAsks answers, with err, every ask, or else the asks the
// newest snapshot holds. The others are asked again, which starts another
// snapshot.
func (n *Node) answerSnapshotAsks(err error) {
	var meta raftpb.SnapshotMetadata
	if err == nil {
		snap, serr := n.mem.Snapshot()
		if serr != nil {
			err = fmt.Errorf("replication: %w", serr)
		}
		meta = snap.Metadata
	}
	n.snapAsks.mu.Lock()
	waiting := n.snapAsks.waiting
	n.snapAsks.waiting = nil
	n.snapAsks.mu.Unlock()
	for _, w := range waiting {
		switch {
		case err != nil:
			w.done <- snapOutcome{err: err}
		case w.index <= meta.Index:
			w.done <- snapOutcome{meta: meta}
		default:
			n.applyq.push(applyTask{snapshot: &snapshotTask{done: w.done}})
		}
	}
}
