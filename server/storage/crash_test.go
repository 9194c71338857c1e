package storage_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/server/storage"
)

// crashDirEnv tells TestCrashChild where to write its WAL.
const crashDirEnv = "COLLIE_STORAGE_CRASH_DIR"

// TestCrashChild is the process TestCrashKeepsAcknowledgedEntries kills. It
// appends entries in batches of varying size, with snapshot records and
// purges along the way, and prints the index of every entry on stdout once
// the Save that wrote it has returned.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" || strings.HasSuffix(dir, "disk") {
		t.Skip("run as a child of TestCrashKeepsAcknowledgedEntries")
	}
	storage.SetSegmentBytes(t, 16<<10)
	w, err := storage.Create(nil, dir, []byte("crash"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var out []byte
	for next := uint64(1); next < 1<<20; {
		n := 1 + next%9
		ents := entries(next, next+n-1, 1)
		if err := w.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: next + n - 1}, ents); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		out = out[:0]
		for i := next; i < next+n; i++ {
			out = strconv.AppendUint(out, i, 10)
			out = append(out, '\n')
		}
		// Exits on a broken pipe if the parent is gone.
		os.Stdout.Write(out)
		next += n

		if next%100 < n {
			snap := storage.WALSnapshot{Index: next - 1, Term: 1}
			if err := w.SaveSnapshot(snap); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			if err := w.PurgeTo(snap.Index - min(snap.Index, 300)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
		}
	}
	os.Exit(3)
}

// TestCrashKeepsAcknowledgedEntries kills a process that is appending to a
// WAL, at points chosen by how many entries it has acknowledged, and checks
// that the log it leaves behind holds every acknowledged entry, in order,
// and takes appends again.
func TestCrashKeepsAcknowledgedEntries(t *testing.T) {
	if os.Getenv(crashDirEnv) != "" {
		t.Skip("in the child")
	}
	for _, acks := range []int{1, 37, 450, 2000} {
		t.Run(fmt.Sprintf("after %d", acks), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "wal")
			acked := runAndKill(t, dir, acks)

			marks, err := storage.ValidSnapshotEntries(dir)
			mustCheck(t, err)
			if len(marks) == 0 {
				t.Fatal("no usable snapshot record")
			}
			// Every usable snapshot record can be replayed from, and the log
			// takes appends after the crash.
			var last uint64
			for _, from := range []storage.WALSnapshot{marks[0], marks[len(marks)-1]} {
				w, meta, st, ents := mustRead(t, dir, from)
				if string(meta) != "crash" {
					t.Errorf("metadata %q", meta)
				}
				for i, e := range ents {
					if want := from.Index + 1 + uint64(i); e.Index != want || !bytes.Equal(e.Data, entryData(want, 1)) {
						t.Fatalf("from %d: entry %d is %d %q", from.Index, want, e.Index, e.Data)
					}
				}
				last = from.Index + uint64(len(ents))
				if last < acked {
					t.Fatalf("from %d: log ends at %d, but %d was acknowledged", from.Index, last, acked)
				}
				if st.Commit < acked {
					t.Errorf("from %d: commit %d, but %d was acknowledged", from.Index, st.Commit, acked)
				}
				last++
				mustSave(t, w, raftpb.HardState{Term: 1, Vote: 1, Commit: last}, entries(last, last, 1))
				mustClose(t, w)
			}
			newest := marks[len(marks)-1]
			w, _, _, ents := mustRead(t, dir, newest)
			checkEntries(t, ents, entries(newest.Index+1, last, 1))
			mustClose(t, w)
		})
	}
}

// runAndKill starts TestCrashChild writing to dir, kills it with SIGKILL
// once it has acknowledged acks entries, and returns the last index it
// acknowledged.
func runAndKill(t *testing.T, dir string, acks int) uint64 {
	t.Helper()
	return runChild(t, "TestCrashChild", []string{crashDirEnv + "=" + dir}, acks)
}

