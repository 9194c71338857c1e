package peer_test

import (
	"fmt"
	"io"
	"log"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/server/peer"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// raftNode is a raft member driven by a minimal loop, as the replication
// package drives its own, whose only link to the others is a Transport.
type raftNode struct {
	id      uint64
	rn      *raft.RawNode
	storage *raft.MemoryStorage
	tr      *peer.Transport

	recvc   chan raftpb.Message
	reportc chan func(*raft.RawNode)
	propc   chan []byte
	stopc   chan struct{}
	donec   chan struct{}

	mu      sync.Mutex
	applied []string
	lead    uint64
	term    uint64
}

func newRaftNode(t *testing.T, id uint64, voters []uint64) *raftNode {
	n := &raftNode{
		id:      id,
		storage: raft.NewMemoryStorage(),
		recvc:   make(chan raftpb.Message, 1024),
		reportc: make(chan func(*raft.RawNode), 64),
		propc:   make(chan []byte, 2048),
		stopc:   make(chan struct{}),
		donec:   make(chan struct{}),
	}
	// Every member starts from the same snapshot holding the membership,
	// so none has to bootstrap.
	if err := n.storage.ApplySnapshot(raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{
		Index: 1, Term: 1, ConfState: raftpb.ConfState{Voters: voters},
	}}); err != nil {
		t.Fatal(err)
	}
	rn, err := raft.NewRawNode(&raft.Config{
		ID:              id,
		ElectionTick:    20,
		HeartbeatTick:   2,
		Storage:         n.storage,
		MaxSizePerMsg:   1 << 20,
		MaxInflightMsgs: 256,
		CheckQuorum:     true,
		PreVote:         true,
		Logger:          &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)},
	})
	if err != nil {
		t.Fatal(err)
	}
	n.rn = rn
	rec := newRecorder()
	cfg := testConfig(t, id, rec)
	cfg.Raft = func(m raftpb.Message) {
		select {
		case n.recvc <- m:
		case <-n.donec:
		}
	}
	cfg.Unreachable = func(id uint64) {
		select {
		case n.reportc <- func(rn *raft.RawNode) { rn.ReportUnreachable(id) }:
		default: // a hint; raft notices a silent member anyway
		}
	}
	cfg.SnapshotStatus = func(id uint64, failed bool) {
		st := raft.SnapshotFinish
		if failed {
			st = raft.SnapshotFailure
		}
		select {
		case n.reportc <- func(rn *raft.RawNode) { rn.ReportSnapshot(id, st) }:
		case <-n.donec:
		}
	}
	n.tr = newTransport(t, cfg)
	return n
}

func (n *raftNode) run() {
	defer close(n.donec)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-n.stopc:
			return
		case <-tick.C:
			n.rn.Tick()
		case m := <-n.recvc:
			n.rn.Step(m)
		case f := <-n.reportc:
			f(n.rn)
		case data := <-n.propc:
			n.rn.Propose(data) // dropped without a leader; the test proposes again
		}
		for n.rn.HasReady() {
			rd := n.rn.Ready()
			if !raft.IsEmptyHardState(rd.HardState) {
				n.storage.SetHardState(rd.HardState)
			}
			n.storage.Append(rd.Entries)
			n.tr.Send(rd.Messages)
			n.mu.Lock()
			for _, e := range rd.CommittedEntries {
				if e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
					n.applied = append(n.applied, string(e.Data))
				}
			}
			if rd.SoftState != nil {
				n.lead = rd.SoftState.Lead
			}
			if !raft.IsEmptyHardState(rd.HardState) {
				n.term = rd.HardState.Term
			}
			n.mu.Unlock()
			n.rn.Advance(rd)
		}
	}
}

func (n *raftNode) stop() {
	close(n.stopc)
	<-n.donec
}

func (n *raftNode) leader() (lead, term uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lead, n.term
}

func (n *raftNode) appliedEntries() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.applied)
}

// agreedLeader returns the leader all of ns know, 0 while they disagree.
func agreedLeader(ns []*raftNode) (lead, term uint64) {
	lead, term = ns[0].leader()
	for _, n := range ns[1:] {
		if l, tm := n.leader(); l != lead || tm != term {
			return 0, 0
		}
	}
	return lead, term
}

func TestRaftGroup(t *testing.T) {
	voters := []uint64{1, 2, 3}
	nodes := make([]*raftNode, len(voters))
	for i, id := range voters {
		nodes[i] = newRaftNode(t, id, voters)
	}
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				if err := a.tr.AddPeer(b.id, b.tr.Addr().String()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	running := map[uint64]*raftNode{}
	for _, n := range nodes {
		go n.run()
		running[n.id] = n
		n.tr.Start()
	}
	t.Cleanup(func() {
		for _, n := range running {
			n.tr.Close()
			n.stop()
		}
	})

	var lead uint64
	waitFor(t, "a leader", func() bool { lead, _ = agreedLeader(nodes); return lead != 0 })

	// Proposals are made on the followers; raft forwards them to the
	// leader. A proposal lost to an election is made again, so an entry
	// may be applied twice; what matters is that every member applies the
	// same ones.
	const n = 1000
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("entry-%04d", i)
	}
	var followers []*raftNode
	for _, nd := range nodes {
		if nd.id != lead {
			followers = append(followers, nd)
		}
	}
	appliedAll := func(nd *raftNode) []string {
		have := map[string]bool{}
		for _, e := range nd.appliedEntries() {
			have[e] = true
		}
		var missing []string
		for _, w := range want {
			if !have[w] {
				missing = append(missing, w)
			}
		}
		return missing
	}
	proposeUntil(t, "every entry applied", func() {
		for i, e := range appliedAll(nodes[0]) {
			followers[i%2].propc <- []byte(e)
		}
	}, func() bool { return len(appliedAll(nodes[0])) == 0 })
	waitFor(t, "every member to apply the same entries", func() bool {
		a, b, c := nodes[0].appliedEntries(), nodes[1].appliedEntries(), nodes[2].appliedEntries()
		return len(a) >= n && slices.Equal(a, b) && slices.Equal(a, c)
	})

	// The leader goes away; the others elect one of themselves.
	_, oldTerm := agreedLeader(nodes)
	old := running[lead]
	old.tr.Close()
	old.stop()
	delete(running, lead)
	var rest []*raftNode
	for _, nd := range nodes {
		if nd.id != lead {
			rest = append(rest, nd)
		}
	}
	var newLead, newTerm uint64
	waitFor(t, "a new leader", func() bool {
		newLead, newTerm = agreedLeader(rest)
		return newLead != 0 && newLead != lead && newTerm > oldTerm
	})
	// And it commits.
	proposeUntil(t, "an entry committed by the new leader", func() { rest[0].propc <- []byte("after") }, func() bool {
		a, b := rest[0].appliedEntries(), rest[1].appliedEntries()
		return slices.Contains(a, "after") && slices.Equal(a, b)
	})
	for _, nd := range rest {
		nd.tr.Close()
		nd.stop()
		delete(running, nd.id)
	}
	checkNoLeaks(t)
}

// proposeUntil calls propose, and again whenever done has not come true
// for a while (proposals are lost to elections), until done holds.
func proposeUntil(t *testing.T, what string, propose func(), done func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		propose()
		again := time.Now().Add(2 * time.Second)
		for !done() && time.Now().Before(again) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}
