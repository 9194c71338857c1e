package zkcompat

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/tree"
	"github.com/collie-io/collie/server/zkdata"
	"github.com/collie-io/collie/server/zkimport"
)

// importSessionMs is the session timeout of the sessions that load
// ZooKeeper in the import tests: long enough that none expires while a
// test runs, on either server.
const importSessionMs = 3600000

// zkImportArgs are the JVM arguments of the ZooKeeper servers the import
// tests load: snapshots every few dozen transactions, so that the data
// has several snapshots and logs, each snapshot fuzzy; the super user, to
// read every node back; no container sweeps.
func zkImportArgs(compression string) []zkref.Option {
	args := []string{
		"-Dzookeeper.snapCount=40",
		// Logs preallocated 64 KiB at a time, not 64 MiB: copies are cheap.
		"-Dzookeeper.preAllocSize=64",
		"-Dzookeeper.DigestAuthenticationProvider.superDigest=" + digest(superPassword),
		"-Dznode.container.checkIntervalMs=3600000",
		"-Dfile.encoding=UTF-8",
	}
	if compression != "" {
		args = append(args, "-Dzookeeper.snapshot.compression.method="+compression)
	}
	return []zkref.Option{zkref.WithExtendedTypes(), zkref.WithConfig("maxSessionTimeout", fmt.Sprint(importSessionMs)), zkref.WithJVMArgs(args...)}
}

// loadZooKeeper runs a seeded random workload of steps requests against
// ZooKeeper (every node kind, ACLs, multis, deletes, session ends), then
// kills it with SIGKILL while a writer pipelines creates, sequential and
// ephemeral, and setData: the log ends mid-write. It returns the sessions
// still open.
func loadZooKeeper(t *testing.T, ref *zkref.Server, seed uint64, steps int) (map[int64]string, *zkwire.Conn) {
	t.Helper()
	return loadZooKeeperReplies(t, ref, seed, steps, nil)
}

