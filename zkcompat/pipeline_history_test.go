package zkcompat

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
)

// TestPipelinedHistory has several sessions pipeline requests at once on
// the same few nodes, where results depend on timing, and checks each
// session's stream against what ZooKeeper guarantees rather than against
// another run. Every write stores a unique token, so the history of the
// data is known from the write replies: their zxids order them. The checks:
//
//   - replies come in the order the requests were sent;
//   - reply zxids never decrease along a session's stream, and a write's
//     zxid is above those of every earlier reply of its session;
//   - distinct successful writes have distinct zxids;
//   - every read returns the state (data, stat, children) after some prefix
//     of the history that contains every earlier successful write of the
//     session and none of its later ones, no earlier a prefix than an
//     earlier read of the session saw (a session never goes back in time),
//     and none later than the reply's zxid says (a client reconnecting
//     elsewhere presents that zxid, so the server's state must cover what
//     it saw);
//   - the watches the reads set fire exactly as ZooKeeper's watch tables
//     would, given the prefix each read saw; and an event fired by the
//     write with zxid z arrives after every reply of the session whose zxid
//     is below z and before every reply whose zxid is z or above.
//
// ZooKeeper itself passes these checks (the zookeeper subtests), which is
// what makes them sound; each reply zxid of ZooKeeper is exactly the state
// its read saw. COLLIE_PIPELINE_SEEDS sets the number of runs, as for
// TestPipelinedDifferential:
//
//	COLLIE_PIPELINE_SEEDS=200 go test -race -run TestPipelinedHistory -timeout 2h ./zkcompat/
func TestPipelinedHistory(t *testing.T) {
	runs := len(pipeSeeds(t, 2))
	check := func(t *testing.T, addrs []string) {
		for i := range runs {
			t.Run(fmt.Sprintf("run=%d", i+1), func(t *testing.T) {
				runHistory(t, addrs, uint64(i+1))
			})
		}
	}
	t.Run("standalone", func(t *testing.T) {
		t.Run("zookeeper", func(t *testing.T) {
			check(t, []string{zkref.Start(t, pipeZooKeeperOptions()...).Addr()})
		})
		t.Run("collie", func(t *testing.T) {
			check(t, []string{collietest.Start(t, pipeCollieOptions()).Addr()})
		})
	})
	t.Run("ensemble", func(t *testing.T) {
		t.Run("zookeeper", func(t *testing.T) {
			var addrs []string
			for _, m := range zkref.StartEnsemble(t, 3, pipeZooKeeperOptions()...).Members() {
				addrs = append(addrs, m.Addr())
			}
			defer nudgeZooKeeper(t, addrs)()
			check(t, addrs)
		})
		t.Run("collie", func(t *testing.T) {
			var addrs []string
			for _, s := range collietest.StartEnsemble(t, 3, 0, pipeCollieOptions()).Servers() {
				addrs = append(addrs, s.Addr())
			}
			check(t, addrs)
		})
	})
}

const (
	histSessions = 4
	histRounds   = 15
)

// histNames are the nodes the sessions share, under the run's root, which
// is there from the start and never deleted.
var histNames = []string{"a", "b", "c", "a/x", "a/y"}

// A histSession is one session's requests and what it received.
type histSession struct {
	conn   *zkwire.Conn
	name   string
	reqs   []zkwire.Request // in the order sent
	frames []zkwire.Frame   // in the order received
}

