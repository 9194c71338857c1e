package lock_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/collie-io/collie/client"
	rt "github.com/collie-io/collie/recipe/internal/recipetest"
	"github.com/collie-io/collie/recipe/lock"
)

// kazooProgram drives Kazoo's locks; see its docstring for the commands.
const kazooProgram = "kazoo_lock.py"

// kazooLockNode is how NewKazooMutex names its nodes: Collie's protection
// prefix, then Kazoo's marker and sequence.
var kazooLockNode = regexp.MustCompile(`/_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-__lock__[0-9]{10}$`)

// TestKazooLine checks which children a Kazoo-layout Mutex counts in line,
// and in which order: those that Kazoo 2.8's Lock counts, by the string
// that follows "__lock__" (so a sequence that overflowed comes first, as
// with Kazoo), whatever comes before it.
func TestKazooLine(t *testing.T) {
	names := []string{
		"_c_ffffffff-0000-4000-8000-000000000000-__lock__0000000003",
		// Kazoo's ReadLock, and Curator's mutex and read lock.
		"0123456789abcdef0123456789abcdef__rlock__0000000000",
		"_c_99999999-0000-4000-8000-000000000000-lock-0000000002",
		"_c_99999999-0000-4000-8000-000000000000-__READ__0000000004",
		// Kazoo's Lock, and a sequence that overflowed.
		"fedcba9876543210fedcba9876543210__lock__0000000001",
		"00000000000000000000000000000000__lock__-2147483647",
		// No sequence, nine digits, eleven, not at the end.
		"__lock__-1",
		"__lock__000000005",
		"__lock__00000000060",
		"__lock__0000000007-x",
		// No prefix at all.
		"__lock__0000000008",
		"lock",
	}
	want := []string{
		"00000000000000000000000000000000__lock__-2147483647",
		"fedcba9876543210fedcba9876543210__lock__0000000001",
		"_c_ffffffff-0000-4000-8000-000000000000-__lock__0000000003",
		"__lock__0000000008",
	}
	if got := lock.KazooLine(names); !slices.Equal(got, want) {
		t.Errorf("line %q, want %q", got, want)
	}
}

// TestKazooInterop runs python-kazoo 2.8's Lock in a Python process
// against Mutexes from NewKazooMutex on the same paths, on Collie and on
// the real ZooKeeper 3.8, which shows that the expectations are Kazoo's
// own.
func TestKazooInterop(t *testing.T) {
	for _, srv := range rt.Servers {
		t.Run("server="+srv.Name, func(t *testing.T) {
			addr := srv.Start(t)
			peer := rt.Python{Program: kazooProgram, Args: []string{addr}}.Start(t)
			t.Run("exclusion", func(t *testing.T) { testKazooExclusion(t, addr, peer) })
			t.Run("contention", func(t *testing.T) { testKazooContention(t, addr, peer) })
		})
	}
}

