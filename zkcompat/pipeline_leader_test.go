package zkcompat

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
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

// TestPipelinedHistoryAcrossLeaderChange is TestPipelinedHistory on a
// three-server ensemble whose leader is stopped, or cut off from the
// others, while the sessions pipeline: two sessions on the leader, one on
// each follower. A session whose connection ends resumes on a surviving
// server (the same session, presenting the zxid of its last reply, with
// no setWatches) and goes on pipelining. Runs alternate between stopping
// and isolating the leader, with reads local or linearizable; every other
// seed also runs on a ZooKeeper 3.8 ensemble whose leader is killed.
//
// What the stable runs check still holds for every reply that came, across
// the reconnect too (request order, zxids, prefixes, never back in time).
// Besides:
//
//   - no reply carries ConnectionLoss (nor SessionMoved): a request whose
//     outcome is unknown ends the connection; and no connection with
//     requests outstanding stays silent for zkwire.Timeout: the server
//     answers or ends the connection (a sync or linearizable read whose
//     ReadIndex raft dropped once hung until the next leader change);
//   - a write whose reply never came may have taken effect or not. To know
//     which, every write is a multi that also creates a sequential marker
//     named after the write's token (withMarker), and the markers are read
//     after the run: a lost write took effect at its marker's czxid, at
//     most once; an acknowledged one at the zxid of its reply, and a
//     refused one not at all. The history is then known whole, lost writes
//     included, and the checks of the stable runs apply to it;
//   - the writes of a session that took effect did so in the order they
//     were sent, lost ones included; a read shows none of its session's
//     later writes, lost or not, and may or may not show an earlier lost
//     one (it may still be on its way to the leader);
//   - no acknowledged write is lost: its marker is there, and a final read
//     of every node from a new session, once every session has had a last
//     write acknowledged, shows the state after the whole history;
//   - watch events as in the stable runs, with the tables a connection's:
//     watches end with their connection (nothing sets them again), and an
//     event due after the last reply on a connection that ended may be
//     missing; no event may come outside the window its write allows among
//     the replies of its connection.
//
// Limits: every write is a multi here (the pipeline treats all writes
// alike; the plain write opcodes are left to the stable runs). No watch
// is set again on a new connection, so no event is checked across a
// reconnect. The surviving servers seldom lag behind what a session has
// seen, so a server that took a session back while behind the zxid it
// presents would seldom be caught. A lost write that took effect only
// after the final read would be missed, but only by also breaking session
// order: each session's last write, acknowledged, comes after it.
//
// COLLIE_PIPELINE_SEEDS sets the number of runs, each on a new ensemble:
//
//	COLLIE_PIPELINE_SEEDS=40 go test -race -run TestPipelinedHistoryAcrossLeaderChange -timeout 1h ./zkcompat/
func TestPipelinedHistoryAcrossLeaderChange(t *testing.T) {
	seeds := pipeSeeds(t, 4)
	t.Run("zookeeper", func(t *testing.T) {
		// Every other seed: a ZooKeeper ensemble whose leader is
		// killed passes the checks too, which is what makes them sound.
		for _, seed := range seeds {
			if seed%2 == 0 {
				continue
			}
			t.Run(fmt.Sprintf("run=%d-kill", seed), func(t *testing.T) {
				e := zkref.StartEnsemble(t, 3, pipeZooKeeperOptions()...)
				var addrs []string
				for _, m := range e.Members() {
					addrs = append(addrs, m.Addr())
				}
				li := e.Leader()
				if li < 0 {
					t.Fatal("no member of the ZooKeeper ensemble says it leads")
				}
				defer nudgeZooKeeper(t, addrs)()
				runLeaderChangeHistory(t, addrs, li, func() { e.Kill(li) }, seed)
			})
		}
	})
	variants := []struct {
		name    string
		isolate bool
		opt     func(*config.Config)
	}{
		{"stop", false, nil},
		{"isolate", true, nil},
		{"stop-linearizable", false, func(c *config.Config) { c.LinearizableReads = true }},
		{"isolate-linearizable", true, func(c *config.Config) { c.LinearizableReads = true }},
	}
	t.Run("collie", func(t *testing.T) {
		for _, seed := range seeds {
			v := variants[(seed-1)%uint64(len(variants))]
			t.Run(fmt.Sprintf("run=%d-%s", seed, v.name), func(t *testing.T) {
				e := collietest.StartEnsemble(t, 3, 0, pipeCollieOptions(v.opt))
				lead := e.Leader()
				li := slices.Index(e.Servers(), lead)
				var addrs []string
				for _, s := range e.Servers() {
					addrs = append(addrs, s.Addr())
				}
				disrupt := lead.Stop
				if v.isolate {
					disrupt = func() { e.Isolate(li) }
				}
				runLeaderChangeHistory(t, addrs, li, disrupt, seed)
			})
		}
	})
}

