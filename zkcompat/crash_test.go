package zkcompat

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var crashSeed = flag.Uint64("crash.seed", 0, "seed of TestCrashRecovery's writes and kill points (0: from the clock)")

const (
	crashWriters = 4
	// Kill points, in writes acknowledged since the round began: enough
	// that every round crosses a snapshot (snapCount=500) now and then.
	crashMinAcked = 100
	crashMaxAcked = 2000
)

// TestCrashRecovery runs the collie binary, kills it with SIGKILL while
// several clients write, restarts it on the same data directory and checks
// what ZooKeeper promises a client after a crash:
//
//   - every write that was acknowledged is there, with its value, and
//     every acknowledged delete stays deleted; a write
//     that failed for want of a server may or may not have happened, and
//     nothing was acknowledged that is not there;
//   - whatever a client saw after one restart is still there after the
//     next, even when the server is killed again as soon as it serves;
//   - a multi is applied whole or not at all, and a multi answered with an
//     error not at all;
//   - sequential names and zxids never go back;
//   - the server's znode and ephemeral counts agree with its tree;
//   - a live session survives the restart with its ephemeral node, and the
//     ephemeral of a client gone during the crash goes once its session
//     times out.
func TestCrashRecovery(t *testing.T) {
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -crash.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	rounds := 5
	if testing.Short() {
		rounds = 2
	}

	dir := t.TempDir()
	port := freeLocalPort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cfg := fmt.Sprintf(`tickTime=200
dataDir=data
clientPort=%d
clientPortAddress=127.0.0.1
snapCount=500
preAllocSize=256
maxSessionTimeout=10000
4lw.commands.whitelist=*
admin.enableServer=false
`, port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startCollie(t, dir, t.Output(), "server", "-c", "zoo.cfg")
	srv.waitServing(t, addr, "ruok", "imok")

	m := newCrashModel(seed)
	setup := connectSession(t, addr, 4*time.Second)
	m.create(t, setup)
	setup.Close()

	// keeper stays connected through every restart; leaver is gone after
	// the first kill. A restarted server gives every session a fresh
	// timeout, so leaver's ephemeral is there after the restart, then goes.
	keeper := connectSession(t, addr, 8*time.Second)
	leaver := connectSession(t, addr, 4*time.Second)
	for _, s := range []struct {
		c    *zkSession
		path string
	}{{keeper, keeperPath}, {leaver, leaverPath}} {
		if _, err := s.c.Create(s.path, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", s.path, err)
		}
	}

	for round := 1; round <= rounds; round++ {
		target := int64(crashMinAcked + rng.IntN(crashMaxAcked-crashMinAcked+1))
		writing := time.Now()
		acked, unsure := m.runUntilKill(t, addr, srv, target)
		wrote := time.Since(writing)
		if round == 1 {
			// Closing while the server is down sends no closeSession: the
			// session is left to expire.
			leaver.Close()
		}
		keeperSessions := keeper.disconnected(t)

		srv = startCollie(t, dir, t.Output(), "server", "-c", "zoo.cfg")
		restart := srv.waitServing(t, addr, "ruok", "imok")
		again := rng.IntN(2) == 0
		if again {
			// A crash right after recovery, before any client writes,
			// must lose nothing either.
			srv.kill(t)
			srv = startCollie(t, dir, t.Output(), "server", "-c", "zoo.cfg")
			restart = srv.waitServing(t, addr, "ruok", "imok")
		}

		checking := time.Now()
		checker := connectSession(t, addr, 4*time.Second)
		if round == 1 {
			checkEphemeral(t, checker, leaverPath, leaver.session())
		}
		m.check(t, checker)

		keeper.reestablished(t, keeperSessions)
		checkEphemeral(t, checker, keeperPath, keeper.session())
		if _, err := keeper.Sync(keeperPath); err != nil {
			t.Errorf("keeper cannot use its session after the restart: %v", err)
		}
		if round == 1 {
			waitDeleted(t, checker, leaverPath)
		}
		checkCounts(t, checker, addr)
		checker.Close()
		t.Logf("round %d: killed after %d acknowledged writes in %v (target %d), %d unanswered; "+
			"restart to imok in %v (killed again on recovery: %t); checked in %v",
			round, acked, wrote.Round(time.Millisecond), target, unsure,
			restart.Round(time.Millisecond), again, time.Since(checking).Round(time.Millisecond))
		if t.Failed() {
			t.FailNow()
		}
	}
}

const (
	crashRoot  = "/crash"
	seqParent  = "/crash/seq"
	pairParent = "/crash/pair"
	failParent = "/crash/fail"
	ctrParent  = "/crash/counter"
	ephParent  = "/crash/eph"
	keeperPath = "/crash/eph/keeper"
	leaverPath = "/crash/eph/leaver"
)

var openACL = zk.WorldACL(zk.PermAll)

// crashModel is what the clients were told, across rounds, and what the
// server showed after each restart.
type crashModel struct {
	writers []*crashWriter

	// After a restart, whatever a client can read is durable: the next
	// crash must not take it away.
	seenSeq   map[string]bool // sequential nodes
	seenPairs map[string]bool // pair ids
}

func newCrashModel(seed uint64) *crashModel {
	m := &crashModel{seenSeq: map[string]bool{}, seenPairs: map[string]bool{}}
	for i := range crashWriters {
		m.writers = append(m.writers, &crashWriter{
			id:          i,
			rng:         rand.New(rand.NewPCG(seed, uint64(i+1))),
			seq:         map[string][]byte{},
			seqFloor:    -1,
			deleted:     map[string]bool{},
			maybeGone:   map[string][]byte{},
			pairs:       map[string]bool{},
			pairsUnsure: map[string]bool{},
		})
	}
	return m
}

func (m *crashModel) create(t *testing.T, c *zkSession) {
	t.Helper()
	for _, p := range []string{crashRoot, seqParent, pairParent, failParent, ctrParent, ephParent} {
		if _, err := c.Create(p, nil, 0, openACL); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	for _, w := range m.writers {
		if _, err := c.Create(w.counterPath(), []byte("0"), 0, openACL); err != nil {
			t.Fatalf("create %s: %v", w.counterPath(), err)
		}
	}
}

// runUntilKill lets the writers write until target writes have been
// acknowledged, kills the server, and waits for every writer to stop at
// its first failed request. It returns the number of writes acknowledged
// and of writes whose outcome is unknown.
func (m *crashModel) runUntilKill(t *testing.T, addr string, srv *serverProcess, target int64) (acked int64, unsure int) {
	t.Helper()
	var count atomic.Int64
	var killed atomic.Bool
	reached := make(chan struct{})
	conns := make([]*zkSession, len(m.writers))
	for i := range conns {
		conns[i] = connectSession(t, addr, 4*time.Second)
	}
	var wg sync.WaitGroup
	for i, w := range m.writers {
		wg.Go(func() {
			w.run(conns[i].Conn, &killed, func() {
				if count.Add(1) == target {
					close(reached)
				}
			})
		})
	}
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		close(stopped)
	}()
	select {
	case <-reached:
	case <-stopped:
		t.Errorf("every writer stopped after %d acknowledged writes, before the kill", count.Load())
	case <-srv.exited:
		t.Errorf("collie exited on its own: %v", srv.waitErr)
	case <-time.After(time.Minute):
		t.Errorf("only %d of %d writes acknowledged after a minute", count.Load(), target)
	}
	killed.Store(true)
	srv.kill(t)
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("writers still running 30s after the kill")
	}
	for i, c := range conns {
		c.Close()
		w := m.writers[i]
		if w.unexpected != nil {
			t.Errorf("writer %d: %v", w.id, w.unexpected)
		}
		if w.unsure {
			unsure++
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return count.Load(), unsure
}

// check compares the tree after a restart with what the writers were
// told, then takes the tree as the new baseline: an outcome unknown
// before is known now.
func (m *crashModel) check(t *testing.T, c *zkSession) {
	t.Helper()
	m.checkSequential(t, c)
	m.checkPairs(t, c)
	if names, _, err := c.Children(failParent); err != nil || len(names) > 0 {
		t.Errorf("%s has children %v (err %v): multis answered with an error were applied in part", failParent, names, err)
	}
	var maxZxid int64
	for _, w := range m.writers {
		maxZxid = max(maxZxid, w.checkCounter(t, c))
	}
	for _, w := range m.writers {
		w.zxidFloor = maxZxid
		w.unsure = false
	}
}

func (m *crashModel) checkSequential(t *testing.T, c *zkSession) {
	t.Helper()
	names, _, err := c.Children(seqParent)
	if err != nil {
		t.Fatalf("children of %s: %v", seqParent, err)
	}
	present := make(map[string]bool, len(names))
	maxSeq := -1
	for _, name := range names {
		present[name] = true
		maxSeq = max(maxSeq, seqNumber(name))
	}
	var lostSeen, lostAcked, wrongData, undeleted []string
	deleted := map[string]bool{}
	for _, w := range m.writers {
		// A delete that got no answer happened if the node is gone.
		for _, full := range slices.Sorted(maps.Keys(w.maybeGone)) {
			if present[path.Base(full)] {
				w.addSeq(full, w.maybeGone[full])
			} else {
				w.deleted[full] = true
			}
		}
		clear(w.maybeGone)
		for full := range w.deleted {
			deleted[path.Base(full)] = true
			if present[path.Base(full)] {
				undeleted = append(undeleted, path.Base(full))
			}
		}
	}
	for name := range m.seenSeq {
		if !present[name] && !deleted[name] {
			lostSeen = append(lostSeen, name)
		}
	}
	newlyAcked, unsure := 0, 0
	for _, w := range m.writers {
		unsure += w.seqUnsure
		w.seqUnsure = 0
		w.seqFloor = maxSeq
		for full, want := range w.seq {
			name := path.Base(full)
			if !present[name] {
				lostAcked = append(lostAcked, name)
				continue
			}
			if !m.seenSeq[name] {
				newlyAcked++
			}
			got, _, err := c.Get(full)
			if err != nil {
				t.Fatalf("get %s: %v", full, err)
			}
			if !bytes.Equal(got, want) {
				wrongData = append(wrongData, fmt.Sprintf("%s holds %d bytes %.30q, acknowledged with %d bytes %.30q",
					name, len(got), got, len(want), want))
			}
		}
	}
	reportAll(t, "children of "+seqParent+" read after an earlier restart are gone", lostSeen)
	reportAll(t, "acknowledged sequential creates in "+seqParent+" are gone", lostAcked)
	reportAll(t, "children of "+seqParent+" lost their acknowledged data", wrongData)
	reportAll(t, "deleted children of "+seqParent+" are back", undeleted)
	// The nodes not read before are those acknowledged since, and some
	// of the creates that got no answer.
	unread := 0
	for name := range present {
		if !m.seenSeq[name] {
			unread++
		}
	}
	if unread < newlyAcked || unread > newlyAcked+unsure {
		t.Errorf("%s has %d new children; since the last restart %d creates were acknowledged and %d got no answer",
			seqParent, unread, newlyAcked, unsure)
	}
	m.seenSeq = present
}

func (m *crashModel) checkPairs(t *testing.T, c *zkSession) {
	t.Helper()
	names, _, err := c.Children(pairParent)
	if err != nil {
		t.Fatalf("children of %s: %v", pairParent, err)
	}
	halves := map[string][]string{}
	for _, name := range names {
		id, half, ok := strings.Cut(name, ".")
		if !ok {
			t.Errorf("unexpected node %s/%s", pairParent, name)
			continue
		}
		halves[id] = append(halves[id], half)
	}
	var partial, lostSeen, lostAcked, unsent []string
	for id, hs := range halves {
		slices.Sort(hs)
		if !slices.Equal(hs, []string{"a", "b"}) {
			partial = append(partial, fmt.Sprintf("%s.%v", id, hs))
		}
	}
	for id := range m.seenPairs {
		if halves[id] == nil {
			lostSeen = append(lostSeen, id)
		}
	}
	for _, w := range m.writers {
		for id := range w.pairs {
			if halves[id] == nil {
				lostAcked = append(lostAcked, id)
			}
		}
		for id := range halves {
			owner, _, _ := strings.Cut(id, "-")
			if owner == w.name() && !w.pairs[id] && !w.pairsUnsure[id] && !m.seenPairs[id] {
				unsent = append(unsent, id)
			}
		}
		clear(w.pairsUnsure)
	}
	reportAll(t, "multis creating a pair in "+pairParent+" are applied in part", partial)
	reportAll(t, "pairs in "+pairParent+" read after an earlier restart are gone", lostSeen)
	reportAll(t, "acknowledged multis creating a pair in "+pairParent+" are gone", lostAcked)
	reportAll(t, "pairs in "+pairParent+" were never sent, or were answered with an error", unsent)
	clear(m.seenPairs)
	for id := range halves {
		m.seenPairs[id] = true
	}
}

// reportAll reports problems of one kind, the first few in full.
func reportAll(t *testing.T, what string, problems []string) {
	t.Helper()
	if len(problems) == 0 {
		return
	}
	slices.Sort(problems)
	const shown = 8
	n, more := len(problems), ""
	if n > shown {
		more = fmt.Sprintf(" (and %d more)", n-shown)
		problems = problems[:shown]
	}
	t.Errorf("%d %s after the restart: %s%s", n, what, strings.Join(problems, ", "), more)
}

// checkEphemeral checks that path exists and belongs to session.
func checkEphemeral(t *testing.T, c *zkSession, path string, session int64) {
	t.Helper()
	ok, st, err := c.Exists(path)
	switch {
	case err != nil:
		t.Errorf("exists %s: %v", path, err)
	case !ok:
		t.Errorf("ephemeral %s of live session 0x%x is gone after the restart", path, session)
	case st.EphemeralOwner != session:
		t.Errorf("%s is owned by 0x%x, want 0x%x", path, st.EphemeralOwner, session)
	}
}

// waitDeleted waits until path is deleted, as the ephemeral of an expiring
// session is.
func waitDeleted(t *testing.T, c *zkSession, path string) {
	t.Helper()
	ok, _, events, err := c.ExistsW(path)
	if err != nil {
		t.Fatalf("exists %s: %v", path, err)
	}
	if !ok {
		return
	}
	select {
	case ev := <-events:
		if ev.Type != zk.EventNodeDeleted {
			t.Errorf("watch on %s fired %v, want %v", path, ev.Type, zk.EventNodeDeleted)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("%s, ephemeral of a closed client, still there 30s after the restart", path)
	}
}

// checkCounts compares mntr's znode and ephemeral counts with the tree.
func checkCounts(t *testing.T, c *zkSession, addr string) {
	t.Helper()
	nodes := 0
	var walk func(p string)
	walk = func(p string) {
		nodes++
		children, _, err := c.Children(p)
		if err != nil {
			t.Fatalf("children of %s: %v", p, err)
		}
		for _, child := range children {
			walk(path.Join(p, child))
		}
	}
	walk("/")
	// ZooKeeper's count has the root twice.
	if got := mntrValue(t, addr, "zk_znode_count"); got != nodes+1 {
		t.Errorf("mntr zk_znode_count is %d; the tree has %d nodes, which ZooKeeper reports as %d", got, nodes, nodes+1)
	}
	// Only ephParent holds ephemerals.
	eph, _, err := c.Children(ephParent)
	if err != nil {
		t.Fatalf("children of %s: %v", ephParent, err)
	}
	if got := mntrValue(t, addr, "zk_ephemerals_count"); got != len(eph) {
		t.Errorf("mntr zk_ephemerals_count is %d; the tree has %d ephemerals (%v)", got, len(eph), eph)
	}
}

// crashWriter is one client's writes and what it was told about them.
type crashWriter struct {
	id  int
	rng *rand.Rand
	ops int // operations sent, across rounds: names each one uniquely

	seq       map[string][]byte // sequential nodes acknowledged and not deleted: path -> data
	seqPaths  []string          // the keys of seq, in a seeded order
	seqUnsure int               // sequential creates not answered since the last restart
	seqFloor  int               // largest sequence number known taken, -1 before the first
	deleted   map[string]bool   // acknowledged deletes of sequential nodes
	maybeGone map[string][]byte // sequential nodes whose delete was not answered: path -> data

	pairs       map[string]bool // acknowledged pair ids
	pairsUnsure map[string]bool // pairs not answered since the last restart

	counter   int32 // last known version of the writer's counter
	counterZx int64 // its mzxid
	ctrUnsure bool  // a setData of it is unanswered

	zxidFloor int64 // largest zxid read after the last restart

	unsure     bool  // the last operation of the round was not answered
	unexpected error // what went wrong other than the kill
}

func (w *crashWriter) name() string        { return fmt.Sprintf("w%d", w.id) }
func (w *crashWriter) counterPath() string { return ctrParent + "/" + w.name() }

// run writes until a request fails. acked is called after each
// acknowledged write.
func (w *crashWriter) run(c *zk.Conn, killed *atomic.Bool, acked func()) {
	for {
		w.ops++
		id := fmt.Sprintf("%s-%d", w.name(), w.ops)
		var err error
		switch n := w.rng.IntN(20); {
		case n < 2 && len(w.seqPaths) > 0:
			err = w.deleteSequential(c)
		case n < 8:
			err = w.createSequential(c, id)
		case n < 14:
			err = w.setCounter(c)
		case n < 19:
			err = w.createPair(c, id)
		case w.rng.IntN(2) == 0:
			err = w.failMulti(c, id)
		default:
			err = w.setCounterBadVersion(c)
		}
		var v violation
		switch {
		case err == nil:
			acked()
			continue
		case errors.As(err, &v) || answered(err):
			w.unexpected = err
		case !killed.Load():
			w.unexpected = fmt.Errorf("before the kill: %w", err)
		default:
			w.unsure = true
		}
		return
	}
}

// violation is an answer that breaks ZooKeeper's rules.
type violation struct{ msg string }

func (v violation) Error() string { return v.msg }

func violationf(format string, args ...any) error {
	return violation{fmt.Sprintf(format, args...)}
}

// answered tells whether err is the server's answer rather than the
// client's report of a lost connection, after which the request may or
// may not have been applied.
func answered(err error) bool {
	return err != nil && !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer) &&
		!errors.Is(err, zk.ErrClosing)
}

func (w *crashWriter) createSequential(c *zk.Conn, id string) error {
	data := payload(w.rng, id)
	name, err := c.Create(seqParent+"/"+w.name()+"-", data, zk.FlagSequence, openACL)
	if err != nil {
		if !answered(err) {
			w.seqUnsure++
		}
		return fmt.Errorf("sequential create %s: %w", id, err)
	}
	n := seqNumber(name)
	if n <= w.seqFloor {
		return violationf("sequential create %s: got %s, but %010d was already in use", id, name, w.seqFloor)
	}
	w.seqFloor = n
	w.addSeq(name, data)
	return nil
}

func (w *crashWriter) addSeq(path string, data []byte) {
	w.seq[path] = data
	w.seqPaths = append(w.seqPaths, path)
}

// deleteSequential deletes one of the writer's sequential nodes.
func (w *crashWriter) deleteSequential(c *zk.Conn) error {
	i := w.rng.IntN(len(w.seqPaths))
	p := w.seqPaths[i]
	w.seqPaths[i] = w.seqPaths[len(w.seqPaths)-1]
	w.seqPaths = w.seqPaths[:len(w.seqPaths)-1]
	data := w.seq[p]
	delete(w.seq, p)
	if err := c.Delete(p, -1); err != nil {
		if !answered(err) {
			w.maybeGone[p] = data
		}
		return fmt.Errorf("delete %s: %w", p, err)
	}
	w.deleted[p] = true
	return nil
}

func (w *crashWriter) setCounter(c *zk.Conn) error {
	next := w.counter + 1
	st, err := c.Set(w.counterPath(), []byte(strconv.Itoa(int(next))), w.counter)
	if err != nil {
		if !answered(err) {
			w.ctrUnsure = true
		}
		return fmt.Errorf("set %s version %d: %w", w.counterPath(), w.counter, err)
	}
	if st.Version != next {
		return violationf("set %s version %d: new version %d, want %d", w.counterPath(), w.counter, st.Version, next)
	}
	if floor := max(w.counterZx, w.zxidFloor); st.Mzxid <= floor {
		return violationf("set %s: zxid 0x%x, not above 0x%x already seen", w.counterPath(), st.Mzxid, floor)
	}
	w.counter, w.counterZx = next, st.Mzxid
	return nil
}

// setCounterBadVersion sends a setData that must fail with BadVersion.
func (w *crashWriter) setCounterBadVersion(c *zk.Conn) error {
	_, err := c.Set(w.counterPath(), []byte("bad"), w.counter+2)
	switch {
	case errors.Is(err, zk.ErrBadVersion):
		return nil
	case err == nil:
		return violationf("set %s version %d succeeded at version %d", w.counterPath(), w.counter+2, w.counter)
	}
	return fmt.Errorf("set %s with a bad version: %w", w.counterPath(), err)
}

// createPair creates two nodes in one multi.
func (w *crashWriter) createPair(c *zk.Conn, id string) error {
	data := []byte(id)
	_, err := c.Multi(
		&zk.CreateRequest{Path: pairParent + "/" + id + ".a", Data: data, Acl: openACL},
		&zk.CreateRequest{Path: pairParent + "/" + id + ".b", Data: data, Acl: openACL},
	)
	if err != nil {
		if !answered(err) {
			w.pairsUnsure[id] = true
		}
		return fmt.Errorf("multi creating pair %s: %w", id, err)
	}
	w.pairs[id] = true
	return nil
}

// failMulti sends a multi whose second operation fails, so none of it may
// be applied.
func (w *crashWriter) failMulti(c *zk.Conn, id string) error {
	_, err := c.Multi(
		&zk.CreateRequest{Path: failParent + "/" + id, Acl: openACL},
		&zk.CreateRequest{Path: pairParent, Acl: openACL},
	)
	switch {
	case errors.Is(err, zk.ErrNodeExists):
		return nil
	case err == nil:
		return violationf("multi creating the existing %s succeeded", pairParent)
	}
	return fmt.Errorf("failing multi %s: %w", id, err)
}

// checkCounter checks the writer's counter after a restart and returns
// its mzxid.
func (w *crashWriter) checkCounter(t *testing.T, c *zkSession) int64 {
	t.Helper()
	data, st, err := c.Get(w.counterPath())
	if err != nil {
		t.Fatalf("get %s: %v", w.counterPath(), err)
	}
	if string(data) != strconv.Itoa(int(st.Version)) {
		t.Errorf("%s holds %q at version %d: data and version disagree", w.counterPath(), data, st.Version)
	}
	hi := w.counter
	if w.ctrUnsure {
		hi++
	}
	switch {
	case st.Version < w.counter:
		t.Errorf("%s is at version %d; version %d was acknowledged", w.counterPath(), st.Version, w.counter)
	case st.Version > hi:
		t.Errorf("%s is at version %d; only %d was acknowledged (unanswered setData: %t)", w.counterPath(), st.Version, w.counter, w.ctrUnsure)
	case st.Version == w.counter && w.counterZx != 0 && st.Mzxid != w.counterZx:
		t.Errorf("%s version %d has mzxid 0x%x, acknowledged with 0x%x", w.counterPath(), st.Version, st.Mzxid, w.counterZx)
	}
	w.counter, w.counterZx, w.ctrUnsure = st.Version, st.Mzxid, false
	return st.Mzxid
}

// seqNumber is the sequence number ZooKeeper appended to name.
func seqNumber(name string) int {
	n, err := strconv.Atoi(name[max(0, len(name)-10):])
	if err != nil {
		return -1
	}
	return n
}

// payload is the data of one sequential create: its id, then up to 1.5
// KB, so that writes straddle the WAL's pages in many ways.
func payload(rng *rand.Rand, id string) []byte {
	b := []byte(id + ":")
	for range rng.IntN(1500) {
		b = append(b, byte('a'+rng.IntN(26)))
	}
	return b
}

// TestServerDefaults runs the binary as a first-time user would, with no
// configuration file: it serves on the given port with ZooKeeper's
// defaults and keeps its data in ./collie-data, across a restart.
func TestServerDefaults(t *testing.T) {
	dir := t.TempDir()
	port := strconv.Itoa(freeLocalPort(t))
	addr := "127.0.0.1:" + port
	// The ports are chosen so that the test does not depend on 2181 and
	// 8080 being free; everything else is the built-in default.
	adminPort := strconv.Itoa(freeLocalPort(t))
	srv := startCollie(t, dir, t.Output(), "server", "-port", port, "-admin-port", adminPort)
	srv.waitServing(t, addr, "srvr", "Zookeeper version: ")

	// The admin server is on by default, as in ZooKeeper.
	resp, err := http.Get("http://127.0.0.1:" + adminPort + "/commands/ruok")
	if err != nil {
		t.Fatalf("admin server: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"command": "ruok"`) {
		t.Errorf("GET /commands/ruok: %d %s", resp.StatusCode, body)
	}

	// ZooKeeper enables only srvr unless 4lw.commands.whitelist says more.
	if reply, err := fourLetterWord(addr, "ruok"); err != nil || reply != "ruok is not executed because it is not in the whitelist.\n" {
		t.Errorf("ruok with the default whitelist: %q, %v", reply, err)
	}
	c := connectSession(t, addr, 4*time.Second)
	if _, err := c.Create("/kept", []byte("across restarts"), 0, openACL); err != nil {
		t.Fatalf("create /kept: %v", err)
	}
	c.Close()
	if code := srv.stop(t); code != 0 {
		t.Errorf("collie server exited with %d after SIGTERM, want 0", code)
	}
	if fi, err := os.Stat(filepath.Join(dir, "collie-data")); err != nil || !fi.IsDir() {
		t.Fatalf("no ./collie-data directory in the working directory: %v", err)
	}

	srv = startCollie(t, dir, t.Output(), "server", "-port", port, "-admin-port", "-1")
	srv.waitServing(t, addr, "srvr", "Zookeeper version: ")
	c = connectSession(t, addr, 4*time.Second)
	if data, _, err := c.Get("/kept"); err != nil || string(data) != "across restarts" {
		t.Errorf("get /kept after a restart: %q, %v", data, err)
	}
}

// TestServerRejectsBadConfig checks that an invalid zoo.cfg stops the
// server at once with a message naming the key and its value.
func TestServerRejectsBadConfig(t *testing.T) {
	port := strconv.Itoa(freeLocalPort(t))
	valid := []string{"tickTime=200", "dataDir=data", "clientPort=" + port, "clientPortAddress=127.0.0.1", "admin.enableServer=false"}
	tests := []struct {
		name  string
		lines []string
		want  []string // in the message
	}{
		{"tick not a number", slices.Concat(valid, []string{"tickTime=fast"}), []string{"tickTime", `"fast"`}},
		{"port out of range", slices.Concat(valid, []string{"clientPort=70000"}), []string{"clientPort", "70000"}},
		{"boolean typo", slices.Concat(valid, []string{"extendedTypesEnabled=yes"}), []string{"extendedTypesEnabled", `"yes"`}},
		{"negative limit", slices.Concat(valid, []string{"initLimit=-1"}), []string{"initLimit", `"-1"`}},
		{"no data directory", slices.DeleteFunc(slices.Clone(valid), func(l string) bool { return strings.HasPrefix(l, "dataDir=") }),
			[]string{"dataDir"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := strings.Join(tt.lines, "\n") + "\n"
			if err := os.WriteFile(filepath.Join(dir, "bad.cfg"), []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out := runCollie(t, dir, "server", "-c", "bad.cfg")
			if code == 0 {
				t.Errorf("collie server -c bad.cfg exited with 0; output:\n%s", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not mention %s:\n%s", w, out)
				}
			}
		})
	}
}
