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
	id     int64            // the session's id
	reqs   []zkwire.Request // in the order sent
	frames []zkwire.Frame   // in the order received, over every connection
	// lost[i] is set when reqs[i] got no reply: its connection ended
	// before. Only runs across a leader change lose any.
	lost map[int]bool
	// connOf[j] numbers the connection frames[j] came on, from 0; epoch
	// is the number of the connection in use.
	connOf []int
	epoch  int
	// lastZxid is the highest zxid of a reply received, which the
	// session presents when it connects again.
	lastZxid int64
	// final: the session reads once every other has finished, and must
	// see every write.
	final bool
}

// send pipelines batch on the session's connection and records what
// comes back. When the connection fails before every reply has come, the
// requests left without one are lost, and send returns the error.
func (s *histSession) send(batch ...zkwire.Request) error {
	s.reqs = append(s.reqs, batch...)
	frames, err := s.conn.Pipeline(batch...)
	replies := 0
	for _, f := range frames {
		s.frames = append(s.frames, f)
		s.connOf = append(s.connOf, s.epoch)
		if f.Header.Xid != proto.XidNotification {
			replies++
			s.lastZxid = max(s.lastZxid, f.Header.Zxid)
		}
	}
	if err != nil {
		if s.lost == nil {
			s.lost = map[int]bool{}
		}
		for i := len(s.reqs) - len(batch) + replies; i < len(s.reqs); i++ {
			s.lost[i] = true
		}
	}
	return err
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
		sessions[i] = &histSession{conn: c, name: fmt.Sprintf("s%d", i), id: c.Session}
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
				if err := s.send(batch...); err != nil {
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
		if err := s.send(zkwire.Request{Xid: s.conn.NextXid(), Op: proto.OpSync, Req: &proto.SyncRequest{Path: root}}); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	h := &history{root: root, sessions: sessions, ids: map[int64]string{}}
	for _, s := range sessions {
		h.ids[s.id] = s.name
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
	// markers is the node under which every write leaves a marker (see
	// withMarker), "" when writes leave none; markerZxids[token] lists
	// the czxids of the markers found there after the run with that token.
	markers     string
	markerZxids map[string][]int64
	txns        []histTxn // successful writes in zxid order; txns[k-1] is the k-th
	// applied[i][j] is the number k in txns of session i's request j, for
	// every write known to have taken effect.
	applied []map[int]int
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
	lost    bool // its reply never came: a marker tells it took effect
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
	idx   int // the request's position in the session's requests
	at    int // the reply's position in the session's stream
	conn  int // the connection it came on
	hdr   proto.ReplyHeader
	resp  proto.Record // nil when the reply is an error
	write bool
	txn   int // for a successful write, its number k in txns
}

// succeeded reports whether a write's reply says it took effect.
func (r histReply) succeeded() bool {
	if !r.write || r.hdr.Err != proto.OK {
		return false
	}
	if m, ok := r.resp.(*proto.MultiResponse); ok {
		return !slices.ContainsFunc(m.Results, func(res proto.OpResult) bool { return res.Type == proto.OpError })
	}
	return true
}

func isHistRead(op proto.OpCode) bool {
	return op == proto.OpGetData || op == proto.OpExists || op == proto.OpGetChildren2 || op == proto.OpSync
}

func (h *history) problemf(format string, args ...any) {
	h.problems = append(h.problems, fmt.Sprintf(format, args...))
}

// check returns what the run violated.
func (h *history) check(rootStat proto.Stat) []string {
	replies := make([][]histReply, len(h.sessions))
	for i, s := range h.sessions {
		var ok bool
		if replies[i], ok = h.matchReplies(s); !ok {
			return h.problems
		}
	}
	h.collectTxns(replies)
	h.checkWriteOrder()
	h.replay(rootStat)
	for i, s := range h.sessions {
		h.checkSession(i, s, replies[i])
	}
	return h.problems
}

// matchReplies pairs requests and replies, which must come in request
// order, less the requests lost with a connection, and checks that reply
// zxids never decrease (across connections too) and that a write's is
// above every earlier one. No reply may carry ConnectionLoss, which
// ZooKeeper never sends (a request whose outcome is unknown ends the
// connection), nor SessionMoved, since a session never uses two
// connections at once.
func (h *history) matchReplies(s *histSession) ([]histReply, bool) {
	var out []histReply
	var last int64
	var zxidProblems []string
	defer func() {
		if n := len(zxidProblems); n > 0 {
			h.problemf("%s: %d replies out of zxid order, the first: %s", s.name, n, zxidProblems[0])
		}
	}()
	next := 0 // the request whose reply is due
	for at, f := range s.frames {
		if f.Header.Xid == proto.XidNotification {
			continue
		}
		for next < len(s.reqs) && s.lost[next] {
			next++
		}
		if next == len(s.reqs) {
			h.problemf("%s: reply xid=%d to no request", s.name, f.Header.Xid)
			return nil, false
		}
		req := s.reqs[next]
		if f.Header.Xid != req.Xid {
			h.problemf("%s: reply xid=%d where the reply to xid=%d (%s) was due", s.name, f.Header.Xid, req.Xid, req.Op)
			return nil, false
		}
		r := histReply{req: req, idx: next, at: at, conn: s.connOf[at], hdr: f.Header, write: !isHistRead(req.Op)}
		next++
		switch f.Header.Err {
		case proto.ErrConnectionLoss, proto.ErrSessionMoved:
			h.problemf("%s: %s xid=%d answered with %v: a request whose outcome is unknown must end the connection instead", s.name, req.Op, req.Xid, f.Header.Err)
		}
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
					return nil, false
				}
			}
		}
		out = append(out, r)
	}
	if len(out)+len(s.lost) != len(s.reqs) {
		h.problemf("%s: %d replies and %d lost for %d requests", s.name, len(out), len(s.lost), len(s.reqs))
		return nil, false
	}
	return out, true
}

