package replication

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// fifo is an unbounded queue from any goroutine to one consumer. The loop
// hands work to the storage goroutines through it and never waits for
// them; raft bounds how much it hands out (uncommitted and unapplied
// bytes).
type fifo[T any] struct {
	mu    sync.Mutex
	items []T
	ready chan struct{} // has room for one signal: items may be waiting
}

func newFIFO[T any]() *fifo[T] { return &fifo[T]{ready: make(chan struct{}, 1)} }

func (q *fifo[T]) push(v ...T) {
	q.mu.Lock()
	q.items = append(q.items, v...)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take removes and returns everything queued.
func (q *fifo[T]) take() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

// appendTask is work for the append goroutine: a MsgStorageAppend, or a
// snapshot written beside the apply goroutine, to record in the log.
type appendTask struct {
	msg  raftpb.Message
	mark *snapResult
}

// applyTask is work for the apply goroutine: a MsgStorageApply, reads to
// answer once index is applied, a snapshot to restore, an ask for a
// snapshot (TakeSnapshot), or nothing (a prompt to consider taking a
// snapshot).
type applyTask struct {
	msg      raftpb.Message
	reads    []readRequest
	index    uint64
	restore  *restoreTask
	snapshot *snapshotTask
}

// restoreTask asks the apply goroutine to replace the state with a
// received snapshot, in its turn after the entries queued before it.
type restoreTask struct {
	snap     raftpb.Snapshot
	streamed bool
	done     chan error
}

// appendLoop makes raft's log appends durable: every MsgStorageAppend
// queued while the previous fsync ran shares the next one. It runs beside
// the loop, which goes on stepping messages, sending entries to the
// followers and taking proposals while the disk works. Appends that find
// no space on the disk are held and made again later (see diskfull.go).
func (n *Node) appendLoop() {
	var (
		held  []appendTask
		wait  time.Duration
		retry *time.Timer
	)
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	for {
		ready, again := n.appendq.ready, (<-chan time.Time)(nil)
		if held != nil {
			// What is queued meanwhile waits behind the held appends.
			ready, again = nil, retry.C
		}
		select {
		case <-ready:
		case <-again:
		case <-n.storageStop:
			return
		}
		rest, err := n.appendAll(append(held, n.appendq.take()...))
		switch {
		case err == nil:
			held, wait = nil, 0
			n.noteSpace(nil)
		case noSpace(err):
			held = rest
			wait = nextWait(wait, noSpaceRetryMin, noSpaceRetryMax)
			if retry == nil {
				retry = time.NewTimer(wait)
			} else {
				retry.Reset(wait)
			}
			n.noteSpace(err)
		default:
			n.storageFailed(err)
			return
		}
	}
}

// consume calls do each time ready signals, until the node stops or do
// fails.
func (n *Node) consume(ready <-chan struct{}, do func() error) {
	for {
		select {
		case <-ready:
		case <-n.storageStop:
			return
		}
		if err := do(); err != nil {
			n.storageFailed(err)
			return
		}
	}
}

// appendBatch gathers consecutive MsgStorageAppends into one write.
type appendBatch struct {
	hs    raftpb.HardState
	ents  []raftpb.Entry
	resps []raftpb.Message
	owned bool // ents is this batch's own copy, not raft's
}

func (b *appendBatch) add(m raftpb.Message) {
	if hs := (raftpb.HardState{Term: m.Term, Vote: m.Vote, Commit: m.Commit}); !raft.IsEmptyHardState(hs) {
		b.hs = hs
	}
	switch {
	case len(m.Entries) == 0:
	case len(b.ents) == 0:
		b.ents, b.owned = m.Entries, false
	default:
		// Later entries replace the ones at the same indexes and after,
		// as they do in the log. Raft's slices are never written to.
		keep := b.ents
		if first := m.Entries[0].Index; first <= keep[len(keep)-1].Index {
			keep = keep[:max(first, keep[0].Index)-keep[0].Index]
		}
		if !b.owned {
			keep = keep[:len(keep):len(keep)]
		}
		b.ents, b.owned = append(keep, m.Entries...), true
	}
	b.resps = append(b.resps, m.Responses...)
}

func (b *appendBatch) empty() bool {
	return raft.IsEmptyHardState(b.hs) && len(b.ents) == 0 && len(b.resps) == 0
}

// appendAll performs tasks in order. When one fails it returns the error
// and the tasks from the first one not done on: after a lack of space
// (noSpace), those are exactly the ones to perform again.
func (n *Node) appendAll(tasks []appendTask) ([]appendTask, error) {
	var b appendBatch
	batched := 0 // the first task in b
	for i, t := range tasks {
		switch {
		case t.mark != nil:
			if err := n.flush(&b); err != nil {
				return tasks[batched:], err
			}
			if err := n.saveSnapshot(*t.mark); err != nil {
				return tasks[i:], err
			}
			batched = i + 1
		case t.msg.Snapshot != nil:
			if err := n.flush(&b); err != nil {
				return tasks[batched:], err
			}
			if err := n.installSnapshot(t.msg); err != nil {
				return tasks[i:], err
			}
			batched = i + 1
		default:
			b.add(t.msg)
		}
	}
	if err := n.flush(&b); err != nil {
		return tasks[batched:], err
	}
	return nil, nil
}

// flush writes b with one fsync, appends its entries to the in-memory log
// raft reads, and only then delivers the responses, which promise both.
func (n *Node) flush(b *appendBatch) error {
	if b.empty() {
		return nil
	}
	if err := n.cfg.Storage.Save(b.hs, b.ents); err != nil {
		return fmt.Errorf("%w: save log: %w", ErrStorageFailed, err)
	}
	if err := n.mem.Append(b.ents); err != nil {
		return fmt.Errorf("append to raft log: %w", err)
	}
	n.respond(b.resps)
	*b = appendBatch{}
	return nil
}

// respond delivers the responses of a storage task: those to this member
// are stepped by the loop, in order; the others go to their members.
func (n *Node) respond(resps []raftpb.Message) {
	if len(resps) == 0 {
		return
	}
	var peers []raftpb.Message
	local := resps[:0:0]
	for _, m := range resps {
		if m.To == n.cfg.ID {
			local = append(local, m)
		} else {
			peers = append(peers, m)
		}
	}
	n.send(peers)
	if len(local) > 0 {
		n.localq.push(local...)
	}
}

// installSnapshot makes the snapshot of a MsgStorageAppend durable and
// has the apply goroutine restore it, after the entries it was handed
// before. Made again after a lack of space, it writes the file and its
// mark again, which changes nothing.
func (n *Node) installSnapshot(m raftpb.Message) error {
	snap := *m.Snapshot
	// A snapshot without data was written by ReceiveSnapshot as it
	// arrived: it only needs its mark in the log.
	streamed := len(snap.Data) == 0
	if streamed {
		if err := n.cfg.Storage.MarkSnapshot(snap.Metadata); err != nil {
			return fmt.Errorf("%w: mark received snapshot: %w", ErrStorageFailed, err)
		}
	} else if err := n.cfg.Storage.SaveSnapshot(snap); err != nil {
		return fmt.Errorf("%w: save received snapshot: %w", ErrStorageFailed, err)
	}
	hs := raftpb.HardState{Term: m.Term, Vote: m.Vote, Commit: m.Commit}
	if err := n.cfg.Storage.Save(hs, m.Entries); err != nil {
		return fmt.Errorf("%w: save log: %w", ErrStorageFailed, err)
	}
	done := make(chan error, 1)
	n.applyq.push(applyTask{restore: &restoreTask{snap: snap, streamed: streamed, done: done}})
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("restore snapshot: %w", err)
		}
	case <-n.storageStop:
		return ErrStopped
	}
	// The in-memory log keeps the metadata only; the data, possibly
	// hundreds of megabytes, is now in the state machine and on disk.
	if err := n.mem.ApplySnapshot(raftpb.Snapshot{Metadata: snap.Metadata}); err != nil {
		return fmt.Errorf("apply snapshot to raft log: %w", err)
	}
	n.snapIndex.Store(snap.Metadata.Index)
	n.answerSnapshotAsks(nil)
	if err := n.mem.Append(m.Entries); err != nil {
		return fmt.Errorf("append to raft log: %w", err)
	}
	n.respond(m.Responses)
	return nil
}

