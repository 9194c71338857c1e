package zkcompat

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
)

// TestPipelinedDifferential sends seeded random batches of requests, each
// written to one session's socket back to back without waiting for a
// reply, to ZooKeeper 3.8 and to Collie, and compares everything each
// session receives, in the order it arrives: replies (xid, error code,
// decoded body) and watch events. ZooKeeper processes one session's
// requests in the order they were sent whether or not the client waits, so
// a session's stream is deterministic: replies in request order, each read
// seeing exactly the session's earlier writes, and each event just before
// the reply of the request that fired it.
//
// Between batches every session syncs, and what it receives up to the sync's
// reply belongs to the batch. That drains the events one session's writes
// fire for the others soundly: the writes were acknowledged before the sync
// was sent, so they were committed before the leader saw the sync, and a
// server applies every transaction committed before a sync (firing its
// watches, whose events it queues at once) before it answers the sync. The
// other sessions send nothing during a batch, so their streams are
// deterministic too.
//
// What differs by design is left out: zxids, times, session ids (shown by
// session name). Sequence suffixes, versions, owners and the rest are
// compared. What ZooKeeper 3.8 itself leaves to timing, the plans avoid or
// the comparison allows for: no ACL a plan sets changes what the sessions
// may do (see pipeACLs); container and TTL nodes are never reaped during a
// run; no sequential node is created under "/"; the events of a session's
// close are compared in sorted order (see closesSession). ZooKeeper's
// checkWatches also answers for other sessions' watches on the same server,
// so results are compared between runs whose sessions share servers alike.
//
// Subtests: "user-example", a user's report as a fixed plan; standalone
// servers; three-server ensembles with session i on server i%3; the same
// Collie ensemble with linearizable reads, and with an observer serving
// one session, against the same ZooKeeper results; and "lockstep", which
// sends the standalone plans to Collie one request at a time: where only
// the pipelined runs differ, the difference is the pipeline's. The default
// is a few seeds; a soak sets COLLIE_PIPELINE_SEEDS:
//
//	COLLIE_PIPELINE_SEEDS=200 go test -race -run TestPipelinedDifferential -timeout 2h ./zkcompat/
func TestPipelinedDifferential(t *testing.T) {
	seeds := pipeSeeds(t, 4)
	t.Run("standalone", func(t *testing.T) {
		ref := zkref.Start(t, pipeZooKeeperOptions()...)
		col := collietest.Start(t, pipeCollieOptions())
		refAddrs, colAddrs := []string{ref.Addr()}, []string{col.Addr()}
		t.Run("user-example", func(t *testing.T) {
			plan := userExamplePlan(20)
			want := runPipePlan(t, refAddrs, plan, false, nil)
			runPipePlan(t, colAddrs, plan, false, want)
		})
		plans := map[uint64][]pipeTrace{}
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				plan := newPipePlan(seed)
				plans[seed] = runPipePlan(t, refAddrs, plan, false, nil)
				runPipePlan(t, colAddrs, plan, false, plans[seed])
			})
		}
		t.Run("lockstep", func(t *testing.T) {
			addrs := []string{collietest.Start(t, pipeCollieOptions()).Addr()}
			for _, seed := range seeds {
				if want := plans[seed]; want != nil {
					runPipePlan(t, addrs, newPipePlan(seed), true, want)
				}
			}
		})
	})
	t.Run("ensemble", func(t *testing.T) {
		want := map[uint64][]pipeTrace{}
		t.Run("zookeeper", func(t *testing.T) {
			ref := zkref.StartEnsemble(t, 3, pipeZooKeeperOptions()...)
			var addrs []string
			for _, m := range ref.Members() {
				addrs = append(addrs, m.Addr())
			}
			defer nudgeZooKeeper(t, addrs)()
			for _, seed := range seeds {
				want[seed] = runPipePlan(t, addrs, newPipePlan(seed), false, nil)
			}
		})
		variants := []struct {
			name      string
			observers int
			opt       func(*config.Config)
		}{
			{"collie", 0, nil},
			{"linearizable-reads", 0, func(c *config.Config) { c.LinearizableReads = true }},
			{"observer", 1, nil},
		}
		for _, v := range variants {
			t.Run(v.name, func(t *testing.T) {
				if len(want) < len(seeds) {
					t.Skip("no ZooKeeper results")
				}
				e := collietest.StartEnsemble(t, 3, v.observers, pipeCollieOptions(v.opt))
				var addrs []string
				for _, s := range e.Servers() {
					addrs = append(addrs, s.Addr())
				}
				// With an observer (the last server), sessions use the
				// last three servers, so one of them is on the observer.
				addrs = addrs[len(addrs)-3:]
				for _, seed := range seeds {
					t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
						runPipePlan(t, addrs, newPipePlan(seed), false, want[seed])
					})
				}
			})
		}
	})
}

