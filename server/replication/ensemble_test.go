package replication

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// router is an in-memory Transport between the nodes of a test ensemble.
// Each node gets a queue and a goroutine that steps its messages in, so a
// sender never waits for a receiver; a full queue drops, as a network
// would. Links can be cut. It checks what raft promises its transport:
// no member acknowledges entries or grants a vote before its storage holds
// them.
type router struct {
	t      *testing.T
	mu     sync.Mutex
	nodes  map[uint64]*Node
	stores map[uint64]*memStorage
	queue  map[uint64]chan raftpb.Message
	cut    map[[2]uint64]bool
	// traffic counts the messages sent, by type, sender and receiver and
	// whether they carried entries.
	traffic map[route]int
	wg      sync.WaitGroup
	stop    chan struct{}
}

func newRouter(t *testing.T) *router {
	r := &router{t: t, nodes: map[uint64]*Node{}, stores: map[uint64]*memStorage{}, queue: map[uint64]chan raftpb.Message{},
		cut: map[[2]uint64]bool{}, traffic: map[route]int{}, stop: make(chan struct{})}
	t.Cleanup(func() { close(r.stop); r.wg.Wait() })
	return r
}

type route struct {
	typ      raftpb.MessageType
	from, to uint64
	entries  bool
}

// carriers returns how many messages of type typ from one member to
// another carried entries.
func (r *router) carriers(typ raftpb.MessageType, from, to uint64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.traffic[route{typ, from, to, true}]
}

// sent returns how many messages of type typ one member sent another.
func (r *router) sent(typ raftpb.MessageType, from, to uint64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.traffic[route{typ, from, to, true}] + r.traffic[route{typ, from, to, false}]
}

// from returns the Transport of member id.
func (r *router) from(id uint64) Transport { return routerSender{r, id} }

type routerSender struct {
	r  *router
	id uint64
}

func (s routerSender) Send(msgs []raftpb.Message) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nodes[s.id] == nil {
		// Detached: its process is gone, and so is what it sends.
		return
	}
	for _, m := range msgs {
		r.checkDurable(m)
		r.traffic[route{m.Type, s.id, m.To, len(m.Entries) > 0}]++
		q, ok := r.queue[m.To]
		if !ok || r.cut[[2]uint64{s.id, m.To}] {
			if n := r.nodes[s.id]; n != nil {
				if m.Type == raftpb.MsgSnap {
					n.ReportSnapshot(m.To, true)
				} else {
					n.ReportUnreachable(m.To)
				}
			}
			continue
		}
		select {
		case q <- m:
		default:
		}
		if m.Type == raftpb.MsgSnap {
			if n := r.nodes[s.id]; n != nil {
				go n.ReportSnapshot(m.To, false)
			}
		}
	}
}

// checkDurable fails the test when m promises what its sender has not
// stored yet.
func (r *router) checkDurable(m raftpb.Message) {
	st := r.stores[m.From]
	if st == nil || m.Reject {
		return
	}
	switch m.Type {
	case raftpb.MsgAppResp:
		if stored := st.lastIndex(); stored < m.Index {
			r.t.Errorf("member %d acknowledged index %d with only %d stored", m.From, m.Index, stored)
		}
	case raftpb.MsgVoteResp:
		st.mu.Lock()
		hs := st.st
		st.mu.Unlock()
		if hs.Term < m.Term || hs.Vote != m.To {
			r.t.Errorf("member %d voted for %d in term %d with term %d, vote %d stored", m.From, m.To, m.Term, hs.Term, hs.Vote)
		}
	}
}

// attach makes n, whose storage is st, reachable as member id.
func (r *router) attach(id uint64, n *Node, st *memStorage) {
	q := make(chan raftpb.Message, 4096)
	r.mu.Lock()
	r.nodes[id], r.stores[id], r.queue[id] = n, st, q
	r.mu.Unlock()
	r.wg.Go(func() {
		for {
			select {
			case m := <-q:
				// What a detached member sent is lost with its
				// connections, as on a network.
				r.mu.Lock()
				alive := r.nodes[m.From] != nil
				r.mu.Unlock()
				if alive {
					n.Step(m)
				}
			case <-n.Done():
				return
			case <-r.stop:
				return
			}
		}
	})
}