// applyLoop applies committed entries, restores received snapshots,
// answers the reads waiting for an index, and takes snapshots. It owns the
// state machine.
func (n *Node) applyLoop() {
	defer func() {
		// Reads still waiting fail with the node.
		err := n.Err()
		if err == nil {
			err = ErrStopped
		}
		for _, t := range n.applyq.take() {
			for _, r := range t.reads {
				r.done(0, err)
			}
		}
		for _, w := range n.waiting {
			w.r.done(0, err)
		}
		n.waiting = nil
	}()
	n.consume(n.applyq.ready, func() error { return n.applyAll(n.applyq.take()) })
}

func (n *Node) applyAll(tasks []applyTask) error {
	for _, t := range tasks {
		switch {
		case t.restore != nil:
			r := t.restore
			err := n.restore(r.snap, r.streamed)
			if err == nil {
				meta := r.snap.Metadata
				n.applied, n.appliedTerm, n.conf = meta.Index, meta.Term, meta.ConfState
				n.status.applied.Store(meta.Index)
			}
			r.done <- err
		case t.snapshot != nil:
			n.askSnapshot(t.snapshot)
		case t.reads != nil:
			for _, r := range t.reads {
				if n.applied >= t.index {
					r.done(t.index, nil)
				} else {
					n.waiting = append(n.waiting, waitingRead{t.index, r})
				}
			}
		case t.msg.Type == raftpb.MsgStorageApply:
			if err := n.apply(t.msg.Entries); err != nil {
				return err
			}
			n.respond(t.msg.Responses)
		}
	}
	n.releaseWaitingReads()
	if err := n.maybeSnapshot(); err != nil {
		return err
	}
	return n.trimLog()
}