// loadZooKeeperReplies is loadZooKeeper, handing every reply of the
// random workload, header and body, to replies if it is not nil.
func loadZooKeeperReplies(t *testing.T, ref *zkref.Server, seed uint64, steps int, replies func(proto.OpCode, proto.ReplyHeader, []byte)) (map[int64]string, *zkwire.Conn) {
	t.Helper()
	r := newWireRunner(t, ref.Addr(), importSessionMs)
	r.replies = replies
	g := newRandomRequests(seed)
	for i := range steps {
		r.run(i, g.next())
	}
	w, err := zkwire.Dial(ref.Addr(), importSessionMs)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if code, err := w.Do(proto.OpCreate, &proto.CreateRequest{Path: "/mid", ACL: tree.OpenACL}, &proto.CreateResponse{}); err != nil || code != proto.OK && code != proto.ErrNodeExists {
		t.Fatalf("create /mid: %v %v", code, err)
	}
	// A quota on /mid, made as zkCli.sh's setquota makes it: the writes
	// below keep its stats node.
	for _, n := range []struct{ path, data string }{
		{"/zookeeper/quota/mid", ""},
		{"/zookeeper/quota/mid/zookeeper_limits", "count=100000,bytes=-1"},
		{"/zookeeper/quota/mid/zookeeper_stats", "count=0,bytes=0"},
	} {
		if code, err := w.Do(proto.OpCreate, &proto.CreateRequest{Path: n.path, Data: []byte(n.data), ACL: tree.OpenACL}, &proto.CreateResponse{}); err != nil || code != proto.OK && code != proto.ErrNodeExists {
			t.Fatalf("create %s: %v %v", n.path, code, err)
		}
	}
	var wg sync.WaitGroup
	acked := make(chan int, 1)
	wg.Go(func() {
		n := 0
		defer func() { acked <- n }()
		for i := 0; ; i++ {
			reqs := []zkwire.Request{
				{Xid: w.NextXid(), Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/mid/s-", Data: []byte(fmt.Sprint(i)), ACL: tree.OpenACL, Flags: proto.ModePersistentSequential}},
				{Xid: w.NextXid(), Op: proto.OpCreate, Req: &proto.CreateRequest{Path: fmt.Sprintf("/mid/e%d", i), ACL: tree.OpenACL, Flags: proto.ModeEphemeral}},
				{Xid: w.NextXid(), Op: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/mid", Data: []byte(fmt.Sprint(i)), Version: -1}},
			}
			if _, err := w.Pipeline(reqs...); err != nil {
				return
			}
			n++
		}
	})
	// Kill once the writer has a few rounds acknowledged.
	deadline := time.Now().Add(time.Minute)
	for countChildren(ref.Addr(), "/mid") < 30 {
		if time.Now().After(deadline) {
			t.Fatal("the writer made no progress in a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ref.Kill()
	wg.Wait()
	t.Logf("writer rounds acknowledged before the kill: %d", <-acked)
	sessions := r.sessions()
	sessions[w.Session] = "writer"
	return sessions, w
}

func countChildren(addr, path string) int {
	c, err := zkwire.Dial(addr, 30000)
	if err != nil {
		return 0
	}
	defer c.Close()
	var resp proto.GetChildren2Response
	if code, err := c.Do(proto.OpGetChildren2, &proto.GetChildren2Request{Path: path}, &resp); err != nil || code != proto.OK {
		return 0
	}
	return len(resp.Children)
}

func mntrZxid(t *testing.T, addr string) int64 {
	out, err := zkref.FourLetter(addr, "srvr")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Zxid: "); ok {
			var z int64
			fmt.Sscanf(v, "0x%x", &z)
			return z
		}
	}
	return 0
}

// wireTree reads every node of the server at addr through the wire, as the
// super user, and returns one line per node, by path: data, ACL and the
// whole Stat. skip names paths left out, with their subtrees.
func wireTree(t *testing.T, addr string, skip ...string) map[string]string {
	t.Helper()
	c, err := zkwire.Dial(addr, 30000)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if hdr, _, err := c.CallXid(-4, proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte(superPassword)}); err != nil || hdr.Err != proto.OK {
		t.Fatalf("addauth super: %v %v", hdr.Err, err)
	}
	out, err := c.Tree(skip...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fsmTree returns the nodes of a state machine's tree as wireTree does.
func fsmTree(f *fsm.FSM, skip ...string) map[string]string {
	tr := f.Tree()
	out := map[string]string{}
	var walk func(path string)
	walk = func(path string) {
		if slices.Contains(skip, path) {
			return
		}
		n, _ := tr.Get(path)
		out[path] = zkwire.NodeLine(n.Data, tr.ACL(n), tr.Stat(n))
		kids := n.Children()
		slices.Sort(kids)
		for _, k := range kids {
			walk(strings.TrimSuffix(path, "/") + "/" + k)
		}
	}
	walk("/")
	return out
}

// diffTrees reports the nodes that differ, at most a few.
func diffTrees(t *testing.T, want, got map[string]string) {
	t.Helper()
	if d := zkwire.DiffTrees(want, got); d != "" {
		t.Error(d)
	}
}

// copyDir copies a directory tree.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestZooKeeperDataMatchesZooKeeper loads ZooKeeper 3.8 with a random
// workload and kills it mid-write, then reads its data directory with
// zkdata and converts it, and compares every node, Stat included, with
// what ZooKeeper itself serves when restarted on the same directory.
// Plain, gzip and snappy snapshots.
func TestZooKeeperDataMatchesZooKeeper(t *testing.T) {
	for i, compression := range []string{"", "gz", "snappy"} {
		name := compression
		if name == "" {
			name = "plain"
		}
		t.Run(name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "zk")
			opts := append(zkImportArgs(compression), zkref.WithDataDir(dataDir))
			ref := zkref.Start(t, opts...)
			open, _ := loadZooKeeper(t, ref, uint64(11+i), 300)
			copied := filepath.Join(t.TempDir(), "copy")
			copyDir(t, dataDir, copied)

			db, rep, err := zkdata.Load(zkdata.LoadOptions{DataDir: copied, Extended: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("snapshot %s (%d skipped), %d transactions replayed to 0x%x from %d logs", filepath.Base(rep.SnapFile), len(rep.Skipped), rep.Applied, rep.LastZxid, len(rep.Logs))
			if compression != "" && !strings.HasSuffix(rep.SnapFile, "."+compression) {
				t.Errorf("the snapshot read is %s, not a %s one", rep.SnapFile, compression)
			}
			for id, name := range open {
				if to, ok := db.Sessions[id]; !ok || to != importSessionMs {
					t.Errorf("session %#x (%s), open at the kill: timeout %d, in the table: %v", id, name, to, ok)
				}
			}
			res, err := zkimport.Convert(db, zkimport.Options{FSM: fsm.Options{ExtendedTypes: true}})
			if err != nil {
				t.Fatal(err)
			}
			// ZooKeeper logged the digest of its tree with each
			// transaction; Collie's tree has ZooKeeper's digest.
			if rep.LastDigest == nil {
				t.Errorf("ZooKeeper 3.8 logged no digest with the last transaction")
			} else if got := res.FSM.Tree().Digest(); got != rep.LastDigest.TreeDigest {
				t.Errorf("the imported tree's digest is %d; ZooKeeper logged %d at zxid 0x%x", got, rep.LastDigest.TreeDigest, rep.LastZxid)
			}

			again := zkref.Start(t, opts...)
			want := wireTree(t, again.Addr(), tree.ConfigPath)
			diffTrees(t, want, fsmTree(res.FSM, tree.ConfigPath))
			if z := mntrZxid(t, again.Addr()); z < res.LastZxid {
				t.Errorf("ZooKeeper restarted at zxid 0x%x, before the import's 0x%x", z, res.LastZxid)
			}
		})
	}
}

// TestZooKeeperDataDamaged damages copies of a ZooKeeper data directory
// the ways disks and operators do, and checks that each gives the whole
// tree, a documented recovery, or an error saying where, never a tree
// silently shorter than ZooKeeper's.
func TestZooKeeperDataDamaged(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "zk")
	opts := append(zkImportArgs(""), zkref.WithDataDir(dataDir))
	ref := zkref.Start(t, opts...)
	loadZooKeeper(t, ref, 7, 300)
	pristine := filepath.Join(t.TempDir(), "pristine")
	copyDir(t, dataDir, pristine)
	whole, _, err := zkdata.Load(zkdata.LoadOptions{DataDir: pristine, Extended: true})
	if err != nil {
		t.Fatal(err)
	}
	wholeTree := func() map[string]string {
		res, err := zkimport.Convert(whole, zkimport.Options{FSM: fsm.Options{ExtendedTypes: true}, Secret: make([]byte, fsm.SecretLen)})
		if err != nil {
			t.Fatal(err)
		}
		return fsmTree(res.FSM)
	}()
	if n := len(zkFiles(t, pristine, "log")); n < 3 {
		t.Fatalf("the workload left %d logs; the cases need 3", n)
	}
	// lastRecord returns the offset of the last whole record of a log.
	lastRecord := func(path string) (last, end int64) {
		var offs []int64
		le, err := zkdata.ReadLogFile(path, func(_ *zkdata.Txn, off int64) error { offs = append(offs, off); return nil })
		if err != nil || len(offs) < 2 {
			t.Fatalf("%s: %d records, %v", path, len(offs), err)
		}
		return offs[len(offs)-1], le.Offset
	}
	cases := []struct {
		name   string
		damage func(dir string)
		// wantErr is a part of the error; "" when the whole tree loads,
		// "short" when the tree loads without the last transaction.
		wantErr string
	}{
		{"torn last write", func(dir string) {
			logs := zkFiles(t, dir, "log")
			last, end := lastRecord(logs[len(logs)-1])
			// The last record half written, its bytes after the cut
			// never reaching the disk.
			zero(t, logs[len(logs)-1], last+(end-last)/2, end-last)
		}, "short"},
		{"flipped byte mid-log", func(dir string) {
			logs := zkFiles(t, dir, "log")
			flip(t, logs[len(logs)-1], 40)
		}, "a whole transaction follows"},
		{"zeroed block mid-log", func(dir string) {
			logs := zkFiles(t, dir, "log")
			zero(t, logs[len(logs)-2], 16, 64)
		}, "a whole transaction follows"},
		{"missing log", func(dir string) {
			logs := zkFiles(t, dir, "log")
			os.Remove(logs[len(logs)-2])
		}, "transactions missing"},
		{"torn newest snapshot", func(dir string) {
			snaps := zkFiles(t, dir, "snapshot")
			truncate(t, snaps[len(snaps)-1], 0.5)
		}, ""},
		{"every snapshot torn", func(dir string) {
			for _, s := range zkFiles(t, dir, "snapshot") {
				truncate(t, s, 0.7)
			}
		}, "reads cleanly"},
		{"no snapshot", func(dir string) {
			for _, s := range zkFiles(t, dir, "snapshot") {
				os.Remove(s)
			}
		}, "no snapshot"},
		{"wrong directory", func(dir string) {
			os.RemoveAll(filepath.Join(dir, "version-2"))
		}, "does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "zk")
			copyDir(t, pristine, dir)
			c.damage(dir)
			db, rep, err := zkdata.Load(zkdata.LoadOptions{DataDir: dir, Extended: true})
			switch c.wantErr {
			case "", "short":
				if err != nil {
					t.Fatalf("load: %v", err)
				}
			default:
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("load: %v; want an error saying %q", err, c.wantErr)
				}
				t.Logf("refused: %v", err)
				return
			}
			res, err := zkimport.Convert(db, zkimport.Options{FSM: fsm.Options{ExtendedTypes: true}, Secret: make([]byte, fsm.SecretLen)})
			if err != nil {
				t.Fatal(err)
			}
			if c.wantErr == "short" {
				last := rep.Logs[len(rep.Logs)-1]
				if !last.Torn || res.LastZxid != whole.LastZxid-1 {
					t.Fatalf("torn tail: reported %v, last zxid 0x%x; the whole log ends at 0x%x", last.Torn, res.LastZxid, whole.LastZxid)
				}
				return
			}
			if len(rep.Skipped) == 0 {
				t.Errorf("no snapshot reported skipped")
			}
			diffTrees(t, wholeTree, fsmTree(res.FSM))
		})
	}
}

func flip(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	f.ReadAt(b, off)
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func zero(t *testing.T, path string, off, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, n), off); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string, keep float64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(float64(st.Size())*keep)); err != nil {
		t.Fatal(err)
	}
}

