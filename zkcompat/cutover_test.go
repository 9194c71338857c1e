package zkcompat

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/follow"
)

// cutoverZnodesEnv, when set, is how many more znodes the ZooKeeper
// ensemble holds at the cut-over.
const cutoverZnodesEnv = "COLLIE_CUTOVER_ZNODES"

// scaleSkip leaves the parents of COLLIE_CUTOVER_ZNODES's znodes out of
// the trees read here.
var scaleSkip = func() []string {
	var p []string
	for i := range scaleParents {
		p = append(p, fmt.Sprintf("/p%d", i))
	}
	return p
}()

// ack is one acknowledged create of a writer.
type ack struct {
	path string
	at   time.Time
}

// cutoverWriter creates sequential nodes under its own parent through
// the Collie servers, one after another, and keeps those acknowledged.
type cutoverWriter struct {
	c      *client.Client
	parent string
	mu     sync.Mutex
	acks   []ack
	errs   int
}

func (w *cutoverWriter) run(ctx context.Context) {
	for n := 0; ctx.Err() == nil; n++ {
		octx, cancel := context.WithTimeout(ctx, 10*time.Second)
		path, _, err := w.c.Create(octx, w.parent+"/n-", []byte(strconv.Itoa(n)), proto.ModePersistentSequential, nil)
		cancel()
		w.mu.Lock()
		if err == nil {
			w.acks = append(w.acks, ack{path, time.Now()})
		} else {
			w.errs++
		}
		w.mu.Unlock()
		if err != nil {
			// Not connected: the client finds another server meanwhile.
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

func (w *cutoverWriter) acked() []ack {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acks)
}

// awaitAcks waits until every writer has n more acknowledged writes than
// it had at from.
func awaitAcks(t *testing.T, writers []*cutoverWriter, from []int, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for i, w := range writers {
		for len(w.acked()) < from[i]+n {
			if time.Now().After(deadline) {
				t.Fatalf("writer %s has %d writes acknowledged, want %d", w.parent, len(w.acked()), from[i]+n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func ackCounts(writers []*cutoverWriter) []int {
	n := make([]int, len(writers))
	for i, w := range writers {
		n[i] = len(w.acked())
	}
	return n
}

// TestCutOverUnderLoad: three Collie servers follow a 3-server ZooKeeper
// ensemble; writers create sequential nodes through them, and a session
// holds an ephemeral node; `collie cutover` turns the followers into a
// Collie ensemble while the writers write; the ZooKeeper servers are
// killed. Every write acknowledged before, during and after the cut-over
// is in the Collie ensemble, the sequence numbers go on rising, the
// session and its ephemeral node live on, the data written to ZooKeeper
// is there with every Stat field, and a member restarted with its
// follower's command line comes back as a member.
func TestCutOverUnderLoad(t *testing.T) {
	superDigest := digest(superPassword)
	ids := []int{4, 5, 6}
	const lateID = 7 // a follower started after the cut-over
	scale := envInt(t, cutoverZnodesEnv, 0)
	heap := "-Xmx128m"
	if scale > 0 {
		heap = "-Xmx2g"
	}
	opts := []zkref.Option{zkref.WithTickTime(time.Second), zkref.WithJVMArgs(heap, "-Dzookeeper.DigestAuthenticationProvider.superDigest="+superDigest)}
	for _, id := range append(ids, lateID) {
		opts = append(opts, zkref.WithObserver(id))
	}
	e := zkref.StartEnsemble(t, 3, opts...)

	// Data written to ZooKeeper by a client of its own, which leaves
	// before the cut-over.
	zkc := dialInterop(t, e.Members()[0].Addr())
	open := zk.WorldACL(zk.PermAll)
	mustZK := func(_ string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mustZK(zkc.Create("/data", []byte("root"), 0, open))
	for i := range 40 {
		p := fmt.Sprintf("/data/n%02d", i)
		mustZK(zkc.Create(p, []byte(strings.Repeat("x", i)), 0, open))
		if i%3 == 0 {
			_, err := zkc.Set(p, []byte("again"), 0)
			mustZK("", err)
		}
		_, err := zkc.SetACL(p, zk.WorldACL(int32(1+i%31)), -1)
		mustZK("", err)
	}
	mustZK(zkc.Create("/data/seq-", nil, zk.FlagSequence, open))
	zkc.Close()
	// COLLIE_CUTOVER_ZNODES makes the tree that large (createScaleZnodes's
	// znodes), to measure the write gap at scale.
	if scale > 0 {
		start := time.Now()
		createScaleZnodes(t, e.Members()[e.Leader()].Addr(), 0, scale)
		t.Logf("%d znodes made in ZooKeeper in %s", scale, time.Since(start).Round(time.Second))
	}

	followers := make([]*followerProcess, len(ids))
	outs := make([]*interopTranscript, len(ids))
	addrs := make([]string, len(ids))
	for i, id := range ids {
		outs[i] = newInteropTranscript()
		followers[i] = startFollowerAs(t, e, id, outs[i], "DigestAuthenticationProvider.superDigest="+superDigest)
		addrs[i] = followers[i].addr
	}
	connect := strings.Join(addrs, ",")
	dataBefore := subtree(wireTree(t, e.Members()[e.Leader()].Addr(), scaleSkip...), "/data")

	ctx, stop := context.WithCancel(t.Context())
	defer stop()

	keeper := dial0(t, connect)
	keeperID := keeper.SessionID()
	if _, _, err := keeper.Create(ctx, "/kept", []byte("ephemeral"), proto.ModeEphemeral, nil); err != nil {
		t.Fatal(err)
	}
	writers := make([]*cutoverWriter, 3)
	var wg sync.WaitGroup
	for i := range writers {
		w := &cutoverWriter{c: dial0(t, connect), parent: fmt.Sprintf("/w%d", i)}
		if _, _, err := w.c.Create(ctx, w.parent, nil, 0, nil); err != nil {
			t.Fatal(err)
		}
		writers[i] = w
		wg.Go(func() { w.run(ctx) })
	}
	awaitAcks(t, writers, make([]int, len(writers)), 20)

	// A client still connected to ZooKeeper would lose what it writes
	// after the marker: the cut-over is refused while one is.
	busy := dial(t, e.Members()[1].Addr())
	code, out := runCollie(t, t.TempDir(), "cutover", "-servers", connect, "-zookeeper", e.ConnectString(), "-timeout", "25s")
	if code != 1 || !strings.Contains(out, e.Members()[1].Addr()+" has 1") {
		t.Fatalf("collie cutover with a client on ZooKeeper exited with %d:\n%s", code, out)
	}
	busy.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		srvr, _ := fourLetterWord(e.Members()[1].Addr(), "srvr")
		if strings.Contains(srvr, "\nConnections: 1\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ZooKeeper keeps the client's connection: %s", srvr)
		}
	}

	code, out = runCollie(t, t.TempDir(), "cutover", "-servers", connect, "-zookeeper", e.ConnectString(), "-timeout", "25s")
	t.Logf("collie cutover:\n%s", out)
	if code != 0 {
		for i, o := range outs {
			t.Logf("server %d:\n%s", ids[i], o)
		}
		t.Fatalf("collie cutover exited with %d", code)
	}
	m := regexp.MustCompile(`zxid +0x([0-9a-f]+):`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("collie cutover names no zxid")
	}
	zxid, _ := strconv.ParseInt(m[1], 16, 64)

	// A follower that comes to the ZooKeeper ensemble after the cut-over
	// takes a snapshot past the marker: it must neither serve nor become
	// a member.
	late := prepareFollower(t, e, lateID)
	lateOut := newInteropTranscript()
	late.start(t, lateOut)
	select {
	case <-late.exited:
	case <-time.After(3 * time.Minute): // the snapshot of a large tree first
		t.Fatalf("a follower started after the cut-over goes on:\n%s", lateOut)
	}
	if code := late.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(lateOut.String(), "past the cut-over marker") {
		t.Errorf("a follower started after the cut-over exited with %d:\n%s", code, lateOut)
	}

	for i := range e.Members() {
		e.Kill(i)
	}
	afterCutover := ackCounts(writers)
	awaitAcks(t, writers, afterCutover, 20)
	stop()
	wg.Wait()

	check := dial0(t, connect)
	var gaps []time.Duration
	var all []ack
	for _, w := range writers {
		acked := w.acked()
		all = append(all, acked...)
		kids, _, err := check.Children(t.Context(), w.parent)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, k := range kids {
			have[w.parent+"/"+k] = true
		}
		lost := 0
		for j, a := range acked {
			if !have[a.path] {
				lost++
				if lost <= 3 {
					t.Errorf("acknowledged %s is not in the Collie ensemble", a.path)
				}
			}
			if j > 0 && a.path <= acked[j-1].path {
				t.Errorf("%s acknowledged after %s: the sequence went back", a.path, acked[j-1].path)
			}
		}
		if lost > 0 {
			t.Errorf("%s: %d of %d acknowledged writes lost", w.parent, lost, len(acked))
		}
		t.Logf("%s: %d writes acknowledged (%d after the cut-over), %d failed or unanswered", w.parent, len(acked), len(acked)-afterCutover[slices.Index(writers, w)], w.errs)
	}
	slices.SortFunc(all, func(a, b ack) int { return a.at.Compare(b.at) })
	for j := 1; j < len(all); j++ {
		gaps = append(gaps, all[j].at.Sub(all[j-1].at))
	}
	t.Logf("write gap at the cut-over (the longest time without an acknowledged write): %s", slices.Max(gaps).Round(time.Millisecond))

	ok, stat, err := check.Exists(t.Context(), "/kept")
	if err != nil || !ok || stat.EphemeralOwner != keeperID {
		t.Errorf("/kept: %v %v owner %#x, want the ephemeral of session %#x", ok, err, stat.EphemeralOwner, keeperID)
	}
	if _, err := keeper.Set(t.Context(), "/kept", []byte("still here"), -1); err != nil || keeper.SessionID() != keeperID {
		t.Errorf("the session that held /kept: %v, id %#x, want %#x", err, keeper.SessionID(), keeperID)
	}
	if ok, _, err := check.Exists(t.Context(), follow.MarkerPath); err != nil || ok {
		t.Errorf("the marker is left in the tree (%v %v)", ok, err)
	}
	diffTrees(t, dataBefore, subtree(wireTree(t, addrs[0], scaleSkip...), "/data"))
	path, stat, err := check.Create(t.Context(), "/data/seq-", nil, proto.ModePersistentSequential, nil)
	if err != nil || path != "/data/seq-0000000041" || stat.Czxid <= zxid {
		t.Errorf("a sequential node after the cut-over: %s czxid %#x, %v; want /data/seq-0000000041 after zxid %#x", path, stat.Czxid, err, zxid)
	}
	if err := check.Delete(t.Context(), path, -1); err != nil {
		t.Fatal(err)
	}
	for i, o := range outs {
		if testing.Verbose() {
			t.Logf("server %d:\n%s", ids[i], o)
		}
		if !strings.Contains(o.String(), "digest=\"matches ZooKeeper's\"") {
			t.Errorf("server %d did not check its copy against ZooKeeper's digest:\n%s", ids[i], o)
		}
	}

	// A member restarted as it was started, as by its service manager,
	// is a member still.
	f := followers[1]
	f.kill(t)
	f.start(t, outs[1])
	f.waitServing(t, f.addr, "srvr", "Zookeeper version")
	awaitMode(t, f.addr)
	diffTrees(t, subtree(wireTree(t, addrs[0], scaleSkip...), "/w0"), subtree(wireTree(t, f.addr, scaleSkip...), "/w0"))
}

// awaitMode waits until the server at addr serves as a member of a Collie
// ensemble with a leader.
func awaitMode(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := fourLetterWord(addr, "srvr")
		if strings.Contains(out, "\nMode: leader\n") || strings.Contains(out, "\nMode: follower\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not serve as a member: %q", addr, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// subtree keeps the nodes of tree at or under root.
func subtree(tree map[string]string, root string) map[string]string {
	out := map[string]string{}
	for p, line := range tree {
		if p == root || strings.HasPrefix(p, root+"/") {
			out[p] = line
		}
	}
	return out
}

func dial0(t *testing.T, connect string) *client.Client {
	t.Helper()
	c, err := client.Dial(t.Context(), connect, client.Config{SessionTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