// apply hands committed entries to the state machine, and configuration
// changes to raft.
func (n *Node) apply(ents []raftpb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	for _, e := range ents {
		if e.Type != raftpb.EntryConfChange && e.Type != raftpb.EntryConfChangeV2 {
			continue
		}
		var cc raftpb.ConfChangeI
		if e.Type == raftpb.EntryConfChange {
			var c raftpb.ConfChange
			if err := c.Unmarshal(e.Data); err != nil {
				return fmt.Errorf("decode conf change at %d: %w", e.Index, err)
			}
			cc = c
		} else {
			var c raftpb.ConfChangeV2
			if err := c.Unmarshal(e.Data); err != nil {
				return fmt.Errorf("decode conf change at %d: %w", e.Index, err)
			}
			cc = c
		}
		conf, err := n.applyConfChange(cc)
		if err != nil {
			return err
		}
		n.conf = conf
	}
	n.cfg.FSM.Apply(ents)
	last := ents[len(ents)-1]
	n.applied, n.appliedTerm = last.Index, last.Term
	n.status.applied.Store(last.Index)
	for _, e := range ents {
		n.appliedBytes += uint64(len(e.Data))
	}
	if n.applied >= n.replayTo {
		n.replayOnce.Do(func() { close(n.replayed) })
	}
	return nil
}

// applyConfChange has the loop, which owns the RawNode, apply cc.
func (n *Node) applyConfChange(cc raftpb.ConfChangeI) (raftpb.ConfState, error) {
	if n.inline {
		return *n.rn.ApplyConfChange(cc), nil
	}
	req := confRequest{cc: cc, done: make(chan raftpb.ConfState, 1)}
	select {
	case n.confc <- req:
	case <-n.storageStop:
		return raftpb.ConfState{}, ErrStopped
	}
	select {
	case conf := <-req.done:
		return conf, nil
	case <-n.storageStop:
		return raftpb.ConfState{}, ErrStopped
	}
}

type confRequest struct {
	cc   raftpb.ConfChangeI
	done chan raftpb.ConfState
}

