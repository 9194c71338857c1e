package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/logbuf"
	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/tlsconfig"
)

// collieCmd runs the collie binary's code with args and returns its exit
// status and outputs.
func collieCmd(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	status := run(args, &stdout, &stderr)
	return status, stdout.String(), stderr.String()
}

// write is an acknowledged write: the node's data and Stat after it.
type write struct {
	data []byte
	stat proto.Stat
}

// load is clients writing without pause, each under its own parent node,
// and the record of every write acknowledged.
type load struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	writes  map[string][]write // by path, in the order acknowledged
	parents map[string]proto.Stat
	acls    map[string][]proto.ACL // of each parent's children
	count   atomic.Int64
	err     atomic.Pointer[error]
}

const loadWriters = 4

// startLoad creates the parents and starts the writers. Writer 0's nodes
// carry a digest ACL, whose user it authenticates as.
func startLoad(t *testing.T, connect string) *load {
	t.Helper()
	l := &load{stop: make(chan struct{}), writes: map[string][]write{}, parents: map[string]proto.Stat{}, acls: map[string][]proto.ACL{}}
	for i := range loadWriters {
		c := dialClient(t, connect)
		parent := fmt.Sprintf("/w%d", i)
		acl := client.WorldACL(proto.PermAll)
		if i == 0 {
			if err := c.AddAuth(t.Context(), "digest", []byte("w0:pw")); err != nil {
				t.Fatal(err)
			}
			acl = append(client.DigestACL(proto.PermAll, "w0", "pw"), client.WorldACL(proto.PermRead)...)
		}
		_, stat, err := c.Create(t.Context(), parent, []byte(parent), client.ModePersistent, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.parents[parent], l.acls[parent] = stat, acl
		l.wg.Go(func() { l.run(c, parent, acl) })
	}
	t.Cleanup(l.halt)
	return l
}

func (l *load) run(c *client.Client, parent string, acl []proto.ACL) {
	defer c.Close()
	ctx := context.Background()
	for j := 0; ; j++ {
		select {
		case <-l.stop:
			return
		default:
		}
		path := fmt.Sprintf("%s/n%06d", parent, j)
		data := []byte(path)
		_, stat, err := c.Create(ctx, path, data, client.ModePersistent, acl)
		if err == nil && j%4 == 3 {
			l.record(path, data, stat)
			path = fmt.Sprintf("%s/n%06d", parent, j/2)
			data = []byte(fmt.Sprintf("set by %d", j))
			stat, err = c.Set(ctx, path, data, -1)
		}
		if err != nil {
			l.err.CompareAndSwap(nil, &err)
			return
		}
		l.record(path, data, stat)
	}
}

func (l *load) record(path string, data []byte, stat proto.Stat) {
	l.mu.Lock()
	l.writes[path] = append(l.writes[path], write{data, stat})
	l.mu.Unlock()
	l.count.Add(1)
}

// awaitWrites waits until n more writes were acknowledged.
func (l *load) awaitWrites(t *testing.T, n int64) {
	t.Helper()
	target := l.count.Load() + n
	deadline := time.Now().Add(time.Minute)
	for l.count.Load() < target {
		if err := l.err.Load(); err != nil {
			t.Fatalf("a writer failed: %v", *err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes acknowledged in a minute, waiting for %d", l.count.Load(), target)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (l *load) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// expected is the tree under the writers' parents as it was at zxid z,
// from the acknowledged writes.
type expected struct {
	nodes    map[string]write
	children map[string][]string
	parents  map[string]proto.Stat
	acls     map[string][]proto.ACL
}

func (l *load) at(z int64) expected {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := expected{nodes: map[string]write{}, children: map[string][]string{}, parents: map[string]proto.Stat{}, acls: l.acls}
	for parent, stat := range l.parents {
		e.parents[parent] = stat
		e.children[parent] = []string{}
	}
	for path, ws := range l.writes {
		var last *write
		for i := range ws {
			if ws[i].stat.Mzxid <= z {
				last = &ws[i]
			}
		}
		if last == nil {
			continue
		}
		e.nodes[path] = *last
		parent, name := filepath.Split(path)
		parent = strings.TrimSuffix(parent, "/")
		e.children[parent] = append(e.children[parent], name)
		ps := e.parents[parent]
		ps.Cversion++
		ps.NumChildren++
		ps.Pzxid = max(ps.Pzxid, last.stat.Czxid)
		e.parents[parent] = ps
	}
	return e
}

func dialClient(t *testing.T, connect string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, connect, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkTree checks every node under the writers' parents on the server
// at addr against e: data, every Stat field and ACL, and no node more.
func checkTree(t *testing.T, addr string, e expected) {
	t.Helper()
	c := dialClient(t, addr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := c.Sync(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	// Writer 0's user, who has ADMIN on its nodes, reads their digest
	// ACLs unmasked.
	if err := c.AddAuth(ctx, "digest", []byte("w0:pw")); err != nil {
		t.Fatal(err)
	}
	bad := 0
	fail := func(format string, a ...any) {
		if bad++; bad <= 10 {
			t.Errorf("server %s: "+format, append([]any{addr}, a...)...)
		}
	}
	for parent, want := range e.parents {
		names, stat, err := c.Children(ctx, parent)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		slices.Sort(e.children[parent])
		if !slices.Equal(names, e.children[parent]) {
			fail("%s has %d children, want %d", parent, len(names), len(e.children[parent]))
		}
		if stat != want {
			fail("%s: Stat %+v, want %+v", parent, stat, want)
		}
		for _, name := range names {
			path := parent + "/" + name
			w, ok := e.nodes[path]
			if !ok {
				fail("%s is there; it was written after the snapshot", path)
				continue
			}
			data, stat, err := c.Get(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, w.data) || stat != w.stat {
				fail("%s: %q %+v, want %q %+v", path, data, stat, w.data, w.stat)
			}
			acl, _, err := c.GetACL(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(acl, e.acls[parent]) {
				fail("%s: ACL %v, want %v", path, acl, e.acls[parent])
			}
		}
	}
	if bad > 10 {
		t.Errorf("server %s: %d differences in all", addr, bad)
	}
}

// Status of a backup file, as collie snapshot status -json prints it.
func snapshotStatusOf(t *testing.T, file string) Status {
	t.Helper()
	code, out, errOut := collieCmd("snapshot", "status", file, "-json")
	var st Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 || !st.OK {
		t.Fatalf("status of %s: exit %d, %v: %s%s", file, code, err, out, errOut)
	}
	return st
}

// saveUnderLoad runs writers against connect, saves a snapshot from the
// admin server at adminAddr while they write, lets them write on, and
// returns the file, its zxid and the tree expected at it.
func saveUnderLoad(t *testing.T, connect, adminAddr string) (string, int64, expected) {
	l := startLoad(t, connect)
	l.awaitWrites(t, 200)
	file := filepath.Join(t.TempDir(), "backup.snap")
	code, out, errOut := collieCmd("snapshot", "save", file, "-server", "http://"+adminAddr, "-auth", "digest anyone:atall")
	if code != 0 {
		t.Fatalf("snapshot save: exit %d: %s%s", code, out, errOut)
	}
	l.awaitWrites(t, 200)
	l.halt()
	if err := l.err.Load(); err != nil {
		t.Fatalf("a writer failed: %v", *err)
	}
	st := snapshotStatusOf(t, file)
	z, err := strconv.ParseInt(strings.TrimPrefix(st.Zxid, "0x"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	e := l.at(z)
	if len(e.nodes) < 100 || len(e.nodes) == len(l.writes) {
		t.Fatalf("the snapshot at %#x holds %d of %d nodes written: it was not taken while writes went on", z, len(e.nodes), len(l.writes))
	}
	if st.Nodes < len(e.nodes)+len(e.parents) {
		t.Fatalf("status counts %d znodes, fewer than the %d written before it", st.Nodes, len(e.nodes)+len(e.parents))
	}
	return file, z, e
}

// restoreStandalone restores file into a new standalone server, starts
// it, checks its tree and that writes go on above zxid z.
func restoreStandalone(t *testing.T, file string, z int64, e expected) {
	cfg := collietest.Config(t)
	cfg.DataDir = filepath.Join(t.TempDir(), "new-dir") // created by restore
	cfg.DataLogDir = filepath.Join(t.TempDir(), "log")
	code, out, errOut := collieCmd("snapshot", "restore", file, "-data-dir", cfg.DataDir, "-data-log-dir", cfg.DataLogDir, "-extended-types")
	if code != 0 || !strings.Contains(out, "restored standalone server") {
		t.Fatalf("restore: exit %d: %s%s", code, out, errOut)
	}
	srv := collietest.StartConfig(t, cfg)
	checkTree(t, srv.Addr(), e)
	checkWritesGoOn(t, srv.Addr(), z)
}

func checkWritesGoOn(t *testing.T, connect string, z int64) {
	t.Helper()
	c := dialClient(t, connect)
	defer c.Close()
	_, stat, err := c.Create(t.Context(), "/after-restore", nil, client.ModePersistent, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stat.Czxid <= z {
		t.Fatalf("a write on the restored server got zxid %#x, not above the snapshot's %#x", stat.Czxid, z)
	}
}

// ensembleZooCfg writes a zoo.cfg for cfg, a member of an ensemble, as
// an operator would for the new ensemble.
func ensembleZooCfg(t *testing.T, cfg config.Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=100\ndataDir=%s\nclientPort=%d\nextendedTypesEnabled=true\n", cfg.DataDir, cfg.ClientPort)
	for _, m := range cfg.Servers {
		fmt.Fprintf(&b, "server.%d=%s:%d:%d\n", m.ID, m.Host, m.PeerPort, m.ElectionPort)
	}
	path := filepath.Join(t.TempDir(), "zoo.cfg")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// restoreEnsemble restores file into each member of a new ensemble of
// three, from its zoo.cfg, starts it, checks every member's tree and that
// writes go on above zxid z. It returns the ensemble.
func restoreEnsemble(t *testing.T, file string, z int64, e expected) *collietest.Ensemble {
	ids := map[string]bool{}
	ens := collietest.StartEnsembleFrom(t, 3, 0, func(cfg config.Config) {
		code, out, errOut := collieCmd("snapshot", "restore", file, "-c", ensembleZooCfg(t, cfg), "-id", strconv.FormatUint(cfg.ServerID, 10), "-ensemble-token", "restored")
		if code != 0 || !strings.Contains(out, fmt.Sprintf("restored server %d of an ensemble", cfg.ServerID)) {
			t.Fatalf("restore server %d: exit %d: %s%s", cfg.ServerID, code, out, errOut)
		}
		_, rest, _ := strings.Cut(out, "; ensemble ")
		id, _, _ := strings.Cut(rest, " ")
		ids[id] = true
	})
	old := snapshotStatusOf(t, file).Ensemble
	if len(ids) != 1 || ids[old] {
		t.Fatalf("the members were restored as ensembles %v; the file is ensemble %s's", slices.Collect(maps.Keys(ids)), old)
	}
	for _, s := range ens.Servers() {
		checkTree(t, s.Addr(), e)
	}
	checkWritesGoOn(t, ens.ConnectString(), z)
	return ens
}

// TestBackupRestoreStandalone: a snapshot saved from a standalone server
// while clients write holds exactly the acknowledged writes up to its
// zxid, and restores into a new standalone server and a new ensemble.
func TestBackupRestoreStandalone(t *testing.T) {
	src := collietest.Start(t, collietest.WithAdminServer(), collietest.WithConfig(func(c *config.Config) { c.AdminRateLimiterInterval = 0 }))
	file, z, e := saveUnderLoad(t, src.Addr(), src.AdminAddr())
	restoreStandalone(t, file, z, e)
	restoreEnsemble(t, file, z, e)
}

// TestBackupRestoreEnsemble: the same from a member of an ensemble; the
// restored ensemble is a new one, whose servers and the old ensemble's
// refuse each other.
func TestBackupRestoreEnsemble(t *testing.T) {
	src := collietest.StartEnsemble(t, 3, 0, collietest.WithAdminServer(), collietest.WithConfig(func(c *config.Config) { c.AdminRateLimiterInterval = 0 }))
	file, z, e := saveUnderLoad(t, src.ConnectString(), src.Servers()[1].AdminAddr())
	restoreStandalone(t, file, z, e)
	ens := restoreEnsemble(t, file, z, e)

	st := snapshotStatusOf(t, file)
	_ = ens.Leader()
	// Server 3 of the new ensemble is given the old ensemble's identity,
	// as a server of the old ensemble that a server.N line named would
	// have it: the others refuse it, and it them.
	third := ens.Servers()[2]
	third.Stop()
	cfg := third.Cfg()
	for _, dir := range []string{"snap", "wal"} {
		if err := os.RemoveAll(filepath.Join(cfg.DataDir, dir)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := collieCmd("snapshot", "restore", file, "-c", ensembleZooCfg(t, cfg), "-keep-ensemble-id")
	if code != 0 || !strings.Contains(out, "ensemble "+st.Ensemble) {
		t.Fatalf("restore with the old identity: exit %d: %s%s", code, out, errOut)
	}
	var logs logbuf.Buffer
	old, err := server.New(cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- old.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(logs.String(), "holds the data of another ensemble") {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal in a minute; the old ensemble's server logged:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The two restored members go on without it.
	checkWritesGoOn2 := dialClient(t, ens.Servers()[0].Addr())
	defer checkWritesGoOn2.Close()
	if _, _, err := checkWritesGoOn2.Create(t.Context(), "/without-3", nil, client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotDamagedFile: a backup file cut short or with a byte changed
// is refused by status and by restore, which writes nothing.
func TestSnapshotDamagedFile(t *testing.T) {
	src := collietest.Start(t, collietest.WithAdminServer())
	c := dialClient(t, src.Addr())
	for i := range 50 {
		if _, _, err := c.Create(t.Context(), fmt.Sprintf("/n%d", i), bytes.Repeat([]byte{byte(i)}, 100), client.ModePersistent, nil); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "good.snap")
	if code, out, errOut := collieCmd("snapshot", "save", "-server", src.AdminAddr(), "-auth", "digest a:b", file); code != 0 {
		t.Fatalf("save: exit %d: %s%s", code, out, errOut)
	}
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 1
	for name, tt := range map[string]struct {
		content []byte
		want    string
	}{
		"truncated":    {good[:len(good)-100], "cut short"},
		"flipped byte": {flipped, "damaged file"},
		"not a backup": {[]byte("hello"), "not a Collie backup file"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(path, tt.content, 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := collieCmd("snapshot", "status", path)
		if code != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%s: status exit %d: %s", name, code, errOut)
		}
		code, out, _ := collieCmd("snapshot", "status", "-json", path)
		var st Status
		if code != 1 || json.Unmarshal([]byte(out), &st) != nil || st.OK || !strings.Contains(st.Problem, tt.want) {
			t.Errorf("%s: status -json exit %d: %s", name, code, out)
		}
		target := filepath.Join(t.TempDir(), "data")
		code, _, errOut = collieCmd("snapshot", "restore", path, "-data-dir", target)
		if code != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%s: restore exit %d: %s", name, code, errOut)
		}
		if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the refused restore wrote %s: %v", name, target, err)
		}
	}
	// A restore into a directory that holds data is refused.
	if code, _, errOut := collieCmd("snapshot", "restore", file, "-data-dir", src.Cfg().DataDir); code != 1 || !strings.Contains(errOut, "not empty") {
		t.Errorf("restore over a server's data: exit %d: %s", code, errOut)
	}
}

// TestDumpBackupAndDataDir: collie dump reads a backup file and a stopped
// server's data directory, telling them apart by their content, and
// prints the same znodes for both.
func TestDumpBackupAndDataDir(t *testing.T) {
	src := collietest.Start(t, collietest.WithAdminServer())
	c := dialClient(t, src.Addr())
	if _, _, err := c.Create(t.Context(), "/dumped", []byte("value"), client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Create(t.Context(), "/eph", nil, client.ModeEphemeral, nil); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "b.snap")
	if code, out, errOut := collieCmd("snapshot", "save", file, "-server", "http://"+src.AdminAddr(), "-auth", "digest a:b", "-q"); code != 0 {
		t.Fatalf("save: exit %d: %s%s", code, out, errOut)
	}
	session := fmt.Sprintf("0x%x", c.SessionID())
	c.Close()
	src.Stop()
	lines := func(args ...string) []map[string]any {
		code, out, errOut := collieCmd(append([]string{"dump", "-json", "-extended-types"}, args...)...)
		if code != 0 {
			t.Fatalf("dump %v: exit %d: %s", args, code, errOut)
		}
		var ms []map[string]any
		for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("dump %v: %q: %v", args, line, err)
			}
			ms = append(ms, m)
		}
		return ms
	}
	fromFile := lines(file)
	if fromFile[0]["kind"] != "collie backup" {
		t.Fatalf("first line of a backup's dump: %v", fromFile[0])
	}
	var sawNode, sawSession bool
	for _, m := range fromFile[1:] {
		if m["path"] == "/dumped" && m["data"] == "value" {
			sawNode = true
		}
		if m["path"] == "/eph" && m["stat"].(map[string]any)["ephemeralOwner"] != session {
			t.Errorf("/eph: %v, owner should be %s", m, session)
		}
		if m["session"] == session {
			sawSession = true
		}
	}
	if !sawNode || !sawSession {
		t.Errorf("the backup's dump lacks /dumped (%t) or session %s (%t)", sawNode, session, sawSession)
	}
	fromDir := lines(src.Cfg().DataDir)
	if fromDir[0]["kind"] != "collie data directory" {
		t.Fatalf("first line of a data directory's dump: %v", fromDir[0])
	}
	pathsOf := func(ms []map[string]any) []string {
		var ps []string
		for _, m := range ms {
			if p, ok := m["path"].(string); ok && m["kind"] == nil {
				ps = append(ps, p)
			}
		}
		return ps
	}
	// The session closed after the snapshot: the directory has no /eph.
	want := slices.DeleteFunc(pathsOf(fromFile), func(p string) bool { return p == "/eph" })
	if got := pathsOf(fromDir); !slices.Equal(got, want) {
		t.Errorf("paths of the data directory %v, of the backup without /eph %v", got, want)
	}
	if code, _, errOut := collieCmd("dump", "/etc/hostname"); code != 1 || !strings.Contains(errOut, "not an input collie dump reads") {
		t.Errorf("dump of another file: exit %d: %s", code, errOut)
	}
}

// TestSnapshotSaveOverHTTPS: save fetches from an admin port that serves
// HTTPS only and wants client certificates, authorised by the x509
// identity of its certificate, which must have ALL on /.
func TestSnapshotSaveOverHTTPS(t *testing.T) {
	tlstest.Require(t)
	ca := tlstest.NewAuthority(t, "admin-ca")
	serverID := ca.Issue("server", tlstest.Options{})
	admin := ca.Issue("admin", tlstest.Options{Subject: "/O=Example/CN=admin"})
	reader := ca.Issue("reader", tlstest.Options{Subject: "/O=Example/CN=reader"})
	src := collietest.Start(t, collietest.WithAdminServer(), collietest.WithConfig(func(c *config.Config) {
		c.AdminForceHTTPS, c.AdminNeedClientAuth = true, true
		c.X509AuthProvider = true
		c.AdminRateLimiterInterval = 0
		c.QuorumSSL = tlsconfig.Settings{
			KeyStore:   tlsconfig.Store{Location: serverID.KeyStore("PEM"), Password: tlstest.Password},
			TrustStore: tlsconfig.Store{Location: ca.TrustStore("PEM"), Password: tlstest.Password},
		}
	}))
	c := dialClient(t, src.Addr())
	acl := []proto.ACL{
		{Perms: proto.PermAll, ID: proto.ID{Scheme: "x509", ID: "CN=admin,O=Example"}},
		{Perms: proto.PermRead, ID: proto.ID{Scheme: "x509", ID: "CN=reader,O=Example"}},
	}
	if _, err := c.SetACL(t.Context(), "/", acl, -1); err != nil {
		t.Fatal(err)
	}
	c.Close()
	save := func(id *tlstest.Identity, auth string) (int, string) {
		file := filepath.Join(t.TempDir(), "b.snap")
		code, out, errOut := collieCmd("snapshot", "save", file, "-server", "https://"+src.AdminAddr(), "-auth", auth,
			"-tls-cert", id.Cert, "-tls-key", id.Key, "-tls-ca", ca.Cert)
		return code, out + errOut
	}
	if code, out := save(admin, "x509"); code != 0 || !strings.Contains(out, "saved ") {
		t.Fatalf("the admin's certificate: exit %d: %s", code, out)
	}
	if code, out := save(reader, "x509"); code != 1 || !strings.Contains(out, "403") {
		t.Errorf("a certificate with READ only: exit %d: %s", code, out)
	}
	if code, out := save(admin, "digest any:one"); code != 1 || !strings.Contains(out, "403") {
		t.Errorf("a digest identity not in the ACL: exit %d: %s", code, out)
	}
}

// TestRestoreTarget: which server restore writes, from the flags and a
// zoo.cfg, as the server started from that zoo.cfg will see itself.
func TestRestoreTarget(t *testing.T) {
	dir := t.TempDir()
	cfgFile := func(text string) string {
		path := filepath.Join(t.TempDir(), "zoo.cfg")
		if err := os.WriteFile(path, []byte("dataDir="+dir+"\n"+text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	standalone := cfgFile("clientPort=2181\n")
	ensemble := cfgFile("server.1=a:1:2\nserver.2=b:1:2\nserver.3=c:1:2\nserver.4=d:1:2:observer\n")

	seed, err := restoreTarget(standalone, "", "", 0, "", "", false)
	if err != nil || !seed.Standalone || seed.ID != 0 || seed.DataDir != dir {
		t.Errorf("standalone: %+v, %v", seed, err)
	}
	if _, err := restoreTarget(standalone, "", "", 3, "", "", false); err == nil {
		t.Error("standalone with -id 3: accepted, but the server will be server 1")
	}
	if _, err := restoreTarget(ensemble, "", "", 0, "", "", false); err == nil {
		t.Error("ensemble without myid or -id: accepted")
	}
	seed, err = restoreTarget(ensemble, "", "", 2, "", "", false)
	if err != nil || seed.Standalone || seed.ID != 2 || !slices.Equal(seed.Voters, []uint64{1, 2, 3}) || !slices.Equal(seed.Learners, []uint64{4}) {
		t.Errorf("ensemble member 2: %+v, %v", seed, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "myid"), []byte("3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if seed, err = restoreTarget(ensemble, "", "", 0, "", "", false); err != nil || seed.ID != 3 {
		t.Errorf("ensemble member from myid: %+v, %v", seed, err)
	}
	seed, err = restoreTarget("", dir, "", 5, "5,6,7", "8", true)
	if err != nil || seed.Standalone || seed.ID != 5 || !slices.Equal(seed.Voters, []uint64{5, 6, 7}) || !seed.Options.ExtendedTypes {
		t.Errorf("from flags: %+v, %v", seed, err)
	}
	if _, err := restoreTarget(ensemble, "", "", 2, "1,2", "", false); err == nil {
		t.Error("-voters beside -c: accepted")
	}
}