// testKazooExclusion has each side hold the lock while contenders of both
// sides queue behind it: they wait while it holds, and take the lock in
// line order, which both sides see alike. Children that are not Kazoo
// contenders stay in the path throughout, each holding its own lock or
// none, and both sides ignore them.
func testKazooExclusion(t *testing.T, addr string, peer *rt.Peer) {
	ctx := rt.Context(t)
	path := "/kazoo-exclusion"
	c := rt.Dial(t, addr, client.Config{})
	// A name that would come first in line, were it a contender.
	for _, p := range []string{path, path + "/__lock__-1"} {
		if _, _, err := c.Create(ctx, p, nil, client.ModePersistent, nil); err != nil {
			t.Fatal(err)
		}
	}
	peer.Expect(t, "rlock reader "+path+" reader", "ok")
	peer.Expect(t, "acquire reader", "ok")
	peer.Expect(t, "await reader", "acquired")
	curator, err := lock.NewMutex(c, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	observer := lock.NewKazooMutex(c, path)
	inLine := func(want string) {
		t.Helper()
		var got string
		rt.WaitFor(t, "line "+want, func() bool {
			all, err := observer.Participants(ctx)
			if err != nil {
				t.Fatal(err)
			}
			data := make([]string, len(all))
			for i, p := range all {
				data[i] = string(p.Data)
			}
			got = strings.Join(data, " ")
			return got == want
		})
	}
	newMutex := func(data string) *lock.Mutex {
		return lock.NewKazooMutex(rt.Dial(t, addr, client.Config{}), path, lock.WithData([]byte(data)))
	}
	peer.Expect(t, "lock k1 "+path+" k1", "ok")
	peer.Expect(t, "lock k2 "+path+" k2", "ok")

	// Kazoo holds: a Go contender, then a Kazoo one, wait; the Go one is
	// next.
	peer.Expect(t, "acquire k1", "ok")
	peer.Expect(t, "await k1", "acquired")
	g1 := newMutex("g1")
	g1Acquired := lockAsync(ctx, t, g1)
	inLine("k1 g1")
	peer.Expect(t, "acquire k2", "ok")
	inLine("k1 g1 k2")
	peer.Expect(t, "contenders k2", "k1 g1 k2")
	rt.Pending(t, "a Go contender behind a Kazoo holder", g1Acquired)
	peer.Expect(t, "state k2", "waiting")
	peer.Expect(t, "release k1", "ok")
	lease := rt.Receive(t, g1Acquired)
	if !kazooLockNode.MatchString(lease.Node()) {
		t.Errorf("node %s is not named as NewKazooMutex names it", lease.Node())
	}
	peer.Expect(t, "state k2", "waiting")
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	peer.Expect(t, "await k2", "acquired")
	peer.Expect(t, "release k2", "ok")
	inLine("")

	// Go holds: a Kazoo contender, then a Go one, wait; the Kazoo one is
	// next.
	lease, err = g1.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	peer.Expect(t, "acquire k1", "ok")
	inLine("g1 k1")
	g2Acquired := lockAsync(ctx, t, newMutex("g2"))
	inLine("g1 k1 g2")
	peer.Expect(t, "contenders k1", "g1 k1 g2")
	peer.Expect(t, "state k1", "waiting")
	rt.Pending(t, "a Go contender behind a Go holder", g2Acquired)
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	peer.Expect(t, "await k1", "acquired")
	rt.Pending(t, "a Go contender behind a Kazoo holder", g2Acquired)
	peer.Expect(t, "release k1", "ok")
	if err := rt.Receive(t, g2Acquired).Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	inLine("")

	peer.Expect(t, "release reader", "ok")
	if err := curator.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rt.Children(t, c, path); !slices.Equal(got, []string{"__lock__-1"}) {
		t.Errorf("children left: %v", got)
	}
}

// testKazooContention has Go and Kazoo contenders, each with a session of
// its own, take the lock in turns; each holder adds one to a counter by a
// read and a write conditional on the version read. A refused write would
// show two holders at once: none is refused, and the counter ends at the
// number of acquisitions.
func testKazooContention(t *testing.T, addr string, peer *rt.Peer) {
	const contenders, rounds = 3, 10 // on each side
	ctx := rt.Context(t)
	path, counter := "/kazoo-contention", "/kazoo-counter"
	c := rt.Dial(t, addr, client.Config{})
	if _, _, err := c.Create(ctx, counter, []byte("0"), client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	peer.Expect(t, fmt.Sprintf("contend %s %s %d %d", path, counter, contenders, rounds), "ok")
	contend(ctx, t, addr, contenders, rounds, counter, func(c *client.Client) *lock.Mutex { return lock.NewKazooMutex(c, path) })()
	peer.Expect(t, "finish", fmt.Sprintf("done %d", contenders*rounds))
	data, _, err := c.Get(ctx, counter)
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(2 * contenders * rounds); string(data) != want {
		t.Errorf("counter %s, want %s", data, want)
	}
}

// contend starts n contenders, each with a session of its own and a mutex
// from newMutex, that take the lock rounds times each and add one to the
// integer in counter while they hold it. wait waits for them to end and
// fails the test on any error, a refused increment among them.
func contend(ctx context.Context, t *testing.T, addr string, n, rounds int, counter string, newMutex func(*client.Client) *lock.Mutex) (wait func()) {
	var (
		errs rt.Errs
		wg   sync.WaitGroup
	)
	for range n {
		c := rt.Dial(t, addr, client.Config{})
		m := newMutex(c)
		wg.Go(func() {
			for range rounds {
				lease, err := m.Lock(ctx)
				if err != nil {
					errs.Add("Lock", err)
					return
				}
				errs.Add("increment", increment(ctx, c, counter))
				if err := lease.Unlock(ctx); err != nil {
					errs.Add("Unlock", err)
					return
				}
			}
		})
	}
	return func() {
		t.Helper()
		wg.Wait()
		errs.Report(t)
	}
}

// increment adds one to the integer in node, failing when someone else
// wrote it between the read and the write.
func increment(ctx context.Context, c *client.Client, node string) error {
	data, stat, err := c.Get(ctx, node)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(string(data))
	if err != nil {
		return err
	}
	_, err = c.Set(ctx, node, []byte(strconv.Itoa(n+1)), stat.Version)
	if errors.Is(err, client.ErrBadVersion) {
		return fmt.Errorf("written by another holder: %w", err)
	}
	return err
}