// storageFailed stops the node: a write the log or the state machine
// could not make leaves it unable to keep raft's promises. Nothing is
// tried again: after a failed fsync nobody can tell what reached the
// disk, so the only way on is a restart, which reads what did.
func (n *Node) storageFailed(err error) {
	if errors.Is(err, ErrStopped) {
		return
	}
	select {
	case n.storageErr <- err:
	default:
	}
}

// waitingRead is a read whose index is committed but not yet applied.
type waitingRead struct {
	index uint64
	r     readRequest
}

func (n *Node) releaseWaitingReads() {
	kept := n.waiting[:0]
	for _, w := range n.waiting {
		if n.applied >= w.index {
			w.r.done(w.index, nil)
		} else {
			kept = append(kept, w)
		}
	}
	n.waiting = kept
}

// The in-memory log keeps at most keepEntries applied entries and about
// keepBytes of them for followers to catch up from; older entries are only
// in the WAL. Between snapshots it would otherwise hold up to SnapCount
// entries of up to jute.maxbuffer each. A follower further behind than
// that is sent a snapshot; the bound is low because the entries sit in
// memory beside the tree, whose footprint is what users measure.
const (
	keepEntries = 5000
	keepBytes   = 16 << 20
)

// raftLog is the log as raft reads it. trimLog drops entries from memory
// past the newest snapshot, so that snapshot may not reach the first entry
// left; a member that needs what lies between cannot be sent it. Snapshot
// then answers that none is available yet, which raft asks again for
// later, and asks the apply goroutine for a new snapshot, which does reach.
type raftLog struct {
	*raft.MemoryStorage
	wantSnapshot func()
}

func (l raftLog) Snapshot() (raftpb.Snapshot, error) {
	snap, err := l.MemoryStorage.Snapshot()
	if err != nil {
		return snap, err
	}
	first, err := l.MemoryStorage.FirstIndex()
	if err != nil {
		return raftpb.Snapshot{}, err
	}
	if snap.Metadata.Index+1 < first {
		l.wantSnapshot()
		return raftpb.Snapshot{}, raft.ErrSnapshotTemporarilyUnavailable
	}
	return snap, nil
}

// trimLog drops applied entries from the in-memory log beyond the limits,
// once they are exceeded twice over, so the copying is amortised. Right
// after a received snapshot is restored, applied is ahead of the in-memory
// log until the append goroutine installs the snapshot there.
func (n *Node) trimLog() error {
	first, err := n.mem.FirstIndex()
	if err != nil {
		return err
	}
	last, err := n.mem.LastIndex()
	if err != nil {
		return err
	}
	upto := min(n.applied, last)
	if n.appliedBytes < 2*keepBytes && upto < first+2*keepEntries || upto < first {
		return nil
	}
	lo := max(first, upto+1-min(upto, keepEntries))
	ents, err := n.mem.Entries(lo, upto+1, math.MaxUint64)
	if errors.Is(err, raft.ErrCompacted) {
		// A snapshot compacted the log meanwhile.
		return nil
	}
	if err != nil {
		return fmt.Errorf("trim raft log: %w", err)
	}
	// Keep the newest entries that fit in keepBytes (at least one).
	keep, size := 0, 0
	for i := len(ents) - 1; i >= 0 && (keep == 0 || size+len(ents[i].Data) <= keepBytes); i-- {
		size += len(ents[i].Data)
		keep++
	}
	compactTo := upto + 1 - uint64(max(keep, 1))
	if n.snapping.Load() {
		// The snapshot being encoded needs its own index in the log to
		// be recorded when it is done.
		compactTo = min(compactTo, n.snapAt.Load())
	}
	if err := n.mem.Compact(compactTo); err != nil && !errors.Is(err, raft.ErrCompacted) {
		return fmt.Errorf("trim raft log: %w", err)
	}
	n.appliedBytes = uint64(size)
	return nil
}

// snapResult is a snapshot written beside the loop.
type snapResult struct {
	meta    raftpb.SnapshotMetadata
	size    int64
	err     error
	started time.Time
}