// runChild starts the test named child with env added to its environment,
// reads the indexes it acknowledges from its stdout, and kills it with
// SIGKILL once it has acknowledged acks entries; with acks < 0, it waits for
// the child to kill itself. It returns the last index acknowledged.
func runChild(t *testing.T, child string, env []string, acks int) uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	mustCheck(t, err)
	mustCheck(t, cmd.Start())
	waited := false
	t.Cleanup(func() {
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})

	sc := bufio.NewScanner(stdout)
	var acked uint64
	read := func() bool {
		if !sc.Scan() {
			return false
		}
		i, err := strconv.ParseUint(sc.Text(), 10, 64)
		if err != nil || i != acked+1 {
			t.Fatalf("child printed %q after %d", sc.Text(), acked)
		}
		acked = i
		return true
	}
	for range acks {
		if !read() {
			cmd.Wait()
			waited = true
			t.Fatalf("child stopped after acknowledging %d entries: %s", acked, stderr.Bytes())
		}
	}
	if acks >= 0 {
		// SIGKILL: no deferred code runs, nothing buffered is flushed.
		mustCheck(t, cmd.Process.Kill())
	}
	// Lines printed before the kill landed were acknowledged too.
	for read() {
	}
	err = cmd.Wait()
	waited = true
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, not killed: %s", err, stderr.Bytes())
	}
	t.Logf("killed after %d acknowledged entries (%v)", acked, err)
	return acked
}

// crashAtEnv makes TestCrashDiskChild kill itself in the middle of a file
// operation: "op:suffix:n" kills it before the nth operation op (see
// storage.FileHook) on a file whose path ends with suffix, and
// "op:suffix:n:after" right after it, before the next file operation.
const crashAtEnv = "COLLIE_STORAGE_CRASH_AT"

// TestCrashDiskChild is the process TestCrashDuringSnapshotsAndCuts
// kills. Through a Disk, as the replication node does, it appends entries
// in batches of varying size to a WAL of small segments, prints the index
// of every entry once the Save that wrote it has returned, and every 40
// entries writes a snapshot of the state so far, records it and purges.
func TestCrashDiskChild(t *testing.T) {
	root := os.Getenv(crashDirEnv)
	if root == "" || !strings.HasSuffix(root, "disk") {
		t.Skip("run as a child of TestCrashDuringSnapshotsAndCuts")
	}
	storage.SetSegmentBytes(t, 16<<10)
	if at := os.Getenv(crashAtEnv); at != "" {
		storage.FileHook(t, crashHook(at))
	}
	d, err := storage.OpenDisk(filepath.Join(root, "wal"), filepath.Join(root, "snap"), storage.Identity{Server: 1}, 2, 0, nil)
	if err == nil {
		_, _, err = d.ReadLog()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var out []byte
	for next := uint64(1); next < 20000; {
		n := 1 + next%9
		if err := d.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: next + n - 1}, entries(next, next+n-1, 1)); err != nil {
			fail(err)
		}
		out = out[:0]
		for i := next; i < next+n; i++ {
			out = strconv.AppendUint(out, i, 10)
			out = append(out, '\n')
		}
		os.Stdout.Write(out)
		next += n

		if next%40 < n {
			meta := raftpb.SnapshotMetadata{Index: next - 1, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{1}}}
			data := crashState(meta.Index)
			if _, err := d.WriteSnapshot(meta, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
				fail(err)
			}
			if err := d.MarkSnapshot(meta); err != nil {
				fail(err)
			}
			if err := d.Compact(meta.Index); err != nil {
				fail(err)
			}
		}
	}
	// The crash point was never reached.
	os.Exit(3)
}

