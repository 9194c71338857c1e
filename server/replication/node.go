package replication

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
)

// ErrStopped is returned for work handed to a node that has stopped.
var ErrStopped = errors.New("replication: node stopped")

// ErrStorageFailed is what a node that stopped because its storage failed
// a write returns from Err, wrapping the storage's error. The write is not
// tried again: after a failed fsync nobody can tell what reached the disk.
// A new node started on the same storage recovers from what did.
var ErrStorageFailed = errors.New("replication: a write to storage failed")

// ErrLeaderChanged fails a ReadIndex that was waiting when the leader
// changed: the leader it was sent to will not answer it, and no other
// leader would.
var ErrLeaderChanged = errors.New("replication: the leader changed")

// ErrLeaderUnreachable fails a ReadIndex that was waiting when a message
// from this follower or learner to its leader was lost: raft does not send
// a read request (nor a proposal) again.
var ErrLeaderUnreachable = errors.New("replication: a message to the leader was lost")

// ErrDiskFull fails the proposals made while the disk holding the log is
// full (see Node.DiskFull): they never reached raft, and never will.
var ErrDiskFull = errors.New("replication: the disk is full")

// Storage is the durable raft log and snapshots.
//
// Save, SaveSnapshot, WriteSnapshot and MarkSnapshot may fail for want of
// space on the disk, having changed nothing: such an error has a method
// NoSpace() bool that returns true (storage.NoSpaceError). The node then
// makes the same call again later. Any other error from Save,
// SaveSnapshot or MarkSnapshot stops the node.
type Storage interface {
	// LoadSnapshot returns the newest snapshot's metadata (index 0 when
	// there is none) with a reader of its data (nil when there is none;
	// the caller closes it).
	LoadSnapshot() (raftpb.SnapshotMetadata, io.ReadCloser, error)
	// ReadLog returns the hard state and the log entries after the
	// snapshot. It runs beside the restoring of the snapshot.
	ReadLog() (raftpb.HardState, []raftpb.Entry, error)
	// Save appends the hard state and entries durably (one fsync).
	Save(st raftpb.HardState, ents []raftpb.Entry) error
	// SaveSnapshot writes a snapshot received whole durably and marks it
	// in the log.
	SaveSnapshot(snap raftpb.Snapshot) error
	// WriteSnapshot writes the snapshot of meta durably, its data streamed
	// by write, and returns the data's size. It runs on its own goroutine,
	// beside Save.
	WriteSnapshot(meta raftpb.SnapshotMetadata, write func(io.Writer) error) (int64, error)
	// MarkSnapshot records in the log that the snapshot of meta, written
	// by WriteSnapshot, is durable.
	MarkSnapshot(meta raftpb.SnapshotMetadata) error
	// OpenSnapshot returns a reader of the data of the snapshot of meta,
	// for sending it to a member that is too far behind; the caller closes
	// it. It runs on its own goroutine.
	OpenSnapshot(meta raftpb.SnapshotMetadata) (io.ReadCloser, error)
	// Compact drops what the newest snapshot at index makes unneeded.
	Compact(index uint64) error
	Close() error
}

// Transport carries raft messages to the other members of an ensemble.
type Transport interface {
	// Send sends messages without blocking; a message that cannot be sent
	// is dropped (raft sends again), and the transport reports the member
	// unreachable through Node.ReportUnreachable.
	Send(msgs []raftpb.Message)
}

// SnapshotStreamer is a Transport that sends a snapshot's data as it reads
// it from the snapshot file, rather than from memory. Without it, a
// node reads the whole snapshot into the MsgSnap before Send.
type SnapshotStreamer interface {
	// SendSnapshot sends m with size bytes of data read from data, which
	// it closes; it reports the outcome through Node.ReportSnapshot.
	SendSnapshot(m raftpb.Message, data io.ReadCloser, size int64)
}

// StateMachine is what the node replicates into.
type StateMachine interface {
	// Apply applies committed entries in log order. Entries that are not
	// normal entries with data (configuration changes, the empty entry of
	// a new leader) are passed too, so the state machine can count them.
	Apply(ents []raftpb.Entry)
	// BeginSnapshot freezes the state as of the last applied entry and
	// returns a function that encodes it to w. The function runs on its
	// own goroutine while Apply goes on, so a snapshot of a large state
	// does not stall writes.
	BeginSnapshot() (write func(w io.Writer) error)
	// Restore replaces the state with a snapshot's data.
	Restore(r io.Reader) error
}

// Config configures a Node.
type Config struct {
	// ID is this server's id (myid); 1 for a standalone server.
	ID uint64
	// Voters are the ids of every voting member, this one included when it
	// votes; Learners are the members that receive the log but never vote
	// (ZooKeeper's observers). Membership is fixed by the configuration:
	// every member must be started with the same sets.
	Voters   []uint64
	Learners []uint64
	// Transport sends messages to the other members; nil for a server on
	// its own.
	Transport Transport
	// TickInterval is the length of one raft tick.
	TickInterval time.Duration
	// ElectionTicks and HeartbeatTicks are raft's timeouts in ticks.
	ElectionTicks, HeartbeatTicks int
	// SnapCount is the number of applied entries between snapshots.
	SnapCount uint64
	// MaxBatch bounds the proposals taken into one Ready.
	MaxBatch int
	Storage  Storage
	FSM      StateMachine
	Logger   *slog.Logger
}