// nudgeZooKeeper sends a read to every member of a ZooKeeper ensemble
// every quarter second until the returned function is called. ZooKeeper
// 3.8.0's CommitProcessor can miss a wake-up and leave a committed request
// waiting until the server receives another request (ZOOKEEPER-4537, fixed
// in 3.8.1); a client alone on a server then waits forever for a sync's
// reply. The reads change nothing a session sees, so results do not
// depend on when they arrive. A member that closes the connection (it
// lost its leader) is dialled again at the next nudge. Collie gets no
// such help.
func nudgeZooKeeper(t *testing.T, addrs []string) (stop func()) {
	var conns []*zkwire.Conn
	for _, addr := range addrs {
		c, err := zkwire.Dial(addr, 30000)
		if err != nil {
			t.Fatalf("nudger: %v", err)
		}
		conns = append(conns, c)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			for i, c := range conns {
				if c != nil {
					if _, err := c.Do(proto.OpExists, &proto.ExistsRequest{Path: "/"}, nil); err == nil {
						continue
					}
					c.Close()
				}
				conns[i], _ = zkwire.Dial(addrs[i], 30000)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}
}

// pipeSeeds returns the seeds to run: n by default, COLLIE_PIPELINE_SEEDS
// for a soak, and fewer with -short.
func pipeSeeds(t *testing.T, n int) []uint64 {
	if v := os.Getenv("COLLIE_PIPELINE_SEEDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("COLLIE_PIPELINE_SEEDS=%q: want a positive number", v)
		}
	} else if testing.Short() {
		n = 1
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

// pipeTTL is the TTL of the TTL nodes the plans create: long enough that
// none expires during a run, as none must.
const pipeTTL = int64(time.Hour / time.Millisecond)

// pipeZooKeeperOptions enables TTL nodes and keeps ZooKeeper's container
// and TTL reaper away for the length of a run: what it deletes, and when,
// depends on the clock.
func pipeZooKeeperOptions() []zkref.Option {
	return []zkref.Option{
		zkref.WithExtendedTypes(),
		zkref.WithJVMArgs("-Dznode.container.checkIntervalMs=3600000"),
	}
}

// pipeCollieOptions matches pipeZooKeeperOptions (collietest enables TTL
// nodes), allows sessions as long as ZooKeeper's, so that a starved test
// process does not lose one, and applies more.
func pipeCollieOptions(more ...func(*config.Config)) collietest.Option {
	return collietest.WithConfig(func(c *config.Config) {
		c.ContainerCheckInterval = time.Hour
		c.MaxSessionTimeout = 40 * time.Second
		for _, f := range more {
			if f != nil {
				f(c)
			}
		}
	})
}

// A pipePlan is what a run sends: batches, each on one session.
type pipePlan struct {
	root     string
	sessions int
	batches  []pipeBatch
}

// A pipeBatch is requests one session writes back to back. A closeSession
// comes last; the session then connects again, as a new session.
type pipeBatch struct {
	session int
	reqs    []pipeReq
}

type pipeReq struct {
	op  proto.OpCode
	xid int32 // 0 for the session's next xid, or a special xid
	req proto.Record
}

// pipeLastSeen as a SetWatches's RelativeZxid stands for the last zxid the
// session has seen when the batch is sent, as a reconnecting client sends.
// Zxids differ between servers, but every transaction up to that one came
// before the batch, and every later one is the batch's own, on both.
const pipeLastSeen = -1

// pipeNames are the nodes a plan works on, under its root ("" is the root
// itself): few enough that requests collide, some of them the names that
// sequential creates produce.
var pipeNames = []string{"", "a", "a", "b", "b", "c", "a/x", "a/y", "b/x", "a/x/z", "q-", "a/q-", "q-0000000001", "a/q-0000000002"}

// pipeACLs are the ACLs of creates and setACLs. Each grants every
// permission to the test's sessions, which connect from 127.0.0.1: ZooKeeper
// 3.8 checks a write against the ACL of the last change to the node that it
// has prepared, and its setACL does not put the new ACL there (fixed after
// 3.8), so a write pipelined behind a setACL that changes what it may do
// sees the old ACL or the new one depending on how far the setACL has got.
var pipeACLs = [][]proto.ACL{
	zkwire.OpenACL,
	zkwire.OpenACL,
	{{Perms: proto.PermAll, ID: proto.ID{Scheme: "ip", ID: "127.0.0.1"}}},
	{{Perms: proto.PermAll, ID: proto.ID{Scheme: "ip", ID: "127.0.0.0/8"}}},
	{
		{Perms: proto.PermRead, ID: proto.ID{Scheme: "world", ID: "anyone"}},
		{Perms: proto.PermAll, ID: proto.ID{Scheme: "ip", ID: "127.0.0.1"}},
	},
}

// pipeBatches is how many batches a seed's plan has.
const pipeBatches = 24

// newPipePlan draws a plan from seed: batches of 2 to 40 requests of every
// kind a client pipelines, on three sessions.
func newPipePlan(seed uint64) pipePlan {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p := pipePlan{root: fmt.Sprintf("/pipe%d", seed), sessions: 3}
	g := pipeGen{rng: rng, root: p.root}
	for range pipeBatches {
		b := pipeBatch{session: rng.IntN(p.sessions)}
		if rng.IntN(12) == 0 {
			// A session closes behind a few reads (see closesSession).
			for range rng.IntN(5) {
				b.reqs = append(b.reqs, g.read())
			}
			b.reqs = append(b.reqs, pipeReq{op: proto.OpCloseSession})
		} else {
			for range 2 + rng.IntN(39) {
				b.reqs = append(b.reqs, g.request())
			}
		}
		p.batches = append(p.batches, b)
	}
	return p
}

// closesSession reports whether b closes its session. Then b writes nothing
// else, so the events other sessions receive during b are all the close's:
// the deletes of the session's ephemerals, one transaction. ZooKeeper
// deletes them in the order of a hash set, which no client may rely on, so
// those events are compared in sorted order, as are the closing session's
// own, which come just before the close's reply.
func (b pipeBatch) closesSession() bool {
	return b.reqs[len(b.reqs)-1].op == proto.OpCloseSession
}

// userExamplePlan is a user's report, n times over: with Kazoo, on one
// session and without waiting, create_async(q), get_async(q),
// set_async(q), exists_async(q), delete_async(q), exists_async(q). On
// ZooKeeper the get returns the data.
func userExamplePlan(n int) pipePlan {
	p := pipePlan{root: "/user-example", sessions: 1}
	for i := range n {
		q := fmt.Sprintf("%s/q%d", p.root, i)
		p.batches = append(p.batches, pipeBatch{reqs: []pipeReq{
			{op: proto.OpCreate, req: &proto.CreateRequest{Path: q, Data: []byte("v"), ACL: zkwire.OpenACL}},
			{op: proto.OpGetData, req: &proto.GetDataRequest{Path: q}},
			{op: proto.OpSetData, req: &proto.SetDataRequest{Path: q, Data: []byte("w"), Version: -1}},
			{op: proto.OpExists, req: &proto.ExistsRequest{Path: q}},
			{op: proto.OpDelete, req: &proto.DeleteRequest{Path: q, Version: -1}},
			{op: proto.OpExists, req: &proto.ExistsRequest{Path: q}},
		}})
	}
	return p
}

// pipeGen draws requests.
type pipeGen struct {
	rng  *rand.Rand
	root string
}

func (g *pipeGen) path() string {
	name := pipeNames[g.rng.IntN(len(pipeNames))]
	if name == "" {
		return g.root
	}
	return g.root + "/" + name
}

func (g *pipeGen) data() []byte { return []byte(fmt.Sprintf("d%d", g.rng.IntN(6))) }

// version is -1 (any) or a version that is right now and then.
func (g *pipeGen) version() int32 { return int32(g.rng.IntN(4)) - 1 }

func (g *pipeGen) acl() []proto.ACL { return pipeACLs[g.rng.IntN(len(pipeACLs))] }

func (g *pipeGen) watch() bool { return g.rng.IntN(2) == 0 }

// create draws a create of any mode, with its opcode.
func (g *pipeGen) create() (proto.OpCode, proto.Record) {
	modes := []proto.CreateMode{
		proto.ModePersistent, proto.ModePersistent, proto.ModePersistent, proto.ModeEphemeral,
		proto.ModePersistentSequential, proto.ModeEphemeralSequential, proto.ModeContainer,
		proto.ModePersistentWithTTL, proto.ModePersistentSequentialWithTTL,
	}
	mode := modes[g.rng.IntN(len(modes))]
	path := g.path()
	if mode.Sequential() && path == g.root {
		// The suffix would come from the cversion of "/", which the
		// servers' other work changes.
		path += "/s-"
	}
	req := proto.CreateRequest{Path: path, Data: g.data(), ACL: g.acl(), Flags: mode}
	switch {
	case mode.TTL():
		return proto.OpCreateTTL, &proto.CreateTTLRequest{Path: req.Path, Data: req.Data, ACL: req.ACL, Flags: mode, TTL: pipeTTL}
	case mode.Container():
		return proto.OpCreateContainer, &req
	case g.rng.IntN(2) == 0:
		return proto.OpCreate2, &req
	}
	return proto.OpCreate, &req
}

// read draws a read, which may set a watch.
func (g *pipeGen) read() pipeReq {
	switch g.rng.IntN(11) {
	case 9:
		return pipeReq{op: proto.OpGetEphemerals, req: &proto.GetEphemeralsRequest{PrefixPath: g.path()}}
	case 10:
		return pipeReq{op: proto.OpGetAllChildrenNumber, req: &proto.GetAllChildrenNumberRequest{Path: g.path()}}
	}
	switch g.rng.IntN(4) {
	case 0:
		return pipeReq{op: proto.OpGetData, req: &proto.GetDataRequest{Path: g.path(), Watch: g.watch()}}
	case 1:
		return pipeReq{op: proto.OpExists, req: &proto.ExistsRequest{Path: g.path(), Watch: g.watch()}}
	case 2:
		return pipeReq{op: proto.OpGetChildren, req: &proto.GetChildrenRequest{Path: g.path(), Watch: g.watch()}}
	}
	return pipeReq{op: proto.OpGetChildren2, req: &proto.GetChildren2Request{Path: g.path(), Watch: g.watch()}}
}

// request draws one request of a batch.
func (g *pipeGen) request() pipeReq {
	r := g.rng
	switch k := r.IntN(40); {
	case k < 7:
		op, req := g.create()
		return pipeReq{op: op, req: req}
	case k < 12:
		return pipeReq{op: proto.OpSetData, req: &proto.SetDataRequest{Path: g.path(), Data: g.data(), Version: g.version()}}
	case k < 16:
		return pipeReq{op: proto.OpDelete, req: &proto.DeleteRequest{Path: g.path(), Version: g.version()}}
	case k < 26:
		return g.read()
	case k < 27:
		return pipeReq{op: proto.OpSync, req: &proto.SyncRequest{Path: g.path()}}
	case k < 28:
		return pipeReq{op: proto.OpGetACL, req: &proto.GetACLRequest{Path: g.path()}}
	case k < 29:
		return pipeReq{op: proto.OpSetACL, req: &proto.SetACLRequest{Path: g.path(), ACL: g.acl(), Version: g.version()}}
	case k < 32:
		return pipeReq{op: proto.OpMulti, req: g.multi()}
	case k < 33:
		return pipeReq{op: proto.OpMultiRead, req: g.multiRead()}
	case k < 35:
		mode := proto.AddWatchMode(r.IntN(2))
		return pipeReq{op: proto.OpAddWatch, req: &proto.AddWatchRequest{Path: g.path(), Mode: mode}}
	case k < 36:
		typ := proto.WatcherType(1 + r.IntN(3))
		return pipeReq{op: proto.OpRemoveWatches, req: &proto.RemoveWatchesRequest{Path: g.path(), Type: typ}}
	case k < 37:
		typ := proto.WatcherType(1 + r.IntN(3))
		return pipeReq{op: proto.OpCheckWatches, req: &proto.CheckWatchesRequest{Path: g.path(), Type: typ}}
	case k < 38:
		return pipeReq{op: proto.OpPing, xid: proto.XidPing}
	case k < 39:
		return pipeReq{op: proto.OpWhoAmI}
	}
	if r.IntN(3) > 0 {
		// Now and then a setWatches, as a client sends after reconnecting;
		// setWatches2 re-arms persistent watches too.
		var rel int64 = pipeLastSeen
		if r.IntN(3) == 0 {
			rel = 0 // every node looks changed
		}
		if r.IntN(2) == 0 {
			return pipeReq{op: proto.OpSetWatches2, xid: proto.XidSetWatches, req: &proto.SetWatches2{
				RelativeZxid:               rel,
				DataWatches:                []string{g.path()},
				ExistWatches:               []string{g.path()},
				ChildWatches:               []string{g.path()},
				PersistentWatches:          []string{g.path()},
				PersistentRecursiveWatches: []string{g.path()},
			}}
		}
		return pipeReq{op: proto.OpSetWatches, xid: proto.XidSetWatches, req: &proto.SetWatches{
			RelativeZxid: rel,
			DataWatches:  []string{g.path()},
			ExistWatches: []string{g.path()},
			ChildWatches: []string{g.path()},
		}}
	}
	return pipeReq{op: proto.OpPing, xid: proto.XidPing}
}

// multi draws a multi of one to four ops, which may all succeed or not.
func (g *pipeGen) multi() *proto.MultiRequest {
	m := &proto.MultiRequest{}
	for range 1 + g.rng.IntN(4) {
		var op proto.MultiOp
		switch g.rng.IntN(5) {
		case 0, 1:
			code, req := g.create()
			op = proto.MultiOp{Type: code, Req: req}
			if code == proto.OpCreate2 && g.rng.IntN(2) == 0 {
				op.Type = proto.OpCreate
			}
		case 2:
			op = proto.MultiOp{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: g.path(), Version: g.version()}}
		case 3:
			op = proto.MultiOp{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: g.path(), Data: g.data(), Version: g.version()}}
		case 4:
			op = proto.MultiOp{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: g.path(), Version: g.version()}}
		}
		m.Ops = append(m.Ops, op)
	}
	return m
}