// runHistory runs the sessions concurrently, each on addrs[i%len(addrs)],
// and checks what each received.
func runHistory(t *testing.T, addrs []string, seed uint64) {
	root := fmt.Sprintf("/hist%d", seed)
	sessions := make([]*histSession, histSessions)
	for i := range sessions {
		c, err := zkwire.Dial(addrs[i%len(addrs)], 30000)
		if err != nil || c.TimeOut <= 0 {
			t.Fatalf("session %d: %v", i, err)
		}
		defer c.Close()
		sessions[i] = &histSession{conn: c, name: fmt.Sprintf("s%d", i)}
	}
	c := sessions[0].conn
	if code, err := c.Do(proto.OpCreate, &proto.CreateRequest{Path: root, ACL: zkwire.OpenACL}, nil); err != nil || code != proto.OK {
		t.Fatalf("create %s: %v %v", root, code, err)
	}
	var rootStat proto.ExistsResponse
	if code, err := c.Do(proto.OpExists, &proto.ExistsRequest{Path: root}, &rootStat); err != nil || code != proto.OK {
		t.Fatalf("exists %s: %v %v", root, code, err)
	}
	// Every session syncs first, so that the root is there for all.
	for _, s := range sessions {
		if _, _, err := s.conn.Call(proto.OpSync, &proto.SyncRequest{Path: root}); err != nil {
			t.Fatal(err)
		}
	}
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			tokens := 0
			for range histRounds {
				var batch []zkwire.Request
				for range 2 + rng.IntN(29) {
					tokens++
					op, req := histRequest(rng, root, fmt.Sprintf("%s-%d", s.name, tokens))
					batch = append(batch, zkwire.Request{Xid: s.conn.NextXid(), Op: op, Req: req})
				}
				s.reqs = append(s.reqs, batch...)
				frames, err := s.conn.Pipeline(batch...)
				s.frames = append(s.frames, frames...)
				if err != nil {
					errs[i] = fmt.Errorf("%s: %w", s.name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Once every session has a sync's reply, it has received the events
	// of every write, all acknowledged before (see TestPipelinedDifferential).
	for _, s := range sessions {
		sync := zkwire.Request{Xid: s.conn.NextXid(), Op: proto.OpSync, Req: &proto.SyncRequest{Path: root}}
		s.reqs = append(s.reqs, sync)
		frames, err := s.conn.Pipeline(sync)
		s.frames = append(s.frames, frames...)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	h := &history{root: root, sessions: sessions, ids: map[int64]string{}}
	for _, s := range sessions {
		h.ids[s.conn.Session] = s.name
	}
	for _, problem := range h.check(rootStat.Stat) {
		t.Error(problem)
	}
}

// histRequest draws one request; a write stores token.
func histRequest(rng *rand.Rand, root, token string) (proto.OpCode, proto.Record) {
	path := func() string { return root + "/" + histNames[rng.IntN(len(histNames))] }
	version := func() int32 { return int32(rng.IntN(4)) - 1 }
	watch := func() bool { return rng.IntN(2) == 0 }
	switch k := rng.IntN(20); {
	case k < 3:
		mode := proto.ModePersistent
		if rng.IntN(3) == 0 {
			mode = proto.ModeEphemeral
		}
		return proto.OpCreate, &proto.CreateRequest{Path: path(), Data: []byte(token), ACL: zkwire.OpenACL, Flags: mode}
	case k < 7:
		return proto.OpSetData, &proto.SetDataRequest{Path: path(), Data: []byte(token), Version: version()}
	case k < 9:
		return proto.OpDelete, &proto.DeleteRequest{Path: path(), Version: version()}
	case k < 10:
		// Ops on distinct nodes: one transaction changes several.
		m := &proto.MultiRequest{}
		for i, j := range rng.Perm(len(histNames))[:2] {
			p := root + "/" + histNames[j]
			data := []byte(fmt.Sprintf("%s.%d", token, i))
			switch rng.IntN(3) {
			case 0:
				m.Ops = append(m.Ops, proto.MultiOp{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: p, Data: data, ACL: zkwire.OpenACL}})
			case 1:
				m.Ops = append(m.Ops, proto.MultiOp{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: p, Data: data, Version: -1}})
			case 2:
				m.Ops = append(m.Ops, proto.MultiOp{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: p, Version: version()}})
			}
		}
		return proto.OpMulti, m
	case k < 13:
		return proto.OpGetData, &proto.GetDataRequest{Path: path(), Watch: watch()}
	case k < 16:
		return proto.OpExists, &proto.ExistsRequest{Path: path(), Watch: watch()}
	}
	parent := root
	if rng.IntN(2) == 0 {
		parent += "/a"
	}
	return proto.OpGetChildren2, &proto.GetChildren2Request{Path: parent, Watch: watch()}
}

// history is the record of a run and what is known from it.
type history struct {
	root     string
	sessions []*histSession
	ids      map[int64]string // session id to name
	txns     []histTxn        // successful writes in zxid order; txns[k-1] is the k-th
	// timelines[path] lists the node's states, each from the prefix of
	// txns at which it began, in order.
	timelines map[string][]histState
	problems  []string
}

// A histTxn is one successful write: a transaction that changed the tree.
type histTxn struct {
	zxid    int64
	session string
	xid     int32
	effects []histEffect
}

type histEffect struct {
	op    proto.OpCode // OpCreate, OpSetData or OpDelete
	path  string
	data  []byte
	owner int64 // of an ephemeral create
}

// A histState is a node's state from the prefix of from transactions on.
type histState struct {
	from     int
	exists   bool
	data     []byte
	stat     proto.Stat // times left out
	children []string   // sorted
}

// A histReply is a request with its reply, decoded.
type histReply struct {
	req   zkwire.Request
	at    int // position in the session's stream
	hdr   proto.ReplyHeader
	resp  proto.Record // nil when the reply is an error
	write bool
	txn   int // for a successful write, its number k in txns
}

func (h *history) problemf(format string, args ...any) {
	h.problems = append(h.problems, fmt.Sprintf(format, args...))
}

// check returns what the run violated.
func (h *history) check(rootStat proto.Stat) []string {
	replies := make([][]histReply, len(h.sessions))
	for i, s := range h.sessions {
		if replies[i] = h.matchReplies(s); replies[i] == nil {
			return h.problems
		}
	}
	h.collectTxns(replies)
	h.replay(rootStat)
	for i, s := range h.sessions {
		h.checkSession(s, replies[i])
	}
	return h.problems
}

// matchReplies pairs requests and replies, which must come in request
// order, and checks that reply zxids never decrease and that a write's
// is above every earlier one.
func (h *history) matchReplies(s *histSession) []histReply {
	var out []histReply
	var last int64
	var zxidProblems []string
	defer func() {
		if n := len(zxidProblems); n > 0 {
			h.problemf("%s: %d replies out of zxid order, the first: %s", s.name, n, zxidProblems[0])
		}
	}()
	for at, f := range s.frames {
		if f.Header.Xid == proto.XidNotification {
			continue
		}
		if len(out) == len(s.reqs) {
			h.problemf("%s: reply xid=%d to no request", s.name, f.Header.Xid)
			return nil
		}
		req := s.reqs[len(out)]
		if f.Header.Xid != req.Xid {
			h.problemf("%s: reply xid=%d where the reply to xid=%d (%s) was due", s.name, f.Header.Xid, req.Xid, req.Op)
			return nil
		}
		r := histReply{req: req, at: at, hdr: f.Header, write: req.Op != proto.OpGetData && req.Op != proto.OpExists && req.Op != proto.OpGetChildren2 && req.Op != proto.OpSync}
		switch {
		case r.write && f.Header.Zxid <= last:
			zxidProblems = append(zxidProblems, fmt.Sprintf("%s xid=%d has zxid %#x, not above %#x of an earlier reply", req.Op, req.Xid, f.Header.Zxid, last))
		case f.Header.Zxid < last:
			zxidProblems = append(zxidProblems, fmt.Sprintf("%s xid=%d has zxid %#x, below %#x of an earlier reply", req.Op, req.Xid, f.Header.Zxid, last))
		}
		last = max(last, f.Header.Zxid)
		if f.Header.Err == proto.OK || req.Op == proto.OpMulti {
			r.resp = newResponse(req.Op)
			if r.resp != nil {
				if err := proto.Unmarshal(f.Body, r.resp); err != nil {
					h.problemf("%s: %s xid=%d: %v", s.name, req.Op, req.Xid, err)
					return nil
				}
			}
		}
		out = append(out, r)
	}
	if len(out) < len(s.reqs) {
		h.problemf("%s: %d replies for %d requests", s.name, len(out), len(s.reqs))
		return nil
	}
	return out
}

// collectTxns gathers the successful writes in zxid order.
func (h *history) collectTxns(replies [][]histReply) {
	type ref struct{ session, reply int }
	var refs []ref
	for i, s := range h.sessions {
		for j := range replies[i] {
			r := &replies[i][j]
			if !r.write || r.hdr.Err != proto.OK {
				continue
			}
			txn := histTxn{zxid: r.hdr.Zxid, session: s.name, xid: r.req.Xid}
			switch req := r.req.Req.(type) {
			case *proto.CreateRequest:
				txn.effects = []histEffect{createEffect(req, s.conn.Session)}
			case *proto.SetDataRequest:
				txn.effects = []histEffect{{op: proto.OpSetData, path: req.Path, data: req.Data}}
			case *proto.DeleteRequest:
				txn.effects = []histEffect{{op: proto.OpDelete, path: req.Path}}
			case *proto.MultiRequest:
				if slices.ContainsFunc(r.resp.(*proto.MultiResponse).Results, func(res proto.OpResult) bool { return res.Type == proto.OpError }) {
					continue // rolled back
				}
				for _, op := range req.Ops {
					switch op := op.Req.(type) {
					case *proto.CreateRequest:
						txn.effects = append(txn.effects, createEffect(op, s.conn.Session))
					case *proto.SetDataRequest:
						txn.effects = append(txn.effects, histEffect{op: proto.OpSetData, path: op.Path, data: op.Data})
					}
				}
			}
			h.txns = append(h.txns, txn)
			refs = append(refs, ref{i, j})
		}
	}
	order := make([]int, len(h.txns))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(h.txns[a].zxid, h.txns[b].zxid) })
	sorted := make([]histTxn, len(h.txns))
	for k, i := range order {
		sorted[k] = h.txns[i]
		replies[refs[i].session][refs[i].reply].txn = k + 1
		if k > 0 && sorted[k-1].zxid == sorted[k].zxid {
			h.problemf("two writes with zxid %#x: %s xid=%d and %s xid=%d",
				sorted[k].zxid, sorted[k-1].session, sorted[k-1].xid, sorted[k].session, sorted[k].xid)
		}
	}
	h.txns = sorted
}

