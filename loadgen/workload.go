package loadgen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/collie-io/collie/client"
)

// Workloads lists the workloads Run knows, in the order the usage text
// gives them.
var Workloads = []string{"create", "set", "get", "mixed", "pipeline", "lock", "watch", "sessions", "fill"}

// fillFanout is how many children a parent gets in the fill workload, so
// that no listing of children is too large to read back.
const fillFanout = 1000

// errDone is returned by an op when the workload has nothing left to do.
var errDone = errors.New("loadgen: workload done")

// workload is one kind of load on one target. setup runs once, before
// the workers start, and lays out what op needs below the target's root;
// op is the measured unit of work, called by one worker at a time
// (different workers call it concurrently).
type workload interface {
	setup(ctx context.Context, t *target) error
	op(ctx context.Context, w *worker) error
}

// newWorkload returns the workload cfg names, for a target whose subtree
// is root.
func newWorkload(cfg *Config, root string) (workload, error) {
	data := make([]byte, cfg.Size)
	for i := range data {
		data[i] = 'a' + byte(i%26)
	}
	switch cfg.Workload {
	case "create":
		return &createLoad{workerNodes{root: root, data: data}}, nil
	case "set", "get", "mixed":
		return &keyLoad{root: root, data: data, nodes: cfg.Nodes, kind: cfg.Workload, readRatio: cfg.ReadRatio}, nil
	case "pipeline":
		return &pipelineLoad{root: root, filler: data, readRatio: cfg.ReadRatio}, nil
	case "lock":
		return &lockLoad{root: root, locks: max(cfg.Nodes, 1)}, nil
	case "watch":
		return &watchLoad{workerNodes{root: root, data: data}}, nil
	case "sessions":
		return &sessionLoad{ccfg: client.Config{SessionTimeout: cfg.SessionTimeout, TLS: cfg.TLS, SASL: cfg.SASL}}, nil
	case "fill":
		return &fillLoad{root: root, data: data, nodes: int64(cfg.Nodes)}, nil
	}
	return nil, fmt.Errorf("loadgen: unknown workload %q (want one of %s)", cfg.Workload, strings.Join(Workloads, ", "))
}

// workerNodes gives each worker a znode of its own, root/w<i>: the parent
// of its creates, or the node it watches.
type workerNodes struct {
	root string
	data []byte
	dirs []string
}

func (l *workerNodes) setup(ctx context.Context, t *target) error {
	l.dirs = make([]string, len(t.workers))
	for i := range l.dirs {
		l.dirs[i] = l.root + "/w" + strconv.Itoa(i)
	}
	return createAll(ctx, t.admin, l.dirs, nil)
}

// createLoad creates new znodes, each worker below a parent of its own,
// so that cleanup lists a bounded number of children per parent read.
type createLoad struct{ workerNodes }

func (l *createLoad) op(ctx context.Context, w *worker) error {
	p := l.dirs[w.id] + "/n" + strconv.FormatInt(w.seq, 10)
	w.seq++
	_, _, err := w.c.Create(ctx, p, l.data, client.ModePersistent, nil)
	return err
}

// keyLoad reads and writes a key space: with nodes 0 one key per worker
// (no two workers touch the same znode), otherwise nodes keys picked at
// random.
type keyLoad struct {
	root      string
	data      []byte
	nodes     int
	kind      string // set, get or mixed
	readRatio float64
	keys      []string
}

func (l *keyLoad) setup(ctx context.Context, t *target) error {
	n := l.nodes
	if n == 0 {
		n = len(t.workers)
	}
	l.keys = make([]string, n)
	for i := range l.keys {
		l.keys[i] = l.root + "/k" + strconv.Itoa(i)
	}
	return createAll(ctx, t.admin, l.keys, l.data)
}

func (l *keyLoad) op(ctx context.Context, w *worker) error {
	key := l.keys[w.id%len(l.keys)]
	if l.nodes > 0 {
		key = l.keys[w.rng.IntN(len(l.keys))]
	}
	read := l.kind == "get" || (l.kind == "mixed" && w.rng.Float64() < l.readRatio)
	if read {
		_, _, err := w.c.Get(ctx, key)
		return err
	}
	_, err := w.c.Set(ctx, key, l.data, client.AnyVersion)
	return err
}

// lockLoad acquires and releases exclusive locks, ZooKeeper's recipe
// without the herd: a contender creates an ephemeral sequential node and
// holds the lock when its node is the lowest; otherwise it watches only
// the node just before its own and looks again when that one goes. An op
// is one acquisition and its release.
type lockLoad struct {
	root  string
	locks int
	dirs  []string
}

// lockPrefix starts the name of every contender's node; the server appends
// ten digits, so names sort as their sequence numbers do.
const lockPrefix = "lock-"

