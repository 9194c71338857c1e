package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
)

// TestSnapshotWhileApplying writes a snapshot while entries keep being
// applied between its chunks: the snapshot must restore to exactly the
// state of the moment it began.
func TestSnapshotWhileApplying(t *testing.T) {
	defer func(n int) { snapshotChunk = n }(snapshotChunk)
	snapshotChunk = 3
	rng := rand.New(rand.NewPCG(3, 5))
	h := &harness{f: New(Options{ExtendedTypes: true})}
	for _, id := range []int64{1, 2} {
		h.apply(t, &Entry{Type: EntryCreateSession, Session: id, Timeout: 4000})
	}
	names := []string{"/a", "/b", "/c", "/a/x", "/a/y", "/b/x", "/a/x/z", "/c/s-"}
	randomWrite := func() {
		p := names[rng.IntN(len(names))]
		var op proto.OpCode
		var req proto.Record
		switch rng.IntN(4) {
		case 0:
			op, req = proto.OpCreate, &proto.CreateRequest{Path: p, Data: []byte{byte(rng.IntN(9))}, ACL: tree.OpenACL, Flags: proto.CreateMode(rng.IntN(4))}
		case 1:
			op, req = proto.OpDelete, &proto.DeleteRequest{Path: p, Version: -1}
		case 2:
			op, req = proto.OpSetData, &proto.SetDataRequest{Path: p, Data: []byte(fmt.Sprint(rng.IntN(99))), Version: -1}
		case 3:
			op, req = proto.OpSetACL, &proto.SetACLRequest{Path: p, ACL: tree.ReadACL, Version: -1}
		}
		h.apply(t, &Entry{Type: EntryRequest, Session: int64(1 + rng.IntN(2)), Op: op, Body: proto.Marshal(req)})
	}
	for round := range 50 {
		for range 10 {
			randomWrite()
		}
		if rng.IntN(5) == 0 {
			h.apply(t, &Entry{Type: EntryCloseSession, Session: 2})
			h.apply(t, &Entry{Type: EntryCreateSession, Session: 2, Timeout: 4000})
		}
		// Apply runs between the chunks of the snapshot, as it does on a
		// server.
		checkSnapshotWhile(t, h, round, func() {
			for range rng.IntN(4) {
				randomWrite()
			}
		})
	}
}

// checkSnapshotWhile writes a snapshot of h's state, running between
// between its chunks, and fails unless it restores to the state at its
// start.
func checkSnapshotWhile(t *testing.T, h *harness, round int, between func()) {
	t.Helper()
	want := h.dump()
	job := h.f.BeginSnapshot()
	var buf bytes.Buffer
	err := job.Write(&buf, between, func() {})
	h.f.EndSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	restored, err := Restore(h.f.opts, bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	live := h.f
	h.f = restored
	got := h.dump()
	h.f = live
	if got != want {
		t.Fatalf("round %d: snapshot is not the state at its start:\nwant:\n%s\ngot:\n%s", round, want, got)
	}
}

// TestRestoreRefusesDamagedSnapshots cuts a snapshot short at every length
// and changes its counts: each must fail with ErrBadSnapshot, never panic
// or restore a partial tree.
func TestRestoreRefusesDamagedSnapshots(t *testing.T) {
	h := &harness{f: New(Options{ExtendedTypes: true})}
	h.apply(t, &Entry{Type: EntryCreateSession, Session: 1, Timeout: 4000})
	for i, path := range []string{"/a", "/a/b", "/c"} {
		acl := tree.OpenACL
		if i == 1 {
			acl = tree.ReadACL
		}
		h.apply(t, &Entry{Type: EntryRequest, Session: 1, Op: proto.OpCreate, Body: proto.Marshal(&proto.CreateRequest{Path: path, Data: []byte(path), ACL: acl})})
	}
	var buf bytes.Buffer
	if err := h.f.Save(&buf); err != nil {
		t.Fatal(err)
	}
	snap := buf.Bytes()
	if _, err := Restore(h.f.opts, bytes.NewReader(snap)); err != nil {
		t.Fatalf("intact snapshot: %v", err)
	}
	for n := range len(snap) {
		if _, err := Restore(h.f.opts, bytes.NewReader(snap[:n])); !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("snapshot cut to %d of %d bytes: %v, want ErrBadSnapshot", n, len(snap), err)
		}
	}
	if _, err := Restore(h.f.opts, bytes.NewReader(append(slices.Clip(snap), 0))); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("snapshot with a byte more: %v, want ErrBadSnapshot", err)
	}
}