// multiRead draws a multiRead of one to three reads, without watches.
func (g *pipeGen) multiRead() *proto.MultiRequest {
	m := &proto.MultiRequest{}
	for range 1 + g.rng.IntN(3) {
		if g.rng.IntN(2) == 0 {
			m.Ops = append(m.Ops, proto.MultiOp{Type: proto.OpGetData, Req: &proto.GetDataRequest{Path: g.path()}})
		} else {
			m.Ops = append(m.Ops, proto.MultiOp{Type: proto.OpGetChildren, Req: &proto.GetChildrenRequest{Path: g.path()}})
		}
	}
	return m
}

// A pipeTrace is what every session received during one batch, up to and
// including the reply to its sync after the batch: one line a frame.
type pipeTrace struct {
	sent    []string   // the batch's requests, with their xids
	streams [][]string // by session
}

// pipeSession is one of a run's sessions, and the name its stream shows.
type pipeSession struct {
	*zkwire.Conn
	name     string
	lastZxid int64 // the largest zxid of a reply the session has received
}

// pipeRunner runs a plan against one server or ensemble.
type pipeRunner struct {
	t        *testing.T
	addrs    []string
	lockstep bool // one request at a time, for comparison
	sessions []*pipeSession
	dials    []int            // how many times each session has connected
	names    map[int64]string // session id to name, for ephemeral owners
}

