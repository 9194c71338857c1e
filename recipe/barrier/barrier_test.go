package barrier_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/barrier"
	"github.com/collie-io/collie/recipe/internal/recipetest"
)

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
		{"expiry-releases-no-waiter", testBarrierExpiry},
		{"expired-member-not-counted", testMemberExpiry},
		{"misuse", testMisuse},
		{"shared-with-curator", testCurator},
	}
	for _, srv := range recipetest.Servers {
		t.Run("server="+srv.Name, func(t *testing.T) {
			addr := srv.Start(t)
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
	ctx := recipetest.Context(t)
	path := "/gate/deploy"
	owner := recipetest.Dial(t, addr, client.Config{})
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
		c := recipetest.Dial(t, addr, client.Config{})
		sessions = append(sessions, recipetest.SessionHex(c.SessionID()))
		go func() { released <- barrier.New(c, path).Wait(ctx) }()
	}
	slices.Sort(sessions)
	recipetest.AwaitWatches(t, addr, "/gate", recipetest.Watches{path: sessions})
	assertBlocked(t, released)

	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := recipetest.Receive(t, released); err != nil {
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
	ctx := recipetest.Context(t)
	path := "/enter"
	entered := make(chan error, size)
	var sessions []string
	for i := range size - 1 {
		m := newMember(t, addr, path, size, "m"+strconv.Itoa(i))
		sessions = append(sessions, m.session)
		go func() { entered <- m.Enter(ctx) }()
	}
	slices.Sort(sessions)
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{path + "/ready": sessions})
	assertBlocked(t, entered)
	if got := children(t, recipetest.Dial(t, addr, client.Config{}), path); len(got) != size-1 {
		t.Fatalf("children %v, want the %d members", got, size-1)
	}

	last := newMember(t, addr, path, size, "m3")
	if err := last.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	for range size - 1 {
		if err := recipetest.Receive(t, entered); err != nil {
			t.Errorf("Enter: %v", err)
		}
	}
	want := []string{"m0", "m1", "m2", "m3", "ready"}
	if got := children(t, last.c, path); !slices.Equal(got, want) {
		t.Errorf("children %v, want %v", got, want)
	}
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{})

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
	ctx := recipetest.Context(t)
	path := "/leave"
	ms := enterAll(t, addr, path, size)
	s := func(i int) string { return ms[i].session }
	node := func(i int) string { return path + "/m" + strconv.Itoa(i) }
	left := make(chan error, size)
	leave := func(i int) { go func() { left <- ms[i].Leave(ctx) }() }

	leave(0)
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{node(4): {s(0)}})
	leave(1)
	leave(2)
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{
		node(4): {s(0)},
		node(0): sorted(s(1), s(2)),
	})
	// Non-lowest leavers delete their nodes at once, after setting their
	// watch.
	awaitChildren(t, ms[0].c, path, "m0", "m3", "m4", "ready")
	assertBlocked(t, left)

	// The highest goes: the lowest moves its watch to the new highest.
	leave(4)
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{
		node(3): {s(0)},
		node(0): sorted(s(1), s(2), s(4)),
	})
	assertBlocked(t, left)

	leave(3)
	for range size {
		if err := recipetest.Receive(t, left); err != nil {
			t.Errorf("Leave: %v", err)
		}
	}
	if got := children(t, ms[0].c, path); len(got) != 0 {
		t.Errorf("nodes left behind: %v", got)
	}
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{})
}

// testCancelledEnter cancels a member waiting in Enter: Enter returns the
// context's error with the member's node already deleted, and the member
// no longer counts towards size.
func testCancelledEnter(t *testing.T, addr string) {
	const size = 3
	ctx := recipetest.Context(t)
	path := "/cancel"
	first := newMember(t, addr, path, size, "a")
	quitter := newMember(t, addr, path, size, "b")
	entered := make(chan error, size)
	go func() { entered <- first.Enter(ctx) }()
	enterCtx, cancel := context.WithCancel(ctx)
	cancelled := make(chan error, 1)
	go func() { cancelled <- quitter.Enter(enterCtx) }()
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{path + "/ready": sorted(first.session, quitter.session)})
	settle(t, quitter.c)

	cancel()
	if err := recipetest.Receive(t, cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Enter = %v, want context.Canceled", err)
	}
	if ok, _, err := first.c.Exists(ctx, path+"/b"); err != nil || ok {
		t.Fatalf("cancelled member's node still there (%v) when Enter returned", err)
	}

	second := newMember(t, addr, path, size, "c")
	go func() { entered <- second.Enter(ctx) }()
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{path + "/ready": sorted(first.session, second.session)})
	assertBlocked(t, entered)
	if err := newMember(t, addr, path, size, "d").Enter(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := recipetest.Receive(t, entered); err != nil {
			t.Errorf("Enter: %v", err)
		}
	}
}