// TestSnapshotKeepsNullData checks that a node created with null data
// still has null data after a restore, as ZooKeeper answers -1 for it.
func TestSnapshotKeepsNullData(t *testing.T) {
	h := &harness{f: New(Options{})}
	h.apply(t, &Entry{Type: EntryCreateSession, Session: 1, Timeout: 4000})
	h.apply(t, &Entry{Type: EntryRequest, Session: 1, Op: proto.OpCreate, Body: proto.Marshal(&proto.CreateRequest{Path: "/null", ACL: tree.OpenACL})})
	h.apply(t, &Entry{Type: EntryRequest, Session: 1, Op: proto.OpCreate, Body: proto.Marshal(&proto.CreateRequest{Path: "/empty", Data: []byte{}, ACL: tree.OpenACL})})
	var buf bytes.Buffer
	if err := h.f.Save(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Restore(h.f.opts, &buf)
	if err != nil {
		t.Fatal(err)
	}
	for path, wantNil := range map[string]bool{"/null": true, "/empty": false} {
		n, ok := f.Tree().Get(path)
		if !ok || (n.Data == nil) != wantNil {
			t.Errorf("%s after restore: found %v, data nil %v; want nil %v", path, ok, n.Data == nil, wantNil)
		}
	}
}

// FuzzRestore feeds arbitrary bytes to Restore: it returns an error or a
// state machine, never panics.
func FuzzRestore(f *testing.F) {
	m := New(Options{ExtendedTypes: true})
	m.Apply(1, &Entry{Type: EntryCreateSession, Session: 1, Timeout: 4000})
	m.Apply(2, &Entry{Type: EntryRequest, Session: 1, Op: proto.OpCreate, Body: proto.Marshal(&proto.CreateRequest{Path: "/a", Data: []byte("x"), ACL: tree.OpenACL, Flags: proto.ModeEphemeral})})
	var buf bytes.Buffer
	if err := m.Save(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		if restored, err := Restore(Options{ExtendedTypes: true}, bytes.NewReader(b)); err == nil {
			var again bytes.Buffer
			if err := restored.Save(&again); err != nil {
				t.Fatalf("save of a restored snapshot: %v", err)
			}
		}
	})
}