// Node is a running raft member.
type Node struct {
	cfg Config
	log *slog.Logger
	rn  *raft.RawNode
	mem *raft.MemoryStorage

	propc   chan proposal
	readc   chan readRequest
	recvc   chan raftpb.Message
	reportc chan report
	stopc   chan struct{}
	donec   chan struct{}
	leader  chan struct{} // closed once this node has been leader
	known   chan struct{} // closed once this node has known a leader
	// leaderChanged has room for one signal, sent (without waiting) each
	// time the leader as this node knows it changes.
	leaderChanged chan struct{}
	// forwardLost has room for one signal, sent (without waiting) each
	// time a message from this node to its leader is lost.
	forwardLost chan struct{}
	exited      chan struct{} // closed once run reads no more, before donec

	// Owned by run.
	// proposing is reused by proposeQueued for the batch it gathers.
	proposing []proposal
	// pendingReads are the reads waiting for the ReadIndex of their batch,
	// by the batch's request context.
	pendingReads map[string][]readRequest
	// readSeq numbers the batches. A request context is this member's id,
	// readEpoch (drawn at Start) and readSeq: the leader holds the
	// requests of every member by their context alone, and ignores one
	// whose context it already holds, so no two members, nor two lives of
	// one, may use the same.
	readSeq    uint64
	readEpoch  uint64
	wasLeader  bool
	knewLeader bool

	// Raft's storage writes are asynchronous: run hands log appends to
	// appendLoop and committed entries to applyLoop, and steps what they
	// answer (localq) when they are done.
	appendq *fifo[appendTask]
	applyq  *fifo[applyTask]
	localq  *fifo[raftpb.Message]
	confc   chan confRequest
	// learnerTicks counts ticks since addLearners last looked.
	learnerTicks int
	// replayed is closed once the entries the log had committed at the
	// start, up to replayTo, are applied.
	replayed    chan struct{}
	replayTo    uint64
	replayOnce  sync.Once
	storageErr  chan error
	storageStop chan struct{}
	storageWG   sync.WaitGroup
	// inline is set while Start drives raft itself, before the goroutines.
	inline bool

	// Owned by applyLoop (by Start before it).
	applied     uint64
	appliedTerm uint64
	conf        raftpb.ConfState
	waiting     []waitingRead
	// appliedBytes counts entry bytes applied since the log was last
	// trimmed.
	appliedBytes uint64

	// snapIndex is the newest snapshot's index; snapping is set while a
	// snapshot of the state at snapAt is being encoded.
	snapIndex atomic.Uint64
	snapping  atomic.Bool
	snapAt    atomic.Uint64
	snapWG    sync.WaitGroup
	// sendWG counts the goroutines reading a snapshot to send.
	sendWG sync.WaitGroup
	// full is set while the append goroutine holds appends that found no
	// space on the disk (see DiskFull).
	full atomic.Pointer[diskFull]
	// snapRetryAt is when a snapshot may be tried again after one found no
	// space (Unix nanoseconds; 0 when there is no wait); snapWait is how
	// long the last wait was, owned by the append goroutine.
	snapRetryAt atomic.Int64
	snapWait    time.Duration
	// handingOff is set, by run, once a leader whose disk is full has
	// started handing its leadership over, so that it says so once.
	handingOff bool
	// wantSnapshot is set when raft needed a snapshot to catch a member
	// up and the newest one is older than the in-memory log.
	wantSnapshot atomic.Bool
	// snapAsks are the callers of TakeSnapshot waiting for a snapshot.
	snapAsks snapWaiters
	// suspect is the leader whose connection broke, while this follower
	// waits suspectTimer before calling an election (0 when none).
	suspect      uint64
	suspectTimer *time.Timer

	// status is what Status reports, kept by the goroutines that know
	// each part.
	status struct {
		term, commit, applied, leaderChanges atomic.Uint64
	}

	mu      sync.Mutex
	state   raft.StateType
	lead    uint64
	err     error
	members []Member // as of the last tick, while leading

	stopOnce sync.Once
}

type proposal struct {
	data   []byte
	failed func(error)
}

type readRequest struct {
	done func(index uint64, err error)
}

// report is what the transport tells raft about a member.
type report struct {
	id          uint64
	snapshot    bool // a snapshot transfer ended
	snapshotErr bool
	lost        bool // the connection to the member broke
	elect       bool // CallElection
	// Otherwise: a message to the member was dropped.
}

