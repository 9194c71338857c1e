package recipetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
)

// TestServers starts each server, and checks on it what DataWatches and
// WatchCount read: a data watch listed by path and session, a child watch
// counted by mntr alone.
func TestServers(t *testing.T) {
	for _, srv := range Servers {
		t.Run(srv.Name, func(t *testing.T) {
			addr := srv.Start(t)
			ctx := Context(t)
			c := Dial(t, addr, client.Config{})
			for _, p := range []string{"/w", "/w/x", "/wx"} {
				if _, _, err := c.Create(ctx, p, nil, client.ModePersistent, nil); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range []string{"/w/x", "/wx"} {
				if _, _, _, err := c.GetW(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, _, err := c.ChildrenW(ctx, "/w"); err != nil {
				t.Fatal(err)
			}
			session := SessionHex(c.SessionID())
			AwaitWatches(t, addr, "/w", Watches{"/w/x": {session}})
			if got := DataWatches(t, addr); got.Count() != 2 || !got.Equal(Watches{"/w/x": {session}, "/wx": {session}}) {
				t.Errorf("data watches:%s\nwant /w/x and /wx by %s", got, session)
			}
			if n := WatchCount(t, addr); n != 3 {
				t.Errorf("WatchCount = %d, want 3: two data watches and a child watch", n)
			}
		})
	}
}

func TestParseWchp(t *testing.T) {
	w, err := parseWchp("/a\n\t0x2\n\t0x1\n/b\r\n\t0x3\r\n\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Watches{"/a": {"0x1", "0x2"}, "/b": {"0x3"}}); !w.Equal(want) {
		t.Errorf("parsed %s, want %s", w, want)
	}
	if _, err := parseWchp("\t0x1\n"); err == nil {
		t.Error("a session before any path parsed")
	}
	if got := (Watches{"/": {"0x1"}, "/a": {"0x1"}, "/a/b": {"0x2"}, "/ab": {"0x3"}}).Below("/a"); !got.Equal(Watches{"/a": {"0x1"}, "/a/b": {"0x2"}}) {
		t.Errorf("Below(/a) = %s", got)
	}
	if n, err := mntrValue("zk_version\t3.8\nzk_watch_count\t7\n", "zk_watch_count"); n != 7 || err != nil {
		t.Errorf("mntrValue = %d, %v; want 7", n, err)
	}
}

// TestPartition breaks a client's connection both ways: Cut at once,
// Stall when the read timeout passes, a request already sent failing with
// ErrConnectionLoss. After Heal the client is back in the same session.
func TestPartition(t *testing.T) {
	addr := StartCollie(t)
	ctx := Context(t)
	// Long enough to survive the stall, short enough to notice it soon.
	const timeout = 20 * tick
	c, p := Partitioned(t, addr, timeout)
	session := c.SessionID()
	states := c.StateChanges()
	defer states.Close()
	awaitState := func(want client.State) {
		t.Helper()
		for {
			if s := Receive(t, states.Events()); s == want {
				return
			}
		}
	}

	p.Cut()
	awaitState(client.StateDisconnected)
	p.Heal()
	awaitState(client.StateReconnected)

	p.Stall()
	start := time.Now()
	_, _, err := c.Exists(ctx, "/")
	if !errors.Is(err, client.ErrConnectionLoss) {
		t.Fatalf("Exists through a stalled connection = %v, want ErrConnectionLoss", err)
	}
	if waited := time.Since(start); waited < timeout/3 {
		t.Errorf("stalled connection noticed after %v: it was not silent", waited)
	}
	p.Heal()
	awaitState(client.StateReconnected)
	if _, _, err := c.Exists(ctx, "/"); err != nil || c.SessionID() != session {
		t.Fatalf("after Heal: %v, session %x (was %x)", err, c.SessionID(), session)
	}
}

// TestJava runs a program to its end, then as a peer.
func TestJava(t *testing.T) {
	lines := Java{Program: "Echo.java", Args: []string{"curator", "b"}}.Run(t)()
	if want := []string{"curator", "b"}; !slices.Equal(lines, want) {
		t.Errorf("Run printed %q, want %q", lines, want)
	}
	peer := Java{Program: "Echo.java"}.Start(t)
	peer.Expect(t, "hello", "echo hello")
	if got := peer.Ask(t, "again"); got != "echo again" {
		t.Errorf("Ask = %q", got)
	}
}

func TestSequence(t *testing.T) {
	if n := Sequence(t, "/l/_c_0-__READ__0000000042"); n != 42 {
		t.Errorf("Sequence = %d, want 42", n)
	}
}