// maybeSnapshot starts a snapshot every SnapCount applied entries: the
// state machine freezes its state here, between two applies, and another
// goroutine encodes it straight into the snapshot file; the append
// goroutine records the file once it is durable. It records it after the
// entries and commit index the snapshot covers, which it was handed
// before: a restart never finds a snapshot ahead of its log.
func (n *Node) maybeSnapshot() error {
	snapIndex := n.snapIndex.Load()
	due := n.cfg.SnapCount != 0 && n.applied-snapIndex >= n.cfg.SnapCount
	if n.snapping.Load() || !due && !n.wantSnapshot.Load() || n.applied <= snapIndex {
		return nil
	}
	if at := n.snapRetryAt.Load(); at != 0 && time.Now().UnixNano() < at {
		return nil
	}
	n.wantSnapshot.Store(false)
	n.snapping.Store(true)
	n.snapAt.Store(n.applied)
	r := snapResult{
		meta:    raftpb.SnapshotMetadata{Index: n.applied, Term: n.appliedTerm, ConfState: n.conf},
		started: time.Now(),
	}
	write := n.cfg.FSM.BeginSnapshot()
	n.snapWG.Go(func() {
		r.size, r.err = n.cfg.Storage.WriteSnapshot(r.meta, write)
		n.appendq.push(appendTask{mark: &r})
	})
	return nil
}

// saveSnapshot records a snapshot file written beside the loop and
// compacts the log behind it.
func (n *Node) saveSnapshot(r snapResult) (err error) {
	defer func() {
		// A mark that found no space is made again with the snapshot in
		// hand: trimLog must keep its index in the log meanwhile.
		if !noSpace(err) {
			n.snapping.Store(false)
		}
		// After snapping is cleared: an ask made again must be able to
		// start the next snapshot.
		switch {
		case r.err != nil:
			n.answerSnapshotAsks(fmt.Errorf("replication: snapshot at %d: %w", r.meta.Index, r.err))
		case err != nil:
			n.answerSnapshotAsks(err)
		default:
			n.answerSnapshotAsks(nil)
		}
	}()
	index := r.meta.Index
	if r.err != nil {
		if noSpace(r.err) {
			n.snapWait = nextWait(n.snapWait, snapRetryMin, snapRetryMax)
			n.snapRetryAt.Store(time.Now().Add(n.snapWait).UnixNano())
			n.log.Warn("cannot write a snapshot: no space left on the device; the log grows until one is written",
				"index", index, "retry_in", n.snapWait, "err", r.err)
			return nil
		}
		// Not recorded: a restart goes on from the snapshot before.
		return fmt.Errorf("%w: snapshot state machine at %d: %w", ErrStorageFailed, index, r.err)
	}
	if index <= n.snapIndex.Load() {
		// A snapshot received meanwhile is newer.
		return nil
	}
	// The mark before the in-memory snapshot: a mark that finds no space
	// changes nothing, and all of this is done again.
	if err := n.cfg.Storage.MarkSnapshot(r.meta); err != nil {
		return fmt.Errorf("%w: save snapshot at %d: %w", ErrStorageFailed, index, err)
	}
	n.snapWait = 0
	n.snapRetryAt.Store(0)
	if _, err := n.mem.CreateSnapshot(index, &r.meta.ConfState, nil); err != nil {
		return fmt.Errorf("create snapshot at %d: %w", index, err)
	}
	// Keep some entries behind the snapshot so a slightly lagging
	// follower catches up from the log rather than by snapshot: in
	// particular one still installing the previous snapshot, which takes
	// seconds for a large tree, while this one was taken (trimLog still
	// bounds the bytes kept).
	compactTo := index
	if keep := max(n.cfg.SnapCount/10, keepEntries); compactTo > keep {
		compactTo -= keep
	}
	if first, _ := n.mem.FirstIndex(); compactTo >= first {
		if err := n.mem.Compact(compactTo); err != nil && !errors.Is(err, raft.ErrCompacted) {
			return fmt.Errorf("compact raft log to %d: %w", compactTo, err)
		}
	}
	if err := n.cfg.Storage.Compact(index); err != nil {
		n.log.Warn("cannot purge old log and snapshot files", "err", err)
	}
	n.snapIndex.Store(index)
	n.log.Info("snapshot saved", "index", index, "bytes", r.size, "took", time.Since(r.started))
	return nil
}
