package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/server/datadir"
	"github.com/collie-io/collie/server/storage"
)

// datadirCmd runs collie datadir with args and returns its exit status
// and outputs.
func datadirCmd(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	status := run(append([]string{"datadir"}, args...), &stdout, &stderr)
	return status, stdout.String(), stderr.String()
}

// dirArgs are the flags that name a test server's data directory. Test
// servers run with extended types.
func dirArgs(s *collietest.Server) []string {
	return []string{"-data-dir", s.Cfg().DataDir, "-data-log-dir", s.Cfg().DataLogDir, "-extended-types"}
}

func connectZK(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for ev := range events {
		if ev.State == zk.StateHasSession {
			return c
		}
	}
	t.Fatal("no session")
	return nil
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

func mustCreate(t *testing.T, c *zk.Conn, path, data string, flags int32, acl []zk.ACL) string {
	t.Helper()
	p, err := c.Create(path, []byte(data), flags, acl)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	return p
}

func TestDatadirInfoRefusesARunningServer(t *testing.T) {
	srv := collietest.Start(t)
	c := connectZK(t, srv.Addr())
	for i := range 5 {
		mustCreate(t, c, fmt.Sprintf("/n%d", i), "x", 0, zk.WorldACL(zk.PermAll))
	}
	status, _, stderr := datadirCmd(append([]string{"info"}, dirArgs(srv)...)...)
	if status != 1 || !strings.Contains(stderr, "stop the server first") {
		t.Fatalf("info on a running server: status %d, stderr %q", status, stderr)
	}
	srv.Stop()

	status, stdout, stderr := datadirCmd(append([]string{"info", "-json"}, dirArgs(srv)...)...)
	if status != 0 {
		t.Fatalf("info: status %d, stderr %s", status, stderr)
	}
	var info datadir.Info
	if err := json.Unmarshal([]byte(stdout), &info); err != nil {
		t.Fatalf("info -json: %v\n%s", err, stdout)
	}
	id, _, err := storage.ReadIdentityFile(filepath.Join(srv.Cfg().DataDir, "snap"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Identity.Server != 1 || info.Identity.Mode != "standalone" || info.Identity.Token != id.Token || len(info.Identity.Notes) != 0 {
		t.Errorf("identity %+v, want server 1, standalone, token %s", info.Identity, id.Token)
	}
	// The root, the three system nodes and /n0../n4.
	if info.Znodes != 9 || !slices.Equal(info.Members.Voters, []uint64{1}) || info.HardState.Term == 0 ||
		info.Applied != info.LastIndex || info.LastIndex < 7 || info.EnsembleID == "" || info.StateError != "" {
		t.Errorf("info %+v", info)
	}
	if info.WAL.Segments == 0 || info.WAL.FirstIndex != 1 || info.WAL.LastIndex != info.LastIndex || info.WAL.Used == 0 || len(info.WAL.Problems) != 0 {
		t.Errorf("wal %+v", info.WAL)
	}

	status, stdout, _ = datadirCmd(append([]string{"info"}, dirArgs(srv)...)...)
	for _, want := range []string{"server 1, standalone, token " + id.Token, "voters 1; observers none", "9 znodes", "segments in"} {
		if status != 0 || !strings.Contains(stdout, want) {
			t.Errorf("info: status %d, output does not say %q:\n%s", status, want, stdout)
		}
	}
}

// entryRecords returns the entries dump -json prints.
func entryRecords(t *testing.T, args []string) []datadir.EntryJSON {
	t.Helper()
	status, stdout, stderr := datadirCmd(append([]string{"dump", "-what", "entries", "-json"}, args...)...)
	if status != 0 {
		t.Fatalf("dump entries: status %d: %s", status, stderr)
	}
	var out []datadir.EntryJSON
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var e datadir.EntryJSON
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("dump line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// TestDatadirVerifyAndTruncate damages an acknowledged write's record in a
// standalone server's log: verify names the file and the offset, truncate
// refuses without a backup, and with one cuts there, keeps a copy equal
// to the damaged log, and leaves a directory the server starts from.
func TestDatadirVerifyAndTruncate(t *testing.T) {
	srv := collietest.Start(t)
	c := connectZK(t, srv.Addr())
	for i := range 20 {
		mustCreate(t, c, fmt.Sprintf("/k%02d", i), strings.Repeat("v", i), 0, zk.WorldACL(zk.PermAll))
	}
	srv.Stop()
	args := dirArgs(srv)
	status, stdout, _ := datadirCmd(append([]string{"verify"}, args...)...)
	if status != 0 || !strings.HasPrefix(stdout, "clean: ") {
		t.Fatalf("verify of a clean directory: status %d:\n%s", status, stdout)
	}

	// The record of a write in the middle, which must lie within one disk
	// sector: a checksum mismatch with a zeroed sector is what a torn
	// write looks like.
	const sector = 512
	ents := entryRecords(t, args)
	var victim, next datadir.EntryJSON
	for i, e := range ents {
		if e.Entry != nil && strings.HasPrefix(e.Entry.Op, "create") && e.Entry.Path >= "/k10" && i+1 < len(ents) && ents[i+1].Segment == e.Segment &&
			e.Offset/sector == (ents[i+1].Offset-1)/sector {
			victim, next = e, ents[i+1]
			break
		}
	}
	if victim.Index == 0 {
		t.Fatal("no write's record lies within one sector")
	}
	if status, stdout, _ := datadirCmd(append([]string{"dump", "-what", "entries"}, args...)...); status != 0 ||
		!strings.Contains(stdout, fmt.Sprintf("%d term=%d normal request v%d", victim.Index, victim.Term, victim.Entry.Version)) ||
		!strings.Contains(stdout, fmt.Sprintf("op=%s path=%q", victim.Entry.Op, victim.Entry.Path)) {
		t.Errorf("dump entries does not show entry %d as a create of %s:\n%s", victim.Index, victim.Entry.Path, stdout)
	}
	walDir := filepath.Join(srv.Cfg().DataLogDir, "wal")
	segPath := filepath.Join(walDir, victim.Segment)
	seg, err := os.ReadFile(segPath)
	if err != nil {
		t.Fatal(err)
	}
	seg[victim.Offset+8+4+1+10] ^= 0x01
	if err := os.WriteFile(segPath, seg, 0o600); err != nil {
		t.Fatal(err)
	}
	damaged := snapshotDir(t, walDir)

	status, stdout, _ = datadirCmd(append([]string{"verify"}, args...)...)
	where := fmt.Sprintf("%s:%d: ", segPath, victim.Offset)
	if status != 1 || !strings.Contains(stdout, where) || !strings.Contains(stdout, "checksum mismatch") {
		t.Fatalf("verify after damage: status %d, output does not start a line with %q:\n%s", status, where, stdout)
	}

	// info still says what it can.
	status, stdout, _ = datadirCmd(append([]string{"info", "-json"}, args...)...)
	var info datadir.Info
	if err := json.Unmarshal([]byte(stdout), &info); status != 0 || err != nil || info.StateError == "" ||
		info.Identity.Server != 1 || len(info.WAL.Problems) != 1 || !strings.Contains(info.WAL.Problems[0], fmt.Sprintf("%s, offset %d", victim.Segment, victim.Offset)) {
		t.Errorf("info of the damaged directory: status %d (%v):\n%s", status, err, stdout)
	}

	at := fmt.Sprintf("%s:%d", victim.Segment, victim.Offset)
	status, _, stderr := datadirCmd(append([]string{"truncate", "-at", at}, args...)...)
	if status == 0 || !strings.Contains(stderr, "-backup is required") {
		t.Fatalf("truncate without -backup: status %d, stderr %q", status, stderr)
	}
	if got := snapshotDir(t, walDir); !maps.Equal(got, damaged) {
		t.Fatal("truncate without -backup changed the WAL")
	}
	backup := filepath.Join(t.TempDir(), "wal-backup")
	status, _, stderr = datadirCmd(append([]string{"truncate", "-at", fmt.Sprintf("%s:%d", victim.Segment, next.Offset), "-backup", backup}, args...)...)
	if status != 1 || !strings.Contains(stderr, "past the first damage") {
		t.Fatalf("truncate past the damage: status %d, stderr %q", status, stderr)
	}
	status, stdout, stderr = datadirCmd(append([]string{"truncate", "-at", at, "-backup", backup}, args...)...)
	if status != 0 || !strings.Contains(stdout, "compared byte for byte") || !strings.Contains(stdout, "cut "+victim.Segment+" at offset "+strconv.FormatInt(victim.Offset, 10)) {
		t.Fatalf("truncate: status %d, stdout:\n%s\nstderr: %s", status, stdout, stderr)
	}
	if got := snapshotDir(t, backup); !maps.Equal(got, damaged) {
		t.Error("the backup is not the WAL as it was before the cut")
	}
	if status, stdout, _ := datadirCmd(append([]string{"verify"}, args...)...); status != 0 {
		t.Errorf("verify after the cut: status %d:\n%s", status, stdout)
	}

	srv.Restart()
	c = connectZK(t, srv.Addr())
	children, _, err := c.Children("/")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(children)
	var want []string
	for i := range 20 {
		if p := fmt.Sprintf("k%02d", i); "/"+p < victim.Entry.Path {
			want = append(want, p)
		}
	}
	want = append(want, "zookeeper")
	if !slices.Equal(children, want) {
		t.Errorf("after the cut the server has %v, want %v", children, want)
	}
	mustCreate(t, c, "/after", "", 0, zk.WorldACL(zk.PermAll))
}

// snapshotDir returns the contents of every file in dir.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}

// clientNode is a node as a client reads it, in dump -json's form.
func clientNode(t *testing.T, c *zk.Conn, path string) datadir.NodeJSON {
	t.Helper()
	data, st, err := c.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	acl, _, err := c.GetACL(path)
	if err != nil {
		t.Fatalf("getACL %s: %v", path, err)
	}
	n := datadir.NodeJSON{Path: path, Stat: datadir.StatJSON{
		Czxid: hexID(st.Czxid), Ctime: st.Ctime, Mzxid: hexID(st.Mzxid), Mtime: st.Mtime, Pzxid: hexID(st.Pzxid),
		Cversion: st.Cversion, DataVersion: st.Version, ACLVersion: st.Aversion,
		EphemeralOwner: hexID(st.EphemeralOwner), DataLength: st.DataLength, NumChildren: st.NumChildren,
	}}
	if utf8.Valid(data) {
		s := string(data)
		n.Data = &s
	} else {
		n.DataBase64 = base64Std(data)
	}
	for _, a := range acl {
		n.ACL = append(n.ACL, datadir.ACLJSON{Scheme: a.Scheme, ID: a.ID, Perms: permString(a.Perms)})
	}
	return n
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// permString writes permissions as zkCli.sh does.
func permString(perms int32) string {
	var b strings.Builder
	for _, p := range []struct {
		bit  int32
		char byte
	}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}} {
		if perms&p.bit != 0 {
			b.WriteByte(p.char)
		}
	}
	return b.String()
}

func hexID(v int64) string { return "0x" + strconv.FormatUint(uint64(v), 16) }

// TestDatadirDumpTreeIsWhatClientsRead: the tree dump of a stopped server
// is, node for node, what a client listed just before it stopped: data as
// text or base64, every Stat field and the ACL, for persistent,
// sequential, ephemeral, container and TTL nodes.
func TestDatadirDumpTreeIsWhatClientsRead(t *testing.T) {
	srv := collietest.Start(t)
	c := connectZK(t, srv.Addr())
	open := zk.WorldACL(zk.PermAll)
	mustCreate(t, c, "/app", "config: é", 0, open)
	mustCreate(t, c, "/app/bin", "\xff\x00\x01", 0, open)
	mustCreate(t, c, "/app/ro", "read only", 0, zk.WorldACL(zk.PermRead))
	mustCreate(t, c, "/app/ip", "", 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}, {Perms: zk.PermRead, Scheme: "world", ID: "anyone"}})
	var seqs []string
	for range 3 {
		seqs = append(seqs, mustCreate(t, c, "/app/seq-", "s", zk.FlagSequence, open))
	}
	mustCreate(t, c, "/app/eph", "mine", zk.FlagEphemeral, open)
	mustCreate(t, c, "/cont", "", zk.FlagContainer, open)
	mustCreate(t, c, "/cont/child", "c", 0, open)
	if _, err := c.CreateTTL("/ttl", []byte("t"), zk.FlagTTL, open, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/app", []byte("config: v2"), 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(seqs[1], -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetACL("/app/ip", []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}, {Perms: zk.PermRead | zk.PermWrite, Scheme: "world", ID: "anyone"}}, 0); err != nil {
		t.Fatal(err)
	}

	var listed []datadir.NodeJSON
	var walk func(path string)
	walk = func(path string) {
		listed = append(listed, clientNode(t, c, path))
		children, _, err := c.Children(path)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(children)
		for _, name := range children {
			walk(strings.TrimSuffix(path, "/") + "/" + name)
		}
	}
	walk("/")
	if len(listed) < 14 {
		t.Fatalf("the client listed %d nodes", len(listed))
	}
	// The session stays open across the stop: its ephemeral node is part
	// of the state.
	srv.Stop()

	status, stdout, stderr := datadirCmd(append([]string{"dump", "-what", "tree", "-json"}, dirArgs(srv)...)...)
	if status != 0 {
		t.Fatalf("dump tree: status %d: %s", status, stderr)
	}
	var dumped []datadir.NodeJSON
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var n datadir.NodeJSON
		if err := json.Unmarshal(sc.Bytes(), &n); err != nil {
			t.Fatalf("dump line %q: %v", sc.Text(), err)
		}
		dumped = append(dumped, n)
	}
	norm := func(n datadir.NodeJSON) string {
		// A client cannot tell null data from empty.
		if n.Data == nil && n.DataBase64 == "" {
			n.Data = new(string)
		}
		b, _ := json.Marshal(n)
		return string(b)
	}
	if len(dumped) != len(listed) {
		t.Errorf("dump has %d nodes, the client listed %d", len(dumped), len(listed))
	}
	for i := range min(len(dumped), len(listed)) {
		if d, l := norm(dumped[i]), norm(listed[i]); d != l {
			t.Errorf("node %d:\ndump   %s\nclient %s", i, d, l)
		}
	}
	if status, stdout, _ := datadirCmd(append([]string{"dump", "-what", "tree"}, dirArgs(srv)...)...); status != 0 ||
		!strings.Contains(stdout, `/app/bin data=base64:/wAB `) || !strings.Contains(stdout, "/app/ip data=\"\" ") ||
		!strings.Contains(stdout, "acl=ip:127.0.0.1:cdrwa acl=world:anyone:rw") {
		t.Errorf("dump tree as text: status %d:\n%s", status, stdout)
	}
}

// fourLetter sends a four-letter word and returns the reply.
func fourLetter(t *testing.T, addr, word string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, word); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(conn)
	return string(b)
}