func (l *lockLoad) setup(ctx context.Context, t *target) error {
	l.dirs = make([]string, l.locks)
	for i := range l.dirs {
		l.dirs[i] = l.root + "/l" + strconv.Itoa(i)
	}
	return createAll(ctx, t.admin, l.dirs, nil)
}

func (l *lockLoad) op(ctx context.Context, w *worker) error {
	dir := l.dirs[w.id%len(l.dirs)]
	own, _, err := w.c.Create(ctx, dir+"/"+lockPrefix, nil, client.ModeEphemeralSequential, nil)
	if err != nil {
		return err
	}
	if err := l.await(ctx, w.c, dir, own); err != nil {
		// The release is best effort: the node goes with the session anyway.
		_ = w.c.Delete(context.WithoutCancel(ctx), own, client.AnyVersion)
		return err
	}
	return w.c.Delete(ctx, own, client.AnyVersion)
}

// await returns once own is the lowest contender of dir.
func (l *lockLoad) await(ctx context.Context, c *client.Client, dir, own string) error {
	name := own[len(dir)+1:]
	for {
		children, _, err := c.Children(ctx, dir)
		if err != nil {
			return err
		}
		slices.Sort(children)
		i, found := slices.BinarySearch(children, name)
		if !found {
			return fmt.Errorf("lock node %s vanished", own)
		}
		if i == 0 {
			return nil
		}
		// GetW, not ExistsW: it sets no watch when the predecessor has
		// already gone, and a watch on a sequential name that will never
		// come back would stay until the session ends.
		_, _, ch, err := c.GetW(ctx, dir+"/"+children[i-1])
		if errors.Is(err, client.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		select {
		case ev := <-ch:
			if ev.Type == client.EventNotWatching {
				return ev.Err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// watchLoad measures how long a change takes to reach a watcher: a worker
// sets a watch on its own node through its session, changes the node
// through the next session (another client, when there is more than one),
// and measures from sending the change to receiving the notification.
type watchLoad struct{ workerNodes }

func (l *watchLoad) op(ctx context.Context, w *worker) error {
	node := l.dirs[w.id]
	_, _, ch, err := w.c.ExistsW(ctx, node)
	if err != nil {
		return err
	}
	w.markStart()
	set := make(chan error, 1)
	go func() {
		_, err := w.peer.Set(ctx, node, l.data, client.AnyVersion)
		set <- err
	}()
	var ev client.Event
	select {
	case ev = <-ch:
		w.markEnd()
	case <-ctx.Done():
		<-set
		return ctx.Err()
	}
	if err := <-set; err != nil {
		return err
	}
	if ev.Type != client.EventNodeDataChanged {
		return fmt.Errorf("watch on %s: got %v, want %v", node, ev, client.EventNodeDataChanged)
	}
	return nil
}

// sessionLoad opens a session and closes it again; each worker connects
// to one server of the connect string, in turn.
type sessionLoad struct {
	ccfg    client.Config
	servers []string
}

func (l *sessionLoad) setup(_ context.Context, t *target) error {
	l.servers = t.servers
	return nil
}

func (l *sessionLoad) op(ctx context.Context, w *worker) error {
	c, err := client.Dial(ctx, l.servers[w.id%len(l.servers)], l.ccfg)
	if err != nil {
		return err
	}
	return c.Close()
}

// fillLoad creates nodes znodes, fillFanout to a parent, in transactions
// as large as the request size limit allows, then has nothing more to do.
type fillLoad struct {
	root    string
	data    []byte
	nodes   int64
	batch   int64
	parents []string
	next    atomic.Int64 // the next batch to claim
}

func (l *fillLoad) setup(ctx context.Context, t *target) error {
	l.parents = make([]string, (l.nodes+fillFanout-1)/fillFanout)
	for i := range l.parents {
		l.parents[i] = l.root + "/p" + strconv.Itoa(i)
	}
	l.batch = int64(multiLen(len(l.root)+len("/p000/n000000"), len(l.data)))
	return createAll(ctx, t.admin, l.parents, nil)
}

func (l *fillLoad) op(ctx context.Context, w *worker) error {
	first := l.next.Add(1)*l.batch - l.batch
	if first >= l.nodes {
		return errDone
	}
	last := min(first+l.batch, l.nodes)
	ops := make([]client.Op, 0, last-first)
	for n := first; n < last; n++ {
		p := l.parents[n/fillFanout] + "/n" + strconv.FormatInt(n, 10)
		ops = append(ops, client.CreateOp(p, l.data, client.ModePersistent, nil))
	}
	if _, err := w.c.Multi(ctx, ops...); err != nil {
		return err
	}
	w.opItems = last - first
	return nil
}