// collectTxns gathers the successful writes in zxid order: those whose
// reply says so, and, when writes leave markers, those lost with their
// connection whose marker says they took effect. With markers it checks
// that each write took effect at most once, an acknowledged one exactly
// as its reply says, and a refused one not at all.
func (h *history) collectTxns(replies [][]histReply) {
	type ref struct{ session, req int }
	var refs []ref
	add := func(i, j int, zxid int64) {
		s := h.sessions[i]
		h.txns = append(h.txns, histTxn{zxid: zxid, session: s.name, xid: s.reqs[j].Xid, lost: s.lost[j], effects: writeEffects(s.reqs[j].Req, s.id, h.markers)})
		refs = append(refs, ref{i, j})
	}
	tokens := map[string]bool{}
	for i, s := range h.sessions {
		acked := map[int]histReply{}
		for _, r := range replies[i] {
			if r.write {
				acked[r.idx] = r
			}
		}
		for j, req := range s.reqs {
			if isHistRead(req.Op) {
				continue
			}
			r, ok := acked[j]
			succeeded := ok && r.succeeded()
			if h.markers == "" {
				if succeeded {
					add(i, j, r.hdr.Zxid)
				}
				continue
			}
			token := markerToken(req.Req, h.markers)
			tokens[token] = true
			found := h.markerZxids[token]
			what := fmt.Sprintf("%s: %s xid=%d (token %s)", s.name, req.Op, req.Xid, token)
			switch {
			case len(found) > 1:
				h.problemf("%s took effect %d times, at zxids %#x", what, len(found), found)
			case succeeded && len(found) == 0:
				h.problemf("%s was acknowledged with zxid %#x, and is lost: no marker of it after the run", what, r.hdr.Zxid)
			case succeeded && found[0] != r.hdr.Zxid:
				h.problemf("%s was acknowledged with zxid %#x, but took effect at %#x", what, r.hdr.Zxid, found[0])
			case ok && !succeeded && len(found) > 0:
				h.problemf("%s was refused (%v), but took effect at zxid %#x", what, r.hdr.Err, found[0])
			}
			switch {
			case succeeded:
				add(i, j, r.hdr.Zxid)
			case !ok && len(found) > 0:
				add(i, j, found[0])
			}
		}
	}
	for token, zxids := range h.markerZxids {
		if !tokens[token] {
			h.problemf("a marker with token %s at zxid %#x, of no write sent", token, zxids[0])
		}
	}
	order := make([]int, len(h.txns))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(h.txns[a].zxid, h.txns[b].zxid) })
	sorted := make([]histTxn, len(h.txns))
	h.applied = make([]map[int]int, len(h.sessions))
	for i := range h.applied {
		h.applied[i] = map[int]int{}
	}
	for k, i := range order {
		sorted[k] = h.txns[i]
		h.applied[refs[i].session][refs[i].req] = k + 1
		if k > 0 && sorted[k-1].zxid == sorted[k].zxid {
			h.problemf("two writes with zxid %#x: %s xid=%d and %s xid=%d",
				sorted[k].zxid, sorted[k-1].session, sorted[k-1].xid, sorted[k].session, sorted[k].xid)
		}
	}
	h.txns = sorted
	for i := range replies {
		for j := range replies[i] {
			replies[i][j].txn = h.applied[i][replies[i][j].idx]
		}
	}
}

