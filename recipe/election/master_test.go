package election_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/election"
)

var masterScenarios = []scenario{
	{"one-master-at-a-time", testMasterContention},
	{"expiry-hands-over", testMasterExpiry},
	{"reconnect-keeps-the-node", testMasterReconnect},
	{"cancelled-campaign", testMasterCancel},
	{"watch-who-is-master", testMasterWatch},
}

// testMasterContention runs contenders, each with its own session, that
// campaign at once; each master checks what everyone reads, then resigns.
// Never two masters at once, each with a larger token than the last, and
// the node gone at the end.
func testMasterContention(e *env) {
	const contenders = 4
	path := "/master-contention/master"
	reader := election.NewMaster(e.observer, path, nil)
	var (
		masters atomic.Int32
		mu      sync.Mutex
		tokens  []int64
	)
	var clients []*client.Client
	for range contenders {
		clients = append(clients, e.client(client.Config{}))
	}
	concurrently(e, contenders, func(i int) error {
		data := fmt.Sprintf("m%d", i)
		m := election.NewMaster(clients[i], path, []byte(data))
		term, err := m.Campaign(e.ctx)
		if err != nil {
			return err
		}
		var failures []error
		if n := masters.Add(1); n != 1 {
			failures = append(failures, fmt.Errorf("%d masters at once", n))
		}
		info, ok, err := reader.Current(e.ctx)
		if want := (election.Info{Data: []byte(data), Session: clients[i].SessionID(), Token: term.Token()}); err != nil || !ok || fmt.Sprint(info) != fmt.Sprint(want) {
			failures = append(failures, fmt.Errorf("master %s reads as %+v, %v, %v; want %+v", data, info, ok, err, want))
		}
		mu.Lock()
		tokens = append(tokens, term.Token())
		mu.Unlock()
		masters.Add(-1)
		if err := m.Resign(e.ctx); err != nil || open(term.Lost()) {
			failures = append(failures, fmt.Errorf("Resign = %v; term ended: %v", err, !open(term.Lost())))
		}
		return errors.Join(failures...)
	})
	if len(tokens) != contenders || !increasing(tokens) {
		e.Errorf("tokens of the masters %v: want %d, each larger than the last", tokens, contenders)
	}
	if _, ok, err := reader.Current(e.ctx); ok || err != nil {
		e.Errorf("a master after every one resigned (%v, %v)", ok, err)
	}
}

// testMasterExpiry cuts the master off until its session expires: its
// term ends at once, and a waiting contender becomes master, with a larger
// token, as everyone reads.
func testMasterExpiry(e *env) {
	path := "/master-expiry"
	c, network := e.partitioned(shortSession)
	old, err := election.NewMaster(c, path, []byte("old")).Campaign(e.ctx)
	if err != nil {
		e.Fatal(err)
	}
	successor := election.NewMaster(e.client(client.Config{}), path, []byte("successor"))
	elected := make(chan *election.Term, 1)
	go func() {
		term, err := successor.Campaign(e.ctx)
		if err != nil {
			e.Error(err)
		}
		elected <- term
	}()

	network.Cut()
	next(e, old.Lost())
	term := next(e, elected)
	if term.Token() <= old.Token() {
		e.Errorf("successor's token %d not larger than the old master's %d", term.Token(), old.Token())
	}
	info, ok, err := successor.Current(e.ctx)
	if err != nil || !ok || string(info.Data) != "successor" || info.Token != term.Token() {
		e.Errorf("master reads as %+v, %v, %v; want the successor", info, ok, err)
	}
	network.Heal()
}

