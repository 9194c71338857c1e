package election_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/election"
)

var selectorScenarios = []scenario{
	{"turns-with-requeue", testSelectorTurns},
	{"predecessor-only-watches", func(e *env) { testPredecessorWatches(e, "/selector-herd", selectorContender) }},
	{"loss-cancels-the-leader", testSelectorLoss},
	{"cancelled-while-waiting", testSelectorCancel},
}

// curatorLockNode is how Curator's InterProcessMutex, and so its
// LeaderSelector, names its nodes.
var curatorLockNode = regexp.MustCompile(`/_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-[0-9]{10}$`)

// testSelectorTurns runs selectors with Run, each on its own session,
// until they have taken a number of turns: never two leaders at once,
// every turn with a larger token than the one before, nodes named as
// Curator names them, and no node left once every Run has returned.
func testSelectorTurns(e *env) {
	const selectors, turns = 4, 12
	path := "/selector-turns"
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	var (
		leaders atomic.Int32
		mu      sync.Mutex
		tokens  []int64
	)
	var all []*election.Selector
	for i := range selectors {
		all = append(all, election.NewSelector(e.client(client.Config{}), path, strconv.Itoa(i)))
	}
	concurrently(e, selectors, func(i int) error {
		s := all[i]
		var failures []error
		err := s.Run(ctx, func(ctx context.Context, term *election.Term) error {
			if n := leaders.Add(1); n != 1 {
				failures = append(failures, fmt.Errorf("%d leaders at once", n))
			}
			defer leaders.Add(-1)
			if !s.IsLeader() || !curatorLockNode.MatchString(term.Node()) {
				failures = append(failures, fmt.Errorf("leads (IsLeader %v) with node %s, not named as Curator names it", s.IsLeader(), term.Node()))
			}
			mu.Lock()
			defer mu.Unlock()
			if tokens = append(tokens, term.Token()); len(tokens) == turns {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			failures = append(failures, fmt.Errorf("Run = %v, want context.Canceled", err))
		}
		if s.IsLeader() {
			failures = append(failures, errors.New("IsLeader after Run"))
		}
		return errors.Join(failures...)
	})
	if len(tokens) < turns || !increasing(tokens) {
		e.Errorf("tokens of the turns %v: want at least %d, each larger than the last", tokens, turns)
	}
	if left := e.nodes(path); len(left) != 0 {
		e.Errorf("nodes left after Run: %v", left)
	}
}

// selectorContender joins with Lead, in a goroutine, whose function
// returns when released.
func selectorContender(e *env, c *client.Client, path string, i int) func() {
	s := election.NewSelector(c, path, strconv.Itoa(i))
	leading := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Lead(e.ctx, func(ctx context.Context, term *election.Term) error {
			close(leading)
			<-release
			return nil
		})
	}()
	return func() {
		next(e, leading)
		close(release)
		if err := next(e, done); err != nil {
			e.Errorf("Lead of %d: %v", i, err)
		}
	}
}

// testSelectorLoss cuts a leader off until its session expires: its
// function's context is cancelled with ErrLost as the cause, Lead says
// leadership was lost, and the next in line leads with a larger token.
func testSelectorLoss(e *env) {
	path := "/selector-loss"
	c, network := e.partitioned(shortSession)
	first := election.NewSelector(c, path, "first")
	firstTerm := make(chan *election.Term, 1)
	cause := make(chan error, 1)
	firstDone := make(chan error, 1)
	go func() {
		firstDone <- first.Lead(e.ctx, func(ctx context.Context, term *election.Term) error {
			firstTerm <- term
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		})
	}()
	old := next(e, firstTerm)

	second := election.NewSelector(e.client(client.Config{}), path, "second")
	secondTerm := make(chan *election.Term, 1)
	secondDone := make(chan error, 1)
	go func() {
		secondDone <- second.Lead(e.ctx, func(ctx context.Context, term *election.Term) error {
			secondTerm <- term
			return nil
		})
	}()
	e.until("the second selector in line", func() bool {
		all, err := second.Participants(e.ctx)
		return err == nil && len(all) == 2 && all[0].ID == "first" && all[0].Leader && all[1].ID == "second"
	})
	if p, err := second.Leader(e.ctx); err != nil || p.ID != "first" || p.Node != old.Node() {
		e.Errorf("Leader = %+v, %v; want first at %s", p, err, old.Node())
	}

	network.Cut()
	if err := next(e, cause); !errors.Is(err, election.ErrLost) {
		e.Errorf("leader's context ended with cause %v, want ErrLost", err)
	}
	if err := next(e, firstDone); !errors.Is(err, election.ErrLost) || !errors.Is(err, context.Canceled) {
		e.Errorf("Lead = %v, want ErrLost and the function's context.Canceled", err)
	}
	if first.IsLeader() {
		e.Error("IsLeader after Lead returned")
	}
	e.succeeds(next(e, secondTerm), old)
	if err := next(e, secondDone); err != nil {
		e.Errorf("second Lead: %v", err)
	}
	network.Heal()
}

// testSelectorCancel cancels a Lead waiting behind a leader: it returns the
// context's error without running its function, and leaves no node.
func testSelectorCancel(e *env) {
	path := "/selector-cancel"
	release := selectorContender(e, e.client(client.Config{}), path, 0)
	e.until("the leader's node", func() bool { return len(e.nodes(path)) == 1 })

	ctx, cancel := context.WithCancel(e.ctx)
	waiter := election.NewSelector(e.client(client.Config{}), path, "waiter")
	done := make(chan error, 1)
	go func() {
		done <- waiter.Lead(ctx, func(context.Context, *election.Term) error {
			return errors.New("function ran without leadership")
		})
	}()
	e.until("the waiter's node", func() bool { return len(e.nodes(path)) == 2 })
	cancel()
	if err := next(e, done); !errors.Is(err, context.Canceled) {
		e.Fatalf("Lead = %v, want context.Canceled", err)
	}
	if got := e.nodes(path); len(got) != 1 {
		e.Errorf("nodes %v after a cancelled Lead returned, want the leader's only", got)
	}
	release()
	if left := e.nodes(path); len(left) != 0 {
		e.Errorf("nodes left: %v", left)
	}
}