func createEffect(req *proto.CreateRequest, session int64) histEffect {
	e := histEffect{op: proto.OpCreate, path: req.Path, data: req.Data}
	if proto.CreateMode(req.Flags).Ephemeral() {
		e.owner = session
	}
	return e
}

// replay computes every node's timeline from the transactions.
func (h *history) replay(rootStat proto.Stat) {
	rootStat.Ctime, rootStat.Mtime = 0, 0
	cur := map[string]*histState{h.root: {exists: true, stat: rootStat}}
	h.timelines = map[string][]histState{h.root: {*cur[h.root]}}
	for _, name := range histNames {
		p := h.root + "/" + name
		cur[p] = &histState{}
		h.timelines[p] = []histState{{}}
	}
	for i, txn := range h.txns {
		k := i + 1
		touched := map[string]bool{}
		for _, e := range txn.effects {
			n, parent := cur[e.path], cur[proto.Parent(e.path)]
			switch e.op {
			case proto.OpCreate:
				*n = histState{exists: true, data: e.data, stat: proto.Stat{
					Czxid: txn.zxid, Mzxid: txn.zxid, Pzxid: txn.zxid, EphemeralOwner: e.owner, DataLength: int32(len(e.data)),
				}}
				parent.children = append(slices.Clone(parent.children), proto.Base(e.path))
				slices.Sort(parent.children)
			case proto.OpSetData:
				n.data = e.data
				n.stat.Mzxid = txn.zxid
				n.stat.Version++
				n.stat.DataLength = int32(len(e.data))
			case proto.OpDelete:
				*n = histState{}
				parent.children = slices.DeleteFunc(slices.Clone(parent.children), func(c string) bool { return c == proto.Base(e.path) })
			}
			if e.op != proto.OpSetData {
				parent.stat.Cversion++
				parent.stat.Pzxid = txn.zxid
				parent.stat.NumChildren = int32(len(parent.children))
				touched[proto.Parent(e.path)] = true
			}
			touched[e.path] = true
		}
		for p := range touched {
			s := *cur[p]
			s.from = k
			h.timelines[p] = append(h.timelines[p], s)
		}
	}
}