// TestImportZooKeeperIntoCollie takes over a killed ZooKeeper's data with
// collie import, into a standalone server whose zoo.cfg shares ZooKeeper's
// dataDir, and into each member of a three-server ensemble, starts Collie
// on it, and compares every node through the wire with ZooKeeper
// restarted on the same data. A session open on ZooKeeper reconnects to
// Collie with ZooKeeper's password and finds its ephemerals; writes go on
// with zxids above ZooKeeper's last.
func TestImportZooKeeperIntoCollie(t *testing.T) {
	zkDir := filepath.Join(t.TempDir(), "zk")
	opts := append(zkImportArgs(""), zkref.WithDataDir(zkDir))
	ref := zkref.Start(t, opts...)
	_, writer := loadZooKeeper(t, ref, 5, 300)
	pristine := filepath.Join(t.TempDir(), "pristine")
	copyDir(t, zkDir, pristine)
	again := zkref.Start(t, opts...)
	want := wireTree(t, again.Addr(), tree.ConfigPath)
	zkZxid := mntrZxid(t, again.Addr())
	again.Kill()

	common := fmt.Sprintf("tickTime=2000\ninitLimit=10\nsyncLimit=5\nextendedTypesEnabled=true\nmaxSessionTimeout=%d\n"+
		"admin.enableServer=false\n4lw.commands.whitelist=*\nDigestAuthenticationProvider.superDigest=%s\n", importSessionMs, digest(superPassword))

	t.Run("standalone", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		copyDir(t, pristine, data)
		port := freeLocalPort(t)
		cfg := filepath.Join(dir, "zoo.cfg")
		os.WriteFile(cfg, []byte(common+fmt.Sprintf("dataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n", data, port)), 0o644)
		code, out := runCollie(t, dir, "import", "-c", cfg)
		if code != 0 {
			t.Fatalf("collie import: exit %d\n%s", code, out)
		}
		t.Logf("collie import:\n%s", out)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		p := startCollie(t, dir, &bytes.Buffer{}, "server", "-c", cfg)
		p.waitServing(t, addr, "ruok", "imok")
		diffTrees(t, want, wireTree(t, addr, tree.ConfigPath))

		// The writer's session, open when ZooKeeper was killed, resumes
		// on Collie with ZooKeeper's password, ephemerals and all.
		resumed := resumeAndWrite(t, writer, addr, zkZxid)
		var st proto.ExistsResponse
		if code, err := resumed.Do(proto.OpExists, &proto.ExistsRequest{Path: "/mid/e0"}, &st); err != nil || code != proto.OK || st.Stat.EphemeralOwner != writer.Session {
			t.Errorf("/mid/e0 after the resume: %v %v, owner %#x, want %#x", code, err, st.Stat.EphemeralOwner, writer.Session)
		}
		// A wrong password is refused.
		bad := *writer
		bad.Passwd = make([]byte, len(writer.Passwd))
		if c, err := bad.Resume(addr, zkZxid); err == nil && c.TimeOut != 0 {
			t.Errorf("a wrong password resumed ZooKeeper's session")
		}
	})

	t.Run("dump", func(t *testing.T) {
		// collie dump reads ZooKeeper's directory, a snapshot and a log.
		dir := t.TempDir()
		code, out := runCollie(t, dir, "dump", "-extended-types", pristine)
		if code != 0 || !strings.HasPrefix(out, "# zookeeper data directory") {
			t.Fatalf("collie dump of ZooKeeper's data: exit %d\n%.500s", code, out)
		}
		for p := range want {
			if !strings.Contains(out, "\n"+p+" ") {
				t.Errorf("collie dump of ZooKeeper's data lacks %s", p)
				break
			}
		}
		snaps, _ := filepath.Glob(filepath.Join(pristine, "version-2", "snapshot.*"))
		logs, _ := filepath.Glob(filepath.Join(pristine, "version-2", "log.*"))
		if code, out := runCollie(t, dir, "dump", "-json", "-extended-types", snaps[0]); code != 0 || !strings.HasPrefix(out, `{"kind":"zookeeper snapshot"`) {
			t.Errorf("collie dump of %s: exit %d\n%.300s", snaps[0], code, out)
		}
		code, out = runCollie(t, dir, "dump", logs[len(logs)-1])
		if code != 0 || !strings.Contains(out, " transactions, to offset ") || !strings.Contains(out, " create /") {
			t.Errorf("collie dump of %s: exit %d\n%.500s", logs[len(logs)-1], code, out)
		}
	})

	t.Run("ensemble", func(t *testing.T) {
		root := t.TempDir()
		const n = 3
		addrs := make([]string, n)
		var lines []string
		for i := range n {
			addrs[i] = fmt.Sprintf("127.0.0.1:%d", freeLocalPort(t))
			lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i+1, freeLocalPort(t), freeLocalPort(t)))
		}
		procs := make([]*serverProcess, n)
		ensembles := map[string]bool{}
		for i := range n {
			dir := filepath.Join(root, fmt.Sprintf("s%d", i+1))
			os.MkdirAll(filepath.Join(dir, "data"), 0o755)
			os.WriteFile(filepath.Join(dir, "data", "myid"), []byte(fmt.Sprint(i+1)), 0o644)
			// Each member's copy of the same ZooKeeper data.
			copyDir(t, pristine, filepath.Join(dir, "zk"))
			_, port, _ := strings.Cut(addrs[i], ":")
			os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(common+fmt.Sprintf("dataDir=data\nclientPort=%s\nclientPortAddress=127.0.0.1\n%s\n", port, strings.Join(lines, "\n"))), 0o644)
			if code, out := runCollie(t, dir, "import", "-c", "zoo.cfg", "-zk-data-dir", "zk"); code == 0 || !strings.Contains(out, "-ensemble-token") {
				t.Fatalf("import into an ensemble member without a token: exit %d\n%s", code, out)
			}
			code, out := runCollie(t, dir, "import", "-c", "zoo.cfg", "-zk-data-dir", "zk", "-ensemble-token", "s3cret")
			if code != 0 {
				t.Fatalf("collie import into server %d: exit %d\n%s", i+1, code, out)
			}
			for _, line := range strings.Split(out, "\n") {
				if id, ok := strings.CutPrefix(line, "ensemble   "); ok {
					ensembles[id] = true
				}
			}
			procs[i] = startCollie(t, dir, t.Output(), "server", "-c", "zoo.cfg", "-log-level", "warn")
		}
		if len(ensembles) != 1 {
			t.Fatalf("the members' imports name ensembles %v, not one", ensembles)
		}
		for i := range n {
			procs[i].waitServing(t, addrs[i], "srvr", "Zookeeper version: ")
		}
		lead := awaitLeader(t, addrs, -1)
		for i := range n {
			diffTrees(t, want, wireTree(t, addrs[i], tree.ConfigPath))
		}
		follower := addrs[(lead+1)%n]
		resumeAndWrite(t, writer, follower, zkZxid)
	})
}

// resumeAndWrite resumes ZooKeeper's session of writer on the imported
// server at addr, having seen zkZxid, creates /after through it and checks
// that the create's zxid comes after ZooKeeper's last. It returns the
// resumed connection, which the test's end closes.
func resumeAndWrite(t *testing.T, writer *zkwire.Conn, addr string, zkZxid int64) *zkwire.Conn {
	t.Helper()
	resumed, err := writer.Resume(addr, zkZxid)
	if err != nil || resumed.TimeOut == 0 {
		t.Fatalf("resume ZooKeeper's session %#x on Collie at %s: %v, %v", writer.Session, addr, resumed, err)
	}
	t.Cleanup(func() { resumed.Close() })
	var created proto.Create2Response
	if code, err := resumed.Do(proto.OpCreate2, &proto.CreateRequest{Path: "/after", ACL: tree.OpenACL}, &created); err != nil || code != proto.OK {
		t.Fatalf("create after the import: %v %v", code, err)
	}
	if created.Stat.Czxid <= zkZxid {
		t.Errorf("the first write after the import has zxid 0x%x, not above ZooKeeper's last 0x%x", created.Stat.Czxid, zkZxid)
	}
	return resumed
}
