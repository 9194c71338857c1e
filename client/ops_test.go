package client

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// env is what an operation case works with: a connected client, the
// server's address for more clients, and a node of its own to work under.
type env struct {
	addr string
	c    *Client
	base string
}

func (e env) p(name string) string { return e.base + "/" + name }

func (e env) mustCreate(t *testing.T, path string, data []byte, mode CreateMode) string {
	t.Helper()
	p, _, err := e.c.Create(testCtx(t), path, data, mode, nil)
	if err != nil {
		t.Fatalf("Create(%s): %v", path, err)
	}
	return p
}

// opCases run against every server; each is a scenario under its own base
// node.
var opCases = []struct {
	name string
	run  func(t *testing.T, e env)
}{
	{"create get set delete", func(t *testing.T, e env) {
		ctx := testCtx(t)
		path, stat, err := e.c.Create(ctx, e.p("a"), []byte("one"), ModePersistent, nil)
		if err != nil || path != e.p("a") {
			t.Fatalf("Create = %q, %v", path, err)
		}
		if stat.Version != 0 || stat.DataLength != 3 || stat.Czxid == 0 || stat.Czxid != stat.Mzxid {
			t.Errorf("Create stat = %+v", stat)
		}
		data, got, err := e.c.Get(ctx, e.p("a"))
		if err != nil || string(data) != "one" || got != stat {
			t.Fatalf("Get = %q, %+v, %v; want one, %+v", data, got, err, stat)
		}
		st2, err := e.c.Set(ctx, e.p("a"), []byte("two!"), 0)
		if err != nil || st2.Version != 1 || st2.DataLength != 4 || st2.Mzxid <= stat.Mzxid {
			t.Fatalf("Set = %+v, %v", st2, err)
		}
		if _, err := e.c.Set(ctx, e.p("a"), []byte("x"), 0); !errors.Is(err, ErrBadVersion) {
			t.Errorf("Set with stale version: %v, want ErrBadVersion", err)
		}
		if err := e.c.Delete(ctx, e.p("a"), 0); !errors.Is(err, ErrBadVersion) {
			t.Errorf("Delete with stale version: %v, want ErrBadVersion", err)
		}
		if err := e.c.Delete(ctx, e.p("a"), 1); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, _, err := e.c.Get(ctx, e.p("a")); !errors.Is(err, ErrNoNode) || !strings.Contains(err.Error(), e.p("a")) {
			t.Errorf("Get of deleted node: %v, want ErrNoNode naming the path", err)
		}
	}},
	{"errors", func(t *testing.T, e env) {
		ctx := testCtx(t)
		e.mustCreate(t, e.p("x"), nil, ModePersistent)
		e.mustCreate(t, e.p("x/y"), nil, ModePersistent)
		eph := e.mustCreate(t, e.p("eph"), nil, ModeEphemeral)
		cases := []struct {
			what string
			err  error
			want error
		}{
			{"create existing", errOf3(e.c.Create(ctx, e.p("x"), nil, ModePersistent, nil)), ErrNodeExists},
			{"create without parent", errOf3(e.c.Create(ctx, e.p("none/y"), nil, ModePersistent, nil)), ErrNoNode},
			{"create under ephemeral", errOf3(e.c.Create(ctx, eph+"/c", nil, ModePersistent, nil)), ErrNoChildrenForEphemerals},
			{"delete with children", e.c.Delete(ctx, e.p("x"), AnyVersion), ErrNotEmpty},
			{"delete missing", e.c.Delete(ctx, e.p("none"), AnyVersion), ErrNoNode},
			{"set missing", errOf2(e.c.Set(ctx, e.p("none"), nil, AnyVersion)), ErrNoNode},
			{"children missing", errOf3(e.c.Children(ctx, e.p("none"))), ErrNoNode},
			{"invalid path", errOf3(e.c.Get(ctx, "no/slash")), ErrInvalidPath},
			{"trailing slash", e.c.Delete(ctx, e.p("x")+"/", AnyVersion), ErrInvalidPath},
			{"ttl without CreateTTL", errOf3(e.c.Create(ctx, e.p("ttl"), nil, ModePersistentWithTTL, nil)), ErrBadArguments},
		}
		for _, tc := range cases {
			if !errors.Is(tc.err, tc.want) {
				t.Errorf("%s: %v, want %v", tc.what, tc.err, tc.want)
			}
		}
	}},
	{"edge answers", func(t *testing.T, e env) {
		ctx := testCtx(t)
		missing := e.p("missing")
		cases := []struct {
			what string
			err  error
			want error
		}{
			{"sync of a missing node", e.c.Sync(ctx, missing), nil},
			{"getACL of a missing node", errOf3(e.c.GetACL(ctx, missing)), ErrNoNode},
			{"allChildrenNumber of a missing node", errOf2(e.c.AllChildrenNumber(ctx, missing)), ErrNoNode},
			{"create with an empty ACL", errOf3(e.c.Create(ctx, e.p("acl"), nil, ModePersistent, []ACL{})), ErrInvalidACL},
			{"setACL with a malformed digest", errOf2(e.c.SetACL(ctx, e.base, []ACL{{Perms: PermAll, ID: ID{Scheme: "digest", ID: "bad"}}}, AnyVersion)), ErrInvalidACL},
			{"delete of the root", e.c.Delete(ctx, "/", AnyVersion), ErrBadArguments},
			{"check of a missing node", e.c.Check(ctx, missing, 0), ErrNoNode},
			{"removeWatches without a watch", e.c.RemoveWatches(ctx, e.base, WatchAny), ErrNoWatcher},
		}
		for _, tc := range cases {
			if !errors.Is(tc.err, tc.want) || (tc.want == nil) != (tc.err == nil) {
				t.Errorf("%s: %v, want %v", tc.what, tc.err, tc.want)
			}
		}
		if eph, err := e.c.Ephemerals(ctx, missing); err != nil || len(eph) != 0 {
			t.Errorf("ephemerals under a missing node: %v, %v", eph, err)
		}
		e.mustCreate(t, e.p("nil"), nil, ModePersistent)
		e.mustCreate(t, e.p("empty"), []byte{}, ModePersistent)
		if d, _, err := e.c.Get(ctx, e.p("nil")); d != nil || err != nil {
			t.Errorf("data created nil reads %#v, %v; want nil", d, err)
		}
		if d, _, err := e.c.Get(ctx, e.p("empty")); d == nil || len(d) != 0 || err != nil {
			t.Errorf("data created empty reads %#v, %v; want empty", d, err)
		}
		w, err := e.c.AddWatch(ctx, missing+"/deep", WatchPersistent)
		if err != nil {
			t.Fatalf("addWatch of a missing path: %v", err)
		}
		w.Close()
	}},
	{"create modes", func(t *testing.T, e env) {
		ctx := testCtx(t)
		_, st, err := e.c.Create(ctx, e.p("eph"), []byte("e"), ModeEphemeral, nil)
		if err != nil || st.EphemeralOwner != e.c.SessionID() {
			t.Errorf("ephemeral: owner %x, %v; want %x", st.EphemeralOwner, err, e.c.SessionID())
		}
		seq := regexp.MustCompile(`^` + regexp.QuoteMeta(e.p("seq-")) + `\d{10}$`)
		p1, _, err1 := e.c.Create(ctx, e.p("seq-"), nil, ModePersistentSequential, nil)
		p2, st2, err2 := e.c.Create(ctx, e.p("seq-"), nil, ModeEphemeralSequential, nil)
		if err1 != nil || err2 != nil || !seq.MatchString(p1) || !seq.MatchString(p2) || p1 >= p2 || st2.EphemeralOwner == 0 {
			t.Errorf("sequential: %q %v, %q %v", p1, err1, p2, err2)
		}
		e.mustCreate(t, e.p("q"), nil, ModePersistent)
		if p, _, err := e.c.Create(ctx, e.p("q")+"/", nil, ModePersistentSequential, nil); err != nil || !regexp.MustCompile(`/q/\d{10}$`).MatchString(p) {
			t.Errorf("sequential named by its number: %q, %v", p, err)
		}
		if p, st, err := e.c.Create(ctx, e.p("box"), nil, ModeContainer, nil); err != nil || p != e.p("box") || st.Czxid == 0 {
			t.Errorf("container: %q %+v %v", p, st, err)
		}
		if p, st, err := e.c.CreateTTL(ctx, e.p("ttl"), []byte("t"), ModePersistent, nil, time.Hour); err != nil || p != e.p("ttl") || st.DataLength != 1 {
			t.Errorf("TTL: %q %+v %v", p, st, err)
		}
		if p, _, err := e.c.CreateTTL(ctx, e.p("ttlseq-"), nil, ModePersistentSequentialWithTTL, nil, time.Hour); err != nil || !strings.HasPrefix(p, e.p("ttlseq-")) {
			t.Errorf("sequential TTL: %q %v", p, err)
		}
		if _, _, err := e.c.CreateTTL(ctx, e.p("ttl0"), nil, ModePersistent, nil, 0); !errors.Is(err, ErrBadArguments) {
			t.Errorf("TTL 0: %v, want ErrBadArguments", err)
		}
	}},
	{"exists children counts ephemerals", func(t *testing.T, e env) {
		ctx := testCtx(t)
		if ok, _, err := e.c.Exists(ctx, e.p("n")); ok || err != nil {
			t.Errorf("Exists(missing) = %v, %v", ok, err)
		}
		_, created, _ := e.c.Create(ctx, e.p("n"), nil, ModePersistent, nil)
		if ok, st, err := e.c.Exists(ctx, e.p("n")); !ok || err != nil || st != created {
			t.Errorf("Exists = %v %+v %v; want %+v", ok, st, err, created)
		}
		for _, name := range []string{"c", "b", "a"} {
			e.mustCreate(t, e.p("n/"+name), nil, ModePersistent)
		}
		e.mustCreate(t, e.p("n/a/deep"), nil, ModeEphemeral)
		kids, st, err := e.c.Children(ctx, e.p("n"))
		slices.Sort(kids)
		if err != nil || !slices.Equal(kids, []string{"a", "b", "c"}) || st.NumChildren != 3 {
			t.Errorf("Children = %v %d %v", kids, st.NumChildren, err)
		}
		if n, err := e.c.AllChildrenNumber(ctx, e.p("n")); n != 4 || err != nil {
			t.Errorf("AllChildrenNumber = %d, %v; want 4", n, err)
		}
		eph, err := e.c.Ephemerals(ctx, e.p("n"))
		if err != nil || !slices.Equal(eph, []string{e.p("n/a/deep")}) {
			t.Errorf("Ephemerals = %v, %v", eph, err)
		}
	}},
	{"acl and auth", func(t *testing.T, e env) {
		ctx := testCtx(t)
		acl, st, err := e.c.GetACL(ctx, e.base)
		if err != nil || !slices.Equal(acl, WorldACL(PermAll)) || st.Aversion != 0 {
			t.Fatalf("GetACL = %v %+v %v", acl, st, err)
		}
		owner := dialT(t, e.addr, Config{Auth: []Auth{{"digest", []byte("alice:secret")}}})
		if _, _, err := owner.Create(ctx, e.p("private"), []byte("s"), ModePersistent, DigestACL(PermAll, "alice", "secret")); err != nil {
			t.Fatalf("Create with digest ACL: %v", err)
		}
		if _, _, err := e.c.Get(ctx, e.p("private")); !errors.Is(err, ErrNoAuth) {
			t.Errorf("Get without auth: %v, want ErrNoAuth", err)
		}
		stranger := dialT(t, e.addr, Config{})
		if err := stranger.AddAuth(ctx, "digest", []byte("alice:secret")); err != nil {
			t.Fatalf("AddAuth: %v", err)
		}
		if data, _, err := stranger.Get(ctx, e.p("private")); err != nil || string(data) != "s" {
			t.Errorf("Get after AddAuth = %q, %v", data, err)
		}
		who, err := stranger.WhoAmI(ctx)
		if err != nil || !slices.Contains(who, ClientInfo{AuthScheme: "digest", User: "alice"}) {
			t.Errorf("WhoAmI = %v, %v", who, err)
		}
		if _, err := owner.SetACL(ctx, e.p("private"), WorldACL(PermAll), 3); !errors.Is(err, ErrBadVersion) {
			t.Errorf("SetACL with stale version: %v", err)
		}
		st, err = owner.SetACL(ctx, e.p("private"), WorldACL(PermRead), 0)
		if err != nil || st.Aversion != 1 {
			t.Fatalf("SetACL = %+v, %v", st, err)
		}
		if _, _, err := e.c.Get(ctx, e.p("private")); err != nil {
			t.Errorf("Get after SetACL world read: %v", err)
		}
		if _, err := e.c.Set(ctx, e.p("private"), nil, AnyVersion); !errors.Is(err, ErrNoAuth) {
			t.Errorf("Set on read-only ACL: %v, want ErrNoAuth", err)
		}
		if _, _, err := e.c.Create(ctx, e.p("mine"), nil, ModePersistent, AuthACL(PermAll)); !errors.Is(err, ErrInvalidACL) {
			t.Errorf("auth ACL without credentials: %v, want ErrInvalidACL", err)
		}
		if p, _, err := owner.Create(ctx, e.p("mine"), nil, ModePersistent, AuthACL(PermAll)); err != nil {
			t.Errorf("auth ACL with credentials: %q, %v", p, err)
		}
		// A refused scheme costs the connection, not the session, and the
		// credentials accepted before are presented again.
		if err := stranger.AddAuth(ctx, "nosuchscheme", []byte("x")); !errors.Is(err, ErrAuthFailed) {
			t.Errorf("AddAuth(unknown scheme): %v, want ErrAuthFailed", err)
		}
		if _, _, err := stranger.Get(ctx, e.p("private")); err != nil {
			t.Errorf("Get with the credentials kept across the reconnection: %v", err)
		}
	}},
	{"multi", func(t *testing.T, e env) {
		ctx := testCtx(t)
		e.mustCreate(t, e.p("v"), []byte("0"), ModePersistent)
		res, err := e.c.Multi(ctx,
			CreateOp(e.p("m"), []byte("m"), ModePersistent, nil),
			CreateOp(e.p("s-"), nil, ModePersistentSequential, nil),
			SetOp(e.p("v"), []byte("1"), 0),
			CheckOp(e.p("v"), 1),
			DeleteOp(e.p("m"), 0),
			CreateTTLOp(e.p("ttl"), nil, ModePersistent, nil, time.Hour),
		)
		if err != nil {
			t.Fatalf("Multi: %v", err)
		}
		if len(res) != 6 || res[0].Path != e.p("m") || !strings.HasPrefix(res[1].Path, e.p("s-")) ||
			res[2].Stat.Version != 1 || res[5].Stat.Czxid == 0 || res[5].Path != e.p("ttl") {
			t.Errorf("Multi results = %+v", res)
		}
		for i, r := range res {
			if r.Err != nil {
				t.Errorf("result %d: %v", i, r.Err)
			}
		}
		res, err = e.c.Multi(ctx,
			CreateOp(e.p("never"), nil, ModePersistent, nil),
			SetOp(e.p("v"), []byte("2"), 0),
			DeleteOp(e.p("v"), AnyVersion),
		)
		if !errors.Is(err, ErrBadVersion) || !strings.Contains(err.Error(), "op 1") {
			t.Fatalf("failed Multi: %v, want ErrBadVersion at op 1", err)
		}
		if len(res) != 3 || res[0].Err != nil || !errors.Is(res[1].Err, ErrBadVersion) || !errors.Is(res[2].Err, ErrRuntimeInconsistency) {
			t.Errorf("failed Multi results = %+v", res)
		}
		if ok, _, _ := e.c.Exists(ctx, e.p("never")); ok {
			t.Errorf("a failed transaction created a node")
		}
		if err := e.c.Check(ctx, e.p("v"), 1); err != nil {
			t.Errorf("Check(right version): %v", err)
		}
		if err := e.c.Check(ctx, e.p("v"), 7); !errors.Is(err, ErrBadVersion) {
			t.Errorf("Check(wrong version): %v", err)
		}
		if res, err := e.c.Multi(ctx); res != nil || err != nil {
			t.Errorf("empty Multi = %v, %v", res, err)
		}
		if _, err := e.c.Multi(ctx, GetOp(e.p("v"))); !errors.Is(err, ErrBadArguments) {
			t.Errorf("read in Multi: %v", err)
		}
	}},
	{"multiRead", func(t *testing.T, e env) {
		ctx := testCtx(t)
		e.mustCreate(t, e.p("r"), []byte("data"), ModePersistent)
		e.mustCreate(t, e.p("r/kid"), nil, ModePersistent)
		res, err := e.c.MultiRead(ctx, GetOp(e.p("r")), ChildrenOp(e.p("r")), GetOp(e.p("missing")))
		if err != nil || len(res) != 3 {
			t.Fatalf("MultiRead = %+v, %v", res, err)
		}
		if string(res[0].Data) != "data" || res[0].Stat.NumChildren != 1 || !slices.Equal(res[1].Children, []string{"kid"}) || !errors.Is(res[2].Err, ErrNoNode) {
			t.Errorf("MultiRead results = %+v", res)
		}
		if _, err := e.c.MultiRead(ctx, DeleteOp(e.p("r"), AnyVersion)); !errors.Is(err, ErrBadArguments) {
			t.Errorf("write in MultiRead: %v", err)
		}
	}},
	{"sync and large data", func(t *testing.T, e env) {
		ctx := testCtx(t)
		if err := e.c.Sync(ctx, e.base); err != nil {
			t.Fatalf("Sync: %v", err)
		}
		big := bytes.Repeat([]byte("0123456789abcdef"), 1000<<10/16)
		e.mustCreate(t, e.p("big"), big, ModePersistent)
		data, st, err := e.c.Get(ctx, e.p("big"))
		if err != nil || !bytes.Equal(data, big) || int(st.DataLength) != len(big) {
			t.Errorf("Get(big) = %d bytes, %v", len(data), err)
		}
		if _, err := e.c.Set(ctx, e.p("big"), nil, AnyVersion); err != nil {
			t.Errorf("Set(nil): %v", err)
		}
		if data, _, err := e.c.Get(ctx, e.p("big")); err != nil || len(data) != 0 {
			t.Errorf("Get after Set(nil) = %q, %v", data, err)
		}
	}},
	{"one-shot watches", func(t *testing.T, e env) {
		ctx := testCtx(t)
		other := dialT(t, e.addr, Config{})
		e.mustCreate(t, e.p("w"), nil, ModePersistent)
		_, _, data, err := e.c.GetW(ctx, e.p("w"))
		if err != nil {
			t.Fatal(err)
		}
		_, _, kids, err := e.c.ChildrenW(ctx, e.p("w"))
		if err != nil {
			t.Fatal(err)
		}
		ok, _, created, err := e.c.ExistsW(ctx, e.p("later"))
		if err != nil || ok {
			t.Fatalf("ExistsW(missing) = %v, %v", ok, err)
		}
		_, _, twice, _ := e.c.GetW(ctx, e.p("w"))
		other.Set(ctx, e.p("w"), []byte("x"), AnyVersion)
		other.Create(ctx, e.p("w/kid"), nil, ModePersistent, nil)
		other.Create(ctx, e.p("later"), nil, ModePersistent, nil)
		want := map[string]Event{
			"data":    {Type: EventNodeDataChanged, Path: e.p("w")},
			"twice":   {Type: EventNodeDataChanged, Path: e.p("w")},
			"kids":    {Type: EventNodeChildrenChanged, Path: e.p("w")},
			"created": {Type: EventNodeCreated, Path: e.p("later")},
		}
		for name, ch := range map[string]<-chan Event{"data": data, "twice": twice, "kids": kids, "created": created} {
			if got := recv(t, ch, name); got != want[name] {
				t.Errorf("%s watch: %v, want %v", name, got, want[name])
			}
		}
		// One-shot: a second change is not reported; the Sync reply would
		// come after its event.
		other.Set(ctx, e.p("w"), []byte("y"), AnyVersion)
		e.c.Sync(ctx, e.p("w"))
		noEvent(t, data, "data watch after firing")

		_, _, gone, _ := e.c.GetW(ctx, e.p("later"))
		_, _, gonekids, _ := e.c.ChildrenW(ctx, e.p("later"))
		ok, _, exists, _ := e.c.ExistsW(ctx, e.p("later"))
		if !ok {
			t.Fatal("ExistsW of an existing node said it does not exist")
		}
		other.Delete(ctx, e.p("later"), AnyVersion)
		for name, ch := range map[string]<-chan Event{"get": gone, "children": gonekids, "exists": exists} {
			if got := recv(t, ch, name); got.Type != EventNodeDeleted || got.Path != e.p("later") {
				t.Errorf("%s watch of deleted node: %v", name, got)
			}
		}
		if _, _, ch, err := e.c.GetW(ctx, e.p("later")); !errors.Is(err, ErrNoNode) || ch != nil {
			t.Errorf("GetW(missing) = %v, %v; want no watch and ErrNoNode", ch, err)
		}
	}},
	{"remove watches", func(t *testing.T, e env) {
		ctx := testCtx(t)
		e.mustCreate(t, e.p("r"), nil, ModePersistent)
		_, _, data, _ := e.c.GetW(ctx, e.p("r"))
		_, _, exist, _ := e.c.ExistsW(ctx, e.p("r"))
		_, _, kids, _ := e.c.ChildrenW(ctx, e.p("r"))
		if err := e.c.RemoveWatches(ctx, e.p("r"), WatchData); err != nil {
			t.Fatalf("RemoveWatches(data): %v", err)
		}
		for name, ch := range map[string]<-chan Event{"data": data, "exist": exist} {
			if got := recv(t, ch, name); got != (Event{Type: EventDataWatchRemoved, Path: e.p("r")}) {
				t.Errorf("%s watch removed: %v", name, got)
			}
		}
		if err := e.c.RemoveWatches(ctx, e.p("r"), WatchData); !errors.Is(err, ErrNoWatcher) {
			t.Errorf("RemoveWatches(none left): %v, want ErrNoWatcher", err)
		}
		e.c.Set(ctx, e.p("r"), []byte("x"), AnyVersion)
		e.c.Create(ctx, e.p("r/kid"), nil, ModePersistent, nil)
		if got := recv(t, kids, "child watch"); got.Type != EventNodeChildrenChanged {
			t.Errorf("child watch kept: %v", got)
		}
		_, _, kids, _ = e.c.ChildrenW(ctx, e.p("r"))
		if err := e.c.RemoveWatches(ctx, e.p("r"), WatchAny); err != nil {
			t.Fatalf("RemoveWatches(any): %v", err)
		}
		if got := recv(t, kids, "child watch removed"); got.Type != EventChildWatchRemoved {
			t.Errorf("child watch removed: %v", got)
		}
	}},
	{"persistent watches", func(t *testing.T, e env) {
		ctx := testCtx(t)
		other := dialT(t, e.addr, Config{})
		e.mustCreate(t, e.p("p"), nil, ModePersistent)
		plain, err := e.c.AddWatch(ctx, e.p("p"), WatchPersistent)
		if err != nil {
			t.Fatalf("AddWatch: %v", err)
		}
		rec, err := e.c.AddWatch(ctx, e.p("p"), WatchPersistentRecursive)
		if err != nil {
			t.Fatalf("AddWatch(recursive): %v", err)
		}
		other.Set(ctx, e.p("p"), []byte("1"), AnyVersion)
		other.Create(ctx, e.p("p/a"), nil, ModePersistent, nil)
		other.Create(ctx, e.p("p/a/b"), nil, ModePersistent, nil)
		other.Set(ctx, e.p("p/a/b"), []byte("2"), AnyVersion)
		other.Delete(ctx, e.p("p/a/b"), AnyVersion)
		other.Set(ctx, e.p("p"), []byte("3"), AnyVersion)
		wantPlain := []Event{
			{Type: EventNodeDataChanged, Path: e.p("p")},
			{Type: EventNodeChildrenChanged, Path: e.p("p")},
			{Type: EventNodeDataChanged, Path: e.p("p")},
		}
		wantRec := []Event{
			{Type: EventNodeDataChanged, Path: e.p("p")},
			{Type: EventNodeCreated, Path: e.p("p/a")},
			{Type: EventNodeCreated, Path: e.p("p/a/b")},
			{Type: EventNodeDataChanged, Path: e.p("p/a/b")},
			{Type: EventNodeDeleted, Path: e.p("p/a/b")},
			{Type: EventNodeDataChanged, Path: e.p("p")},
		}
		for i, w := range wantPlain {
			if got := recv(t, plain.Events(), "persistent"); got != w {
				t.Errorf("persistent event %d: %v, want %v", i, got, w)
			}
		}
		for i, w := range wantRec {
			if got := recv(t, rec.Events(), "recursive"); got != w {
				t.Errorf("recursive event %d: %v, want %v", i, got, w)
			}
		}
		plain.Close()
		if _, ok := <-plain.Events(); ok {
			t.Error("closed stream still delivers")
		}
		other.Set(ctx, e.p("p"), []byte("4"), AnyVersion)
		if got := recv(t, rec.Events(), "recursive after closing the other"); got.Path != e.p("p") {
			t.Errorf("recursive watch after closing the plain one: %v", got)
		}
		rec.Close()
		// With no stream left the server's watch is removed too; a change
		// now reaches nobody, which a fresh watch proves by seeing only
		// its own.
		other.Set(ctx, e.p("p"), []byte("5"), AnyVersion)
		again, _ := e.c.AddWatch(ctx, e.p("p"), WatchPersistent)
		other.Set(ctx, e.p("p"), []byte("6"), AnyVersion)
		if got := recv(t, again.Events(), "new stream"); got.Type != EventNodeDataChanged {
			t.Errorf("new stream: %v", got)
		}
		again.Close()
	}},
	{"one-shot and persistent watches on one path", func(t *testing.T, e env) {
		// The server keeps one watch mode per path and connection: a
		// one-shot watch asked of it would end the persistent one.
		ctx := testCtx(t)
		other := dialT(t, e.addr, Config{})
		e.mustCreate(t, e.p("m"), nil, ModePersistent)
		plain, err := e.c.AddWatch(ctx, e.p("m"), WatchPersistent)
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Close()
		_, _, once, _ := e.c.GetW(ctx, e.p("m"))
		_, _, kids, _ := e.c.ChildrenW(ctx, e.p("m"))
		other.Set(ctx, e.p("m"), []byte("1"), AnyVersion)
		other.Create(ctx, e.p("m/k"), nil, ModePersistent, nil)
		other.Set(ctx, e.p("m"), []byte("2"), AnyVersion)
		if got := recv(t, once, "one-shot"); got.Type != EventNodeDataChanged {
			t.Errorf("one-shot beside persistent: %v", got)
		}
		if got := recv(t, kids, "children one-shot"); got.Type != EventNodeChildrenChanged {
			t.Errorf("children one-shot beside persistent: %v", got)
		}
		for i, want := range []EventType{EventNodeDataChanged, EventNodeChildrenChanged, EventNodeDataChanged} {
			if got := recv(t, plain.Events(), "persistent"); got.Type != want {
				t.Errorf("persistent event %d: %v, want %v", i, got, want)
			}
		}

		e.mustCreate(t, e.p("r"), nil, ModePersistent)
		rec, _ := e.c.AddWatch(ctx, e.p("r"), WatchPersistentRecursive)
		_, _, rkids, _ := e.c.ChildrenW(ctx, e.p("r"))
		other.Create(ctx, e.p("r/k"), nil, ModePersistent, nil)
		if got := recv(t, rkids, "children one-shot beside recursive"); got != (Event{Type: EventNodeChildrenChanged, Path: e.p("r")}) {
			t.Errorf("children one-shot beside recursive: %v", got)
		}
		if got := recv(t, rec.Events(), "recursive"); got != (Event{Type: EventNodeCreated, Path: e.p("r/k")}) {
			t.Errorf("recursive: %v", got)
		}
		// Closing the recursive watch leaves the server's watch in place
		// for the one-shot watch that still relies on it.
		_, _, rdata, _ := e.c.GetW(ctx, e.p("r"))
		rec.Close()
		other.Set(ctx, e.p("r"), []byte("x"), AnyVersion)
		if got := recv(t, rdata, "one-shot after recursive closed"); got.Type != EventNodeDataChanged {
			t.Errorf("one-shot after its persistent watch closed: %v", got)
		}
	}},
	{"chroot", func(t *testing.T, e env) {
		ctx := testCtx(t)
		rooted := dialT(t, e.addr+e.base, Config{})
		p, _, err := rooted.Create(ctx, "/x", []byte("in"), ModePersistent, nil)
		if err != nil || p != "/x" {
			t.Fatalf("Create under chroot = %q, %v", p, err)
		}
		if data, _, err := e.c.Get(ctx, e.p("x")); err != nil || string(data) != "in" {
			t.Errorf("node seen from outside = %q, %v", data, err)
		}
		if kids, _, err := rooted.Children(ctx, "/"); err != nil || !slices.Equal(kids, []string{"x"}) {
			t.Errorf("Children(/) under chroot = %v, %v", kids, err)
		}
		seq, _, _ := rooted.Create(ctx, "/x/s-", nil, ModeEphemeralSequential, nil)
		if !strings.HasPrefix(seq, "/x/s-") {
			t.Errorf("sequential under chroot = %q", seq)
		}
		if eph, err := rooted.Ephemerals(ctx, "/"); err != nil || !slices.Equal(eph, []string{seq}) {
			t.Errorf("Ephemerals under chroot = %v, %v", eph, err)
		}
		_, _, w, _ := rooted.GetW(ctx, "/x")
		rec, _ := rooted.AddWatch(ctx, "/", WatchPersistentRecursive)
		defer rec.Close()
		e.c.Set(ctx, e.p("x"), []byte("out"), AnyVersion)
		if got := recv(t, w, "chroot watch"); got.Path != "/x" {
			t.Errorf("event under chroot: %v", got)
		}
		if got := recv(t, rec.Events(), "chroot recursive"); got.Path != "/x" {
			t.Errorf("recursive event under chroot: %v", got)
		}
		res, err := rooted.Multi(ctx, CreateOp("/m", nil, ModePersistent, nil))
		if err != nil || res[0].Path != "/m" {
			t.Errorf("Multi under chroot = %+v, %v", res, err)
		}
	}},
	{"pipelined from many goroutines", func(t *testing.T, e env) {
		ctx := testCtx(t)
		const workers, each = 16, 25
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Go(func() {
				path := e.p(fmt.Sprint("w", w))
				if _, _, err := e.c.Create(ctx, path, nil, ModePersistent, nil); err != nil {
					errs <- err
					return
				}
				for i := range each {
					want := fmt.Sprint(w, "-", i)
					if _, err := e.c.Set(ctx, path, []byte(want), int32(i)); err != nil {
						errs <- err
						return
					}
					got, _, err := e.c.Get(ctx, path)
					if err != nil || string(got) != want {
						errs <- fmt.Errorf("Get(%s) = %q, %v; want %q", path, got, err, want)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}},
}

func errOf3[A, B any](_ A, _ B, err error) error { return err }
func errOf2[A any](_ A, err error) error         { return err }

// TestOperations runs every operation case against Collie and against
// ZooKeeper 3.8: the client must get the same answers from both.
func TestOperations(t *testing.T) {
	servers(t, func(t *testing.T, addr string) {
		c := dialT(t, addr, Config{})
		for _, tc := range opCases {
			t.Run(tc.name, func(t *testing.T) {
				base := "/" + strings.ReplaceAll(tc.name, " ", "-")
				if _, _, err := c.Create(testCtx(t), base, nil, ModePersistent, nil); err != nil {
					t.Fatalf("Create(%s): %v", base, err)
				}
				tc.run(t, env{addr: addr, c: c, base: base})
			})
		}
	})
}