// stateAt returns path's state after the first k transactions, and the
// number of transactions after which that state ends (len(txns)+1 if it
// does not).
func (h *history) stateAt(path string, k int) (histState, int) {
	tl := h.timelines[path]
	i, _ := slices.BinarySearchFunc(tl, k+1, func(s histState, k int) int { return cmp.Compare(s.from, k) })
	end := len(h.txns) + 1
	if i < len(tl) {
		end = tl[i].from
	}
	return tl[i-1], end
}

// matches reports whether a read's reply shows state s.
func (h *history) matches(r histReply, s histState) bool {
	if r.hdr.Err == proto.ErrNoNode {
		return !s.exists
	}
	if r.hdr.Err != proto.OK || !s.exists {
		return false
	}
	same := func(st proto.Stat) bool {
		st.Ctime, st.Mtime = 0, 0
		return st == s.stat
	}
	switch resp := r.resp.(type) {
	case *proto.GetDataResponse:
		return string(resp.Data) == string(s.data) && same(resp.Stat)
	case *proto.ExistsResponse:
		return same(resp.Stat)
	case *proto.GetChildren2Response:
		return slices.Equal(sortedCopy(resp.Children), s.children) && same(resp.Stat)
	}
	return false
}

func (h *history) describeState(s histState) string {
	if !s.exists {
		return "no node"
	}
	return fmt.Sprintf("data=%q children=%v %s", s.data, s.children, h.describeStat(s.stat))
}

