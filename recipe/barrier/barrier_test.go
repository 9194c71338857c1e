package barrier_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/recipe/barrier"
)

// testTimeout bounds every wait of a test, so that a lost wakeup fails
// rather than hangs.
const testTimeout = 15 * time.Second

// servers are the servers every scenario runs against: Collie, and the real
// ZooKeeper 3.8 to show that the scenario's expectations are ZooKeeper's.
var servers = []struct {
	name  string
	start func(t *testing.T) string
}{
	{"collie", func(t *testing.T) string { return collietest.Start(t).Addr() }},
	{"zookeeper", func(t *testing.T) string {
		zkref.Require(t, zkref.Available())
		return zkref.Start(t, zkref.WithTickTime(100*time.Millisecond)).Addr()
	}},
}

func TestBarrier(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T, addr string)
	}{
		{"wait-until-removed", testWaitUntilRemoved},
		{"enter-not-before-size", testEnterNotBeforeSize},
		{"leave-herd-free", testLeaveHerdFree},
		{"cancelled-enter-leaves-no-node", testCancelledEnter},
		{"cancelled-leave-leaves-nothing", testCancelledLeave},
		{"crashed-member-releases-leave", testCrashedMember},
		{"misuse", testMisuse},
		{"shared-with-curator", testCurator},
	}
	for _, srv := range servers {
		t.Run("server="+srv.name, func(t *testing.T) {
			addr := srv.start(t)
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) { sc.run(t, addr) })
			}
		})
	}
}

// testWaitUntilRemoved sets a barrier that three waiters, each with its own
// session, block on until it is removed: each holds one watch on the node,
// none returns before the removal, and all return after it.
func testWaitUntilRemoved(t *testing.T, addr string) {
	ctx := testContext(t)
	path := "/gate/deploy"
	owner := dial(t, addr)
	if err := barrier.New(owner, path).Wait(ctx); err != nil {
		t.Fatalf("Wait on a barrier not set: %v", err)
	}
	b := barrier.New(owner, path)
	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Set(ctx); err != nil {
		t.Fatalf("second Set: %v", err)
	}
	released := make(chan error, 3)
	var sessions []string
	for range 3 {
		c := dial(t, addr)
		sessions = append(sessions, sessionHex(c))
		go func() { released <- barrier.New(c, path).Wait(ctx) }()
	}
	slices.Sort(sessions)
	awaitWatches(t, addr, "/gate", map[string][]string{path: sessions})
	assertBlocked(t, released)

	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := receive(t, released); err != nil {
			t.Errorf("Wait: %v", err)
		}
	}
	if err := b.Remove(ctx); err != nil {
		t.Fatalf("second Remove: %v", err)
	}

	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Wait(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context = %v, want context.Canceled", err)
	}
	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}
}

// testEnterNotBeforeSize lets size-1 members enter: all of them wait,
// watching "ready" only, and none returns; the last member releases them
// all.
func testEnterNotBeforeSize(t *testing.T, addr string) {
	const size = 4
	ctx := testContext(t)
	path := "/enter"
	entered := make(chan error, size)
	var sessions []string
	for i := range size - 1 {
		m := newMember(t, addr, path, size, "m"+strconv.Itoa(i))
		sessions = append(sessions, m.session)
		go func() { entered <- m.Enter(ctx) }()
	}
	slices.Sort(sessions)
	awaitWatches(t, addr, path, map[string][]string{path + "/ready": sessions})
	assertBlocked(t, entered)
	if got := children(t, dial(t, addr), path); len(got) != size-1 {
		t.Fatalf("children %v, want the %d members", got, size-1)
	}

	last := newMember(t, addr, path, size, "m3")
	if err := last.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	for range size - 1 {
		if err := receive(t, entered); err != nil {
			t.Errorf("Enter: %v", err)
		}
	}
	want := []string{"m0", "m1", "m2", "m3", "ready"}
	if got := children(t, last.c, path); !slices.Equal(got, want) {
		t.Errorf("children %v, want %v", got, want)
	}
	awaitWatches(t, addr, path, map[string][]string{})

	// A member that comes once the barrier is open enters at once.
	late := newMember(t, addr, path, size, "")
	if err := late.Enter(ctx); err != nil {
		t.Fatalf("late Enter: %v", err)
	}
}