// crashHook returns the FileHook that kills the process where at says.
func crashHook(at string) func(op, path string) error {
	f := strings.Split(at, ":")
	n, err := strconv.Atoi(f[2])
	if err != nil || len(f) < 3 {
		panic(fmt.Sprintf("%s=%q", crashAtEnv, at))
	}
	after := len(f) > 3 && f[3] == "after"
	var mu sync.Mutex
	seen, armed := 0, false
	return func(op, path string) error {
		mu.Lock()
		defer mu.Unlock()
		if armed {
			die()
		}
		if op == f[0] && strings.HasSuffix(path, f[1]) {
			if seen++; seen == n {
				if !after {
					die()
				}
				armed = true
			}
		}
		return nil
	}
}

func die() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// crashState is the state the child's snapshot at index holds: a checksum
// of every entry through index.
func crashState(index uint64) []byte {
	var sum uint32
	for i := uint64(1); i <= index; i++ {
		sum = crc32.Update(sum, crc32.IEEETable, entryData(i, 1))
	}
	return fmt.Appendf(nil, "through %d: %08x", index, sum)
}

// TestCrashDuringSnapshotsAndCuts kills a process appending through a Disk,
// taking snapshots and purging, inside each step of a snapshot write and
// of a segment cut, and at random points, and checks that the directory
// opens, loads a snapshot that holds the state it names, holds every
// acknowledged entry after it, and takes appends.
func TestCrashDuringSnapshotsAndCuts(t *testing.T) {
	if os.Getenv(crashDirEnv) != "" {
		t.Skip("in the child")
	}
	type run struct {
		name string
		at   string // crashAtEnv; empty: killed from here
		acks int
	}
	runs := []run{
		// A killed process leaves what it wrote in the kernel's cache, so
		// the points that matter are between the steps that change which
		// files there are.
		{"snapshot written, before its fsync", "fsync:.snap.tmp:2", -1},
		{"snapshot synced, before its rename", "rename:.snap:3", -1},
		{"snapshot renamed, before the directory's fsync", "rename:.snap:2:after", -1},
		{"snapshot durable, before its WAL record", "fsync:/snap:3:after", -1},
		{"snapshot recorded, before the purge", "remove:.snap:1", -1},
		{"segments half purged", "remove:.wal:2", -1},
		{"full segment truncated, before its fsync", "fsync:.wal.tmp:2", -1},
		{"spare renamed to the next segment, before its header", "rename:.wal.tmp:2:after", -1},
		{"next segment synced, before its rename", "rename:.wal:2", -1},
		{"next segment renamed, before the directory's fsync", "rename:.wal:3:after", -1},
	}
	r := rand.New(rand.NewPCG(15, 9))
	for range 3 {
		acks := 1 + r.IntN(1500)
		runs = append(runs, run{fmt.Sprintf("after %d acknowledged entries", acks), "", acks})
	}
	for _, tc := range runs {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "disk")
			env := []string{crashDirEnv + "=" + root}
			if tc.at != "" {
				env = append(env, crashAtEnv+"="+tc.at)
			}
			acked := runChild(t, "TestCrashDiskChild", env, tc.acks)
			walDir, snapDir := filepath.Join(root, "wal"), filepath.Join(root, "snap")

			d, l := mustOpenDisk(t, walDir, snapDir)
			if want := crashState(l.snap.Index); l.snap.Index > 0 && !bytes.Equal(l.snapData, want) {
				t.Fatalf("snapshot at %d holds %q, want %q", l.snap.Index, l.snapData, want)
			}
			last := l.snap.Index + uint64(len(l.ents))
			checkEntries(t, l.ents, entries(l.snap.Index+1, last, 1))
			if last < acked || l.st.Commit < acked {
				t.Fatalf("log ends at %d with commit %d, but %d was acknowledged", last, l.st.Commit, acked)
			}
			next := entries(last+1, last+1, 1)
			mustCheck(t, d.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: last + 1}, next))
			mustCheck(t, d.Close())
			_, l = mustOpenDisk(t, walDir, snapDir)
			checkEntries(t, l.ents[len(l.ents)-1:], next)
		})
	}
}