// detach makes member id unreachable, as if its process were gone, and
// tells the others their connection to it broke.
func (r *router) detach(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.nodes, id)
	delete(r.queue, id)
	for _, n := range r.nodes {
		n.ReportLost(id)
	}
}

// isolate cuts every link to and from member id, or heals them.
func (r *router) isolate(id uint64, ids []uint64, cut bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range ids {
		if o != id {
			r.cut[[2]uint64{id, o}], r.cut[[2]uint64{o, id}] = cut, cut
		}
	}
}

type member struct {
	id  uint64
	st  *memStorage
	fsm *sumFSM
	n   *Node
}

// startEnsemble starts voters 1..voters and learners after them.
func startEnsemble(t *testing.T, r *router, voters, learners int, snapCount uint64) []*member {
	t.Helper()
	var vs, ls []uint64
	for i := 1; i <= voters; i++ {
		vs = append(vs, uint64(i))
	}
	for i := voters + 1; i <= voters+learners; i++ {
		ls = append(ls, uint64(i))
	}
	var ms []*member
	for _, id := range slices.Concat(vs, ls) {
		m := &member{id: id, st: &memStorage{}, fsm: &sumFSM{}}
		m.n = startMember(t, r, m, vs, ls, snapCount)
		ms = append(ms, m)
	}
	return ms
}

func startMember(t *testing.T, r *router, m *member, vs, ls []uint64, snapCount uint64) *Node {
	t.Helper()
	n, err := Start(Config{ID: m.id, Voters: vs, Learners: ls, Transport: r.from(m.id),
		TickInterval: 10 * time.Millisecond, ElectionTicks: 10, HeartbeatTicks: 1,
		SnapCount: snapCount, Storage: m.st, FSM: m.fsm})
	if err != nil {
		t.Fatal(err)
	}
	r.attach(m.id, n, m.st)
	t.Cleanup(n.Stop)
	return n
}