// testLeaveHerdFree has five members leave one by one and checks, with the
// server's list of watches, that at every step each waiting leaver holds
// one watch: the lowest on the highest, every other one on the lowest.
// Nobody is released before the last member leaves.
func testLeaveHerdFree(t *testing.T, addr string) {
	const size = 5
	ctx := testContext(t)
	path := "/leave"
	ms := enterAll(t, addr, path, size)
	s := func(i int) string { return ms[i].session }
	node := func(i int) string { return path + "/m" + strconv.Itoa(i) }
	left := make(chan error, size)
	leave := func(i int) { go func() { left <- ms[i].Leave(ctx) }() }

	leave(0)
	awaitWatches(t, addr, path, map[string][]string{node(4): {s(0)}})
	leave(1)
	leave(2)
	awaitWatches(t, addr, path, map[string][]string{
		node(4): {s(0)},
		node(0): sorted(s(1), s(2)),
	})
	// Non-lowest leavers delete their nodes at once, after setting their
	// watch.
	awaitChildren(t, ms[0].c, path, "m0", "m3", "m4", "ready")
	assertBlocked(t, left)

	// The highest goes: the lowest moves its watch to the new highest.
	leave(4)
	awaitWatches(t, addr, path, map[string][]string{
		node(3): {s(0)},
		node(0): sorted(s(1), s(2), s(4)),
	})
	assertBlocked(t, left)

	leave(3)
	for range size {
		if err := receive(t, left); err != nil {
			t.Errorf("Leave: %v", err)
		}
	}
	if got := children(t, ms[0].c, path); len(got) != 0 {
		t.Errorf("nodes left behind: %v", got)
	}
	awaitWatches(t, addr, path, map[string][]string{})
}

// testCancelledEnter cancels a member waiting in Enter: Enter returns the
// context's error with the member's node already deleted, and the member
// no longer counts towards size.
func testCancelledEnter(t *testing.T, addr string) {
	const size = 3
	ctx := testContext(t)
	path := "/cancel"
	first := newMember(t, addr, path, size, "a")
	quitter := newMember(t, addr, path, size, "b")
	entered := make(chan error, size)
	go func() { entered <- first.Enter(ctx) }()
	enterCtx, cancel := context.WithCancel(ctx)
	cancelled := make(chan error, 1)
	go func() { cancelled <- quitter.Enter(enterCtx) }()
	awaitWatches(t, addr, path, map[string][]string{path + "/ready": sorted(first.session, quitter.session)})
	settle(t, quitter.c)

	cancel()
	if err := receive(t, cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Enter = %v, want context.Canceled", err)
	}
	if ok, _, err := first.c.Exists(ctx, path+"/b"); err != nil || ok {
		t.Fatalf("cancelled member's node still there (%v) when Enter returned", err)
	}

	second := newMember(t, addr, path, size, "c")
	go func() { entered <- second.Enter(ctx) }()
	awaitWatches(t, addr, path, map[string][]string{path + "/ready": sorted(first.session, second.session)})
	assertBlocked(t, entered)
	if err := newMember(t, addr, path, size, "d").Enter(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := receive(t, entered); err != nil {
			t.Errorf("Enter: %v", err)
		}
	}
}

// testCancelledLeave cancels a member waiting in Leave: its node and its
// watch are gone when Leave returns, and the last member leaves at once.
func testCancelledLeave(t *testing.T, addr string) {
	ctx := testContext(t)
	path := "/cancel-leave"
	ms := enterAll(t, addr, path, 2)
	leaveCtx, cancel := context.WithCancel(ctx)
	cancelled := make(chan error, 1)
	go func() { cancelled <- ms[1].Leave(leaveCtx) }()
	awaitWatches(t, addr, path, map[string][]string{path + "/m0": {ms[1].session}})
	settle(t, ms[1].c)
	cancel()
	if err := receive(t, cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Leave = %v, want context.Canceled", err)
	}
	awaitWatches(t, addr, path, map[string][]string{})
	if err := ms[0].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if got := children(t, ms[0].c, path); len(got) != 0 {
		t.Errorf("nodes left behind: %v", got)
	}
}