// TestDatadirRebuildRefusals: rebuild refuses a target whose snapshot and
// log directories hold anything, showing what, and a set of sources that
// leaves out a voter of the recorded membership; both change nothing.
// With every other voter and -force-empty-target it rebuilds the voter:
// its own identity, the most up-to-date log, a term above every voter's.
func TestDatadirRebuildRefusals(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0)
	c := connectZK(t, e.Leader().Addr())
	for i := range 10 {
		mustCreate(t, c, fmt.Sprintf("/r%d", i), "x", 0, zk.WorldACL(zk.PermAll))
	}
	lead := e.Leader()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(fourLetter(t, lead.Addr(), "mntr"), "collie_members_with_log\t3\n") {
		if time.Now().After(deadline) {
			t.Fatal("not every voter on record as holding the log after 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.Stop()
	s := e.Servers()
	from := func(i int) []string { return []string{"-from", s[i].Cfg().DataDir} }
	// In-process servers have no myid file.
	target := []string{"-data-dir", s[2].Cfg().DataDir, "-id", "3", "-extended-types"}
	before := snapshotDir(t, filepath.Join(s[2].Cfg().DataDir, "wal"))

	status, stdout, stderr := datadirCmd(slices.Concat([]string{"rebuild"}, target, from(0), from(1))...)
	if status != 1 || !strings.Contains(stderr, "not empty") || !strings.Contains(stderr, "-force-empty-target") ||
		!strings.Contains(stdout, "the target holds:") || !strings.Contains(stdout, filepath.Join("snap", "identity")) {
		t.Fatalf("rebuild into a directory with data: status %d\nstdout:\n%s\nstderr:\n%s", status, stdout, stderr)
	}
	status, _, stderr = datadirCmd(slices.Concat([]string{"rebuild", "-force-empty-target"}, target, from(0))...)
	if status != 1 || !strings.Contains(stderr, "the ensemble's voters are 1 2 3, and the data of 2 is not given") {
		t.Fatalf("rebuild without voter 2: status %d, stderr:\n%s", status, stderr)
	}
	status, _, stderr = datadirCmd(slices.Concat([]string{"rebuild", "-force-empty-target"}, target, from(0), from(1), from(2))...)
	if status != 1 || !strings.Contains(stderr, "server 3's own data") {
		t.Fatalf("rebuild from its own data: status %d, stderr:\n%s", status, stderr)
	}
	if got := snapshotDir(t, filepath.Join(s[2].Cfg().DataDir, "wal")); !maps.Equal(got, before) {
		t.Fatal("a refused rebuild changed the target's log")
	}

	infoOf := func(i int) datadir.Info {
		t.Helper()
		status, stdout, stderr := datadirCmd(append([]string{"info", "-json", "-extended-types", "-data-dir"}, s[i].Cfg().DataDir)...)
		var info datadir.Info
		if err := json.Unmarshal([]byte(stdout), &info); status != 0 || err != nil {
			t.Fatalf("info of server %d: status %d (%v): %s", i+1, status, err, stderr)
		}
		return info
	}
	old := infoOf(2)
	status, stdout, stderr = datadirCmd(slices.Concat([]string{"rebuild", "-force-empty-target"}, target, from(1), from(0))...)
	if status != 0 || !strings.Contains(stdout, "removed it (-force-empty-target)") || !strings.Contains(stdout, "rebuilt server 3") {
		t.Fatalf("rebuild: status %d\nstdout:\n%s\nstderr:\n%s", status, stdout, stderr)
	}
	rebuilt, one, two := infoOf(2), infoOf(0), infoOf(1)
	best := one
	if two.LastTerm > one.LastTerm || two.LastTerm == one.LastTerm && two.LastIndex > one.LastIndex {
		best = two
	}
	if rebuilt.Identity.Server != 3 || rebuilt.Identity.Mode != "ensemble" || rebuilt.Identity.Token == old.Identity.Token ||
		rebuilt.Identity.Token == best.Identity.Token || rebuilt.EnsembleID != best.EnsembleID {
		t.Errorf("rebuilt identity %+v, ensemble %s; before %+v, source ensemble %s", rebuilt.Identity, rebuilt.EnsembleID, old.Identity, best.EnsembleID)
	}
	if rebuilt.HardState.Term != max(one.HardState.Term, two.HardState.Term)+1 || rebuilt.HardState.Vote != 0 || rebuilt.HardState.Commit != best.HardState.Commit {
		t.Errorf("rebuilt hard state %+v; the sources' %+v and %+v", rebuilt.HardState, one.HardState, two.HardState)
	}
	if rebuilt.LastIndex != best.LastIndex || rebuilt.LastTerm != best.LastTerm || rebuilt.Znodes != best.Znodes ||
		!slices.Equal(rebuilt.Members.Voters, []uint64{1, 2, 3}) || !slices.Equal(rebuilt.MembersWithLog, []uint64{1, 2, 3}) {
		t.Errorf("rebuilt %+v, the most up-to-date source %+v", rebuilt, best)
	}
}