// Start restores the node from storage, replaying snapshot and log into the
// state machine, and starts its goroutine.
func Start(cfg Config) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 4096
	}
	n := &Node{
		cfg:           cfg,
		log:           cfg.Logger,
		mem:           raft.NewMemoryStorage(),
		propc:         make(chan proposal, cfg.MaxBatch),
		readc:         make(chan readRequest, 256),
		recvc:         make(chan raftpb.Message, 1024),
		reportc:       make(chan report, 64),
		stopc:         make(chan struct{}),
		donec:         make(chan struct{}),
		leader:        make(chan struct{}),
		known:         make(chan struct{}),
		leaderChanged: make(chan struct{}, 1),
		forwardLost:   make(chan struct{}, 1),
		exited:        make(chan struct{}),
		pendingReads:  make(map[string][]readRequest),
		readEpoch:     rand.Uint64(),
		appendq:       newFIFO[appendTask](),
		applyq:        newFIFO[applyTask](),
		localq:        newFIFO[raftpb.Message](),
		confc:         make(chan confRequest),
		storageErr:    make(chan error, 2),
		storageStop:   make(chan struct{}),
		replayed:      make(chan struct{}),
	}
	meta, data, err := cfg.Storage.LoadSnapshot()
	if err != nil {
		return nil, fmt.Errorf("replication: load snapshot: %w", err)
	}
	// The log is read while the snapshot is restored: a restart takes
	// the longer of the two, not their sum.
	restored := make(chan error, 1)
	go func() {
		if data == nil {
			restored <- nil
			return
		}
		err := cfg.FSM.Restore(data)
		if cerr := data.Close(); err == nil {
			err = cerr
		}
		restored <- err
	}()
	st, ents, err := cfg.Storage.ReadLog()
	if rerr := <-restored; rerr != nil {
		return nil, fmt.Errorf("replication: restore snapshot at %d: %w", meta.Index, rerr)
	}
	if err != nil {
		return nil, fmt.Errorf("replication: read log: %w", err)
	}
	fresh := meta.Index == 0 && raft.IsEmptyHardState(st) && len(ents) == 0
	ensemble := len(cfg.Voters) > 1 || len(cfg.Learners) > 0
	if meta.Index == 0 && ensemble {
		if !fresh {
			return nil, errors.New("replication: the log was written by a server on its own; a member of an ensemble starts from an empty data directory")
		}
		// Every member starts from the same configuration, given to all by
		// their zoo.cfg, in a snapshot of the empty state at index 1:
		// unlike raft's Bootstrap, a snapshot can name learners. It is
		// written like any other, so a restart and a member that needs it
		// find it.
		meta = raftpb.SnapshotMetadata{Index: 1, Term: 1, ConfState: raftpb.ConfState{
			Voters: slices.Clone(cfg.Voters), Learners: slices.Clone(cfg.Learners)}}
		if _, err := cfg.Storage.WriteSnapshot(meta, cfg.FSM.BeginSnapshot()); err != nil {
			return nil, fmt.Errorf("replication: write the initial snapshot: %w", err)
		}
		if err := cfg.Storage.MarkSnapshot(meta); err != nil {
			return nil, fmt.Errorf("replication: write the initial snapshot: %w", err)
		}
	}
	if !fresh {
		if err := checkMembers(cfg, meta, ents); err != nil {
			return nil, err
		}
	}
	if meta.Index != 0 {
		// The in-memory log keeps the snapshot's metadata only: the data
		// can be hundreds of megabytes and is on disk.
		if err := n.mem.ApplySnapshot(raftpb.Snapshot{Metadata: meta}); err != nil {
			return nil, fmt.Errorf("replication: %w", err)
		}
		n.applied, n.appliedTerm = meta.Index, meta.Term
		n.status.applied.Store(meta.Index)
		n.snapIndex.Store(meta.Index)
		n.conf = meta.ConfState
	}
	n.replayTo = st.Commit
	if n.replayTo <= n.applied {
		n.replayOnce.Do(func() { close(n.replayed) })
	}
	if !raft.IsEmptyHardState(st) {
		if err := n.mem.SetHardState(st); err != nil {
			return nil, fmt.Errorf("replication: %w", err)
		}
		n.status.term.Store(st.Term)
		n.status.commit.Store(st.Commit)
	}
	if err := n.mem.Append(ents); err != nil {
		return nil, fmt.Errorf("replication: %w", err)
	}
	rc := &raft.Config{
		ID:                        cfg.ID,
		ElectionTick:              cfg.ElectionTicks,
		HeartbeatTick:             cfg.HeartbeatTicks,
		Storage:                   raftLog{n.mem, n.snapshotWanted},
		Applied:                   n.applied,
		MaxSizePerMsg:             1 << 20,
		MaxCommittedSizePerReady:  64 << 20,
		MaxUncommittedEntriesSize: 1 << 30,
		MaxInflightMsgs:           256,
		CheckQuorum:               true,
		AsyncStorageWrites:        true,
		PreVote:                   true,
		Logger:                    newRaftLogger(cfg.Logger),
	}
	rn, err := raft.NewRawNode(rc)
	if err != nil {
		return nil, fmt.Errorf("replication: %w", err)
	}
	n.rn = rn
	if fresh && !ensemble {
		peers := make([]raft.Peer, len(cfg.Voters))
		for i, id := range cfg.Voters {
			peers[i] = raft.Peer{ID: id}
		}
		if err := rn.Bootstrap(peers); err != nil {
			return nil, fmt.Errorf("replication: bootstrap: %w", err)
		}
	}
	if len(cfg.Voters) == 1 && cfg.Voters[0] == cfg.ID {
		// Alone, there is no one to wait for: become leader now rather
		// than after an election timeout. Raft refuses to campaign while
		// committed configuration changes (the bootstrap's, or replayed
		// ones) are unapplied, so apply what is ready first.
		if err := n.settle(); err != nil {
			return nil, fmt.Errorf("replication: replay: %w", err)
		}
		if err := rn.Campaign(); err != nil {
			return nil, fmt.Errorf("replication: campaign: %w", err)
		}
	}
	n.storageWG.Go(n.appendLoop)
	n.storageWG.Go(n.applyLoop)
	go n.run()
	return n, nil
}