// testCrashedMember ends the session of a member that entered: the others
// leave without waiting for it.
func testCrashedMember(t *testing.T, addr string) {
	const size = 3
	ctx := testContext(t)
	path := "/crash"
	ms := enterAll(t, addr, path, size)
	left := make(chan error, size)
	for _, m := range ms[1:] {
		go func() { left <- m.Leave(ctx) }()
	}
	awaitWatches(t, addr, path, map[string][]string{path + "/m0": sorted(ms[1].session, ms[2].session)})
	assertBlocked(t, left)
	ms[0].c.Close()
	for range size - 1 {
		if err := receive(t, left); err != nil {
			t.Errorf("Leave: %v", err)
		}
	}
}

// testMisuse checks the errors of calls out of turn and of bad ids.
func testMisuse(t *testing.T, addr string) {
	ctx := testContext(t)
	path := "/misuse"
	m := newMember(t, addr, path, 1, "only")
	if err := m.Leave(ctx); !errors.Is(err, barrier.ErrNotEntered) {
		t.Errorf("Leave before Enter = %v, want ErrNotEntered", err)
	}
	if err := m.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Enter(ctx); !errors.Is(err, barrier.ErrEntered) {
		t.Errorf("second Enter = %v, want ErrEntered", err)
	}
	twin := newMember(t, addr, path, 1, "only")
	if err := twin.Enter(ctx); !errors.Is(err, barrier.ErrIDTaken) {
		t.Errorf("Enter with a taken id = %v, want ErrIDTaken", err)
	}
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ready", "a/b", ".."} {
		if err := newMember(t, addr, path, 1, id).Enter(ctx); !errors.Is(err, client.ErrInvalidPath) {
			t.Errorf("Enter as %q = %v, want ErrInvalidPath", id, err)
		}
	}
	if got := children(t, m.c, path); len(got) != 0 {
		t.Errorf("nodes left behind: %v", got)
	}
}

// testCurator shares a barrier and a double barrier with Curator's
// DistributedBarrier and DistributedDoubleBarrier, in a Java process: the
// Curator waiter is released when Go removes the gate; two Go members wait
// for the Curator member, the third, to enter; all three leave together
// and nothing is left behind.
func testCurator(t *testing.T, addr string) {
	const size = 3
	ctx := testContext(t)
	gatePath, path := "/curator/gate", "/curator/double"
	c := dial(t, addr)
	gate := barrier.New(c, gatePath)
	if err := gate.Set(ctx); err != nil {
		t.Fatal(err)
	}
	var ms []member
	var sessions []string
	entered := make(chan error, size-1)
	for range size - 1 {
		m := newMember(t, addr, path, size, "")
		ms, sessions = append(ms, m), append(sessions, m.session)
		go func() { entered <- m.Enter(ctx) }()
	}
	awaitWatches(t, addr, path, map[string][]string{path + "/ready": sorted(sessions...)})

	wait := startCurator(t, "CuratorBarrier.java", addr, gatePath, path, strconv.Itoa(size))
	deadline := time.Now().Add(testTimeout)
	for {
		out, err := zkref.FourLetter(addr, "wchp")
		if err != nil {
			t.Fatal(err)
		}
		if len(watchedBelow(out, "/curator")[gatePath]) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Curator never waited on the gate")
		}
		time.Sleep(5 * time.Millisecond)
	}
	assertBlocked(t, entered)
	if err := gate.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	for range ms {
		if err := receive(t, entered); err != nil {
			t.Fatalf("Enter with a Curator member: %v", err)
		}
	}
	left := make(chan error, len(ms))
	for _, m := range ms {
		go func() { left <- m.Leave(ctx) }()
	}
	for range ms {
		if err := receive(t, left); err != nil {
			t.Errorf("Leave with a Curator member: %v", err)
		}
	}
	if lines, want := wait(), []string{"gate true", "entered true", "left true", "done"}; !slices.Equal(lines, want) {
		t.Errorf("Curator printed %q, want %q", lines, want)
	}
	if got := children(t, c, path); len(got) != 0 {
		t.Errorf("nodes left behind: %v", got)
	}
}

