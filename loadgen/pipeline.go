package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/collie-io/collie/client"
)

// DefaultPipelineInflight is the Inflight of the pipeline workload when
// Config.Inflight is zero.
const DefaultPipelineInflight = 16

// errInconsistent marks a read of the pipeline workload that missed a
// write of its own session acknowledged before the read was sent, or
// showed a write never sent. It counts as an error and as a violation.
var errInconsistent = errors.New("read inconsistent with its session's writes")

// pipelineLoad keeps Inflight requests of each session in flight, reads
// and writes mixed, on znodes that the session's own workers write, and
// checks read-your-writes as it goes (see the package doc).
//
// Worker i owns the key root/w<i> and is its only writer: it sets the
// key's data to a value that starts with the number of sets so far, and
// in turn creates and deletes the key's child. A worker does one op at a
// time, so the writes of a key take effect in the order they were sent,
// and two counters sum up the key's state: sets, shown by the value and by
// Stat.Version, and toggles of the child, shown by Stat.Cversion (which
// counts creations and deletions of children) and by the list of children.
type pipelineLoad struct {
	root      string
	filler    []byte // the bytes of a value after its counter
	readRatio float64
	sessions  int
	keys      []*pipeKey // keys[i] is worker i's
	// writing counts, by session, the writes whose call has been made and
	// has not returned.
	writing []atomic.Int32
}

// pipeKey is a key of the pipeline workload and what its worker has sent
// and had acknowledged.
type pipeKey struct {
	path, child string

	// Used only by the key's worker.
	value []byte // the last value set, reused

	// Stored by the key's worker only: sent before a write goes to the
	// client, acked after its reply has come back.
	sentSets, ackedSets       atomic.Int64
	sentToggles, ackedToggles atomic.Int64
	// unsure is set when a write of the key failed; the key's worker sets
	// it before it sends its next write.
	unsure atomic.Bool
}

// A read of the pipeline workload.
type readKind int

const (
	readData     readKind = iota // getData: the value's counter
	readExists                   // exists: Stat.Version
	readChildren                 // getChildren: Stat.Cversion and the child
)

// readMix is how a read is picked: half of them getData, a quarter each
// exists and getChildren.
var readMix = [...]readKind{readData, readData, readExists, readChildren}

// toggleShare says how a write is picked: one in toggleShare creates or
// deletes the key's child, the others set the key's data.
const toggleShare = 4

func (l *pipelineLoad) setup(ctx context.Context, t *target) error {
	l.sessions = len(t.clients)
	l.writing = make([]atomic.Int32, l.sessions)
	l.keys = make([]*pipeKey, len(t.workers))
	paths := make([]string, len(t.workers))
	for i := range l.keys {
		paths[i] = l.root + "/w" + strconv.Itoa(i)
		l.keys[i] = &pipeKey{path: paths[i], child: paths[i] + "/c"}
	}
	return createAll(ctx, t.admin, paths, appendValue(nil, 0, l.filler))
}

func (l *pipelineLoad) op(ctx context.Context, w *worker) error {
	if w.rng.Float64() < l.readRatio {
		// Worker j works on session j mod sessions.
		j := w.id%l.sessions + l.sessions*w.rng.IntN(len(l.keys)/l.sessions)
		return l.read(ctx, w, readMix[w.rng.IntN(len(readMix))], l.keys[j])
	}
	if w.rng.IntN(toggleShare) == 0 {
		return l.toggle(ctx, w)
	}
	return l.set(ctx, w)
}

// set sets the data of w's key to the next value.
func (l *pipelineLoad) set(ctx context.Context, w *worker) error {
	k := l.keys[w.id]
	n := k.sentSets.Load() + 1
	k.value = appendValue(k.value[:0], n, l.filler)
	k.sentSets.Store(n)
	writing := &l.writing[w.id%l.sessions]
	writing.Add(1)
	_, err := w.c.Set(ctx, k.path, k.value, client.AnyVersion)
	writing.Add(-1)
	if err != nil {
		k.unsure.Store(true)
		return err
	}
	k.ackedSets.Store(n)
	return nil
}

