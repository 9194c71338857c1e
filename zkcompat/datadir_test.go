package zkcompat

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// standaloneDir is a working directory with a zoo.cfg for one standalone
// server, whose data lands in dir/data.
type standaloneDir struct {
	dir, addr string
	port      int
	extra     []string // zoo.cfg lines after the usual ones
}

func newStandaloneDir(t *testing.T) *standaloneDir {
	t.Helper()
	d := &standaloneDir{dir: t.TempDir(), port: freeLocalPort(t)}
	d.addr = "127.0.0.1:" + strconv.Itoa(d.port)
	d.write(t)
	return d
}

// write (re)writes zoo.cfg with the extra lines.
func (d *standaloneDir) write(t *testing.T, extra ...string) {
	t.Helper()
	d.extra = extra
	cfg := fmt.Sprintf("tickTime=200\ndataDir=data\nclientPort=%d\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.enableServer=false\npreAllocSize=256\n%s\n",
		d.port, strings.Join(extra, "\n"))
	if err := os.WriteFile(filepath.Join(d.dir, "zoo.cfg"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// serve starts the server, waits until it serves, and returns it.
func (d *standaloneDir) serve(t *testing.T) *serverProcess {
	t.Helper()
	p := startCollie(t, d.dir, t.Output(), "server", "-c", "zoo.cfg")
	p.waitServing(t, d.addr, "ruok", "imok")
	return p
}

// refused runs the server, which must exit non-zero at once, and returns
// what it printed.
func (d *standaloneDir) refused(t *testing.T) string {
	t.Helper()
	code, out := runCollie(t, d.dir, "server", "-c", "zoo.cfg")
	if code == 0 {
		t.Fatalf("the server started and exited 0; its output:\n%s", out)
	}
	return out
}

// writeNode creates path with data on the server at addr.
func writeNode(t *testing.T, addr, path, data string) {
	t.Helper()
	s := connectSession(t, addr, 4*time.Second)
	defer s.Close()
	if _, err := s.Create(path, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

// readNode returns the data of path on the server at addr.
func readNode(t *testing.T, addr, path string) string {
	t.Helper()
	s := connectSession(t, addr, 4*time.Second)
	defer s.Close()
	b, _, err := s.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	return string(b)
}

func wantAll(t *testing.T, out string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(out, p) {
			t.Errorf("the refusal does not say %q; it says:\n%s", p, out)
		}
	}
}

// TestDataDirectoryMistakes makes the operator's mistakes with a data
// directory on a real server process, and checks that the server refuses
// to start, says why and what to do, and that undoing the mistake brings
// back every write; and that the legitimate starts around them still work.
func TestDataDirectoryMistakes(t *testing.T) {
	t.Run("moved dataLogDir", func(t *testing.T) {
		d := newStandaloneDir(t)
		p := d.serve(t)
		writeNode(t, d.addr, "/precious", "keep me")
		p.stop(t)

		// The log on its own disk, pointed at but not moved there.
		d.write(t, "dataLogDir=txnlog")
		out := d.refused(t)
		wantAll(t, out, "no log in", filepath.Join("txnlog", "wal"), "dataLogDir", filepath.Join("data", "wal"))
		if _, err := os.Stat(filepath.Join(d.dir, "txnlog", "wal")); err == nil {
			t.Errorf("the refused start created a log in the new dataLogDir")
		}

		// Moving the log there too is what the operator meant.
		if err := os.Rename(filepath.Join(d.dir, "data", "wal"), filepath.Join(d.dir, "txnlog", "wal")); err != nil {
			t.Fatal(err)
		}
		p = d.serve(t)
		if got := readNode(t, d.addr, "/precious"); got != "keep me" {
			t.Errorf("after moving the log: /precious = %q", got)
		}
		p.stop(t)

		// And going back without the log is refused again.
		d.write(t)
		wantAll(t, d.refused(t), "no log in", filepath.Join("txnlog", "wal"))
	})

	t.Run("another server's myid", func(t *testing.T) {
		e := startProcessEnsemble(t, 3, 100*time.Millisecond)
		writeNode(t, e.addrs[0], "/precious", "x")
		for _, p := range e.procs {
			p.stop(t)
		}
		// Server 3's directory, told it is server 2.
		if err := os.WriteFile(filepath.Join(e.dirs[2], "data", "myid"), []byte("2\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out := runCollie(t, e.dirs[2], "server", "-c", "zoo.cfg")
		if code == 0 {
			t.Fatalf("the server started and exited 0; its output:\n%s", out)
		}
		wantAll(t, out, "written by server 3", "this is server 2")
	})

	t.Run("halves of two servers", func(t *testing.T) {
		a, b := newStandaloneDir(t), newStandaloneDir(t)
		for _, d := range []*standaloneDir{a, b} {
			d.write(t, "dataLogDir=txnlog")
			d.serve(t).stop(t)
		}
		// b's snapshots with a's log.
		if err := os.RemoveAll(filepath.Join(b.dir, "txnlog")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(a.dir, "txnlog"), filepath.Join(b.dir, "txnlog")); err != nil {
			t.Fatal(err)
		}
		wantAll(t, b.refused(t), "different data directories")
	})

	t.Run("standalone data under an ensemble configuration", func(t *testing.T) {
		d := newStandaloneDir(t)
		d.serve(t).stop(t)
		if err := os.WriteFile(filepath.Join(d.dir, "data", "myid"), []byte("1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		d.write(t,
			fmt.Sprintf("server.1=127.0.0.1:%d:%d", freeLocalPort(t), freeLocalPort(t)),
			fmt.Sprintf("server.2=127.0.0.1:%d:%d", freeLocalPort(t), freeLocalPort(t)),
			fmt.Sprintf("server.3=127.0.0.1:%d:%d", freeLocalPort(t), freeLocalPort(t)))
		wantAll(t, d.refused(t), "a standalone server", "a member of an ensemble")
	})

	t.Run("log directory emptied", func(t *testing.T) {
		d := newStandaloneDir(t)
		p := d.serve(t)
		writeNode(t, d.addr, "/precious", "x")
		p.stop(t)
		if err := os.RemoveAll(filepath.Join(d.dir, "data", "wal")); err != nil {
			t.Fatal(err)
		}
		wantAll(t, d.refused(t), "no log in", "never start it empty")
	})

	t.Run("restart and a start without snapshots yet", func(t *testing.T) {
		d := newStandaloneDir(t)
		p := d.serve(t)
		writeNode(t, d.addr, "/a", "1")
		p.stop(t)
		p = d.serve(t)
		writeNode(t, d.addr, "/b", "2")
		p.kill(t)
		p = d.serve(t)
		if got := readNode(t, d.addr, "/b"); got != "2" {
			t.Errorf("/b = %q", got)
		}
		p.stop(t)
	})
}