func (h *history) describeStat(st proto.Stat) string {
	return fmt.Sprintf("{czxid=%#x mzxid=%#x pzxid=%#x v=%d cv=%d kids=%d len=%d owner=%s}",
		st.Czxid, st.Mzxid, st.Pzxid, st.Version, st.Cversion, st.NumChildren, st.DataLength, h.owner(st.EphemeralOwner))
}

func (h *history) owner(id int64) string {
	if name, ok := h.ids[id]; ok {
		return name
	}
	return fmt.Sprintf("%#x", id)
}

func (h *history) describeReply(r histReply) string {
	s := fmt.Sprintf("xid=%d %s", r.req.Xid, describePipeReq(pipeReq{op: r.req.Op, req: r.req.Req}))
	switch resp := r.resp.(type) {
	case nil:
		return fmt.Sprintf("%s -> %v zxid=%#x", s, r.hdr.Err, r.hdr.Zxid)
	case *proto.GetDataResponse:
		return fmt.Sprintf("%s -> data=%q %s zxid=%#x", s, resp.Data, h.describeStat(resp.Stat), r.hdr.Zxid)
	case *proto.ExistsResponse:
		return fmt.Sprintf("%s -> %s zxid=%#x", s, h.describeStat(resp.Stat), r.hdr.Zxid)
	case *proto.GetChildren2Response:
		return fmt.Sprintf("%s -> children=%v %s zxid=%#x", s, sortedCopy(resp.Children), h.describeStat(resp.Stat), r.hdr.Zxid)
	}
	return fmt.Sprintf("%s -> %v zxid=%#x", s, r.hdr.Err, r.hdr.Zxid)
}

// prefixUpTo returns how many transactions have a zxid of at most z.
func (h *history) prefixUpTo(z int64) int {
	n, _ := slices.BinarySearchFunc(h.txns, z+1, func(t histTxn, z int64) int { return cmp.Compare(t.zxid, z) })
	return n
}