// settle drives raft until it has nothing left to do, doing the storage
// work on this goroutine. Start uses it before the goroutines run, to
// replay a server's own log.
func (n *Node) settle() error {
	n.inline = true
	defer func() { n.inline = false }()
	for {
		for n.rn.HasReady() {
			n.dispatch(n.rn.Ready())
		}
		appends, applies := n.appendq.take(), n.applyq.take()
		for _, t := range appends {
			if t.msg.Snapshot != nil {
				return errors.New("a snapshot to install while replaying")
			}
		}
		if _, err := n.appendAll(appends); err != nil {
			return err
		}
		if err := n.applyAll(applies); err != nil {
			return err
		}
		local := n.localq.take()
		if len(appends)+len(applies)+len(local) == 0 {
			return nil
		}
		for _, m := range local {
			if err := n.rn.Step(m); err != nil {
				return err
			}
		}
	}
}

// snapshotWanted is called by raft, in run, when a member needs a snapshot
// newer than the newest.
func (n *Node) snapshotWanted() {
	n.wantSnapshot.Store(true)
	n.applyq.push(applyTask{})
}

// Propose hands data to raft. It does not wait for the entry to commit:
// the entry reaches the state machine's Apply when it does. failed is
// called, from the node's goroutine, if the proposal is dropped (no leader,
// node stopping). While the disk is full (DiskFull), the proposal never
// reaches raft: failed is called with an error matching ErrDiskFull before
// Propose returns, on the caller's goroutine.
func (n *Node) Propose(data []byte, failed func(error)) {
	if err := n.DiskFull(); err != nil {
		failed(err)
		return
	}
	select {
	case n.propc <- proposal{data: data, failed: failed}:
		n.drainIfStopped()
	case <-n.donec:
		failed(ErrStopped)
	}
}

// drainIfStopped fails whatever is queued once the node has stopped: a
// proposal or read queued after the node's final drain would otherwise
// wait forever.
func (n *Node) drainIfStopped() {
	select {
	case <-n.donec:
		n.failQueued(ErrStopped)
	default:
	}
}

// ReadIndex asks for the commit index as of now, confirmed by a quorum;
// done is called with it once the local state machine has applied at least
// that far (the point a sync or a linearizable read may be answered).
func (n *Node) ReadIndex(done func(index uint64, err error)) {
	select {
	case n.readc <- readRequest{done: done}:
		n.drainIfStopped()
	case <-n.donec:
		done(0, ErrStopped)
	}
}

// Step hands a message received from another member to raft. It blocks
// while the node's queue is full, which slows the sender down.
func (n *Node) Step(m raftpb.Message) {
	select {
	case n.recvc <- m:
	case <-n.exited:
	}
}

// ReportUnreachable tells raft that a message to member id was lost, so
// the leader stops streaming to it until it answers again.
func (n *Node) ReportUnreachable(id uint64) {
	select {
	case n.reportc <- report{id: id}:
	default:
		// Reports are hints; raft notices a silent member anyway.
	}
}

// ReportLost tells the node that the connection to member id broke. When
// id leads, a follower does not wait for raft's election timeout (a
// tickTime) to suspect it: after a short random delay, unless it hears from
// the leader meanwhile, it calls an election at once, as a leadership
// transfer does, so that the others vote without waiting either. A leader
// killed outright is replaced in about the time it takes to notice its
// connections closing, as with ZooKeeper's followers.
func (n *Node) ReportLost(id uint64) {
	select {
	case n.reportc <- report{id: id, lost: true}:
	default:
	}
}

// CallElection makes this member call an election now, when it is a
// follower that knows no leader, rather than after raft's election
// timeout: for the members of a new ensemble started together, which
// have nothing to wait for once they are connected. With pre-vote, an
// election the others do not answer changes nothing.
func (n *Node) CallElection() {
	select {
	case n.reportc <- report{elect: true}:
	case <-n.exited:
	}
}

// ReportSnapshot tells raft that sending a snapshot to member id ended,
// failed or not.
func (n *Node) ReportSnapshot(id uint64, failed bool) {
	select {
	case n.reportc <- report{id: id, snapshot: true, snapshotErr: failed}:
	// The loop stops reading before it waits for the goroutines that
	// send snapshots, which report here.
	case <-n.exited:
	}
}

// Member is what the leader knows of another member's replication.
type Member struct {
	ID      uint64
	Learner bool   // an observer
	Match   uint64 // the last log index known to be on the member
	Lag     uint64 // committed entries the member is known to lack
	Synced  bool   // entries stream to it (not probing, not a snapshot)
	Sending bool   // a snapshot is being sent to it
	Active  bool   // heard from within an election timeout
}

// Members returns, while this node leads, the other members as of the
// last tick, by id; nil otherwise.
func (n *Node) Members() []Member {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.members)
}

