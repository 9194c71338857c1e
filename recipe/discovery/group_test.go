package discovery_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/discovery"
	rt "github.com/collie-io/collie/recipe/internal/recipetest"
)

// describeMembers writes a list of members as "id=data,...".
func describeMembers(members []discovery.Member) string {
	var out []string
	for _, m := range members {
		out = append(out, fmt.Sprintf("%s=%s", m.ID, m.Data))
	}
	return strings.Join(out, ",")
}

// cut breaks c's connections through part and waits until c's session is
// in state.
func cut(t *testing.T, c *client.Client, part *rt.Partition, state client.State) {
	t.Helper()
	states := c.StateChanges()
	defer states.Close()
	part.Cut()
	for rt.Receive(t, states.Events()) != state {
	}
}

// atEnd calls f when the test ends, with a context of its own (the test's
// has ended by then), and reports its error.
func atEnd(t *testing.T, f func(context.Context) error) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), rt.Timeout)
		defer cancel()
		if err := f(ctx); err != nil {
			t.Error(err)
		}
	})
}

// joinGroup joins group as id for the rest of the test.
func joinGroup(t *testing.T, c *client.Client, group, id string, data []byte) *discovery.Membership {
	t.Helper()
	m, err := discovery.Join(rt.Context(t), c, group, id, data)
	if err != nil {
		t.Fatal(err)
	}
	atEnd(t, m.Leave)
	return m
}