// A histWatch is a watch a read set: on path, in the data or the child
// table, after some prefix of the transactions between lo and hi.
type histWatch struct {
	path   string
	child  bool
	lo, hi int
	xid    int32
}

// checkSession checks one session's reads and events.
func (h *history) checkSession(s *histSession, replies []histReply) {
	// nextWrite[i] is the number of the first successful write of the
	// session at or after reply i (len(txns)+1 if none).
	nextWrite := make([]int, len(replies)+1)
	nextWrite[len(replies)] = len(h.txns) + 1
	for i := len(replies) - 1; i >= 0; i-- {
		nextWrite[i] = nextWrite[i+1]
		if replies[i].txn > 0 {
			nextWrite[i] = replies[i].txn
		}
	}
	var watches []histWatch
	readsOK := true
	lo := 0 // the session has seen at least this prefix
	for i, r := range replies {
		if r.txn > 0 {
			lo = max(lo, r.txn)
			continue
		}
		var path string
		var watch, child bool
		switch req := r.req.Req.(type) {
		case *proto.GetDataRequest:
			path, watch = req.Path, req.Watch && r.hdr.Err == proto.OK
		case *proto.ExistsRequest:
			path, watch = req.Path, req.Watch
		case *proto.GetChildren2Request:
			path, watch, child = req.Path, req.Watch && r.hdr.Err == proto.OK, true
		default:
			continue
		}
		hi := min(nextWrite[i]-1, h.prefixUpTo(r.hdr.Zxid))
		first, last := -1, -1
		for k := lo; k <= hi; {
			st, end := h.stateAt(path, k)
			if h.matches(r, st) {
				if first < 0 {
					first = k
				}
				last = min(end-1, hi)
			}
			k = end
		}
		if first < 0 {
			if readsOK {
				h.readProblem(s, replies, i, lo, hi, path)
			}
			readsOK = false
			continue
		}
		lo = first
		if watch {
			watches = append(watches, histWatch{path: path, child: child, lo: first, hi: last, xid: r.req.Xid})
		}
	}
	if readsOK {
		h.checkEvents(s, replies, watches)
	} else {
		// Where the reads went wrong, so may the watches they set: check
		// only where each event arrived.
		h.checkEventPlaces(s, replies)
	}
}

// window returns the zxids of the replies around frame at: the transaction
// that fired an event there has a zxid in (after, before].
func window(replies []histReply, at int) (after, before int64) {
	after, before = -1, 1<<62
	for _, r := range replies {
		if r.at < at {
			after = max(after, r.hdr.Zxid)
		} else {
			before = min(before, r.hdr.Zxid)
		}
	}
	return after, before
}

// checkEventPlaces checks that some write that fires each event the
// session received lies between the zxids of the replies around it.
func (h *history) checkEventPlaces(s *histSession, replies []histReply) {
	for at, f := range s.frames {
		if f.Header.Xid != proto.XidNotification {
			continue
		}
		after, before := window(replies, at)
		var cands []histEvent
		cands = append(cands, h.triggers(f.Event.Path, false, 0, len(h.txns))...)
		cands = append(cands, h.triggers(f.Event.Path, true, 0, len(h.txns))...)
		found := false
		for _, e := range cands {
			if z := h.txns[e.k-1].zxid; e.typ == f.Event.Type && z > after && z <= before {
				found = true
				break
			}
		}
		if !found {
			h.eventProblem(s, replies, at, fmt.Sprintf("no write that fires it has a zxid in (%#x, %#x], between the replies around it", after, before))
			return
		}
	}
}