// runPipePlan runs plan with session i on addrs[i%len(addrs)] and returns
// its traces. Given the traces of a run on ZooKeeper, it compares each
// batch's trace as it comes, reports the first difference and stops there.
func runPipePlan(t *testing.T, addrs []string, plan pipePlan, lockstep bool, want []pipeTrace) []pipeTrace {
	t.Helper()
	r := &pipeRunner{t: t, addrs: addrs, lockstep: lockstep, names: map[int64]string{}}
	r.sessions = make([]*pipeSession, plan.sessions)
	r.dials = make([]int, plan.sessions)
	for i := range r.sessions {
		r.connect(i)
	}
	defer func() {
		for _, s := range r.sessions {
			// Closing the sessions removes their ephemerals and watches,
			// so that the next plan starts clean.
			s.CallXid(s.NextXid(), proto.OpCloseSession, nil)
			s.Close()
		}
	}()
	s := r.sessions[0]
	if code, err := s.Do(proto.OpCreate, &proto.CreateRequest{Path: plan.root, ACL: zkwire.OpenACL}, nil); err != nil || code != proto.OK {
		t.Fatalf("create %s: %v %v", plan.root, code, err)
	}
	r.barrier(make([][]string, plan.sessions))
	var traces []pipeTrace
	for i, b := range plan.batches {
		tr := r.run(b)
		traces = append(traces, tr)
		if want != nil && !r.compare(i, b, want[i], tr) {
			return traces
		}
	}
	return traces
}

