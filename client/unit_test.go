package client

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/proto"
)

func TestParseConnectString(t *testing.T) {
	cases := []struct {
		in      string
		servers []string
		chroot  string
		err     bool
	}{
		{in: "127.0.0.1:2181", servers: []string{"127.0.0.1:2181"}},
		{in: "a:1,b:2,c:3/app/x", servers: []string{"a:1", "b:2", "c:3"}, chroot: "/app/x"},
		{in: "zk1, zk2:2182", servers: []string{"zk1:2181", "zk2:2182"}},
		{in: "[::1]:2181,::1,[fe80::1]", servers: []string{"[::1]:2181", "[::1]:2181", "[fe80::1]:2181"}},
		{in: "h:1/", servers: []string{"h:1"}},
		{in: "h:1/app/", err: true},
		{in: "/app", err: true},
		{in: "", err: true},
	}
	for _, tc := range cases {
		servers, chroot, err := parseConnectString(tc.in)
		if tc.err {
			if err == nil {
				t.Errorf("parseConnectString(%q) = %v %q, want an error", tc.in, servers, chroot)
			}
			continue
		}
		slices.Sort(servers)
		want := slices.Sorted(slices.Values(tc.servers))
		if err != nil || !slices.Equal(servers, want) || chroot != tc.chroot {
			t.Errorf("parseConnectString(%q) = %v %q %v; want %v %q", tc.in, servers, chroot, err, want, tc.chroot)
		}
	}
}

func TestPaths(t *testing.T) {
	cases := []struct {
		chroot, client, server string
	}{
		{"", "/", "/"},
		{"", "/a/b", "/a/b"},
		{"/app", "/", "/app"},
		{"/app", "/a", "/app/a"},
	}
	for _, tc := range cases {
		sp, err := serverPath(tc.chroot, tc.client, false)
		if err != nil || sp != tc.server {
			t.Errorf("serverPath(%q, %q) = %q, %v; want %q", tc.chroot, tc.client, sp, err, tc.server)
		}
		cp, ok := clientPath(tc.chroot, tc.server)
		if !ok || cp != tc.client {
			t.Errorf("clientPath(%q, %q) = %q, %v; want %q", tc.chroot, tc.server, cp, ok, tc.client)
		}
	}
	if _, ok := clientPath("/app", "/apple"); ok {
		t.Error("clientPath took /apple to be under /app")
	}
	if _, err := serverPath("", "/q/", true); err != nil {
		t.Errorf("sequential path ending in /: %v", err)
	}
	if _, err := serverPath("", "/q/", false); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("plain path ending in /: %v", err)
	}
}

func TestStreamQueuesWithoutBound(t *testing.T) {
	s := newStream[int]()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.forward(nil)
	}()
	const n = 10000
	for i := range n {
		if !s.push(i) {
			t.Fatal("push refused")
		}
	}
	s.end(-1)
	if s.push(n) {
		t.Error("push accepted after end")
	}
	var got []int
	for v := range s.Events() {
		got = append(got, v)
	}
	<-done
	if len(got) != n+1 || got[n] != -1 || !slices.IsSorted(got[:n]) {
		t.Errorf("stream delivered %d values (last %d), in order %v", len(got), got[len(got)-1], slices.IsSorted(got[:n]))
	}
}

func TestStreamClose(t *testing.T) {
	s := newStream[int]()
	closed := 0
	s.onClose = func() { closed++ }
	go s.forward(nil)
	s.push(1)
	s.push(2)
	if v := recv(t, s.Events(), "first"); v != 1 {
		t.Errorf("first value %d", v)
	}
	s.Close()
	s.Close()
	if _, ok := <-s.Events(); ok {
		// The forwarder may have handed over the second value before
		// seeing the stop; the channel must close right after.
		if _, ok := <-s.Events(); ok {
			t.Error("channel open after Close")
		}
	}
	if closed != 1 {
		t.Errorf("onClose ran %d times", closed)
	}
}

func TestBackoff(t *testing.T) {
	b := ExponentialBackoff(10*time.Millisecond, 80*time.Millisecond, 5)
	for n := 1; n <= 5; n++ {
		d, ok := b.Delay(n)
		full := min(10*time.Millisecond<<(n-1), 80*time.Millisecond)
		if !ok || d < full/2 || d > full {
			t.Errorf("Delay(%d) = %v, %v; want in [%v, %v]", n, d, ok, full/2, full)
		}
	}
	if _, ok := b.Delay(6); ok {
		t.Error("retried past Retries")
	}
	if d, ok := RetryForever(time.Second).Delay(1 << 20); !ok || d > time.Second || d < time.Second/2 {
		t.Errorf("RetryForever = %v, %v", d, ok)
	}
	if _, ok := RetryNTimes(0, time.Second).Delay(1); ok {
		t.Error("RetryNTimes(0) retries")
	}
}