// leaderOf waits until the running members agree on one leader, and
// returns it.
func leaderOf(t *testing.T, ms []*member) *member {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var lead uint64
		agree := true
		for _, m := range ms {
			l := m.n.Leader()
			if lead == 0 {
				lead = l
			}
			agree = agree && l != 0 && l == lead
		}
		if agree {
			for _, m := range ms {
				if m.id == lead {
					return m
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no leader agreed on within 10s")
	return nil
}

// proposeAll proposes values from..to through member m, proposing again
// those raft drops (while a leader is being elected), and returns once m
// has applied them all: each proposal is either dropped or applied.
func proposeAll(t *testing.T, m *member, from, to uint64) {
	t.Helper()
	dropped := make(chan uint64, to-from+1)
	propose := func(v uint64) {
		m.n.Propose(binary.BigEndian.AppendUint64(nil, v), func(error) { dropped <- v })
	}
	for v := from; v <= to; v++ {
		propose(v)
	}
	deadline := time.Now().Add(15 * time.Second)
	for !m.fsm.appliedAll(from, to) {
		if time.Now().After(deadline) {
			t.Fatalf("member %d has not applied all of %d..%d after 15s", m.id, from, to)
		}
		select {
		case v := <-dropped:
			time.Sleep(5 * time.Millisecond)
			propose(v)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// awaitApplied waits until every member has applied count values adding
// up to sum.
func awaitApplied(t *testing.T, ms []*member, sum uint64, count int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for _, m := range ms {
		for {
			s, n := m.fsm.state()
			if s == sum {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d applied %d values adding up to %d, want %d values adding up to %d", m.id, n, s, count, sum)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func sumTo(from, to uint64) uint64 { return (to*(to+1) - (from-1)*from) / 2 }

// Three voters and a learner: proposals made on any member, followers
// and the learner included, are applied by all in the same order; the
// learner never leads.
func TestEnsembleReplicates(t *testing.T) {
	r := newRouter(t)
	ms := startEnsemble(t, r, 3, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, m := range ms {
		if err := m.n.AwaitLeader(ctx); err != nil {
			t.Fatalf("member %d: %v", m.id, err)
		}
	}
	lead := leaderOf(t, ms)
	if lead.id == 4 {
		t.Fatal("the learner was elected")
	}
	for i, m := range ms {
		from := uint64(i*50 + 1)
		proposeAll(t, m, from, from+49)
	}
	awaitApplied(t, ms, sumTo(1, 200), 200)
	order := func(m *member) []uint64 {
		m.fsm.mu.Lock()
		defer m.fsm.mu.Unlock()
		return slices.Clone(m.fsm.applied)
	}
	want := order(ms[0])
	for _, m := range ms[1:] {
		if got := order(m); !slices.Equal(got, want) {
			t.Fatalf("member %d applied %v, member 1 %v", m.id, got, want)
		}
	}
}

// When the leader goes, the two other voters elect a new one and go on
// committing; the old leader, back with its storage, catches up.
func TestEnsembleLeaderLoss(t *testing.T) {
	r := newRouter(t)
	ms := startEnsemble(t, r, 3, 0, 0)
	old := leaderOf(t, ms)
	proposeAll(t, old, 1, 20)
	awaitApplied(t, ms, sumTo(1, 20), 20)

	r.detach(old.id)
	old.n.Stop()
	var rest []*member
	for _, m := range ms {
		if m != old {
			rest = append(rest, m)
		}
	}
	lead := leaderOf(t, rest)
	if lead.id == old.id {
		t.Fatal("the stopped leader is still leader")
	}
	proposeAll(t, rest[0], 21, 40)
	awaitApplied(t, rest, sumTo(1, 40), 40)

	// The old leader restarts from what it had stored.
	vs := []uint64{1, 2, 3}
	old.fsm = &sumFSM{}
	old.n = startMember(t, r, old, vs, nil, 0)
	awaitApplied(t, ms, sumTo(1, 40), 40)
}

// A member cut off while the others moved on past their in-memory log
// catches up by snapshot.
func TestEnsembleSnapshotCatchUp(t *testing.T) {
	r := newRouter(t)
	ms := startEnsemble(t, r, 3, 0, 50)
	lead := leaderOf(t, ms)
	var lagging *member
	for _, m := range ms {
		if m != lead {
			lagging = m
			break
		}
	}
	ids := []uint64{1, 2, 3}
	r.isolate(lagging.id, ids, true)
	var others []*member
	for _, m := range ms {
		if m != lagging {
			others = append(others, m)
		}
	}
	proposeAll(t, lead, 1, 600)
	awaitApplied(t, others, sumTo(1, 600), 600)
	needsSnapshot(t, lead, lagging)
	r.isolate(lagging.id, ids, false)
	awaitApplied(t, ms, sumTo(1, 600), 600)
	if lagging.st.snapIndex() == 0 {
		t.Fatal("the lagging member caught up without a snapshot")
	}
}

// startWithoutTimeouts starts members vs whose election timeout is far
// longer than any test, so that only a lost connection calls an election,
// and makes member 1 leader by handing it the message a leader sends to
// hand over. The leader sends heartbeats every heartbeatTicks of 10ms.
func startWithoutTimeouts(t *testing.T, r *router, vs []uint64, heartbeatTicks int) []*member {
	t.Helper()
	var ms []*member
	for _, id := range vs {
		m := &member{id: id, st: &memStorage{}, fsm: &sumFSM{}}
		n, err := Start(Config{ID: id, Voters: vs, Transport: r.from(id),
			TickInterval: 10 * time.Millisecond, ElectionTicks: 1 << 20, HeartbeatTicks: heartbeatTicks,
			Storage: m.st, FSM: m.fsm})
		if err != nil {
			t.Fatal(err)
		}
		m.n = n
		r.attach(id, n, m.st)
		t.Cleanup(n.Stop)
		ms = append(ms, m)
	}
	ms[0].n.Step(raftpb.Message{Type: raftpb.MsgTimeoutNow, From: 2, To: 1})
	if lead := leaderOf(t, ms); lead.id != 1 {
		t.Fatalf("member %d leads, want 1", lead.id)
	}
	return ms
}

// A follower that loses its connection to the leader calls an election at
// once. The election timeout here is far longer than the test, so only
// that can elect the new leader; the first leader is made the same way, by
// handing member 1 the message a leader sends to hand over.
func TestEnsembleLostLeaderElection(t *testing.T) {
	r := newRouter(t)
	vs := []uint64{1, 2, 3}
	ms := startWithoutTimeouts(t, r, vs, 1)
	proposeAll(t, ms[1], 1, 10)
	awaitApplied(t, ms, sumTo(1, 10), 10)

	// The signal of the first election is taken; the next ones come with
	// the loss of the leader and the election of the next.
	select {
	case <-ms[1].n.LeaderChanges():
	default:
	}
	r.detach(1)
	ms[0].n.Stop()
	lead := leaderOf(t, ms[1:])
	timeout := time.After(10 * time.Second)
	for signalled := false; !signalled || ms[1].n.Leader() != lead.id; {
		select {
		case <-ms[1].n.LeaderChanges():
			signalled = true
		case <-timeout:
			t.Fatalf("member 2 knows leader %d (the new one is %d); signalled: %v", ms[1].n.Leader(), lead.id, signalled)
		}
	}
	proposeAll(t, lead, 11, 20)
	awaitApplied(t, ms[1:], sumTo(1, 20), 20)
}

// A follower behind the others calls the election first, after the
// leader's connection broke, and loses it; the other follower, which then
// knows no leader, calls the next at once rather than after an election
// timeout (far longer than the test here).
func TestEnsembleElectionAfterALostCampaign(t *testing.T) {
	r := newRouter(t)
	vs := []uint64{1, 2, 3}
	ms := startWithoutTimeouts(t, r, vs, 1)
	// Member 3 misses entries the others commit.
	r.isolate(3, vs, true)
	proposeAll(t, ms[0], 1, 10)
	awaitApplied(t, ms[:2], sumTo(1, 10), 10)
	r.isolate(3, vs, false)
	// It calls an election it cannot win: every member now knows no
	// leader. Then the leader goes.
	ms[2].n.Step(raftpb.Message{Type: raftpb.MsgTimeoutNow, From: 1, To: 3})
	r.detach(1)
	ms[0].n.Stop()
	lead := leaderOf(t, ms[1:])
	if lead.id != 2 {
		t.Fatalf("member %d leads, want 2, whose log is the longest", lead.id)
	}
	proposeAll(t, lead, 11, 20)
	awaitApplied(t, ms[1:], sumTo(1, 20), 20)
}

// A member cut off while the leader trims its in-memory log, with no
// snapshot taken since (SnapCount 0: none by count), is caught up by a
// snapshot taken for it.
func TestEnsembleSnapshotOnDemand(t *testing.T) {
	r := newRouter(t)
	ms := startEnsemble(t, r, 3, 0, 0)
	lead := leaderOf(t, ms)
	var lagging *member
	var others []*member
	for _, m := range ms {
		if m != lead && lagging == nil {
			lagging = m
		} else {
			others = append(others, m)
		}
	}
	ids := []uint64{1, 2, 3}
	r.isolate(lagging.id, ids, true)
	const n = 3 * keepEntries
	proposeAll(t, lead, 1, n)
	awaitApplied(t, others, sumTo(1, n), n)
	needsSnapshot(t, lead, lagging)
	r.isolate(lagging.id, ids, false)
	awaitApplied(t, ms, sumTo(1, n), n)
	if lagging.st.snapIndex() <= 1 {
		t.Fatalf("the lagging member caught up without a new snapshot (snapshot at %d)", lagging.st.snapIndex())
	}
}

// needsSnapshot waits until the leader's in-memory log no longer reaches
// back to the lagging member's last entry, so only a snapshot can catch it
// up.
func needsSnapshot(t *testing.T, lead, lagging *member) {
	t.Helper()
	// The leader trims its log once it has applied the entries, after
	// Apply returns: wait for it.
	waitFor(t, "the leader's log trimmed past the lagging member's last entry", func() bool {
		first, err := lead.n.mem.FirstIndex()
		if err != nil {
			t.Fatal(err)
		}
		return first > lagging.st.lastIndex()+1
	})
}

// The leader sends a new entry to the followers before it writes it
// itself, and its loop does not wait for its disk: while its own write of
// the entry is held, the followers store it, the leader counts their
// acknowledgements and commits it, and the followers apply it.
func TestCommitWhileTheLeaderWrites(t *testing.T) {
	r := newRouter(t)
	// Without heartbeats, which would make the leader send the entry
	// again whatever it did with it first.
	ms := startWithoutTimeouts(t, r, []uint64{1, 2, 3}, 1<<19)
	lead := ms[0]
	proposeAll(t, lead, 1, 5)
	awaitApplied(t, ms, sumTo(1, 5), 5)

	g := &gate{make(chan struct{}), make(chan struct{})}
	lead.st.gate.Store(g)
	release := sync.OnceFunc(func() { lead.st.gate.Store(nil); close(g.release) })
	defer release() // also when the test fails: the node stops only once its write ends
	propose(lead.n, 6)
	<-g.blocked // the leader's own write of entry 6 is under way
	awaitApplied(t, ms[1:], sumTo(1, 6), 6)
	release()
	awaitApplied(t, ms, sumTo(1, 6), 6)
}

// TestQueuedProposalsTravelTogether checks that proposals queued while a
// follower's loop is busy reach the leader as one forwarded message, and
// the other follower as one append: one message per proposal costs a
// frame, a decode and a raft step each, on every member.
func TestQueuedProposalsTravelTogether(t *testing.T) {
	r := newRouter(t)
	ms := startWithoutTimeouts(t, r, []uint64{1, 2, 3}, 1<<19)
	forwarder := ms[1]
	props, apps := r.carriers(raftpb.MsgProp, 2, 1), r.carriers(raftpb.MsgApp, 1, 3)

	// Every send waits while the test holds the router: the follower's
	// loop stops at forwarding the first proposal, and the others queue.
	r.mu.Lock()
	propose(forwarder.n, 1)
	waitFor(t, "the first proposal taken", func() bool { return len(forwarder.n.propc) == 0 })
	for v := uint64(2); v <= 100; v++ {
		propose(forwarder.n, v)
	}
	r.mu.Unlock()

	awaitApplied(t, ms, sumTo(1, 100), 100)
	for _, m := range ms {
		if !m.fsm.appliedAll(1, 100) {
			t.Fatalf("member %d has not applied every proposal", m.id)
		}
	}
	if got := r.carriers(raftpb.MsgProp, 2, 1) - props; got > 2 {
		t.Errorf("the follower forwarded 100 proposals, 99 of them queued together, in %d messages; want at most 2", got)
	}
	if got := r.carriers(raftpb.MsgApp, 1, 3) - apps; got > 2 {
		t.Errorf("the leader sent them to the other follower in %d appends; want at most 2", got)
	}
}

// startQuiet starts three voters that neither call elections nor send
// heartbeats, member 1 leading, with an entry of its term (1) committed
// and applied everywhere.
func startQuiet(t *testing.T, r *router) []*member {
	t.Helper()
	ms := startWithoutTimeouts(t, r, []uint64{1, 2, 3}, 1<<19)
	proposeAll(t, ms[0], 1, 1)
	awaitApplied(t, ms, 1, 1)
	return ms
}

// TestAcknowledgementsMerge checks that a follower whose disk held several
// appends acknowledges them, once written together, with one message: an
// acknowledgement of an index stands for those before it.
func TestAcknowledgementsMerge(t *testing.T) {
	r := newRouter(t)
	ms := startQuiet(t, r)
	lead, slow := ms[0], ms[2]

	g := &gate{make(chan struct{}), make(chan struct{})}
	slow.st.gate.Store(g)
	release := sync.OnceFunc(func() { slow.st.gate.Store(nil); close(g.release) })
	defer release() // also when the test fails: the node stops only once its write ends
	propose(lead.n, 2)
	<-g.blocked // the follower's write of entry 2 is under way
	// Entries 3..7 reach it one append at a time, each queued behind the
	// held write with its own acknowledgement to make.
	for v := uint64(3); v <= 7; v++ {
		propose(lead.n, v)
		waitFor(t, fmt.Sprintf("entry %d queued on the follower", v), func() bool {
			slow.n.appendq.mu.Lock()
			defer slow.n.appendq.mu.Unlock()
			queued := 0
			for _, task := range slow.n.appendq.items {
				queued += len(task.msg.Entries)
			}
			return queued == int(v-2)
		})
	}
	acks := r.sent(raftpb.MsgAppResp, 3, 1)
	release()
	awaitApplied(t, ms, sumTo(1, 7), 7)
	waitFor(t, "the follower's log acknowledged", func() bool {
		for _, m := range lead.n.Members() {
			if m.ID == 3 {
				return m.Match >= lead.st.lastIndex()
			}
		}
		return false
	})
	if got := r.sent(raftpb.MsgAppResp, 3, 1) - acks; got > 2 {
		t.Errorf("the follower acknowledged the held write and the 5 appends written after it in %d messages; want at most 2", got)
	}
}

// TestReadIndexesOfTwoMembersAtOnce checks that reads waiting for a
// ReadIndex on the leader and on a follower at the same time are all
// answered. The leader tells read requests apart by their context alone
// and ignores one whose context it already holds, so the contexts must
// differ from member to member: numbered from 1 by each member, they
// collided, and the follower's read was never answered (a sync or a
// linearizable read hung until the leader changed).
func TestReadIndexesOfTwoMembersAtOnce(t *testing.T) {
	r := newRouter(t)
	// Without heartbeats: only reads make the leader send any.
	ms := startQuiet(t, r)
	lead, follower := ms[0], ms[2]

	readIndex := func(n *Node) <-chan error {
		done := make(chan error, 1)
		n.ReadIndex(func(_ uint64, err error) { done <- err })
		return done
	}
	// The leader's messages to the followers are lost, so its reads wait
	// for a quorum; the follower's forwarded read reaches it.
	cutLeader := func(cut bool) {
		r.mu.Lock()
		r.cut[[2]uint64{1, 2}], r.cut[[2]uint64{1, 3}] = cut, cut
		r.mu.Unlock()
	}
	cutLeader(true)
	beats := r.sent(raftpb.MsgHeartbeat, 1, 2)
	first := readIndex(lead.n)
	waitFor(t, "the leader's read under way", func() bool { return r.sent(raftpb.MsgHeartbeat, 1, 2) == beats+1 })
	second := readIndex(follower.n)
	waitFor(t, "the follower's read taken by the leader", func() bool { return r.sent(raftpb.MsgHeartbeat, 1, 2) == beats+2 })
	cutLeader(false)
	// The heartbeats of a third read confirm the leader for every read
	// before it.
	third := readIndex(lead.n)
	reads := []struct {
		name string
		done <-chan error
	}{{"the leader's first", first}, {"the follower's", second}, {"the leader's second", third}}
	for _, rd := range reads {
		select {
		case err := <-rd.done:
			if err != nil {
				t.Errorf("%s read: %v", rd.name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s read is not answered after 10s", rd.name)
		}
	}
}

// CallElection elects a member of a new ensemble whose election timeout is
// far longer than the test, at once: nothing else could elect one.
func TestEnsembleCallElection(t *testing.T) {
	r := newRouter(t)
	vs := []uint64{1, 2, 3}
	var ms []*member
	for _, id := range vs {
		m := &member{id: id, st: &memStorage{}, fsm: &sumFSM{}}
		n, err := Start(Config{ID: id, Voters: vs, Transport: r.from(id),
			TickInterval: 10 * time.Millisecond, ElectionTicks: 1 << 20, HeartbeatTicks: 1,
			Storage: m.st, FSM: m.fsm})
		if err != nil {
			t.Fatal(err)
		}
		m.n = n
		r.attach(id, n, m.st)
		t.Cleanup(n.Stop)
		ms = append(ms, m)
	}
	ms[1].n.CallElection()
	if lead := leaderOf(t, ms); lead.id != 2 {
		t.Fatalf("member %d leads, want 2, which called the election", lead.id)
	}
	proposeAll(t, ms[0], 1, 10)
	awaitApplied(t, ms, sumTo(1, 10), 10)
}