// connect opens session i, or opens it again after it closed.
func (r *pipeRunner) connect(i int) {
	c, err := zkwire.Dial(r.addrs[i%len(r.addrs)], 30000)
	if err != nil {
		r.t.Fatalf("session %d: %v", i, err)
	}
	if c.TimeOut <= 0 {
		c.Close()
		r.t.Fatalf("session %d: refused", i)
	}
	name := fmt.Sprintf("s%d", i)
	if r.dials[i] > 0 {
		name += fmt.Sprintf(".%d", r.dials[i])
	}
	r.dials[i]++
	r.names[c.Session] = name
	r.sessions[i] = &pipeSession{Conn: c, name: name}
}

// run sends b's requests on its session, then syncs every session, and
// returns what each received.
func (r *pipeRunner) run(b pipeBatch) pipeTrace {
	tr := pipeTrace{streams: make([][]string, len(r.sessions))}
	s := r.sessions[b.session]
	ops := map[int32]proto.OpCode{}
	reqs := make([]zkwire.Request, len(b.reqs))
	for i, q := range b.reqs {
		xid, req := q.xid, q.req
		if xid == 0 {
			xid = s.NextXid()
		}
		if sw, ok := req.(*proto.SetWatches); ok && sw.RelativeZxid == pipeLastSeen {
			c := *sw
			c.RelativeZxid = s.lastZxid
			req = &c
		}
		reqs[i] = zkwire.Request{Xid: xid, Op: q.op, Req: req}
		ops[xid] = q.op
		tr.sent = append(tr.sent, fmt.Sprintf("%s xid=%d %s", s.name, xid, describePipeReq(q)))
	}
	var frames []zkwire.Frame
	var err error
	if r.lockstep {
		for _, q := range reqs {
			var fs []zkwire.Frame
			fs, err = s.Pipeline(q)
			frames = append(frames, fs...)
			if err != nil {
				break
			}
		}
	} else {
		frames, err = s.Pipeline(reqs...)
	}
	tr.streams[b.session] = r.describe(s, frames, ops, err)
	if err != nil || b.closesSession() {
		s.Close()
		r.connect(b.session)
	}
	r.barrier(tr.streams)
	if b.closesSession() {
		closeReply := fmt.Sprintf("xid=%d closeSession:", reqs[len(reqs)-1].Xid)
		for k, stream := range tr.streams {
			for end, line := range stream {
				if k == b.session && strings.HasPrefix(line, closeReply) || k != b.session && !isEventLine(line) {
					sortEventsBefore(stream, end)
					break
				}
			}
		}
	}
	return tr
}