// watchGroup starts a live list of group's members, closed with the test.
func watchGroup(t *testing.T, c *client.Client, group string) *discovery.Group {
	t.Helper()
	g, err := discovery.WatchGroup(rt.Context(t), c, group)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// awaitMembers receives lists from g until one is want, as describeMembers
// writes it.
func awaitMembers(t *testing.T, g *discovery.Group, want string) {
	t.Helper()
	for describeMembers(rt.Receive(t, g.Updates())) != want {
	}
}

// The live list follows the joins, changes and departures of members of
// other sessions, starting before the group exists.
func testJoinLeave(t *testing.T, addr string) {
	ctx := rt.Context(t)
	const group = "/join-leave/workers"
	g := watchGroup(t, rt.Dial(t, addr, client.Config{}), group)
	awaitMembers(t, g, "")

	a := rt.Dial(t, addr, client.Config{})
	if _, err := discovery.Join(ctx, a, group, "a", []byte("A")); err != nil {
		t.Fatal(err)
	}
	b := rt.Dial(t, addr, client.Config{})
	mb, err := discovery.Join(ctx, b, group, "b", []byte("B"))
	if err != nil {
		t.Fatal(err)
	}
	awaitMembers(t, g, "a=A,b=B")
	if got := describeMembers(g.Members()); got != "a=A,b=B" {
		t.Errorf("Members() = %s", got)
	}
	if _, st, err := b.Get(ctx, mb.Path()); err != nil || st.EphemeralOwner != b.SessionID() {
		t.Errorf("member b's node: %+v, %v; want ephemeral of session %#x", st, err, b.SessionID())
	}
	if _, st, err := b.Get(ctx, "/join-leave"); err != nil || st.EphemeralOwner != 0 {
		t.Errorf("the group's parent: %+v, %v", st, err)
	}

	if err := mb.SetData(ctx, []byte("B2")); err != nil {
		t.Fatal(err)
	}
	awaitMembers(t, g, "a=A,b=B2")
	if err := mb.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	awaitMembers(t, g, "a=A")
	if ok, _, err := b.Exists(ctx, group+"/b"); ok || err != nil {
		t.Errorf("b's node after Leave: %v, %v", ok, err)
	}
	a.Close()
	awaitMembers(t, g, "")
}

// A member whose session expires leaves the others' lists, and joins again
// once its client has a new session; its own list, which expired with it,
// catches up with what happened meanwhile.
func testGroupExpiry(t *testing.T, addr string) {
	ctx := rt.Context(t)
	const group = "/expiry/workers"
	observer := watchGroup(t, rt.Dial(t, addr, client.Config{}), group)

	c, part := rt.Partitioned(t, addr, rt.ShortSession)
	m, err := discovery.Join(ctx, c, group, "m", []byte("M"))
	if err != nil {
		t.Fatal(err)
	}
	own := watchGroup(t, c, group)
	awaitMembers(t, observer, "m=M")
	awaitMembers(t, own, "m=M")
	oldSession := c.SessionID()
	cut(t, c, part, client.StateExpired)
	awaitMembers(t, observer, "")
	if _, err := discovery.Join(ctx, rt.Dial(t, addr, client.Config{}), group, "late", []byte("L")); err != nil {
		t.Fatal(err)
	}
	awaitMembers(t, observer, "late=L")

	part.Heal()
	awaitMembers(t, observer, "late=L,m=M")
	awaitMembers(t, own, "late=L,m=M")
	if _, st, err := c.Get(ctx, m.Path()); err != nil || st.EphemeralOwner != c.SessionID() || st.EphemeralOwner == oldSession {
		t.Errorf("m's node after expiry: %+v, %v; want ephemeral of the new session %#x", st, err, c.SessionID())
	}
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	awaitMembers(t, observer, "late=L")
}

// A member whose client starts a new session as soon as it has found its
// session expired, possibly before the server has expired it and removed
// its node, ends up with a node of the new session, which the server's
// expiry of the old one does not remove.
func testQuickReturn(t *testing.T, addr string) {
	ctx := rt.Context(t)
	c, part := rt.Partitioned(t, addr, rt.ShortSession)
	m, err := discovery.Join(ctx, c, "/quick", "m", []byte("M"))
	if err != nil {
		t.Fatal(err)
	}
	// The old session's probe says when the server has expired it.
	if _, _, err := c.Create(ctx, "/quick-probe", nil, client.ModeEphemeral, nil); err != nil {
		t.Fatal(err)
	}
	oldSession := c.SessionID()
	cut(t, c, part, client.StateExpired)
	part.Heal()
	observer := rt.Dial(t, addr, client.Config{})
	rt.WaitFor(t, "the server to expire the old session", func() bool {
		ok, _, err := observer.Exists(ctx, "/quick-probe")
		return err == nil && !ok
	})
	rt.WaitFor(t, "the member's node of the new session", func() bool {
		_, st, err := observer.Get(ctx, m.Path())
		return err == nil && st.EphemeralOwner == c.SessionID() && st.EphemeralOwner != oldSession
	})
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := observer.Exists(ctx, m.Path()); ok || err != nil {
		t.Errorf("the member's node after Leave: %v, %v", ok, err)
	}
}

// A node left at the member's path by an expired session of its own,
// which the server has not removed yet, is replaced by one of the current
// session. (The session that "expired" is another client's here: when it
// comes to that, the server has usually expired the member's own session.)
func testOldSessionNode(t *testing.T, addr string) {
	ctx := rt.Context(t)
	c := rt.Dial(t, addr, client.Config{})
	m := joinGroup(t, c, "/old-session", "m", []byte("M"))
	// Once the member watches its node, it looks at it again only when
	// the node changes.
	rt.AwaitWatches(t, addr, "/old-session", rt.Watches{m.Path(): {rt.SessionHex(c.SessionID())}})
	old := rt.Dial(t, addr, client.Config{})
	discovery.TakeForOwnNode(m, old.SessionID())
	if _, err := old.Multi(ctx, client.DeleteOp(m.Path(), client.AnyVersion),
		client.CreateOp(m.Path(), []byte("M"), client.ModeEphemeral, nil)); err != nil {
		t.Fatal(err)
	}
	rt.WaitFor(t, "the node of the current session", func() bool {
		_, st, err := old.Get(ctx, m.Path())
		return err == nil && st.EphemeralOwner == c.SessionID()
	})
}

// A member's node deleted by someone else is written again.
func testMemberDeleted(t *testing.T, addr string) {
	ctx := rt.Context(t)
	c := rt.Dial(t, addr, client.Config{})
	m := joinGroup(t, c, "/deleted", "m", []byte("M"))
	g := watchGroup(t, c, "/deleted")
	awaitMembers(t, g, "m=M")
	_, before, err := c.Get(ctx, m.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Dial(t, addr, client.Config{}).Delete(ctx, m.Path(), client.AnyVersion); err != nil {
		t.Fatal(err)
	}
	rt.WaitFor(t, "the member's node to be written again", func() bool {
		_, st, err := c.Get(ctx, m.Path())
		return err == nil && st.Czxid != before.Czxid && st.EphemeralOwner == c.SessionID()
	})
	// The list may or may not have seen the node missing meanwhile.
	rt.WaitFor(t, "the member listed", func() bool { return describeMembers(g.Members()) == "m=M" })
}

// Join replaces a node at the member's path, such as one left by the
// process's previous session; after that, another session's node is not
// fought over but waited for.
func testMemberReplaces(t *testing.T, addr string) {
	ctx := rt.Context(t)
	previous := rt.Dial(t, addr, client.Config{})
	if _, _, err := previous.Create(ctx, "/replace", nil, client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := previous.Create(ctx, "/replace/m", []byte("old"), client.ModeEphemeral, nil); err != nil {
		t.Fatal(err)
	}
	c := rt.Dial(t, addr, client.Config{})
	m, err := discovery.Join(ctx, c, "/replace", "m", []byte("new"))
	if err != nil {
		t.Fatal(err)
	}
	data, st, err := c.Get(ctx, m.Path())
	if err != nil || string(data) != "new" || st.EphemeralOwner != c.SessionID() {
		t.Fatalf("the member's node: %q %+v, %v", data, st, err)
	}

	// Another process takes the path, in one transaction: the member
	// waits for that node to go.
	other := rt.Dial(t, addr, client.Config{})
	if _, err := other.Multi(ctx, client.DeleteOp(m.Path(), client.AnyVersion),
		client.CreateOp(m.Path(), []byte("other"), client.ModeEphemeral, nil)); err != nil {
		t.Fatal(err)
	}
	g := watchGroup(t, c, "/replace")
	awaitMembers(t, g, "m=other")
	other.Close()
	awaitMembers(t, g, "m=new")
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	awaitMembers(t, g, "")
}