// checkWriteOrder checks that the writes of a session that took effect
// did so in the order they were sent, those lost with a connection
// included. (Of acknowledged writes alone, matchReplies says it.)
func (h *history) checkWriteOrder() {
	for i, s := range h.sessions {
		prev := -1
		for j := range s.reqs {
			k := h.applied[i][j]
			if k == 0 {
				continue
			}
			if prev >= 0 {
				pk := h.applied[i][prev]
				if pk > k && (s.lost[j] || s.lost[prev]) {
					p, t := h.txns[pk-1], h.txns[k-1]
					h.problemf("%s: xid=%d took effect at zxid %#x, before xid=%d, sent earlier, at %#x: writes out of session order (lost with a connection: xid=%d %v, xid=%d %v)",
						s.name, t.xid, t.zxid, p.xid, p.zxid, p.xid, p.lost, t.xid, t.lost)
					break
				}
			}
			prev = j
		}
	}
}

// writeEffects returns what a write changes when it succeeds, leaving out
// its marker.
func writeEffects(req proto.Record, session int64, markers string) []histEffect {
	switch req := req.(type) {
	case *proto.CreateRequest:
		if markers != "" && strings.HasPrefix(req.Path, markers+"/") {
			return nil
		}
		return []histEffect{createEffect(req, session)}
	case *proto.SetDataRequest:
		return []histEffect{{op: proto.OpSetData, path: req.Path, data: req.Data}}
	case *proto.DeleteRequest:
		return []histEffect{{op: proto.OpDelete, path: req.Path}}
	case *proto.MultiRequest:
		var out []histEffect
		for _, op := range req.Ops {
			out = append(out, writeEffects(op.Req, session, markers)...)
		}
		return out
	}
	return nil
}

func createEffect(req *proto.CreateRequest, session int64) histEffect {
	e := histEffect{op: proto.OpCreate, path: req.Path, data: req.Data}
	if proto.CreateMode(req.Flags).Ephemeral() {
		e.owner = session
	}
	return e
}

// withMarker makes a write a multi that also creates a persistent
// sequential node under markers named after token: the write took effect
// if, and when (the marker's czxid), the marker was created.
func withMarker(op proto.OpCode, req proto.Record, markers, token string) (proto.OpCode, proto.Record) {
	m := &proto.MultiRequest{Ops: []proto.MultiOp{{Type: proto.OpCreate, Req: &proto.CreateRequest{
		Path: markers + "/" + token + "-", ACL: zkwire.OpenACL, Flags: proto.ModePersistentSequential,
	}}}}
	if inner, ok := req.(*proto.MultiRequest); ok {
		m.Ops = append(m.Ops, inner.Ops...)
	} else {
		m.Ops = append(m.Ops, proto.MultiOp{Type: op, Req: req})
	}
	return proto.OpMulti, m
}

// markerToken returns the token of the marker a write made by withMarker
// creates.
func markerToken(req proto.Record, markers string) string {
	m, ok := req.(*proto.MultiRequest)
	if !ok || len(m.Ops) == 0 {
		return ""
	}
	c, ok := m.Ops[0].Req.(*proto.CreateRequest)
	if !ok {
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(c.Path, markers+"/"), "-")
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
	conn   int // the connection it was set on, and ends with
}