func isEventLine(line string) bool { return strings.HasPrefix(line, "event ") }

// sortEventsBefore sorts the run of events that ends at lines[end].
func sortEventsBefore(lines []string, end int) {
	start := end
	for start > 0 && isEventLine(lines[start-1]) {
		start--
	}
	slices.Sort(lines[start:end])
}

// barrier makes every session sync and wait for the reply, appending what
// it receives to its stream. Once every session has its reply, each has
// received every event that the transactions before fired for it.
func (r *pipeRunner) barrier(streams [][]string) {
	for i, s := range r.sessions {
		xid := s.NextXid()
		frames, err := s.Pipeline(zkwire.Request{Xid: xid, Op: proto.OpSync, Req: &proto.SyncRequest{Path: "/"}})
		streams[i] = append(streams[i], r.describe(s, frames, map[int32]proto.OpCode{xid: proto.OpSync}, err)...)
		if err != nil {
			s.Close()
			r.connect(i)
		}
	}
}

// describe turns frames into stream lines, without what differs between
// servers by design.
func (r *pipeRunner) describe(s *pipeSession, frames []zkwire.Frame, ops map[int32]proto.OpCode, err error) []string {
	var lines []string
	for _, f := range frames {
		h := f.Header
		if h.Xid == proto.XidNotification {
			line := fmt.Sprintf("event %s %s", f.Event.Type, f.Event.Path)
			if f.Event.State != proto.StateSyncConnected {
				line += fmt.Sprintf(" state=%d", f.Event.State)
			}
			lines = append(lines, line)
			continue
		}
		s.lastZxid = max(s.lastZxid, h.Zxid)
		op, ok := ops[h.Xid]
		if !ok {
			lines = append(lines, fmt.Sprintf("xid=%d to no request: %v", h.Xid, h.Err))
			continue
		}
		lines = append(lines, fmt.Sprintf("xid=%d %s: %v %s", h.Xid, op, h.Err, describeReply(op, h.Err, f.Body, r.names)))
	}
	if err != nil {
		lines = append(lines, "connection lost")
	}
	return lines
}