// testMasterReconnect breaks the master's connection for less than its
// session timeout: the term ends, and a new Campaign finds the node still
// its own and returns at once with the same token.
func testMasterReconnect(e *env) {
	c, network := e.partitioned(longSession)
	m := election.NewMaster(c, "/master-reconnect", []byte("me"))
	first, err := m.Campaign(e.ctx)
	if err != nil {
		e.Fatal(err)
	}
	if again, err := m.Campaign(e.ctx); err != nil || again != first {
		e.Fatalf("second Campaign = %v, %v; want the current term", again, err)
	}
	session := c.SessionID()
	network.Cut()
	next(e, first.Lost())
	network.Heal()
	second, err := m.Campaign(e.ctx)
	if err != nil {
		e.Fatal(err)
	}
	if c.SessionID() != session {
		e.Fatalf("session changed from 0x%x to 0x%x: the connection was broken for too long", session, c.SessionID())
	}
	if second == first || second.Token() != first.Token() || !open(second.Lost()) {
		e.Errorf("after reconnection term %p token %d; before %p token %d", second, second.Token(), first, first.Token())
	}
	if err := m.Resign(e.ctx); err != nil {
		e.Fatal(err)
	}
	if _, ok, _ := m.Current(e.ctx); ok {
		e.Error("node left after Resign")
	}
}

// testMasterCancel cancels a Campaign waiting behind a master, which
// returns the context's error, and campaigns with deadlines short enough
// to end during the create: a failed Campaign leaves no node.
func testMasterCancel(e *env) {
	path := "/master-cancel"
	holder := election.NewMaster(e.client(client.Config{}), path, []byte("holder"))
	if _, err := holder.Campaign(e.ctx); err != nil {
		e.Fatal(err)
	}
	waiter := election.NewMaster(e.client(client.Config{}), path, []byte("waiter"))
	ctx, cancel := context.WithTimeout(e.ctx, 50*time.Millisecond)
	_, err := waiter.Campaign(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		e.Fatalf("Campaign behind a master = %v, want DeadlineExceeded", err)
	}
	if err := holder.Resign(e.ctx); err != nil {
		e.Fatal(err)
	}

	failed := 0
	for i := range 20 {
		ctx, cancel := context.WithTimeout(e.ctx, time.Duration(i)*100*time.Microsecond)
		_, err := waiter.Campaign(ctx)
		cancel()
		switch {
		case err == nil:
			if err := waiter.Resign(e.ctx); err != nil {
				e.Fatal(err)
			}
		case errors.Is(err, context.DeadlineExceeded):
			failed++
			e.until("no master after a failed Campaign", func() bool { return !exists(e, path) })
		default:
			e.Fatalf("Campaign = %v, want DeadlineExceeded", err)
		}
	}
	e.Logf("%d of 20 Campaigns ran out of time", failed)
}

func exists(e *env, path string) bool {
	e.Helper()
	ok, _, err := e.observer.Exists(e.ctx, path)
	if err != nil {
		e.Fatal(err)
	}
	return ok
}

// testMasterWatch follows who is master with CurrentW: told when a master
// is elected and when it resigns.
func testMasterWatch(e *env) {
	path := "/master-watch"
	observer := election.NewMaster(e.observer, path, nil)
	_, ok, changed, err := observer.CurrentW(e.ctx)
	if err != nil || ok {
		e.Fatalf("CurrentW before any master = %v, %v", ok, err)
	}
	m := election.NewMaster(e.client(client.Config{}), path, []byte("boss"))
	term, err := m.Campaign(e.ctx)
	if err != nil {
		e.Fatal(err)
	}
	if ev := next(e, changed); ev.Type != client.EventNodeCreated {
		e.Errorf("event %v, want NodeCreated", ev)
	}
	info, ok, changed, err := observer.CurrentW(e.ctx)
	if err != nil || !ok || string(info.Data) != "boss" || info.Token != term.Token() {
		e.Fatalf("CurrentW = %+v, %v, %v; want boss", info, ok, err)
	}
	if err := m.Resign(e.ctx); err != nil {
		e.Fatal(err)
	}
	if ev := next(e, changed); ev.Type != client.EventNodeDeleted {
		e.Errorf("event %v, want NodeDeleted", ev)
	}
}