// noteMembers records the leader's view of the other members.
func (n *Node) noteMembers() {
	var members []Member
	if n.rn.BasicStatus().RaftState == raft.StateLeader {
		st := n.rn.Status()
		for id, pr := range st.Progress {
			if id == n.cfg.ID {
				continue
			}
			members = append(members, Member{
				ID: id, Learner: pr.IsLearner, Match: pr.Match,
				Lag:     st.Commit - min(pr.Match, st.Commit),
				Synced:  pr.State == tracker.StateReplicate,
				Sending: pr.State == tracker.StateSnapshot,
				Active:  pr.RecentActive,
			})
		}
		slices.SortFunc(members, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	}
	n.mu.Lock()
	n.members = members
	n.mu.Unlock()
}

// addLearners has a leader add the configured learners its configuration
// lacks: observers are added by listing them, as in ZooKeeper. A learner
// never counts toward a quorum, so adding one is safe at any time. The
// proposal is repeated, now and then, until it is applied; raft itself
// refuses a second change while one is pending.
func (n *Node) addLearners() {
	if len(n.cfg.Learners) == 0 || n.rn.BasicStatus().RaftState != raft.StateLeader {
		return
	}
	n.learnerTicks++
	if n.learnerTicks < 2*n.cfg.ElectionTicks {
		return
	}
	n.learnerTicks = 0
	cur := n.rn.Status().Config
	for _, id := range n.cfg.Learners {
		if _, ok := cur.Learners[id]; ok {
			continue
		}
		if _, ok := cur.Voters.IDs()[id]; ok {
			continue
		}
		n.log.Info("adding an observer to the ensemble", "id", id)
		if err := n.rn.ProposeConfChange(raftpb.ConfChange{Type: raftpb.ConfChangeAddLearnerNode, NodeID: id}); err != nil {
			n.log.Warn("could not propose adding an observer", "id", id, "err", err)
		}
		return
	}
}

// Status is a node's raft state, for metrics and health checks.
type Status struct {
	Term    uint64 // the current term
	Commit  uint64 // the highest log index this node knows to be committed
	Applied uint64 // the highest log index applied to the state machine
	// LeaderChanges counts the times this node came to know a new
	// leader (itself included) since it started.
	LeaderChanges uint64
}

// Status returns the node's raft state as its goroutines last recorded
// it; the parts are read one at a time, not as one cut.
func (n *Node) Status() Status {
	return Status{
		Term:          n.status.term.Load(),
		Commit:        n.status.commit.Load(),
		Applied:       n.status.applied.Load(),
		LeaderChanges: n.status.leaderChanges.Load(),
	}
}

// Leader returns the id of the leader as this node knows it, 0 when none.
func (n *Node) Leader() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lead
}

// LeaderChanges signals when the leader as this node knows it (Leader)
// has changed, so that what depends on it need not poll. Signals
// coalesce: one may stand for several changes, and Leader says where they
// ended.
func (n *Node) LeaderChanges() <-chan struct{} { return n.leaderChanged }

// ForwardsLost signals when a message from this follower or learner to
// its leader was lost (the transport dropped it: no connection, or a full
// queue). Raft forwards proposals to the leader once and never again, so
// one that was lost will not commit, and nothing else tells: whoever waits
// for one must give up. Signals coalesce. The ReadIndex requests waiting
// then fail with ErrLeaderUnreachable.
func (n *Node) ForwardsLost() <-chan struct{} { return n.forwardLost }

// WaitLeader blocks until this node has been elected leader.
func (n *Node) WaitLeader(ctx context.Context) error {
	select {
	case <-n.leader:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.donec:
		return n.Err()
	}
}

// AwaitLeader blocks until this node knows of a leader, itself or another
// member.
func (n *Node) AwaitLeader(ctx context.Context) error {
	select {
	case <-n.known:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.donec:
		return n.Err()
	}
}

// IsLeader reports whether this node is the leader now.
func (n *Node) IsLeader() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state == raft.StateLeader
}

// Replayed is closed once the entries that were committed when the node
// started (its own log's) are applied: from then on the state machine is
// at least where it was before the restart.
func (n *Node) Replayed() <-chan struct{} { return n.replayed }

// HasLog reports whether this node holds anything of the log beyond the
// initial state every member of an ensemble starts from (index 1): it was
// sent entries, or restarted with some. A member that lost its data has
// not, whatever term it has reached on its own.
func (n *Node) HasLog() bool {
	last, _ := n.mem.LastIndex()
	return last > 1
}

// Err returns the error that stopped the node, if any.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// Done is closed when the node's goroutine has exited.
func (n *Node) Done() <-chan struct{} { return n.donec }

// Stop stops the node and waits for its goroutine to exit. It is safe to
// call more than once.
func (n *Node) Stop() {
	n.stopOnce.Do(func() { close(n.stopc) })
	<-n.donec
}

func (n *Node) fail(err error) {
	n.mu.Lock()
	if n.err == nil {
		n.err = err
	}
	n.mu.Unlock()
}