// testCancelledLeave cancels a member waiting in Leave: its node and its
// watch are gone when Leave returns, and the last member leaves at once.
func testCancelledLeave(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	path := "/cancel-leave"
	ms := enterAll(t, addr, path, 2)
	leaveCtx, cancel := context.WithCancel(ctx)
	cancelled := make(chan error, 1)
	go func() { cancelled <- ms[1].Leave(leaveCtx) }()
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{path + "/m0": {ms[1].session}})
	settle(t, ms[1].c)
	cancel()
	if err := recipetest.Receive(t, cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Leave = %v, want context.Canceled", err)
	}
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{})
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
	ctx := recipetest.Context(t)
	path := "/crash"
	ms := enterAll(t, addr, path, size)
	left := make(chan error, size)
	for _, m := range ms[1:] {
		go func() { left <- m.Leave(ctx) }()
	}
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{path + "/m0": sorted(ms[1].session, ms[2].session)})
	assertBlocked(t, left)
	ms[0].c.Close()
	for range size - 1 {
		if err := recipetest.Receive(t, left); err != nil {
			t.Errorf("Leave: %v", err)
		}
	}
}

// testBarrierExpiry lets the sessions of a barrier's setter and of one of
// its two waiters expire: the barrier stays set (its node is persistent),
// the other waiter is not released, and the expired waiter's Wait fails
// with ErrSessionExpired rather than return as if released. Remove, once
// the setter is back, releases the waiter left.
func testBarrierExpiry(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	path := "/gate-expiry/deploy"
	setter, setterNet := recipetest.Partitioned(t, addr, recipetest.ShortSession)
	b := barrier.New(setter, path)
	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	doomed, doomedNet := recipetest.Partitioned(t, addr, recipetest.ShortSession)
	steady := recipetest.Dial(t, addr, client.Config{})
	doomedDone, released := make(chan error, 1), make(chan error, 1)
	go func() { doomedDone <- barrier.New(doomed, path).Wait(ctx) }()
	go func() { released <- barrier.New(steady, path).Wait(ctx) }()
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{path: sorted(
		recipetest.SessionHex(doomed.SessionID()), recipetest.SessionHex(steady.SessionID()))})
	// The doomed waiter waits on its watch, its request answered.
	settle(t, doomed)

	setterStates, doomedStates := setter.StateChanges(), doomed.StateChanges()
	defer setterStates.Close()
	defer doomedStates.Close()
	setterNet.Cut()
	doomedNet.Cut()
	recipetest.AwaitState(t, setterStates, client.StateExpired)
	recipetest.AwaitState(t, doomedStates, client.StateExpired)
	if err := recipetest.Receive(t, doomedDone); !errors.Is(err, client.ErrSessionExpired) {
		t.Errorf("Wait of an expired waiter = %v, want ErrSessionExpired", err)
	}
	setterNet.Heal()
	doomedNet.Heal()
	if err := setter.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := steady.Exists(ctx, path); err != nil || !ok {
		t.Fatalf("barrier gone with its setter's session (%v)", err)
	}
	assertBlocked(t, released)
	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recipetest.Receive(t, released); err != nil {
		t.Errorf("Wait: %v", err)
	}
}

