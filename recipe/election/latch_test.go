package election_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/election"
	"github.com/collie-io/collie/recipe/internal/recipetest"
)

var latchScenarios = []scenario{
	{"one-leader-at-a-time", testLatchContention},
	{"handover-in-line-order", testLatchHandover},
	{"predecessor-only-watches", func(e *env) { testPredecessorWatches(e, "/latch-herd", latchContender) }},
	{"expiry-hands-over", testLatchExpiry},
	{"reconnect-regains", testLatchReconnect},
	{"node-deleted", testLatchNodeDeleted},
	{"cancelled-start", testLatchCancelledStart},
	{"cancelled-await", testLatchCancelledAwait},
	{"client-closed", testLatchClientClosed},
}

// curatorLatchNode is how Curator's LeaderLatch names its nodes.
var curatorLatchNode = regexp.MustCompile(`/_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-latch-[0-9]{10}$`)

// startLatch starts a latch on c, closed when the test ends.
func (e *env) startLatch(c *client.Client, path, id string) *election.Latch {
	e.Helper()
	l := election.NewLatch(c, path, id)
	if err := l.Start(e.ctx); err != nil {
		e.Fatal(err)
	}
	e.Cleanup(func() { l.Close(context.Background()) })
	return l
}

func (e *env) await(l *election.Latch) *election.Term {
	e.Helper()
	term, err := l.Await(e.ctx)
	if err != nil {
		e.Fatalf("%s: %v", l.ID(), err)
	}
	return term
}

// succeeds checks that term is a leadership that came after before's: of
// another node, with a larger token.
func (e *env) succeeds(term, before *election.Term) {
	e.Helper()
	if term.Node() == before.Node() || term.Token() <= before.Token() {
		e.Errorf("term of %s with token %d does not succeed the one of %s with token %d",
			term.Node(), term.Token(), before.Node(), before.Token())
	}
}

func (e *env) close(l *election.Latch) {
	e.Helper()
	if err := l.Close(e.ctx); err != nil {
		e.Fatalf("%s: %v", l.ID(), err)
	}
}

// testLatchContention starts latches, each with its own session, all at
// once; each leader records its term and closes. Never two leaders at
// once, and the terms come in the order of the nodes, with growing tokens.
func testLatchContention(e *env) {
	const contenders = 5
	path := "/latch-contention"
	var (
		leaders atomic.Int32
		mu      sync.Mutex
		terms   []*election.Term
	)
	var latches []*election.Latch
	for i := range contenders {
		latches = append(latches, election.NewLatch(e.client(client.Config{}), path, strconv.Itoa(i)))
	}
	concurrently(e, contenders, func(i int) error {
		l := latches[i]
		if err := l.Start(e.ctx); err != nil {
			return err
		}
		term, err := l.Await(e.ctx)
		if err != nil {
			return err
		}
		if n := leaders.Add(1); n != 1 {
			return fmt.Errorf("%d leaders at once", n)
		}
		mu.Lock()
		terms = append(terms, term)
		mu.Unlock()
		leaders.Add(-1)
		if err := l.Close(e.ctx); err != nil {
			return err
		}
		if open(term.Lost()) {
			return errors.New("term not ended by Close")
		}
		return nil
	})
	if len(terms) != contenders {
		e.Fatalf("%d terms, want %d", len(terms), contenders)
	}
	var sequences []int
	var tokens []int64
	for _, term := range terms {
		sequences = append(sequences, sequence(e, term.Node()))
		tokens = append(tokens, term.Token())
	}
	if !increasing(sequences) || !increasing(tokens) {
		e.Errorf("terms out of line: sequences %v, tokens %v", sequences, tokens)
	}
	if left := e.nodes(path); len(left) != 0 {
		e.Errorf("nodes left after Close: %v", left)
	}
}