// runLeaderChangeHistory runs the sessions, session i on server
// (leader+i)%3, calls disrupt once they have completed a number of rounds
// drawn from seed, while they go on, and checks what each received.
func runLeaderChangeHistory(t *testing.T, addrs []string, leader int, disrupt func(), seed uint64) {
	root := fmt.Sprintf("/hist%d", seed)
	markers := root + "-markers"
	var survivors []string
	for i, a := range addrs {
		if i != leader {
			survivors = append(survivors, a)
		}
	}
	setup, err := zkwire.Dial(survivors[0], 30000)
	if err != nil || setup.TimeOut <= 0 {
		t.Fatalf("setup session: %v", err)
	}
	defer setup.Close()
	for _, p := range []string{root, markers} {
		if code, err := setup.Do(proto.OpCreate, &proto.CreateRequest{Path: p, ACL: zkwire.OpenACL}, nil); err != nil || code != proto.OK {
			t.Fatalf("create %s: %v %v", p, code, err)
		}
	}
	var rootStat proto.ExistsResponse
	if code, err := setup.Do(proto.OpExists, &proto.ExistsRequest{Path: root}, &rootStat); err != nil || code != proto.OK {
		t.Fatalf("exists %s: %v %v", root, code, err)
	}
	sessions := make([]*histSession, histSessions)
	for i := range sessions {
		c, err := zkwire.Dial(addrs[(leader+i)%len(addrs)], 30000)
		if err != nil || c.TimeOut <= 0 {
			t.Fatalf("session %d: %v", i, err)
		}
		sessions[i] = &histSession{conn: c, name: fmt.Sprintf("s%d", i), id: c.Session}
		defer func() { sessions[i].conn.Close() }()
	}
	for _, s := range sessions {
		if _, _, err := s.conn.Call(proto.OpSync, &proto.SyncRequest{Path: root}); err != nil {
			t.Fatal(err)
		}
	}

	// The leader goes once the sessions have completed this many rounds
	// between them, while they go on.
	after := histSessions + rand.New(rand.NewPCG(seed, 1<<32)).IntN(histSessions*histRounds/2)
	rounds := make(chan struct{}, histSessions*histRounds)
	finished := make(chan struct{})
	disrupted := false
	var disrupter sync.WaitGroup
	disrupter.Go(func() {
		for range after {
			select {
			case <-rounds:
			case <-finished:
				return
			}
		}
		disrupt()
		disrupted = true
	})

	errs := make([]error, len(sessions))
	reconnects := make([]int, len(sessions))
	var endsMu sync.Mutex
	var ends []string  // why connections ended
	var hangs []string // connections that went silent
	defer func() {
		if t.Failed() {
			for _, e := range ends {
				t.Logf("connection ended: %s", e)
			}
		}
	}()
	// send sends a batch; when the connection ends first, the session
	// resumes elsewhere.
	send := func(i int, batch ...zkwire.Request) error {
		s := sessions[i]
		err := s.send(batch...)
		if err == nil {
			return nil
		}
		reconnects[i]++
		endsMu.Lock()
		ends = append(ends, fmt.Sprintf("%s on %s: %v", s.name, s.conn.NC.RemoteAddr(), err))
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// A request the server neither answers nor gives up on
			// (ending the connection) hangs a client for good.
			hangs = append(hangs, fmt.Sprintf("%s: %s neither answered nor ended the connection within %v: %v", s.name, s.conn.NC.RemoteAddr(), zkwire.Timeout, err))
		}
		endsMu.Unlock()
		if err := resumeHistSession(s, survivors, i); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		return errLost
	}
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			tokens := 0
			// A round lost with its connection is not counted: while
			// the servers elect a leader, a session may lose several.
			deadline := time.Now().Add(time.Minute)
			for done := 0; done < histRounds; {
				var batch []zkwire.Request
				for range 2 + rng.IntN(29) {
					tokens++
					token := fmt.Sprintf("%s-%d", s.name, tokens)
					op, req := histRequest(rng, root, token)
					if !isHistRead(op) {
						op, req = withMarker(op, req, markers, token)
					}
					batch = append(batch, zkwire.Request{Xid: s.conn.NextXid(), Op: op, Req: req})
				}
				switch err := send(i, batch...); {
				case err == nil:
					done++
					rounds <- struct{}{}
				case !errors.Is(err, errLost):
					errs[i] = err
					return
				case time.Now().After(deadline):
					errs[i] = fmt.Errorf("%s: %d rounds of %d done in a minute", s.name, done, histRounds)
					return
				}
			}
			// A last write acknowledged: the session's earlier lost writes
			// are settled before it, in session order.
			for end := 1; ; end++ {
				op, req := withMarker(proto.OpMulti, &proto.MultiRequest{}, markers, fmt.Sprintf("%s-end%d", s.name, end))
				err := send(i, zkwire.Request{Xid: s.conn.NextXid(), Op: op, Req: req})
				if err == nil {
					break
				}
				if !errors.Is(err, errLost) || time.Now().After(deadline) {
					errs[i] = fmt.Errorf("%s: no last write acknowledged: %w", s.name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(finished)
	disrupter.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if !disrupted {
		t.Fatal("the leader was never disrupted")
	}
	// Once every session has a sync's reply, it has received the events
	// of every write on its connection: they were all acknowledged before.
	deadline := time.Now().Add(time.Minute)
	for i, s := range sessions {
		for {
			err := send(i, zkwire.Request{Xid: s.conn.NextXid(), Op: proto.OpSync, Req: &proto.SyncRequest{Path: root}})
			if err == nil {
				break
			}
			if !errors.Is(err, errLost) || time.Now().After(deadline) {
				t.Fatalf("%s: last sync: %v", s.name, err)
			}
		}
	}

	final, markerZxids := readFinal(t, survivors[0], root, markers)
	h := &history{root: root, sessions: append(sessions, final), ids: map[int64]string{}, markers: markers, markerZxids: markerZxids}
	lostWrites, lostReqs, events := 0, 0, 0
	for _, s := range h.sessions {
		h.ids[s.id] = s.name
		for j := range s.lost {
			lostReqs++
			if !isHistRead(s.reqs[j].Op) {
				lostWrites++
			}
		}
		for _, f := range s.frames {
			if f.Header.Xid == proto.XidNotification {
				events++
			}
		}
	}
	problems := h.check(rootStat.Stat)
	lostApplied := 0
	for _, txn := range h.txns {
		if txn.lost {
			lostApplied++
		}
	}
	t.Logf("disrupted after %d rounds; reconnects per session %v; %d requests lost with their connection, %d of them writes, %d of which took effect; %d writes took effect in all; %d events",
		after, reconnects, lostReqs, lostWrites, lostApplied, len(h.txns), events)
	for _, problem := range slices.Concat(hangs, problems) {
		t.Error(problem)
	}
}

// errLost says a connection ended before every reply of a batch came, and
// the session resumed on another connection.
var errLost = errors.New("connection lost; session resumed")

// resumeHistSession connects s again, to one of addrs, starting with
// addrs[first%len(addrs)], until one takes the session: a server without a
// leader, or behind what the session has seen, closes the connection, and
// the next is tried. A server that says the session expired fails the run.
func resumeHistSession(s *histSession, addrs []string, first int) error {
	s.conn.Close()
	// As a ZooKeeper client, a while before connecting again: a server
	// that takes the session back before it knows the new leader ends
	// the connection at the next write.
	time.Sleep(rand.N(50 * time.Millisecond))
	deadline := time.Now().Add(time.Minute)
	var last error
	for try := 0; time.Now().Before(deadline); try++ {
		c, err := s.conn.Resume(addrs[(first+try)%len(addrs)], s.lastZxid)
		if err != nil {
			last = err
			// A backoff, not a wait for a condition: the next server
			// is asked at once, the same one again after a while.
			if (try+1)%len(addrs) == 0 {
				time.Sleep(20 * time.Millisecond)
			}
			continue
		}
		if c.TimeOut <= 0 {
			c.Close()
			return fmt.Errorf("%s refused the session as expired after the leader change", c.NC.RemoteAddr())
		}
		s.conn = c
		s.epoch++
		return nil
	}
	return fmt.Errorf("no server took the session back within a minute: %v", last)
}

// readFinal reads, through a new session on addr, every node of the run:
// as a final session, whose reads must show the whole history, and the
// markers, whose czxids it returns by token.
func readFinal(t *testing.T, addr, root, markers string) (*histSession, map[string][]int64) {
	c, err := zkwire.Dial(addr, 30000)
	if err != nil || c.TimeOut <= 0 {
		t.Fatalf("final session: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if _, _, err := c.Call(proto.OpSync, &proto.SyncRequest{Path: root}); err != nil {
		t.Fatalf("final sync: %v", err)
	}
	final := &histSession{conn: c, name: "final", id: c.Session, final: true}
	var reads []zkwire.Request
	read := func(op proto.OpCode, req proto.Record) {
		reads = append(reads, zkwire.Request{Xid: c.NextXid(), Op: op, Req: req})
	}
	read(proto.OpGetChildren2, &proto.GetChildren2Request{Path: root})
	read(proto.OpGetChildren2, &proto.GetChildren2Request{Path: root + "/a"})
	read(proto.OpGetData, &proto.GetDataRequest{Path: root})
	for _, name := range histNames {
		read(proto.OpGetData, &proto.GetDataRequest{Path: root + "/" + name})
	}
	if err := final.send(reads...); err != nil {
		t.Fatalf("final reads: %v", err)
	}
	var list proto.GetChildren2Response
	if code, err := c.Do(proto.OpGetChildren2, &proto.GetChildren2Request{Path: markers}, &list); err != nil || code != proto.OK {
		t.Fatalf("list %s: %v %v", markers, code, err)
	}
	var stats []zkwire.Request
	for _, name := range list.Children {
		stats = append(stats, zkwire.Request{Xid: c.NextXid(), Op: proto.OpExists, Req: &proto.ExistsRequest{Path: markers + "/" + name}})
	}
	frames, err := c.Pipeline(stats...)
	if err != nil {
		t.Fatalf("markers: %v", err)
	}
	zxids := map[string][]int64{}
	for i, f := range frames {
		var st proto.ExistsResponse
		if f.Header.Err != proto.OK {
			t.Fatalf("exists %s: %v", list.Children[i], f.Header.Err)
		}
		if err := proto.Unmarshal(f.Body, &st); err != nil {
			t.Fatal(err)
		}
		name := list.Children[i]
		token := name[:max(0, strings.LastIndex(name, "-"))]
		zxids[token] = append(zxids[token], st.Stat.Czxid)
	}
	return final, zxids
}