func (n *Node) run() {
	defer close(n.donec)
	defer n.cfg.Storage.Close()
	// A snapshot still being encoded or read for sending finishes (its
	// result is dropped) before the storage closes.
	defer n.snapWG.Wait()
	defer n.sendWG.Wait()
	// The storage goroutines finish what they are writing, and stop.
	defer n.storageWG.Wait()
	defer close(n.storageStop)
	defer close(n.exited)
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	var dropped []proposal
	for {
		select {
		case <-n.stopc:
			n.failPending(ErrStopped)
			return
		case <-ticker.C:
			n.rn.Tick()
			n.noteMembers()
			n.addLearners()
			n.handOff()
		case p := <-n.propc:
			dropped = n.proposeQueued(p, dropped)
		case <-n.localq.ready:
			for _, m := range n.localq.take() {
				if err := n.rn.Step(m); err != nil {
					n.log.Debug("dropped a storage response", "type", m.Type, "err", err)
				}
			}
		case c := <-n.confc:
			c.done <- *n.rn.ApplyConfChange(c.cc)
		case err := <-n.storageErr:
			if errors.Is(err, ErrStorageFailed) {
				n.log.Error("replication stopped: the disk failed a write, which is not tried again; a restart recovers what reached the disk", "err", err)
			} else {
				n.log.Error("replication stopped", "err", err)
			}
			n.fail(err)
			n.failPending(err)
			return
		case m := <-n.recvc:
			n.step(m)
			// Take every message already queued before the next Ready.
			n.drainReceived()
		case <-n.suspectC():
			n.campaignAgainst(n.suspect)
		case r := <-n.reportc:
			if r.elect {
				if st := n.rn.BasicStatus(); st.RaftState == raft.StateFollower && st.Lead == raft.None {
					n.log.Info("calling an election at once, as a new ensemble's first member", "term", st.Term)
					if err := n.rn.Campaign(); err != nil {
						n.log.Warn("cannot call an election", "err", err)
					}
				}
			} else if r.lost {
				// What the member sent before its connection broke was
				// handed to Step first, but may still wait in recvc: it
				// must not count as a sign of life after the loss.
				n.drainReceived()
				n.suspectLeader(r.id)
			} else if r.snapshot {
				status := raft.SnapshotFinish
				if r.snapshotErr {
					status = raft.SnapshotFailure
				}
				n.rn.ReportSnapshot(r.id, status)
			} else {
				n.rn.ReportUnreachable(r.id)
				if r.id == n.lead && n.state != raft.StateLeader {
					n.failReads(ErrLeaderUnreachable)
					select {
					case n.forwardLost <- struct{}{}:
					default:
					}
				}
			}
		case r := <-n.readc:
			// Every read queued now shares one ReadIndex: one round of
			// heartbeats confirms the leader for all of them.
			batch := []readRequest{r}
		reads:
			for range cap(n.readc) {
				select {
				case r := <-n.readc:
					batch = append(batch, r)
				default:
					break reads
				}
			}
			n.readSeq++
			ctx := fmt.Appendf(nil, "%d.%x.%d", n.cfg.ID, n.readEpoch, n.readSeq)
			n.pendingReads[string(ctx)] = batch
			n.rn.ReadIndex(ctx)
		}
		for _, p := range dropped {
			p.failed(raft.ErrProposalDropped)
		}
		dropped = dropped[:0]
		for n.rn.HasReady() {
			n.dispatch(n.rn.Ready())
		}
	}
}

// step hands a message from another member to raft. Messages from
// members that are not in the configuration, or stale ones, are dropped by
// raft itself.
func (n *Node) step(m raftpb.Message) {
	if n.suspect != 0 && m.From == n.suspect {
		// The leader is alive after all.
		n.clearSuspect()
	}
	if err := n.rn.Step(m); err != nil {
		n.log.Debug("dropped raft message", "type", m.Type, "from", m.From, "err", err)
	}
}

// drainReceived steps every message already received.
func (n *Node) drainReceived() {
	for range cap(n.recvc) {
		select {
		case m := <-n.recvc:
			n.step(m)
		default:
			return
		}
	}
}

// maxSuspectDelay bounds the random wait of a follower that lost its
// leader's connection before it calls an election: spread out, the
// followers rarely call theirs at the same moment and split the vote.
const maxSuspectDelay = 300 * time.Millisecond

// suspectLeader starts the wait before an election when the connection to
// the leader broke.
func (n *Node) suspectLeader(id uint64) {
	st := n.rn.BasicStatus()
	// With no leader known, an election another follower called may be
	// lost: this one must be ready to call the next (campaignAgainst).
	if id != st.Lead && st.Lead != raft.None || st.RaftState != raft.StateFollower || n.suspect != 0 {
		return
	}
	n.suspect = id
	n.suspectTimer = time.NewTimer(rand.N(maxSuspectDelay))
}

func (n *Node) suspectC() <-chan time.Time {
	if n.suspectTimer == nil {
		return nil
	}
	return n.suspectTimer.C
}

func (n *Node) clearSuspect() {
	if n.suspectTimer != nil {
		n.suspectTimer.Stop()
	}
	n.suspect, n.suspectTimer = 0, nil
}

// campaignAgainst calls an election if id still leads as far as this node
// knows, or if no member leads: another follower may have called an
// election first and lost it (its log was behind this one's), and nobody
// would call the next before an election timeout. It steps the message a
// leader sends to hand its leadership over: the election skips the
// pre-vote, and the other members vote although they heard from the
// leader within an election timeout.
func (n *Node) campaignAgainst(id uint64) {
	n.clearSuspect()
	st := n.rn.BasicStatus()
	if st.Lead != id && st.Lead != raft.None || st.RaftState != raft.StateFollower {
		return
	}
	n.log.Info("the leader's connection broke: calling an election", "leader", id, "term", st.Term)
	n.step(raftpb.Message{Type: raftpb.MsgTimeoutNow, From: id, To: n.cfg.ID, Term: st.Term})
}

// maxProposalBatch bounds the bytes of the proposals taken into one
// message; a single larger proposal still goes alone.
const maxProposalBatch = 1 << 20