// testLatchHandover queues latches one after the other and closes the
// leader again and again: leadership goes down the line, the participant
// list says so, and the nodes are named as Curator names them.
func testLatchHandover(e *env) {
	const contenders = 4
	path := "/latch-handover/group"
	var latches []*election.Latch
	for i := range contenders {
		l := e.startLatch(e.client(client.Config{}), path, "p"+strconv.Itoa(i))
		if !curatorLatchNode.MatchString(l.Node()) {
			e.Errorf("node %s is not named as Curator names it", l.Node())
		}
		latches = append(latches, l)
	}
	var lastToken int64
	for i, l := range latches {
		next(e, l.Elected())
		term := l.Term()
		if term == nil || term.Token() <= lastToken || term.Node() != l.Node() {
			e.Fatalf("%s elected with term %+v after token %d; its node is %s", l.ID(), term, lastToken, l.Node())
		}
		lastToken = term.Token()
		for _, other := range latches[i+1:] {
			if other.IsLeader() || !open(other.Elected()) {
				e.Errorf("%s leads beside %s", other.ID(), l.ID())
			}
		}
		var want []election.Participant
		for j, other := range latches[i:] {
			want = append(want, election.Participant{ID: other.ID(), Node: other.Node(), Leader: j == 0})
		}
		if all, err := l.Participants(e.ctx); err != nil || !slices.Equal(all, want) {
			e.Errorf("participants %+v, %v; want %+v", all, err, want)
		}
		if p, err := l.Leader(e.ctx); err != nil || p != want[0] {
			e.Errorf("Leader = %+v, %v; want %+v", p, err, want[0])
		}
		e.close(l)
		if l.IsLeader() || l.Node() != "" {
			e.Errorf("closed latch leads (%v) or has node %q", l.IsLeader(), l.Node())
		}
	}
	if _, err := latches[0].Leader(e.ctx); !errors.Is(err, election.ErrNoLeader) {
		e.Errorf("Leader of an empty election = %v, want ErrNoLeader", err)
	}
}

// leaderAndFollower starts a latch that leads, on a client of the given
// session timeout behind a partition, then another that follows it.
func (e *env) leaderAndFollower(path string, timeout time.Duration) (c *client.Client, network *recipetest.Partition, leader *election.Latch, term *election.Term, follower *election.Latch) {
	e.Helper()
	c, network = e.partitioned(timeout)
	leader = e.startLatch(c, path, "leader")
	term = e.await(leader)
	follower = e.startLatch(e.client(client.Config{}), path, "follower")
	return c, network, leader, term, follower
}

// testLatchExpiry cuts the leader off until its session expires: its term
// ends at once, the next in line leads with a larger token, and the former
// leader, back with a new session, queues a new node at the end of the
// line, and leads once the other closes.
func testLatchExpiry(e *env) {
	path := "/latch-expiry"
	_, network, old, oldTerm, successor := e.leaderAndFollower(path, shortSession)

	network.Cut()
	next(e, oldTerm.Lost())
	term := e.await(successor)
	e.succeeds(term, oldTerm)
	if old.IsLeader() {
		e.Error("cut-off latch leads")
	}

	network.Heal()
	e.until("the old latch's new node", func() bool {
		n := old.Node()
		return n != "" && n != oldTerm.Node()
	})
	if got := e.nodes(path); len(got) != 2 || old.IsLeader() {
		e.Errorf("nodes %v, want the leader's and the old latch's new one behind it; old latch leads: %v", got, old.IsLeader())
	}
	e.close(successor)
	e.succeeds(e.await(old), term)
}

// testLatchReconnect changes the data of the leader's node, then breaks
// the leader's connection for less than its session timeout. The change
// leaves the term going on, with the node watched again. The broken
// connection ends the term at once, and leadership comes back, with the
// same node and token, once the session resumes; the follower never leads.
func testLatchReconnect(e *env) {
	path := "/latch-reconnect"
	c, network, leader, term, follower := e.leaderAndFollower(path, longSession)
	if _, err := e.observer.Set(e.ctx, term.Node(), []byte("changed"), client.AnyVersion); err != nil {
		e.Fatal(err)
	}
	// The Set fired the watch before it returned: a watch now is a new one.
	e.until("the leader to watch its node again", func() bool {
		return slices.Contains(e.watchers(path)[term.Node()], sessionHex(c))
	})
	if !open(term.Lost()) || leader.Term() != term {
		e.Fatal("term ended by a change of its node's data")
	}
	e.reconnect(c, network, leader, term)
	if follower.IsLeader() {
		e.Error("follower leads while the leader's session lives")
	}
}

// reconnect breaks the connection of c, whose latch l leads in term,
// checks that the term ends, then restores the connection and checks that
// l leads again in a new term of the same node, the session unchanged.
func (e *env) reconnect(c *client.Client, network *recipetest.Partition, l *election.Latch, term *election.Term) {
	e.Helper()
	session := c.SessionID()
	network.Cut()
	next(e, term.Lost())
	if l.IsLeader() {
		e.Error("latch leads while disconnected")
	}
	network.Heal()
	again := e.await(l)
	if c.SessionID() != session {
		e.Fatalf("session changed from 0x%x to 0x%x: the connection was broken for too long", session, c.SessionID())
	}
	if again == term || !open(again.Lost()) || again.Node() != term.Node() || again.Token() != term.Token() {
		e.Errorf("term after reconnection at %s token %d (live: %v), before %s token %d",
			again.Node(), again.Token(), open(again.Lost()), term.Node(), term.Token())
	}
}