func TestRetry(t *testing.T) {
	ctx := testCtx(t)
	calls := 0
	err := Retry(ctx, RetryNTimes(5, time.Microsecond), func(context.Context) error {
		calls++
		if calls < 3 {
			return fmt.Errorf("get /x: %w", ErrConnectionLoss)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("Retry = %v after %d calls; want nil after 3", err, calls)
	}
	calls = 0
	err = Retry(ctx, RetryForever(time.Microsecond), func(context.Context) error {
		calls++
		return fmt.Errorf("get /x: %w", ErrNoNode)
	})
	if !errors.Is(err, ErrNoNode) || calls != 1 {
		t.Errorf("Retry of a final error = %v after %d calls", err, calls)
	}
	calls = 0
	err = Retry(ctx, RetryNTimes(2, time.Microsecond), func(context.Context) error {
		calls++
		return ErrSessionMoved
	})
	if !errors.Is(err, ErrSessionMoved) || calls != 3 {
		t.Errorf("Retry past its policy = %v after %d calls", err, calls)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := Retry(cctx, RetryForever(time.Hour), func(context.Context) error { return ErrConnectionLoss }); !errors.Is(err, context.Canceled) {
		t.Errorf("Retry with an ended context = %v", err)
	}
	for _, err := range []error{ErrConnectionLoss, ErrOperationTimeout, ErrThrottledOp, ErrRequestTimeout, fmt.Errorf("x: %w", ErrSessionMoved)} {
		if !Retryable(err) {
			t.Errorf("Retryable(%v) = false", err)
		}
	}
	for _, err := range []error{nil, ErrNoNode, ErrSessionExpired, ErrClosed, context.Canceled, ErrBadVersion} {
		if Retryable(err) {
			t.Errorf("Retryable(%v) = true", err)
		}
	}
}

func TestProtectedNames(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := newUUID(), newUUID()
	if !uuid.MatchString(a) || a == b {
		t.Errorf("newUUID = %q, %q", a, b)
	}
	name := ProtectedPrefix + a + "-lock-0000000007"
	if rest, ok := IsProtected(name); !ok || rest != "lock-0000000007" {
		t.Errorf("IsProtected(%q) = %q, %v", name, rest, ok)
	}
	for _, name := range []string{"lock-1", "_c_short-x", "_c_" + strings.Repeat("a", 36) + "x"} {
		if _, ok := IsProtected(name); ok {
			t.Errorf("IsProtected(%q) = true", name)
		}
	}
	for path, want := range map[string][2]string{"/a/b-": {"/a", "b-"}, "/a/": {"/a", ""}, "/x": {"/", "x"}} {
		if p, n := splitProtected(path); p != want[0] || n != want[1] {
			t.Errorf("splitProtected(%q) = %q, %q", path, p, n)
		}
	}
}

// TestRearm checks the setWatches packets: the old request while there is
// no persistent watch, split below the size bound, one-shot lists before
// persistent ones.
func TestRearm(t *testing.T) {
	var r watchRegistry
	r.init()
	long := "/" + strings.Repeat("x", 1000)
	for i := range 300 {
		p := fmt.Sprintf("%s/%d", long, i)
		r.register(&watchReq{kind: watchData, path: p, ch: make(chan Event, 1)}, proto.OK, "")
	}
	r.register(&watchReq{kind: watchExists, path: "/missing", ch: make(chan Event, 1)}, proto.ErrNoNode, "")
	recs := r.rearm(42)
	if len(recs) < 3 {
		t.Fatalf("%d packets for 300 KB of paths", len(recs))
	}
	total := 0
	for _, rec := range recs {
		sw, ok := rec.(*proto.SetWatches)
		if !ok {
			t.Fatalf("packet %T without persistent watches", rec)
		}
		if size := len(proto.Marshal(sw)); size > maxSetWatchesBytes+1024 {
			t.Errorf("packet of %d bytes", size)
		}
		if sw.RelativeZxid != 42 {
			t.Errorf("relative zxid %d", sw.RelativeZxid)
		}
		total += len(sw.DataWatches) + len(sw.ExistWatches)
	}
	if total != 301 {
		t.Errorf("%d watches re-armed, want 301", total)
	}

	pw := &persistentWatch{path: "/p", recursive: true, events: newStream[Event]()}
	r.register(&watchReq{kind: watchPersistent, path: "/p", stream: pw}, proto.OK, "")
	r.addPlainLocally(&persistentWatch{path: "/p", events: newStream[Event]()})
	recs = r.rearm(1)
	var recursive, plain []string
	for _, rec := range recs {
		sw := rec.(*proto.SetWatches2)
		recursive = append(recursive, sw.PersistentRecursiveWatches...)
		plain = append(plain, sw.PersistentWatches...)
	}
	if !slices.Equal(recursive, []string{"/p"}) || len(plain) != 0 {
		t.Errorf("persistent lists %v, recursive %v; want only recursive /p", plain, recursive)
	}
}

func TestStringers(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{StateDisconnected.String(), "Disconnected"},
		{State(42).String(), "State(42)"},
		{Event{Type: EventNodeCreated, Path: "/a"}.String(), "NodeCreated /a"},
		{Event{Type: EventSession, State: StateExpired}.String(), "Session Expired"},
		{Event{Type: EventNotWatching, Path: "/a", Err: ErrClosed}.String(), "NotWatching /a: client: closed"},
		// ZooKeeper's documentation gives this digest for super:admin.
		{DigestID("super", "admin"), "super:xQJmxLMiHGwaqBvst5y6rkB6HQs="},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
