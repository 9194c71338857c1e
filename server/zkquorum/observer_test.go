package zkquorum_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/zkquorum"
	"github.com/go-zookeeper/zk"
)

// observerID is the id the ensembles list as server.4=...:observer.
const observerID = 4

// tick is the ensembles' tickTime: short enough for a quick election, long
// enough that a loaded machine does not miss a syncLimit.
const tick = time.Second

// testTimeout bounds each test's waits after its ensemble runs.
const testTimeout = 60 * time.Second

func startEnsemble(t *testing.T, opts ...zkref.Option) *zkref.Ensemble {
	t.Helper()
	opts = append([]zkref.Option{zkref.WithTickTime(tick), zkref.WithObserver(observerID), zkref.WithJVMArgs("-Xmx128m")}, opts...)
	return zkref.StartEnsemble(t, 3, opts...)
}

func observerConfig(t *testing.T, e *zkref.Ensemble) zkquorum.Config {
	initLimit, syncLimit := e.Limits()
	var servers []zkquorum.Server
	for i, addr := range e.QuorumAddrs() {
		servers = append(servers, zkquorum.Server{ID: int64(i + 1), Addr: addr})
	}
	return zkquorum.Config{
		ServerID:  observerID,
		Servers:   servers,
		TickTime:  tick,
		InitLimit: initLimit,
		SyncLimit: syncLimit,
		Logger:    slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
}

// A recorder applies a Follower's events the way an observer would, keeping
// them for the test to inspect: it reads every snapshot to its end.
type recorder struct {
	mu     sync.Mutex
	cond   *sync.Cond
	events []zkquorum.Event
	snaps  [][]byte // payload of each EventSnapshot, in order
	err    error    // Next's error, which ends the recording
}

func record(t *testing.T, f *zkquorum.Follower) *recorder {
	r := &recorder{}
	r.cond = sync.NewCond(&r.mu)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() {
		for {
			ev, err := f.Next(ctx)
			var payload []byte
			if err == nil && ev.Kind == zkquorum.EventSnapshot {
				payload, err = io.ReadAll(ev.Snapshot)
				ev.Snapshot = nil
			}
			r.mu.Lock()
			if err != nil {
				r.err = err
			} else {
				r.events = append(r.events, ev)
				if ev.Kind == zkquorum.EventSnapshot {
					r.snaps = append(r.snaps, payload)
				}
			}
			r.cond.Broadcast()
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	})
	return r
}

// waitFor waits until cond holds for the events so far, failing t when the
// recording ends first or testTimeout passes.
func (r *recorder) waitFor(t *testing.T, what string, cond func([]zkquorum.Event) bool) []zkquorum.Event {
	t.Helper()
	timer := time.AfterFunc(testTimeout, func() {
		r.mu.Lock()
		if r.err == nil {
			r.err = fmt.Errorf("timed out after %v", testTimeout)
		}
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer timer.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for !cond(r.events) {
		if r.err != nil {
			t.Fatalf("waiting for %s: %v; events: %s", what, r.err, summarize(r.events))
		}
		r.cond.Wait()
	}
	return append([]zkquorum.Event(nil), r.events...)
}

func summarize(events []zkquorum.Event) string {
	var b strings.Builder
	for _, ev := range events {
		fmt.Fprintf(&b, " %v", ev.Kind)
		if ev.Kind == zkquorum.EventTxn {
			fmt.Fprintf(&b, "(%#x %v)", ev.Zxid, ev.Txn.Header.Type)
		} else if ev.Zxid != 0 {
			fmt.Fprintf(&b, "(%#x)", ev.Zxid)
		}
	}
	return b.String()
}

func hasKind(kind zkquorum.EventKind, n int) func([]zkquorum.Event) bool {
	return func(events []zkquorum.Event) bool {
		seen := 0
		for _, ev := range events {
			if ev.Kind == kind {
				seen++
			}
		}
		return seen >= n
	}
}

func lastTxnIs(zxid int64) func([]zkquorum.Event) bool {
	return func(events []zkquorum.Event) bool {
		for i := len(events) - 1; i >= 0; i-- {
			if events[i].Kind == zkquorum.EventTxn {
				return events[i].Zxid >= zxid
			}
		}
		return false
	}
}

// follow starts a Follower of e from an empty state, recording its events,
// and waits for its first sync.
func follow(t *testing.T, e *zkref.Ensemble) (*zkquorum.Follower, *recorder) {
	t.Helper()
	f, err := zkquorum.NewFollower(observerConfig(t, e), 0)
	if err != nil {
		t.Fatal(err)
	}
	rec := record(t, f)
	rec.waitFor(t, "the sync", hasKind(zkquorum.EventUpToDate, 1))
	return f, rec
}

func connectClient(t *testing.T, servers string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(strings.Split(servers, ","), 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatalf("zk.Connect: %v", err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// quiet drops the ZooKeeper client's log, which would outlive the test.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// createPath returns the path of a CreateTxn, the first field after the
// TxnHeader.
func createPath(t *testing.T, txn zkquorum.Txn) string {
	t.Helper()
	d := proto.NewDecoder(txn.Data[txnHeaderSize:])
	path := d.String()
	if err := d.Err(); err != nil {
		t.Fatalf("CreateTxn of %#x: %v", txn.Header.Zxid, err)
	}
	return path
}

const txnHeaderSize = 32

func zxidFollows(prev, next int64) bool {
	if next == prev+1 {
		return true
	}
	// A new epoch starts its counter again; its zxid epoch<<32 has no txn.
	return next>>32 > prev>>32 && next&0xffffffff == 1
}

func TestObserverSnapshotThenInforms(t *testing.T) {
	e := startEnsemble(t, zkref.WithJVMArgs("-Dzookeeper.forceSnapshotSync=true"))
	client := connectClient(t, e.ConnectString())
	acl := zk.WorldACL(zk.PermAll)
	if _, err := client.Create("/observed", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := client.Create(fmt.Sprintf("/observed/before-%d", i), []byte("in the snapshot"), 0, acl); err != nil {
			t.Fatal(err)
		}
	}

	_, rec := follow(t, e)
	events := rec.waitFor(t, "the sync", hasKind(zkquorum.EventUpToDate, 1))
	if events[0].Kind != zkquorum.EventSnapshot {
		t.Fatalf("first event is %v, want a snapshot (forceSnapshotSync); events:%s", events[0].Kind, summarize(events))
	}
	snapZxid := events[0].Zxid
	for i := range 3 {
		if !bytes.Contains(rec.snaps[0], []byte(fmt.Sprintf("/observed/before-%d", i))) {
			t.Errorf("snapshot payload lacks /observed/before-%d", i)
		}
	}
	up := events[len(events)-1]
	if !strings.Contains(up.Config, fmt.Sprintf("server.%d=", observerID)) {
		t.Errorf("NEWLEADER config %q does not list the observer", up.Config)
	}

	sessionID := client.SessionID()
	var want []proto.OpCode
	for i := range 10 {
		if _, err := client.Create(fmt.Sprintf("/observed/after-%d", i), []byte(strconv.Itoa(i)), 0, acl); err != nil {
			t.Fatal(err)
		}
		want = append(want, proto.OpCreate)
	}
	if err := client.Delete("/observed/after-0", -1); err != nil {
		t.Fatal(err)
	}
	want = append(want, proto.OpDelete)
	stat, err := client.Set("/observed", []byte("last"), -1)
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, proto.OpSetData)

	events = rec.waitFor(t, fmt.Sprintf("txn %#x", stat.Mzxid), lastTxnIs(stat.Mzxid))
	prev := snapZxid
	var got []proto.OpCode
	for _, ev := range events[1:] {
		if ev.Kind != zkquorum.EventTxn {
			continue
		}
		if !zxidFollows(prev, ev.Zxid) {
			t.Errorf("txn %#x after %#x: not contiguous", ev.Zxid, prev)
		}
		prev = ev.Zxid
		if ev.Txn.Header.ClientID == sessionID {
			got = append(got, ev.Txn.Header.Type)
		}
	}
	if prev != stat.Mzxid {
		t.Errorf("last txn %#x, want the setData's mzxid %#x", prev, stat.Mzxid)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("txn types of the client's session after the sync = %v, want %v", got, want)
	}

}

// findTxn returns the first txn of the session with the given cxid.
func findTxn(sessionID int64, cxid int32) func([]zkquorum.Event) bool {
	return func(events []zkquorum.Event) bool {
		for _, ev := range events {
			if ev.Kind == zkquorum.EventTxn && ev.Txn.Header.ClientID == sessionID && ev.Txn.Header.Cxid == cxid {
				return true
			}
		}
		return false
	}
}

func txnOf(events []zkquorum.Event, sessionID int64, cxid int32) zkquorum.Txn {
	for _, ev := range events {
		if ev.Kind == zkquorum.EventTxn && ev.Txn.Header.ClientID == sessionID && ev.Txn.Header.Cxid == cxid {
			return ev.Txn
		}
	}
	return zkquorum.Txn{}
}

func TestObserverForwardsRequests(t *testing.T) {
	e := startEnsemble(t)
	f, rec := follow(t, e)

	// A session id as a ZooKeeper server makes them: its own id in the top
	// byte.
	sessionID := int64(observerID)<<56 | time.Now().UnixMilli()&(1<<40-1)
	timeout := 20 * tick
	body := binary.BigEndian.AppendUint32(nil, uint32(timeout.Milliseconds()))
	if err := f.Forward(zkquorum.Request{SessionID: sessionID, Cxid: 0, Type: proto.OpCreateSession, Body: body}); err != nil {
		t.Fatal(err)
	}
	events := rec.waitFor(t, "createSession", findTxn(sessionID, 0))
	if txn := txnOf(events, sessionID, 0); txn.Header.Type != proto.OpCreateSession {
		t.Fatalf("txn of the forwarded createSession has type %v", txn.Header.Type)
	}
	f.Touch(sessionID, timeout)

	create := &proto.CreateRequest{Path: "/forwarded", Data: []byte("through the observer"), ACL: []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}}
	if err := f.Forward(zkquorum.Request{SessionID: sessionID, Cxid: 1, Type: proto.OpCreate, Body: proto.Marshal(create)}); err != nil {
		t.Fatal(err)
	}
	events = rec.waitFor(t, "create", findTxn(sessionID, 1))
	if txn := txnOf(events, sessionID, 1); txn.Header.Type != proto.OpCreate || createPath(t, txn) != "/forwarded" {
		t.Fatalf("txn of the forwarded create: type %v", txn.Header.Type)
	}
	client := connectClient(t, e.ConnectString())
	data, _, err := client.Get("/forwarded")
	if err != nil || string(data) != "through the observer" {
		t.Fatalf("Get(/forwarded) = %q, %v; want the forwarded data", data, err)
	}

	// The same create again fails on the leader: its txn is an error txn.
	if err := f.Forward(zkquorum.Request{SessionID: sessionID, Cxid: 2, Type: proto.OpCreate, Body: proto.Marshal(create)}); err != nil {
		t.Fatal(err)
	}
	events = rec.waitFor(t, "failed create", findTxn(sessionID, 2))
	if txn := txnOf(events, sessionID, 2); txn.Header.Type != proto.OpError {
		t.Errorf("txn of a create of an existing node has type %v, want %v", txn.Header.Type, proto.OpError)
	}

	if err := f.Forward(zkquorum.Request{SessionID: sessionID, Cxid: 3, Type: proto.OpSync, Body: proto.Marshal(&proto.SyncRequest{Path: "/"})}); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "sync", hasKind(zkquorum.EventSynced, 1))

	unknown := sessionID + 1
	for _, id := range []int64{sessionID, unknown} {
		if err := f.Revalidate(id, timeout); err != nil {
			t.Fatal(err)
		}
	}
	events = rec.waitFor(t, "revalidations", hasKind(zkquorum.EventRevalidated, 2))
	valid := map[int64]bool{}
	for _, ev := range events {
		if ev.Kind == zkquorum.EventRevalidated {
			valid[ev.SessionID] = ev.Valid
		}
	}
	if !valid[sessionID] || valid[unknown] {
		t.Errorf("revalidation: known session valid=%v, unknown session valid=%v; want true, false", valid[sessionID], valid[unknown])
	}

	if err := f.Forward(zkquorum.Request{SessionID: sessionID, Cxid: 4, Type: proto.OpCloseSession}); err != nil {
		t.Fatal(err)
	}
	events = rec.waitFor(t, "closeSession", findTxn(sessionID, 4))
	if txn := txnOf(events, sessionID, 4); txn.Header.Type != proto.OpCloseSession {
		t.Errorf("txn of the forwarded closeSession has type %v", txn.Header.Type)
	}
}

func TestObserverFollowsNewLeader(t *testing.T) {
	e := startEnsemble(t)
	client := connectClient(t, e.ConnectString())
	acl := zk.WorldACL(zk.PermAll)
	if _, err := client.Create("/seq", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	_, rec := follow(t, e)

	// The writer creates /seq/n-0, n-1, ... until stopped, never retrying a
	// name, and keeps the names ZooKeeper acknowledged.
	var (
		wg      sync.WaitGroup
		stop    = make(chan struct{})
		ackedMu sync.Mutex
		acked   []string
		grown   = sync.NewCond(&ackedMu)
	)
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			path := fmt.Sprintf("/seq/n-%d", i)
			if _, err := client.Create(path, nil, 0, acl); err != nil {
				continue
			}
			ackedMu.Lock()
			acked = append(acked, path)
			grown.Broadcast()
			ackedMu.Unlock()
		}
	})
	stopWriter := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWriter()
	// awaitAcked waits for n more acknowledged creates; the client's own
	// timeout bounds each create, and the test's timeout the whole.
	awaitAcked := func(n int) {
		ackedMu.Lock()
		defer ackedMu.Unlock()
		for want := len(acked) + n; len(acked) < want; {
			grown.Wait()
		}
	}

	awaitAcked(20)
	leader := e.Leader()
	if leader < 0 {
		t.Fatal("no member says it leads")
	}
	// Only the leader accepts learners on its quorum port, which is how a
	// Follower finds it.
	for i, addr := range e.QuorumAddrs() {
		if i == leader {
			continue
		}
		if c, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
			c.Close()
			t.Errorf("member %d follows but accepts connections on its quorum port %s", i+1, addr)
		}
	}
	e.Kill(leader)
	rec.waitFor(t, "the loss of the leader", hasKind(zkquorum.EventDisconnected, 1))
	rec.waitFor(t, "a sync with the new leader", hasKind(zkquorum.EventUpToDate, 2))
	awaitAcked(20)
	stopWriter()
	stat, err := client.Set("/seq", []byte("done"), -1)
	if err != nil {
		t.Fatal(err)
	}
	events := rec.waitFor(t, fmt.Sprintf("txn %#x", stat.Mzxid), lastTxnIs(stat.Mzxid))

	// Every txn follows the one before it, or the state the resync started
	// from; nothing is missing and nothing comes twice.
	var prev int64
	created := map[string]int{}
	for _, ev := range events {
		switch ev.Kind {
		case zkquorum.EventSnapshot, zkquorum.EventTrunc:
			prev = ev.Zxid
		case zkquorum.EventTxn:
			if !zxidFollows(prev, ev.Zxid) {
				t.Errorf("txn %#x after %#x: a gap or a duplicate", ev.Zxid, prev)
			}
			prev = ev.Zxid
			if ev.Txn.Header.Type == proto.OpCreate {
				created[createPath(t, ev.Txn)]++
			}
		}
	}
	if t.Failed() {
		t.Logf("events:%s", summarize(events))
	}
	for _, path := range acked {
		if created[path] != 1 {
			t.Errorf("acknowledged create of %s delivered %d times, want once", path, created[path])
		}
	}
	if prev != stat.Mzxid {
		t.Errorf("last txn %#x, want the setData's mzxid %#x", prev, stat.Mzxid)
	}
	t.Logf("%d acknowledged creates, %d events", len(acked), len(events))

	// The new leader lets an observer missing from its configuration sync
	// too. From a zxid before the leader change it sends a diff, as
	// PROPOSAL and COMMIT pairs, of the very txns the INFORMs carried.
	var informed []zkquorum.Txn
	for _, ev := range events {
		if ev.Kind == zkquorum.EventTxn {
			informed = append(informed, ev.Txn)
		}
	}
	from := informed[len(informed)/3]
	cfg := observerConfig(t, e)
	cfg.ServerID = 99
	conn, err := zkquorum.Dial(t.Context(), cfg, e.QuorumAddrs()[e.Leader()], from.Header.Zxid)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var diffed []zkquorum.Event
	for len(diffed) == 0 || diffed[len(diffed)-1].Kind != zkquorum.EventUpToDate {
		ev, err := conn.Next(t.Context())
		if err != nil {
			t.Fatalf("after%s: %v", summarize(diffed), err)
		}
		diffed = append(diffed, ev)
	}
	if diffed[0].Kind != zkquorum.EventDiff {
		t.Fatalf("sync from %#x starts with %v, want a diff", from.Header.Zxid, diffed[0].Kind)
	}
	want := informed[len(informed)/3+1:]
	got := diffed[1 : len(diffed)-1]
	if len(got) != len(want) {
		t.Fatalf("diff from %#x has %d txns, want the %d informed after it:%s", from.Header.Zxid, len(got), len(want), summarize(diffed))
	}
	for i := range want {
		if got[i].Kind != zkquorum.EventTxn || !bytes.Equal(got[i].Txn.Data, want[i].Data) {
			t.Fatalf("diff's txn %d is %v %#x, not the informed txn %#x", i, got[i].Kind, got[i].Zxid, want[i].Header.Zxid)
		}
	}
	conn.Close()

	// A leader left without a quorum stops leading and closes its quorum
	// port; the observer finds the leader elected once a quorum is back.
	survivors := []int{}
	for i := range e.Members() {
		if i != leader {
			survivors = append(survivors, i)
		}
	}
	newLeader := e.Leader()
	other := survivors[0]
	if other == newLeader {
		other = survivors[1]
	}
	e.Kill(other)
	rec.waitFor(t, "the loss of the quorum", hasKind(zkquorum.EventDisconnected, 2))
	addr := e.QuorumAddrs()[newLeader]
	if c, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		c.Close()
		t.Errorf("member %d without a quorum still accepts learners on %s", newLeader+1, addr)
	}
	e.Restart(other)
	rec.waitFor(t, "a sync with the leader of the restored quorum", hasKind(zkquorum.EventUpToDate, 3))
	stat, err = client.Set("/seq", []byte("after the quorum came back"), -1)
	if err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, fmt.Sprintf("txn %#x", stat.Mzxid), lastTxnIs(stat.Mzxid))
}