// readProblem reports a read whose result fits no allowed prefix.
func (h *history) readProblem(s *histSession, replies []histReply, i, lo, hi int, path string) {
	var b strings.Builder
	r := replies[i]
	fmt.Fprintf(&b, "%s: %s\n  shows no state of %s after the first k writes for any k in [lo, hi] = [%d, %d]: the session's writes before it, none after, no earlier than its earlier reads, no later than its zxid\n",
		s.name, h.describeReply(r), path, lo, hi)
	b.WriteString("  the node's states around [lo, hi]:\n")
	tl := h.timelines[path]
	first := max(0, slices.IndexFunc(tl, func(st histState) bool { return st.from > lo })-4)
	for _, st := range tl[first:] {
		if st.from > hi+20 {
			break
		}
		fmt.Fprintf(&b, "    from k=%d: %s\n", st.from, h.describeState(st))
	}
	b.WriteString("  the session's requests around it:\n")
	for j := max(0, i-12); j < min(len(replies), i+6); j++ {
		mark := "   "
		if j == i {
			mark = ">> "
		}
		k := ""
		if replies[j].txn > 0 {
			k = fmt.Sprintf(" (write k=%d)", replies[j].txn)
		}
		fmt.Fprintf(&b, "  %s%s%s\n", mark, h.describeReply(replies[j]), k)
	}
	h.problemf("%s", b.String())
}

// A histEvent is an event a watch must or may deliver: at transaction k.
type histEvent struct {
	k        int
	typ      proto.EventType
	path     string
	optional bool  // from a watch set at a prefix not known exactly
	xid      int32 // of the read that set the watch
	matched  bool
}

// checkEvents simulates ZooKeeper's watch tables for the session's watches
// and matches the events it received against what they deliver.
func (h *history) checkEvents(s *histSession, replies []histReply, watches []histWatch) {
	type key struct {
		path  string
		child bool
	}
	var expected []histEvent
	// pending[key] is the xid of a read whose watch is in the table.
	pending := map[key]int32{}
	next := 0 // watches are in order of lo
	slices.SortStableFunc(watches, func(a, b histWatch) int { return cmp.Compare(a.lo, b.lo) })
	for k := 0; k <= len(h.txns); k++ {
		if k > 0 {
			fired := map[string]bool{} // paths whose data watch fired in this txn
			for _, e := range h.txns[k-1].effects {
				fire := func(kk key, typ proto.EventType) {
					if xid, ok := pending[kk]; ok {
						delete(pending, kk)
						if !(kk.child && typ == proto.EventNodeDeleted && fired[kk.path]) {
							expected = append(expected, histEvent{k: k, typ: typ, path: kk.path, xid: xid})
						}
						if !kk.child {
							fired[kk.path] = true
						}
					}
				}
				switch e.op {
				case proto.OpCreate:
					fire(key{e.path, false}, proto.EventNodeCreated)
					fire(key{proto.Parent(e.path), true}, proto.EventNodeChildrenChanged)
				case proto.OpSetData:
					fire(key{e.path, false}, proto.EventNodeDataChanged)
				case proto.OpDelete:
					fire(key{e.path, false}, proto.EventNodeDeleted)
					fire(key{e.path, true}, proto.EventNodeDeleted)
					fire(key{proto.Parent(e.path), true}, proto.EventNodeChildrenChanged)
				}
			}
		}
		for ; next < len(watches) && watches[next].lo == k; next++ {
			w := watches[next]
			if trig := h.triggers(w.path, w.child, w.lo, w.hi); len(trig) > 0 {
				// Set at a prefix not known exactly, with changes that
				// fire it in the range: it fired at one of them, or at
				// the first after, or it is still set.
				if after := h.triggers(w.path, w.child, w.hi, len(h.txns)); len(after) > 0 {
					trig = append(trig, after[0])
				}
				for _, ev := range trig {
					ev.optional, ev.xid = true, w.xid
					expected = append(expected, ev)
				}
				continue
			}
			if _, ok := pending[key{w.path, w.child}]; !ok {
				pending[key{w.path, w.child}] = w.xid
			}
		}
	}
	// Match each event received to one expected, fired by a transaction
	// whose zxid lies between the zxids of the replies around the event.
	for at, f := range s.frames {
		if f.Header.Xid != proto.XidNotification {
			continue
		}
		after, before := window(replies, at)
		// A watch known to be set explains an event before one that may be.
		var fits, elsewhere *histEvent
		for i := range expected {
			e := &expected[i]
			if e.matched || e.typ != f.Event.Type || e.path != f.Event.Path {
				continue
			}
			if z := h.txns[e.k-1].zxid; z > after && z <= before {
				if fits == nil || fits.optional && !e.optional {
					fits = e
				}
				continue
			}
			if elsewhere == nil {
				elsewhere = e
			}
		}
		switch {
		case fits != nil:
			fits.matched = true
		case elsewhere != nil:
			h.eventProblem(s, replies, at, fmt.Sprintf("fired by the write with zxid %#x (%s xid=%d), out of place: it must come after every reply below that zxid and before every other",
				h.txns[elsewhere.k-1].zxid, h.txns[elsewhere.k-1].session, h.txns[elsewhere.k-1].xid))
			return
		default:
			h.eventProblem(s, replies, at, "no watch the session set fires it")
			return
		}
	}
	for _, e := range expected {
		if !e.matched && !e.optional {
			t := h.txns[e.k-1]
			set := slices.IndexFunc(replies, func(r histReply) bool { return r.req.Xid == e.xid })
			due := slices.IndexFunc(replies, func(r histReply) bool { return r.hdr.Zxid >= t.zxid })
			if due < 0 {
				due = len(replies) - 1
			}
			h.problemf("%s: no event %s %s for the watch set by xid=%d, due from the write with zxid %#x (%s xid=%d)\n  the session's stream around the watch and where the event was due:\n%s",
				s.name, e.typ, e.path, e.xid, t.zxid, t.session, t.xid, h.excerpt(s, replies, -1, replies[set].at, replies[due].at))
			return
		}
	}
}