// The session secret is set once, by the first valid EntrySetSecret, and
// kept by snapshots; a snapshot of the format before it restores with no
// secret.
func TestSecret(t *testing.T) {
	h := &harness{f: New(Options{})}
	if h.f.Secret() != nil {
		t.Fatal("a new state machine has a secret")
	}
	h.apply(t, &Entry{Type: EntrySetSecret, Body: []byte("too short")})
	if h.f.Secret() != nil {
		t.Fatalf("a secret of 9 bytes was taken: %x", h.f.Secret())
	}
	first := bytes.Repeat([]byte{1}, SecretLen)
	h.apply(t, &Entry{Type: EntrySetSecret, Body: first})
	h.apply(t, &Entry{Type: EntrySetSecret, Body: bytes.Repeat([]byte{2}, SecretLen)})
	if !bytes.Equal(h.f.Secret(), first) {
		t.Fatalf("secret %x, want the first one set, %x", h.f.Secret(), first)
	}
	var buf bytes.Buffer
	if err := h.f.Save(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Restore(h.f.opts, bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.Secret(), first) {
		t.Fatalf("secret after restore %x, want %x", f.Secret(), first)
	}

	// Formats 2 and 3: the same header without the secret's buffer and
	// the count of members with a log, or without that count.
	none := New(Options{})
	buf.Reset()
	if err := none.Save(&buf); err != nil {
		t.Fatal(err)
	}
	snap := buf.Bytes()
	const secretAt = 4 + 4 + 8 + 8 // magic, version, applied, lastZxid
	v2 := slices.Concat(snap[:4], []byte{0, 0, 0, 2}, snap[8:secretAt], snap[secretAt+8:])
	f, err = Restore(none.opts, bytes.NewReader(v2))
	if err != nil {
		t.Fatalf("format 2 snapshot: %v", err)
	}
	if f.Secret() != nil {
		t.Fatalf("format 2 snapshot restored with secret %x", f.Secret())
	}
	v3 := slices.Concat(snap[:4], []byte{0, 0, 0, 3}, snap[8:secretAt+4], snap[secretAt+8:])
	if _, err := Restore(none.opts, bytes.NewReader(v3)); err != nil {
		t.Fatalf("format 3 snapshot: %v", err)
	}
}

// The voters recorded as having held the log survive a snapshot, each once
// and in order, and the ensemble's id comes from the secret alone.
func TestMembersWithLog(t *testing.T) {
	h := &harness{f: New(Options{})}
	if h.f.EnsembleID() != 0 {
		t.Fatalf("ensemble id %x before any secret", h.f.EnsembleID())
	}
	h.apply(t, &Entry{Type: EntrySetSecret, Body: bytes.Repeat([]byte{7}, SecretLen)})
	id := h.f.EnsembleID()
	if id == 0 {
		t.Fatal("no ensemble id once the secret is set")
	}
	for _, m := range []uint64{3, 1, 3, 2} {
		h.apply(t, MemberLogEntry(m))
	}
	h.apply(t, &Entry{Type: EntryMemberLog, Body: []byte{1, 2}}) // malformed: ignored
	if got := h.f.MembersWithLog(); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("members with a log %v", got)
	}
	var buf bytes.Buffer
	if err := h.f.Save(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Restore(h.f.opts, bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.MembersWithLog(); !slices.Equal(got, []uint64{1, 2, 3}) || !f.HeldLog(2) || f.HeldLog(4) {
		t.Fatalf("after restore: members with a log %v", got)
	}
	if f.EnsembleID() != id {
		t.Fatalf("ensemble id %x after restore, was %x", f.EnsembleID(), id)
	}
}

// Reidentify replaces the secret, and with it the ensemble id, forgets
// the members with a log, and is kept by snapshots.
func TestReidentify(t *testing.T) {
	h := &harness{f: New(Options{})}
	h.apply(t, &Entry{Type: EntrySetSecret, Body: bytes.Repeat([]byte{1}, SecretLen)})
	h.apply(t, MemberLogEntry(2))
	old := h.f.EnsembleID()
	if err := h.f.Reidentify([]byte("short")); err == nil {
		t.Fatal("a secret of 5 bytes was taken")
	}
	next := bytes.Repeat([]byte{3}, SecretLen)
	if err := h.f.Reidentify(next); err != nil {
		t.Fatal(err)
	}
	if h.f.EnsembleID() == old || !bytes.Equal(h.f.Secret(), next) || len(h.f.MembersWithLog()) != 0 {
		t.Fatalf("after Reidentify: ensemble %016x (was %016x), secret %x, members with a log %v", h.f.EnsembleID(), old, h.f.Secret(), h.f.MembersWithLog())
	}
	var buf bytes.Buffer
	if err := h.f.Save(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Restore(h.f.opts, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if f.EnsembleID() != h.f.EnsembleID() || f.HeldLog(2) {
		t.Fatalf("restored: ensemble %016x, held log of 2 %t", f.EnsembleID(), f.HeldLog(2))
	}
}