// checkSession checks the reads and events of session i. A write lost
// with a connection may or may not be in what a later read shows; one
// that took effect is, in any case, not in what an earlier read shows.
// A final session must see every write.
func (h *history) checkSession(i int, s *histSession, replies []histReply) {
	// nextWrite[j] is the least number of a write of the session sent
	// at or after request j that took effect (len(txns)+1 if none).
	nextWrite := make([]int, len(s.reqs)+1)
	nextWrite[len(s.reqs)] = len(h.txns) + 1
	for j := len(s.reqs) - 1; j >= 0; j-- {
		nextWrite[j] = nextWrite[j+1]
		if k := h.applied[i][j]; k > 0 {
			nextWrite[j] = min(nextWrite[j], k)
		}
	}
	var watches []histWatch
	readsOK := true
	lo := 0 // the session has seen at least this prefix
	if s.final {
		lo = len(h.txns)
	}
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
		hi := min(nextWrite[r.idx]-1, h.prefixUpTo(r.hdr.Zxid))
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
			watches = append(watches, histWatch{path: path, child: child, lo: first, hi: last, xid: r.req.Xid, conn: r.conn})
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

// window returns the zxids of the replies around frame at on its
// connection: the transaction that fired an event there has a zxid in
// (after, before]. Replies on other connections say nothing: a client
// that reconnects presents the zxid of its last reply, not of its last
// event, and may read from a server that has not applied the change yet.
func window(replies []histReply, at, conn int) (after, before int64) {
	after, before = -1, 1<<62
	for _, r := range replies {
		if r.conn != conn {
			continue
		}
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
		after, before := window(replies, at, s.connOf[at])
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
	why := "the session's writes before it, none after, no earlier than its earlier reads, no later than its zxid"
	if s.final {
		why = "a read after the run, which must show every write"
	}
	fmt.Fprintf(&b, "%s: %s\n  shows no state of %s after the first k writes for any k in [lo, hi] = [%d, %d]: %s\n",
		s.name, h.describeReply(r), path, lo, hi, why)
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
	conn     int   // the connection of the watch
	matched  bool
}

// checkEvents simulates ZooKeeper's watch tables for the session's watches
// and matches the events it received against what they deliver. The
// tables are a connection's: a client that connects again without
// setWatches, as this one does, has no watch on the new connection until
// it sets one, and an event due on a connection that ended may have been
// lost with it, unless a reply on that connection came after the change
// (the event came before that reply).
func (h *history) checkEvents(s *histSession, replies []histReply, watches []histWatch) {
	type key struct {
		conn  int
		path  string
		child bool
	}
	type node struct {
		conn int
		path string
	}
	// last[conn] is the highest zxid of a reply on the connection.
	last := map[int]int64{}
	for _, r := range replies {
		last[r.conn] = max(last[r.conn], r.hdr.Zxid)
	}
	var expected []histEvent
	// pending[key] is the xid of a read whose watch is in the table.
	pending := map[key]int32{}
	next := 0 // watches are in order of lo
	slices.SortStableFunc(watches, func(a, b histWatch) int { return cmp.Compare(a.lo, b.lo) })
	for k := 0; k <= len(h.txns); k++ {
		if k > 0 {
			fired := map[node]bool{} // nodes whose data watch fired in this txn
			for _, e := range h.txns[k-1].effects {
				fire := func(path string, child bool, typ proto.EventType) {
					for kk, xid := range pending {
						if kk.path != path || kk.child != child {
							continue
						}
						delete(pending, kk)
						if !(kk.child && typ == proto.EventNodeDeleted && fired[node{kk.conn, kk.path}]) {
							expected = append(expected, histEvent{k: k, typ: typ, path: kk.path, xid: xid, conn: kk.conn})
						}
						if !kk.child {
							fired[node{kk.conn, kk.path}] = true
						}
					}
				}
				switch e.op {
				case proto.OpCreate:
					fire(e.path, false, proto.EventNodeCreated)
					fire(proto.Parent(e.path), true, proto.EventNodeChildrenChanged)
				case proto.OpSetData:
					fire(e.path, false, proto.EventNodeDataChanged)
				case proto.OpDelete:
					fire(e.path, false, proto.EventNodeDeleted)
					fire(e.path, true, proto.EventNodeDeleted)
					fire(proto.Parent(e.path), true, proto.EventNodeChildrenChanged)
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
					ev.optional, ev.xid, ev.conn = true, w.xid, w.conn
					expected = append(expected, ev)
				}
				continue
			}
			if _, ok := pending[key{w.conn, w.path, w.child}]; !ok {
				pending[key{w.conn, w.path, w.child}] = w.xid
			}
		}
	}
	for i := range expected {
		if e := &expected[i]; h.txns[e.k-1].zxid > last[e.conn] {
			e.optional = true // due when the connection may have ended
		}
	}
	// Match each event received to one expected on its connection, fired
	// by a transaction whose zxid lies between the zxids of the replies
	// around the event.
	for at, f := range s.frames {
		if f.Header.Xid != proto.XidNotification {
			continue
		}
		conn := s.connOf[at]
		after, before := window(replies, at, conn)
		// A watch known to be set explains an event before one that may be.
		var fits, elsewhere *histEvent
		for i := range expected {
			e := &expected[i]
			if e.matched || e.conn != conn || e.typ != f.Event.Type || e.path != f.Event.Path {
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
			due := slices.IndexFunc(replies, func(r histReply) bool { return r.conn == e.conn && r.hdr.Zxid >= t.zxid })
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