// triggers returns the events the changes after prefix lo up to prefix hi
// deliver to a watch on path in the given table.
func (h *history) triggers(path string, child bool, lo, hi int) []histEvent {
	var out []histEvent
	for k := lo + 1; k <= hi; k++ {
		for _, e := range h.txns[k-1].effects {
			var typ proto.EventType
			switch {
			case !child && e.path == path:
				typ = map[proto.OpCode]proto.EventType{proto.OpCreate: proto.EventNodeCreated, proto.OpSetData: proto.EventNodeDataChanged, proto.OpDelete: proto.EventNodeDeleted}[e.op]
			case child && e.path == path && e.op == proto.OpDelete:
				typ = proto.EventNodeDeleted
			case child && proto.Parent(e.path) == path && e.op != proto.OpSetData:
				typ = proto.EventNodeChildrenChanged
			default:
				continue
			}
			out = append(out, histEvent{k: k, typ: typ, path: path})
		}
	}
	return out
}

// eventProblem reports an event, with the session's stream around it.
func (h *history) eventProblem(s *histSession, replies []histReply, at int, why string) {
	ev := s.frames[at].Event
	h.problemf("%s: event %s %s at frame %d: %s\n  the session's stream around it:\n%s",
		s.name, ev.Type, ev.Path, at, why, h.excerpt(s, replies, at, at))
}

// excerpt shows the session's stream around the given frames, marking
// frame mark.
func (h *history) excerpt(s *histSession, replies []histReply, mark int, around ...int) string {
	var b strings.Builder
	byAt := map[int]histReply{}
	for _, r := range replies {
		byAt[r.at] = r
	}
	last := -1
	for j := range s.frames {
		if !slices.ContainsFunc(around, func(a int) bool { return j >= a-10 && j <= a+6 }) {
			continue
		}
		if last >= 0 && j > last+1 {
			b.WriteString("     ...\n")
		}
		last = j
		prefix := "   "
		if j == mark {
			prefix = ">> "
		}
		line := fmt.Sprintf("event %s %s", s.frames[j].Event.Type, s.frames[j].Event.Path)
		if r, ok := byAt[j]; ok {
			line = h.describeReply(r)
			if r.txn > 0 {
				line += fmt.Sprintf(" (write k=%d)", r.txn)
			}
		}
		fmt.Fprintf(&b, "  %s%3d %s\n", prefix, j, line)
	}
	return b.String()
}