// testMemberExpiry lets the session of one of two members waiting in Enter
// expire, of a double barrier of three: its Enter fails with
// ErrSessionExpired and its node is gone, so it no longer counts. A new
// member's arrival then releases nobody; a fourth's releases all three.
func testMemberExpiry(t *testing.T, addr string) {
	const size = 3
	ctx := recipetest.Context(t)
	path := "/member-expiry"
	c, network := recipetest.Partitioned(t, addr, recipetest.ShortSession)
	doomed := barrier.NewDouble(c, path, size, "doomed")
	first := newMember(t, addr, path, size, "a")
	doomedDone, entered := make(chan error, 1), make(chan error, size)
	go func() { doomedDone <- doomed.Enter(ctx) }()
	go func() { entered <- first.Enter(ctx) }()
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{path + "/ready": sorted(
		recipetest.SessionHex(c.SessionID()), first.session)})
	settle(t, c)

	states := c.StateChanges()
	defer states.Close()
	network.Cut()
	recipetest.AwaitState(t, states, client.StateExpired)
	awaitChildren(t, first.c, path, "a")
	network.Heal()
	if err := recipetest.Receive(t, doomedDone); !errors.Is(err, client.ErrSessionExpired) {
		t.Errorf("Enter of an expired member = %v, want ErrSessionExpired", err)
	}
	assertBlocked(t, entered)

	second := newMember(t, addr, path, size, "b")
	go func() { entered <- second.Enter(ctx) }()
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{path + "/ready": sorted(first.session, second.session)})
	assertBlocked(t, entered)
	if got := children(t, first.c, path); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("children %v, want the two live members", got)
	}
	if err := newMember(t, addr, path, size, "c").Enter(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := recipetest.Receive(t, entered); err != nil {
			t.Errorf("Enter: %v", err)
		}
	}
}

// testMisuse checks the errors of calls out of turn and of bad ids.
func testMisuse(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
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
	ctx := recipetest.Context(t)
	gatePath, path := "/curator/gate", "/curator/double"
	c := recipetest.Dial(t, addr, client.Config{})
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
	recipetest.AwaitWatches(t, addr, path, recipetest.Watches{path + "/ready": sorted(sessions...)})

	wait := recipetest.Java{Program: "CuratorBarrier.java", Args: []string{addr, gatePath, path, strconv.Itoa(size)}}.Run(t)
	recipetest.WaitFor(t, "Curator to wait on the gate", func() bool {
		return len(recipetest.DataWatches(t, addr)[gatePath]) == 1
	})
	assertBlocked(t, entered)
	if err := gate.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	for range ms {
		if err := recipetest.Receive(t, entered); err != nil {
			t.Fatalf("Enter with a Curator member: %v", err)
		}
	}
	left := make(chan error, len(ms))
	for _, m := range ms {
		go func() { left <- m.Leave(ctx) }()
	}
	for range ms {
		if err := recipetest.Receive(t, left); err != nil {
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

// member is a double-barrier member with a session of its own.
type member struct {
	*barrier.DoubleBarrier
	c       *client.Client
	session string
}

func newMember(t *testing.T, addr, path string, size int, id string) member {
	c := recipetest.Dial(t, addr, client.Config{})
	return member{barrier.NewDouble(c, path, size, id), c, recipetest.SessionHex(c.SessionID())}
}

// enterAll enters size members named m0, m1... and returns them in that
// order, which is the order of their nodes.
func enterAll(t *testing.T, addr, path string, size int) []member {
	ctx := recipetest.Context(t)
	ms := make([]member, size)
	entered := make(chan error, size)
	for i := range ms {
		ms[i] = newMember(t, addr, path, size, "m"+strconv.Itoa(i))
		go func() { entered <- ms[i].Enter(ctx) }()
	}
	for range ms {
		if err := recipetest.Receive(t, entered); err != nil {
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

// settle makes a round trip on c. Replies come in order, so when it
// returns the client has handled the reply to every request sent before:
// one that set a watch the server lists is no longer in flight, where
// cancelling it would leave the server's watch unknown to the client.
func settle(t *testing.T, c *client.Client) {
	t.Helper()
	if _, _, err := c.Exists(recipetest.Context(t), "/"); err != nil {
		t.Fatal(err)
	}
}

// awaitChildren waits until the children of path are want, sorted.
func awaitChildren(t *testing.T, c *client.Client, path string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(recipetest.Timeout)
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

// children returns the sorted children of path; none when it is gone.
func children(t *testing.T, c *client.Client, path string) []string {
	t.Helper()
	return slices.Sorted(slices.Values(recipetest.Children(t, c, path)))
}
