package zkcompat

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

	t.Run("a directory another server holds", func(t *testing.T) {
		d := newStandaloneDir(t)
		p := d.serve(t)
		writeNode(t, d.addr, "/precious", "x")
		// A second server on the same data, on another port, and one that
		// shares only the snapshots, its log elsewhere.
		second := &standaloneDir{dir: d.dir, port: freeLocalPort(t)}
		second.write(t)
		wantAll(t, second.refused(t), "in use", "held by another process")
		second.write(t, "dataLogDir=elsewhere")
		wantAll(t, second.refused(t), "no log in")
		if got := readNode(t, d.addr, "/precious"); got != "x" {
			t.Errorf("the first server, after the refusals: /precious = %q", got)
		}
		p.stop(t)
		d.write(t)
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

// appendConfig adds lines to the zoo.cfg in dir.
func appendConfig(t *testing.T, dir string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "zoo.cfg"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
}

// TestEditedServerLines: adding an observer's line to every zoo.cfg and
// restarting the servers one at a time adds the observer, which catches up
// and serves; adding a participant's line instead is refused by each server
// that has data, naming both memberships, and the ensemble keeps serving
// from the others.
func TestEditedServerLines(t *testing.T) {
	e := startProcessEnsemble(t, 3, 100*time.Millisecond)
	writeNode(t, e.addrs[0], "/before", "1")

	// A participant added to one server's configuration.
	participant := fmt.Sprintf("server.4=127.0.0.1:%d:%d", freeLocalPort(t), freeLocalPort(t))
	e.procs[2].stop(t)
	cfg3, err := os.ReadFile(filepath.Join(e.dirs[2], "zoo.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	appendConfig(t, e.dirs[2], participant)
	code, out := runCollie(t, e.dirs[2], "server", "-c", "zoo.cfg")
	if code == 0 {
		t.Fatalf("server 3 started with a participant added to its configuration; its output:\n%s", out)
	}
	wantAll(t, out, "lists voters 1 2 3 4", "records voters 1 2 3", "restore the server lines")
	writeNode(t, e.addrs[0], "/meanwhile", "2")
	if err := os.WriteFile(filepath.Join(e.dirs[2], "zoo.cfg"), cfg3, 0o600); err != nil {
		t.Fatal(err)
	}
	e.restart(t, 2)

	// An observer added everywhere, servers restarted one at a time.
	obsDir := filepath.Join(t.TempDir(), "s4")
	if err := os.MkdirAll(filepath.Join(obsDir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(obsDir, "data", "myid"), []byte("4"), 0o644); err != nil {
		t.Fatal(err)
	}
	observer := fmt.Sprintf("server.4=127.0.0.1:%d:%d:observer", freeLocalPort(t), freeLocalPort(t))
	for i := range 3 {
		e.procs[i].stop(t)
		appendConfig(t, e.dirs[i], observer)
		e.restart(t, i)
	}
	base, err := os.ReadFile(filepath.Join(e.dirs[0], "zoo.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	obsPort := freeLocalPort(t)
	obsCfg := strings.Replace(string(base), "clientPort="+strings.Split(e.addrs[0], ":")[1], fmt.Sprintf("clientPort=%d", obsPort), 1)
	if err := os.WriteFile(filepath.Join(obsDir, "zoo.cfg"), []byte(obsCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	obsAddr := fmt.Sprintf("127.0.0.1:%d", obsPort)
	obs := startCollie(t, obsDir, t.Output(), "server", "-c", "zoo.cfg", "-log-level", "warn")
	obs.waitServing(t, obsAddr, "srvr", "Zookeeper version: ")
	eventually(t, "the observer to say it is one", func() bool {
		out, err := fourLetterWord(obsAddr, "srvr")
		return err == nil && strings.Contains(out, "Mode: observer")
	})
	writeNode(t, e.addrs[1], "/after", "3")
	s := connectSession(t, obsAddr, 4*time.Second)
	defer s.Close()
	if _, err := s.Sync("/after"); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/before": "1", "/meanwhile": "2", "/after": "3"} {
		if got, _, err := s.Get(path); err != nil || string(got) != want {
			t.Errorf("%s on the observer: %q, %v; want %q", path, got, err, want)
		}
	}
}

// TestWipedVoterIsRefused: a voter whose data directory is emptied (a
// replaced disk) and that restarts under the same id, while another voter
// is stopped, would otherwise be taken for a new member: with the one
// remaining voter it would make a majority that lacks every write it had
// acknowledged. It must stop, saying its data is lost, whichever voter is
// left; and every acknowledged write must be there once the stopped voter
// is back.
func TestWipedVoterIsRefused(t *testing.T) {
	for _, stopLeader := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopped the leader %t", stopLeader), func(t *testing.T) {
			e := startProcessEnsemble(t, 3, 100*time.Millisecond)
			lead := awaitLeader(t, e.addrs, -1)
			acked := map[string]string{}
			for i := range 20 {
				path := fmt.Sprintf("/acked-%d", i)
				writeNode(t, e.addrs[i%3], path, strconv.Itoa(i))
				acked[path] = strconv.Itoa(i)
			}
			eventually(t, "every voter on record as holding the log", func() bool {
				return mntrValue(t, e.addrs[lead], "collie_members_with_log") == 3
			})

			// The wiped voter is one that is not the leader; the stopped
			// one is the leader or the third voter.
			wiped := (lead + 1) % 3
			stopped := (lead + 2) % 3
			if stopLeader {
				stopped = lead
			}
			e.procs[stopped].stop(t)
			e.procs[wiped].stop(t)
			data := filepath.Join(e.dirs[wiped], "data")
			myid, err := os.ReadFile(filepath.Join(data, "myid"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(data); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(data, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(data, "myid"), myid, 0o644); err != nil {
				t.Fatal(err)
			}
			code, out := runCollie(t, e.dirs[wiped], "server", "-c", "zoo.cfg", "-log-level", "warn")
			if code == 0 {
				t.Fatalf("the wiped voter ran and exited 0; its output:\n%s", out)
			}
			wantAll(t, out, "has held this ensemble's log", "data directory was lost", "A member that lost its data")

			// Nothing was lost: back with the stopped voter, every
			// acknowledged write is there.
			e.restart(t, stopped)
			remaining := 3 - wiped - stopped
			s := connectSession(t, e.addrs[remaining], 4*time.Second)
			defer s.Close()
			if _, err := s.Sync("/"); err != nil {
				t.Fatal(err)
			}
			for path, want := range acked {
				if got, _, err := s.Get(path); err != nil || string(got) != want {
					t.Errorf("%s: %q, %v; want %q", path, got, err, want)
				}
			}
			if stopLeader {
				rebuildWiped(t, e, wiped, acked)
			}
		})
	}
}

// rebuildWiped follows the README's procedure for the refused voter
// wiped: writes go on without it; every server is stopped; collie datadir
// rebuild makes its data from the other two (refusing at first, since its
// refused start left an empty state behind); all three start. The rebuilt
// voter serves every acknowledged write, and the ensemble keeps serving
// with any one server stopped.
func rebuildWiped(t *testing.T, e *processEnsemble, wiped int, acked map[string]string) {
	t.Helper()
	for i := range 3 {
		if i != wiped {
			path := fmt.Sprintf("/meanwhile-%d", i)
			writeNode(t, e.addrs[i], path, "m")
			acked[path] = "m"
		}
	}
	var from []string
	for i := range 3 {
		if i != wiped {
			e.procs[i].stop(t)
			from = append(from, "-from", filepath.Join(e.dirs[i], "data"))
		}
	}
	args := append([]string{"datadir", "rebuild", "-c", "zoo.cfg"}, from...)
	code, out := runCollie(t, e.dirs[wiped], args...)
	if code == 0 {
		t.Fatalf("rebuild into the directory the refused start wrote to succeeded:\n%s", out)
	}
	wantAll(t, out, "the target holds:", "an empty state", "not empty", "-force-empty-target")
	code, out = runCollie(t, e.dirs[wiped], append(args, "-force-empty-target")...)
	if code != 0 {
		t.Fatalf("rebuild: exit %d:\n%s", code, out)
	}
	wantAll(t, out, "removed it", "copying from server", "no vote", fmt.Sprintf("rebuilt server %d", wiped+1))

	for i := range 3 {
		e.start(t, i)
	}
	for i := range 3 {
		e.procs[i].waitServing(t, e.addrs[i], "srvr", "Zookeeper version: ")
	}
	s := connectSession(t, e.addrs[wiped], 4*time.Second)
	if _, err := s.Sync("/"); err != nil {
		t.Fatal(err)
	}
	for path, want := range acked {
		if got, _, err := s.Get(path); err != nil || string(got) != want {
			t.Errorf("%s on the rebuilt voter: %q, %v; want %q", path, got, err, want)
		}
	}
	s.Close()

	for down := range 3 {
		e.procs[down].stop(t)
		w, r := (down+1)%3, (down+2)%3
		path := fmt.Sprintf("/without-%d", down+1)
		writeNode(t, e.addrs[w], path, "w")
		s := connectSession(t, e.addrs[r], 4*time.Second)
		if _, err := s.Sync(path); err != nil {
			t.Fatal(err)
		}
		if got, _, err := s.Get(path); err != nil || string(got) != "w" {
			t.Errorf("with server %d stopped, %s through server %d: %q, %v", down+1, path, r+1, got, err)
		}
		s.Close()
		e.restart(t, down)
	}
}

// ensembleOf prepares n servers whose zoo.cfg server lines are made by
// lines(self) and whose other lines are extra(self), without starting them.
func ensembleOf(t *testing.T, n int, lines func(self int, peer, election []int) []string, extra func(self int) []string) *processEnsemble {
	t.Helper()
	root := t.TempDir()
	e := &processEnsemble{addrs: make([]string, n), dirs: make([]string, n), procs: make([]*serverProcess, n)}
	peer, election := make([]int, n), make([]int, n)
	for i := range n {
		e.addrs[i] = "127.0.0.1:" + strconv.Itoa(freeLocalPort(t))
		peer[i], election[i] = freeLocalPort(t), freeLocalPort(t)
	}
	for i := range n {
		e.dirs[i] = filepath.Join(root, fmt.Sprintf("s%d", i+1))
		if err := os.MkdirAll(filepath.Join(e.dirs[i], "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.dirs[i], "data", "myid"), []byte(strconv.Itoa(i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		_, port, _ := strings.Cut(e.addrs[i], ":")
		cfg := fmt.Sprintf("tickTime=100\ndataDir=data\nclientPort=%s\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.enableServer=false\npreAllocSize=1024\n%s\n%s\n",
			port, strings.Join(lines(i, peer, election), "\n"), strings.Join(extra(i), "\n"))
		if err := os.WriteFile(filepath.Join(e.dirs[i], "zoo.cfg"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// TestEnsembleIdentityIgnoresSpelling: servers whose zoo.cfg files spell
// the members differently (0.0.0.0 on a server's own line, as container
// set-ups write it, a host name for the others, the lines in another
// order) form one ensemble, as ZooKeeper's do; a server whose
// extendedTypesEnabled differs from the others' is refused, the refusal
// naming the key, while the others serve; and a server whose data is
// another ensemble's is refused by this one's.
func TestEnsembleIdentityIgnoresSpelling(t *testing.T) {
	e := ensembleOf(t, 3, func(self int, peer, election []int) []string {
		var out []string
		for i := range 3 {
			host := "localhost"
			switch {
			case i == self:
				host = "0.0.0.0"
			case i == 0:
				host = "127.0.0.1"
			}
			out = append(out, fmt.Sprintf("server.%d=%s:%d:%d", i+1, host, peer[i], election[i]))
		}
		if self == 1 {
			slices.Reverse(out)
		}
		return out
	}, func(self int) []string {
		if self == 2 {
			return []string{"extendedTypesEnabled=true"}
		}
		return nil
	})
	var odd syncBuffer
	for i := range 2 {
		e.start(t, i)
	}
	e.procs[2] = startCollie(t, e.dirs[2], &odd, "server", "-c", "zoo.cfg", "-log-level", "warn")
	for i := range 2 {
		e.procs[i].waitServing(t, e.addrs[i], "srvr", "Zookeeper version: ")
	}
	writeNode(t, e.addrs[0], "/formed", "yes")
	eventually(t, "the odd server to be refused for its setting", func() bool {
		return strings.Contains(odd.String(), "extendedTypesEnabled is false on server") &&
			strings.Contains(odd.String(), "every server of an ensemble must set it alike")
	})
	if out, err := fourLetterWord(e.addrs[2], "srvr"); err == nil && strings.HasPrefix(out, "Zookeeper version: ") {
		t.Errorf("the server with another extendedTypesEnabled serves:\n%s", out)
	}

	// The odd server, set right, joins.
	e.procs[2].stop(t)
	cfg, err := os.ReadFile(filepath.Join(e.dirs[2], "zoo.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dirs[2], "zoo.cfg"), []byte(strings.Replace(string(cfg), "extendedTypesEnabled=true", "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	e.restart(t, 2)
	s := connectSession(t, e.addrs[2], 4*time.Second)
	if _, err := s.Sync("/formed"); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.Get("/formed"); err != nil || string(got) != "yes" {
		t.Fatalf("/formed through server 3: %q, %v", got, err)
	}
	s.Close()

	// Server 3's directory replaced by a server 3 of another ensemble.
	other := startProcessEnsemble(t, 3, 100*time.Millisecond)
	writeNode(t, other.addrs[0], "/other", "x")
	for _, p := range other.procs {
		p.stop(t)
	}
	e.procs[2].stop(t)
	if err := os.RemoveAll(filepath.Join(e.dirs[2], "data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(other.dirs[2], "data"), filepath.Join(e.dirs[2], "data")); err != nil {
		t.Fatal(err)
	}
	var stray syncBuffer
	e.procs[2] = startCollie(t, e.dirs[2], &stray, "server", "-c", "zoo.cfg", "-log-level", "warn")
	eventually(t, "the stray server to be refused as another ensemble's", func() bool {
		return strings.Contains(stray.String(), "holds the data of another ensemble")
	})
	writeNode(t, e.addrs[0], "/still", "serving")
}

// TestLateFirstStartOfAVoter: a voter started for the first time after the
// others formed the ensemble (as a StatefulSet starts its pods one by one)
// is new, not a voter that lost its data: it joins and serves, and is on
// record as holding the log from then on.
func TestLateFirstStartOfAVoter(t *testing.T) {
	e := ensembleOf(t, 3, func(self int, peer, election []int) []string {
		var out []string
		for i := range 3 {
			out = append(out, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i+1, peer[i], election[i]))
		}
		return out
	}, func(int) []string { return nil })
	for i := range 2 {
		e.start(t, i)
	}
	for i := range 2 {
		e.procs[i].waitServing(t, e.addrs[i], "srvr", "Zookeeper version: ")
	}
	writeNode(t, e.addrs[0], "/early", "1")
	lead := awaitLeader(t, e.addrs[:2], -1)
	eventually(t, "the first two voters on record", func() bool {
		return mntrValue(t, e.addrs[lead], "collie_members_with_log") == 2
	})
	e.restart(t, 2)
	s := connectSession(t, e.addrs[2], 4*time.Second)
	defer s.Close()
	if _, err := s.Sync("/early"); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.Get("/early"); err != nil || string(got) != "1" {
		t.Fatalf("/early through the late voter: %q, %v", got, err)
	}
	eventually(t, "the late voter on record", func() bool {
		return mntrValue(t, e.addrs[lead], "collie_members_with_log") == 3
	})
}