func closedSession(sessionID int64) func([]zkquorum.Event) bool {
	return func(events []zkquorum.Event) bool {
		for _, ev := range events {
			if ev.Kind == zkquorum.EventTxn && ev.Txn.Header.Type == proto.OpCloseSession && ev.Txn.Header.ClientID == sessionID {
				return true
			}
		}
		return false
	}
}

// TestObserverTouchesKeepSessionsAlive creates two sessions through the
// observer with the shortest timeout and reports activity of one of them
// only: the leader expires the other and keeps the touched one.
func TestObserverTouchesKeepSessionsAlive(t *testing.T) {
	e := startEnsemble(t)
	f, rec := follow(t, e)

	timeout := 2 * tick // ZooKeeper's shortest
	base := int64(observerID)<<56 | time.Now().UnixMilli()&(1<<40-1)
	touched, idle := base, base+1
	body := binary.BigEndian.AppendUint32(nil, uint32(timeout.Milliseconds()))
	for _, id := range []int64{touched, idle} {
		if err := f.Forward(zkquorum.Request{SessionID: id, Type: proto.OpCreateSession, Body: body}); err != nil {
			t.Fatal(err)
		}
		rec.waitFor(t, "createSession", findTxn(id, 0))
	}

	// The touched session's client is busy: every tick of activity goes to
	// the leader with its next ping.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ticker := time.NewTicker(tick / 10)
		defer ticker.Stop()
		for {
			f.Touch(touched, timeout)
			select {
			case <-stop:
				return
			case <-ticker.C:
			}
		}
	})
	events := rec.waitFor(t, "the idle session's expiry", closedSession(idle))
	close(stop)
	wg.Wait()
	if closedSession(touched)(events) {
		t.Fatal("the leader expired the touched session too")
	}
	if err := f.Revalidate(touched, timeout); err != nil {
		t.Fatal(err)
	}
	events = rec.waitFor(t, "the revalidation", hasKind(zkquorum.EventRevalidated, 1))
	if last := events[len(events)-1]; last.Kind != zkquorum.EventRevalidated || !last.Valid {
		t.Errorf("revalidation of the touched session after the idle one expired = %+v, want valid", last)
	}
}