// testLatchNodeDeleted deletes the leader's node from another session: the
// term ends, and the latch queues a new node and leads again, with a
// larger token.
func testLatchNodeDeleted(e *env) {
	l := e.startLatch(e.client(client.Config{}), "/latch-deleted", "only")
	first := e.await(l)
	if err := e.observer.Delete(e.ctx, first.Node(), client.AnyVersion); err != nil {
		e.Fatal(err)
	}
	next(e, first.Lost())
	e.succeeds(e.await(l), first)
}

// testLatchCancelledStart starts latches with deadlines short enough to end
// during the create: a Start that fails leaves no node and a closed latch,
// one that succeeds leaves a node until Close.
func testLatchCancelledStart(e *env) {
	path := "/latch-cancelled-start"
	c := e.client(client.Config{})
	failed := 0
	for i := range 20 {
		ctx, cancel := context.WithTimeout(e.ctx, time.Duration(i)*100*time.Microsecond)
		l := election.NewLatch(c, path, "l"+strconv.Itoa(i))
		err := l.Start(ctx)
		cancel()
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				e.Fatalf("Start = %v, want DeadlineExceeded", err)
			}
			failed++
			if _, err := l.Await(e.ctx); !errors.Is(err, election.ErrClosed) {
				e.Errorf("Await after a failed Start = %v, want ErrClosed", err)
			}
		}
		e.close(l)
	}
	e.Logf("%d of 20 Starts ran out of time", failed)
	e.until("every node to go", func() bool { return len(e.nodes(path)) == 0 })
}

// testLatchCancelledAwait cancels an Await behind a leader: the latch stays
// in line until Close, which removes its node.
func testLatchCancelledAwait(e *env) {
	path := "/latch-cancelled-await"
	leader := e.startLatch(e.client(client.Config{}), path, "leader")
	e.await(leader)
	follower := e.startLatch(e.client(client.Config{}), path, "follower")
	ctx, cancel := context.WithCancel(e.ctx)
	failed := make(chan error, 1)
	go func() {
		_, err := follower.Await(ctx)
		failed <- err
	}()
	cancel()
	if err := next(e, failed); !errors.Is(err, context.Canceled) {
		e.Fatalf("Await = %v, want context.Canceled", err)
	}
	if got := e.nodes(path); len(got) != 2 {
		e.Errorf("nodes %v after a cancelled Await, want both", got)
	}
	e.close(follower)
	e.close(leader)
	if got := e.nodes(path); len(got) != 0 {
		e.Errorf("nodes left after Close: %v", got)
	}
}

// testLatchClientClosed closes a leader's client: the term ends and Await
// reports the client's closing.
func testLatchClientClosed(e *env) {
	c := e.client(client.Config{})
	l := e.startLatch(c, "/latch-client-closed", "only")
	term := e.await(l)
	c.Close()
	next(e, term.Lost())
	e.until("Await to fail", func() bool {
		_, err := l.Await(e.ctx)
		return errors.Is(err, client.ErrClosed)
	})
}

// contender joins the election at path as participant i, on c, and
// returns a function that gives up leadership once it has it.
type contender func(e *env, c *client.Client, path string, i int) (release func())

func latchContender(e *env, c *client.Client, path string, i int) func() {
	l := e.startLatch(c, path, strconv.Itoa(i))
	return func() {
		e.await(l)
		e.close(l)
	}
}

// testPredecessorWatches queues participants one at a time and checks,
// with the server's list of watches, that each watches only the node just
// before its own (the leader only its own), and nobody the election's
// path: a leader that goes wakes one participant. Then it releases them in
// line order.
func testPredecessorWatches(e *env, path string, join contender) {
	const participants = 5
	var sessions []string
	var releases []func()
	for i := range participants {
		c := e.client(client.Config{})
		sessions = append(sessions, sessionHex(c))
		releases = append(releases, join(e, c, path, i))
		// One at a time, so that the line is in the order of sessions.
		e.until("the participant's node", func() bool { return len(e.nodes(path)) == i+1 })
	}
	line := e.nodes(path)
	slices.SortFunc(line, func(a, b string) int { return sequence(e, a) - sequence(e, b) })
	// Node i is watched by participant i+1, and the first also by the
	// leader itself.
	want := map[string][]string{}
	for i := range len(line) - 1 {
		want[path+"/"+line[i]] = []string{sessions[i+1]}
	}
	first := path + "/" + line[0]
	want[first] = append(want[first], sessions[0])
	slices.Sort(want[first])
	var got map[string][]string
	e.until("every participant's watch", func() bool {
		got = e.watchers(path)
		return fmt.Sprint(got) == fmt.Sprint(want)
	})
	for _, release := range releases {
		release()
	}
	if left := e.nodes(path); len(left) != 0 {
		e.Errorf("nodes left: %v", left)
	}
}