// compare reports the first difference between a batch's trace and the
// one ZooKeeper produced, and says whether there was none.
func (r *pipeRunner) compare(i int, b pipeBatch, want, got pipeTrace) bool {
	for k := range want.streams {
		w, g := want.streams[k], got.streams[k]
		at := firstDifference(w, g)
		if at < 0 {
			continue
		}
		var msg strings.Builder
		fmt.Fprintf(&msg, "batch %d, %d requests pipelined on s%d: %s in s%d's stream at frame %d\n",
			i, len(b.reqs), b.session, classifyDifference(w, g, at), k, at)
		msg.WriteString("requests:\n")
		for _, line := range want.sent {
			fmt.Fprintf(&msg, "  %s\n", line)
		}
		for j := range want.streams {
			fmt.Fprintf(&msg, "s%d received, ZooKeeper:\n%s", j, numbered(want.streams[j], at, j == k))
			fmt.Fprintf(&msg, "s%d received, Collie:\n%s", j, numbered(got.streams[j], at, j == k))
		}
		r.t.Error(msg.String())
		return false
	}
	return true
}

// firstDifference returns the index of the first line where w and g
// differ, or -1.
func firstDifference(w, g []string) int {
	for i := range max(len(w), len(g)) {
		if i >= len(w) || i >= len(g) || w[i] != g[i] {
			return i
		}
	}
	return -1
}