// proposeQueued hands first and every proposal queued behind it to raft as
// one message. They share one fsync, and raft sends them on as one: one
// append per follower from a leader, one forwarded proposal from a
// follower, where proposing them one by one costs a message each. Raft
// takes or drops the message whole; the dropped proposals are appended to
// dropped.
func (n *Node) proposeQueued(first proposal, dropped []proposal) []proposal {
	batch := append(n.proposing[:0], first)
	size := len(first.data)
gather:
	for len(batch) < n.cfg.MaxBatch && size < maxProposalBatch {
		select {
		case p := <-n.propc:
			batch = append(batch, p)
			size += len(p.data)
		default:
			break gather
		}
	}
	// Raft keeps the entries (a follower's forwarded message is encoded
	// later): they are new for each message.
	ents := make([]raftpb.Entry, len(batch))
	for i, p := range batch {
		ents[i].Data = p.data
	}
	if err := n.rn.Step(raftpb.Message{Type: raftpb.MsgProp, From: n.cfg.ID, Entries: ents}); err != nil {
		dropped = append(dropped, batch...)
	}
	clear(batch)
	n.proposing = batch[:0]
	return dropped
}

// failQueued fails every proposal and read still queued. Safe from any
// goroutine: each queued item is taken out exactly once.
func (n *Node) failQueued(err error) {
	for {
		select {
		case p := <-n.propc:
			p.failed(err)
		case r := <-n.readc:
			r.done(0, err)
		default:
			return
		}
	}
}

// failReads fails the reads waiting for their ReadIndex. Called by run
// only.
func (n *Node) failReads(err error) {
	for k, batch := range n.pendingReads {
		for _, r := range batch {
			r.done(0, err)
		}
		delete(n.pendingReads, k)
	}
}

// failPending fails the queued work and the reads raft holds. Called by
// run only.
func (n *Node) failPending(err error) {
	n.failQueued(err)
	n.failReads(err)
	// applyLoop fails the reads it holds when it stops.
}

func (n *Node) dispatch(rd raft.Ready) {
	if !raft.IsEmptyHardState(rd.HardState) {
		n.status.term.Store(rd.HardState.Term)
		n.status.commit.Store(rd.HardState.Commit)
	}
	if rd.SoftState != nil {
		n.mu.Lock()
		changed := n.lead != rd.SoftState.Lead
		n.state, n.lead = rd.SoftState.RaftState, rd.SoftState.Lead
		n.mu.Unlock()
		if changed && rd.SoftState.Lead != raft.None {
			n.status.leaderChanges.Add(1)
		}
		if changed {
			n.failReads(ErrLeaderChanged)
			select {
			case n.leaderChanged <- struct{}{}:
			default:
			}
		}
		if rd.SoftState.Lead != raft.None && !n.knewLeader {
			n.knewLeader = true
			close(n.known)
		}
		if rd.SoftState.RaftState == raft.StateLeader && !n.wasLeader {
			n.wasLeader = true
			close(n.leader)
			n.log.Info("elected leader", "id", n.cfg.ID, "term", n.rn.Status().Term)
		}
	}
	// Storage work goes to the storage goroutines, in raft's order (the
	// append of a Ready before the apply); the messages to other members
	// go out now: a leader's appends reach the followers while it writes
	// them itself (raft thesis §10.2.1). What must wait for a write
	// (acknowledgements, votes) is in the storage message's responses.
	peers := rd.Messages
	for len(peers) > 0 && raft.IsLocalMsgTarget(peers[len(peers)-1].To) {
		peers = peers[:len(peers)-1]
	}
	n.send(peers)
	for _, m := range rd.Messages[len(peers):] {
		switch m.To {
		case raft.LocalAppendThread:
			n.appendq.push(appendTask{msg: m})
		case raft.LocalApplyThread:
			n.applyq.push(applyTask{msg: m})
		}
	}
	for _, rs := range rd.ReadStates {
		if batch, ok := n.pendingReads[string(rs.RequestCtx)]; ok {
			delete(n.pendingReads, string(rs.RequestCtx))
			// The reads may be answered once everything committed when
			// they arrived (rs.Index) is applied.
			n.applyq.push(applyTask{reads: batch, index: rs.Index})
		}
	}
}

// send hands messages to the transport, merged where they can be (see
// coalesce). A snapshot message leaves raft with the metadata only: its
// data is read from the snapshot file on a goroutine of its own, so the
// loop never waits for hundreds of megabytes.
func (n *Node) send(msgs []raftpb.Message) {
	if len(msgs) == 0 || n.cfg.Transport == nil {
		return
	}
	out := coalesce(msgs)
	if slices.ContainsFunc(msgs, isSnap) {
		out = slices.DeleteFunc(slices.Clone(out), isSnap)
	}
	for _, m := range msgs {
		if !isSnap(m) {
			continue
		}
		n.sendWG.Go(func() {
			if err := n.sendSnapshot(m); err != nil {
				n.log.Warn("cannot send a snapshot", "to", m.To, "index", m.Snapshot.Metadata.Index, "err", err)
				n.ReportSnapshot(m.To, true)
			}
		})
	}
	if len(out) > 0 {
		n.cfg.Transport.Send(out)
	}
}

func isSnap(m raftpb.Message) bool { return m.Type == raftpb.MsgSnap }