// startCurator starts a Java program of testdata, built on Curator, with
// args, and returns a function that waits for it to end and returns the
// lines it printed.
func startCurator(t *testing.T, program string, args ...string) (wait func() []string) {
	t.Helper()
	java, err := zkref.Java()
	zkref.Require(t, err)
	classpath, err := zkref.CuratorClasspath()
	zkref.Require(t, err)
	jvm := []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData", "-Djava.io.tmpdir=" + t.TempDir(), "-cp", classpath}
	cmd := exec.CommandContext(testContext(t), java, slices.Concat(jvm, []string{filepath.Join("testdata", program)}, args)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		t.Helper()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s: %v; it printed:\n%s%s", program, err, stdout.Bytes(), stderr.Bytes())
		}
		return strings.Split(strings.TrimSpace(stdout.String()), "\n")
	}
}

// member is a double-barrier member with a session of its own.
type member struct {
	*barrier.DoubleBarrier
	c       *client.Client
	session string
}

func newMember(t *testing.T, addr, path string, size int, id string) member {
	c := dial(t, addr)
	return member{barrier.NewDouble(c, path, size, id), c, sessionHex(c)}
}

// enterAll enters size members named m0, m1... and returns them in that
// order, which is the order of their nodes.
func enterAll(t *testing.T, addr, path string, size int) []member {
	ctx := testContext(t)
	ms := make([]member, size)
	entered := make(chan error, size)
	for i := range ms {
		ms[i] = newMember(t, addr, path, size, "m"+strconv.Itoa(i))
		go func() { entered <- ms[i].Enter(ctx) }()
	}
	for range ms {
		if err := receive(t, entered); err != nil {
			t.Fatal(err)
		}
	}
	return ms
}

// assertBlocked fails the test if a call already returned on done.
func assertBlocked(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("returned before its time: %v", err)
	default:
	}
}

// awaitWatches waits until the data watches that the server lists (with
// the four-letter word wchp) on the nodes below under are want: the
// sessions watching each path, sorted.
func awaitWatches(t *testing.T, addr, under string, want map[string][]string) {
	t.Helper()
	var got map[string][]string
	deadline := time.Now().Add(testTimeout)
	for {
		out, err := zkref.FourLetter(addr, "wchp")
		if err != nil {
			t.Fatal(err)
		}
		got = watchedBelow(out, under)
		if maps.EqualFunc(got, want, slices.Equal) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("watches below %s: %v, want %v", under, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// watchedBelow parses wchp's report, a path then its sessions indented
// below it, into the sorted sessions of each path strictly below under.
func watchedBelow(report, under string) map[string][]string {
	watches := map[string][]string{}
	path := ""
	for _, line := range strings.Split(report, "\n") {
		if session, ok := strings.CutPrefix(line, "\t"); ok {
			if strings.HasPrefix(path, under+"/") {
				watches[path] = append(watches[path], strings.TrimSpace(session))
			}
		} else if line != "" {
			path = line
		}
	}
	for _, sessions := range watches {
		slices.Sort(sessions)
	}
	return watches
}

// settle makes a round trip on c. Replies come in order, so when it
// returns the client has handled the reply to every request sent before:
// one that set a watch the server lists is no longer in flight, where
// cancelling it would leave the server's watch unknown to the client.
func settle(t *testing.T, c *client.Client) {
	t.Helper()
	if _, _, err := c.Exists(testContext(t), "/"); err != nil {
		t.Fatal(err)
	}
}

// awaitChildren waits until the children of path are want, sorted.
func awaitChildren(t *testing.T, c *client.Client, path string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for got := children(t, c, path); !slices.Equal(got, want); got = children(t, c, path) {
		if time.Now().After(deadline) {
			t.Fatalf("children of %s: %v, want %v", path, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func dial(t *testing.T, addr string) *client.Client {
	t.Helper()
	c, err := client.Dial(testContext(t), addr, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func sessionHex(c *client.Client) string {
	return fmt.Sprintf("0x%x", uint64(c.SessionID()))
}

// children returns the sorted children of path; none when it is gone.
func children(t *testing.T, c *client.Client, path string) []string {
	t.Helper()
	names, _, err := c.Children(testContext(t), path)
	if err != nil && !errors.Is(err, client.ErrNoNode) {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatal("timed out waiting on a channel")
		panic("unreachable")
	}
}