func numbered(lines []string, mark int, marked bool) string {
	var b strings.Builder
	for i, line := range lines {
		prefix := "   "
		if marked && i == mark {
			prefix = ">> "
		}
		fmt.Fprintf(&b, "  %s%2d %s\n", prefix, i, line)
	}
	if marked && mark == len(lines) {
		b.WriteString("  >> (nothing more)\n")
	}
	return b.String()
}

// classifyDifference names the first difference of a stream, at index at:
// a reply that differs, an event where ZooKeeper sent a reply (early, or
// one ZooKeeper never sent), or a reply where ZooKeeper sent an event
// (late, or missing).
func classifyDifference(want, got []string, at int) string {
	isEvent := isEventLine
	contains := func(lines []string, line string) bool {
		for _, l := range lines {
			if l == line {
				return true
			}
		}
		return false
	}
	switch {
	case at >= len(got):
		return "missing frames"
	case at >= len(want):
		if isEvent(got[at]) {
			return "extra event"
		}
		return "extra frames"
	case isEvent(want[at]) && isEvent(got[at]):
		return "another event"
	case isEvent(got[at]):
		if contains(want[at:], got[at]) {
			return "event early"
		}
		return "extra event"
	case isEvent(want[at]):
		if contains(got[at:], want[at]) {
			return "event late"
		}
		return "missing event"
	}
	op := strings.Fields(want[at])[1]
	switch op {
	case "getData:", "exists:", "getChildren:", "getChildren2:", "getACL:", "multiRead:", "checkWatches:":
		return "read result (" + strings.TrimSuffix(op, ":") + ")"
	}
	return "result (" + strings.TrimSuffix(op, ":") + ")"
}

// describePipeReq shows a request in a failure message.
func describePipeReq(q pipeReq) string {
	acl := func(acl []proto.ACL) string {
		var parts []string
		for _, a := range acl {
			parts = append(parts, fmt.Sprintf("%s:%s:%d", a.ID.Scheme, a.ID.ID, a.Perms))
		}
		return strings.Join(parts, ",")
	}
	var s string
	switch r := q.req.(type) {
	case nil:
	case *proto.CreateRequest:
		s = fmt.Sprintf("%s data=%q mode=%d acl=%s", r.Path, r.Data, r.Flags, acl(r.ACL))
	case *proto.CreateTTLRequest:
		s = fmt.Sprintf("%s data=%q mode=%d ttl=%d acl=%s", r.Path, r.Data, r.Flags, r.TTL, acl(r.ACL))
	case *proto.SetDataRequest:
		s = fmt.Sprintf("%s data=%q version=%d", r.Path, r.Data, r.Version)
	case *proto.SetACLRequest:
		s = fmt.Sprintf("%s version=%d acl=%s", r.Path, r.Version, acl(r.ACL))
	case *proto.SetWatches:
		rel := "last-seen"
		if r.RelativeZxid != pipeLastSeen {
			rel = strconv.FormatInt(r.RelativeZxid, 10)
		}
		s = fmt.Sprintf("relZxid=%s data=%v exist=%v child=%v", rel, r.DataWatches, r.ExistWatches, r.ChildWatches)
	case *proto.MultiRequest:
		var ops []string
		for _, op := range r.Ops {
			ops = append(ops, describePipeReq(pipeReq{op: op.Type, req: op.Req}))
		}
		s = "[" + strings.Join(ops, "; ") + "]"
	default:
		// Path and the like: "Path:/a Watch:true".
		s = strings.Trim(fmt.Sprintf("%+v", r), "&{}")
	}
	return strings.TrimSpace(q.op.String() + " " + s)
}