// sendSnapshot sends m with the data of its snapshot file: streamed from
// the file when the transport can, read whole into m otherwise.
func (n *Node) sendSnapshot(m raftpb.Message) error {
	r, err := n.cfg.Storage.OpenSnapshot(m.Snapshot.Metadata)
	if err != nil {
		return err
	}
	if st, ok := n.cfg.Transport.(SnapshotStreamer); ok {
		if sized, ok := r.(interface{ Size() int64 }); ok {
			st.SendSnapshot(m, r, sized.Size())
			return nil
		}
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	snap := *m.Snapshot
	snap.Data = data
	m.Snapshot = &snap
	n.cfg.Transport.Send([]raftpb.Message{m})
	return nil
}

// ReceiveSnapshot writes the data of a MsgSnap durably as it arrives from
// a member, before the message itself (its Snapshot.Data empty) is handed
// to Step: raft then installs a snapshot that is already on disk, and the
// state machine restores from the file. It runs on the caller's
// goroutine, beside the node's loop.
func (n *Node) ReceiveSnapshot(m raftpb.Message, data io.Reader) error {
	if m.Type != raftpb.MsgSnap || m.Snapshot == nil || m.Snapshot.Metadata.Index == 0 {
		return errors.New("replication: not a snapshot message")
	}
	_, err := n.cfg.Storage.WriteSnapshot(m.Snapshot.Metadata, func(w io.Writer) error {
		_, err := io.Copy(w, data)
		return err
	})
	return err
}

// restore replaces the state machine's state with snap's, read from its
// file when it was streamed there.
func (n *Node) restore(snap raftpb.Snapshot, streamed bool) error {
	if !streamed {
		return n.cfg.FSM.Restore(bytes.NewReader(snap.Data))
	}
	r, err := n.cfg.Storage.OpenSnapshot(snap.Metadata)
	if err != nil {
		return err
	}
	defer r.Close()
	return n.cfg.FSM.Restore(r)
}

// checkMembers compares the configured members with those the snapshot
// and the log record. They must be equal: members are not changed by
// editing the configuration, and a server that took its configuration's
// word would split from the others.
func checkMembers(cfg Config, meta raftpb.SnapshotMetadata, ents []raftpb.Entry) error {
	var recorded, configured members
	var err error
	if recorded.voters, recorded.learners, err = RecordedMembers(meta.ConfState, ents); err != nil {
		return err
	}
	for _, id := range cfg.Voters {
		configured.add(id, true)
	}
	for _, id := range cfg.Learners {
		configured.add(id, false)
	}
	slices.Sort(configured.voters)
	slices.Sort(configured.learners)
	if recorded.String() == configured.String() {
		return nil
	}
	if slices.Equal(recorded.voters, configured.voters) && !slices.ContainsFunc(recorded.learners, func(id uint64) bool {
		return !slices.Contains(configured.learners, id)
	}) {
		// Observers added to the configuration: the leader adds them.
		return nil
	}
	return fmt.Errorf("%w: the configuration lists %s, but this server's data records %s: voters cannot be changed by editing the configuration (observers can be added); restore the server lines the data was written with",
		ErrMembers, configured, recorded)
}

// RecordedMembers returns the voters and the learners a log records,
// sorted: those of the snapshot it starts from (cs), changed by the
// configuration changes among the entries after it, committed or not, as
// raft counts them.
func RecordedMembers(cs raftpb.ConfState, ents []raftpb.Entry) (voters, learners []uint64, err error) {
	isVoter := make(map[uint64]bool)
	for _, id := range cs.Voters {
		isVoter[id] = true
	}
	for _, id := range cs.Learners {
		isVoter[id] = false
	}
	for _, e := range ents {
		var cc raftpb.ConfChangeI
		switch e.Type {
		case raftpb.EntryConfChange:
			var c raftpb.ConfChange
			if err := c.Unmarshal(e.Data); err != nil {
				return nil, nil, fmt.Errorf("replication: configuration change at %d: %w", e.Index, err)
			}
			cc = c
		case raftpb.EntryConfChangeV2:
			var c raftpb.ConfChangeV2
			if err := c.Unmarshal(e.Data); err != nil {
				return nil, nil, fmt.Errorf("replication: configuration change at %d: %w", e.Index, err)
			}
			cc = c
		default:
			continue
		}
		for _, c := range cc.AsV2().Changes {
			switch c.Type {
			case raftpb.ConfChangeAddNode:
				isVoter[c.NodeID] = true
			case raftpb.ConfChangeAddLearnerNode:
				isVoter[c.NodeID] = false
			case raftpb.ConfChangeRemoveNode:
				delete(isVoter, c.NodeID)
			}
		}
	}
	for id, v := range isVoter {
		if v {
			voters = append(voters, id)
		} else {
			learners = append(learners, id)
		}
	}
	slices.Sort(voters)
	slices.Sort(learners)
	return voters, learners, nil
}

// ErrMembers is returned by Start when the configured members differ from
// the recorded ones.
var ErrMembers = errors.New("replication: the configured members are not the recorded ones")

// members is a set of voters and learners, printed sorted.
type members struct{ voters, learners []uint64 }

func (m *members) add(id uint64, voter bool) {
	if voter {
		m.voters = append(m.voters, id)
	} else {
		m.learners = append(m.learners, id)
	}
}

func (m members) String() string {
	ids := func(s []uint64) string {
		if len(s) == 0 {
			return "none"
		}
		return strings.Trim(fmt.Sprint(s), "[]")
	}
	return fmt.Sprintf("voters %s and observers %s", ids(m.voters), ids(m.learners))
}