// toggle creates the child of w's key if it has none, or deletes it.
func (l *pipelineLoad) toggle(ctx context.Context, w *worker) error {
	k := l.keys[w.id]
	n := k.sentToggles.Load() + 1
	k.sentToggles.Store(n)
	writing := &l.writing[w.id%l.sessions]
	writing.Add(1)
	var err error
	if n%2 == 1 {
		_, _, err = w.c.Create(ctx, k.child, nil, client.ModePersistent, nil)
	} else {
		err = w.c.Delete(ctx, k.child, client.AnyVersion)
	}
	writing.Add(-1)
	if err != nil {
		k.unsure.Store(true)
		return err
	}
	k.ackedToggles.Store(n)
	return nil
}

// read reads k as kind says, through w's session, and checks the answer.
func (l *pipelineLoad) read(ctx context.Context, w *worker, kind readKind, k *pipeKey) error {
	// Loaded before the read is handed to the client, so acknowledged
	// before it was sent.
	ackedSets, ackedToggles := k.ackedSets.Load(), k.ackedToggles.Load()
	behind := l.writing[w.id%l.sessions].Load() > 0
	var (
		op       string
		shown    int64
		toggles  bool  // shown counts toggles of the child, not sets
		mismatch error // within the reply itself
	)
	switch kind {
	case readData:
		data, _, err := w.c.Get(ctx, k.path)
		if err != nil {
			return err
		}
		if shown, err = parseValue(data); err != nil {
			return fmt.Errorf("get %s: %w", k.path, err)
		}
		op = "getData"
	case readExists:
		ok, stat, err := w.c.Exists(ctx, k.path)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("exists %s: %w", k.path, client.ErrNoNode)
		}
		op, shown = "exists (version)", int64(stat.Version)
	case readChildren:
		children, stat, err := w.c.Children(ctx, k.path)
		if err != nil {
			return err
		}
		// An odd cversion says the child has been created once more
		// than deleted, in the same reply as the list.
		if listed, want := len(children), int(stat.Cversion%2); listed != want {
			mismatch = fmt.Errorf("%w: getChildren %s lists %d children at cversion %d", errInconsistent, k.path, listed, stat.Cversion)
		}
		op, shown, toggles = "getChildren (cversion)", int64(stat.Cversion), true
	}
	// Loaded after the reply: every write the read can show had been
	// sent by then, and a write that failed before one acknowledged above
	// has marked the key by then.
	acked, sent := ackedSets, k.sentSets.Load()
	if toggles {
		acked, sent = ackedToggles, k.sentToggles.Load()
	}
	if k.unsure.Load() {
		return nil
	}
	w.opChecks = 1
	if behind {
		w.opBehind = 1
	}
	if mismatch != nil {
		return mismatch
	}
	return checkRead(op, k.path, shown, acked, sent)
}

// checkRead checks that a read showed a state of a key no earlier than
// acked, the last write of the key acknowledged before the read was sent,
// and no later than sent, the last write sent when its reply had come.
func checkRead(op, path string, shown, acked, sent int64) error {
	switch {
	case shown < acked:
		return fmt.Errorf("%w: %s %s shows write %d, but write %d of the same session was acknowledged before the read was sent",
			errInconsistent, op, path, shown, acked)
	case shown > sent:
		return fmt.Errorf("%w: %s %s shows write %d, but only %d were sent", errInconsistent, op, path, shown, sent)
	}
	return nil
}

// appendValue appends the value of a key's n-th set: n in decimal, a
// space, then filler's bytes from there on, so that the value is as long
// as filler when the counter fits.
func appendValue(dst []byte, n int64, filler []byte) []byte {
	start := len(dst)
	dst = strconv.AppendInt(dst, n, 10)
	dst = append(dst, ' ')
	if l := len(dst) - start; l < len(filler) {
		dst = append(dst, filler[l:]...)
	}
	return dst
}

// parseValue returns the counter of a value made by appendValue.
func parseValue(b []byte) (int64, error) {
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		b = b[:i]
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("value %.20q has no counter", b)
	}
	return n, nil
}
