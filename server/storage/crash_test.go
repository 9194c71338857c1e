package storage_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	if dir == "" {
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
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
	// SIGKILL: no deferred code runs, nothing buffered is flushed.
	mustCheck(t, cmd.Process.Kill())
	// Lines printed before the kill landed were acknowledged too.
	for read() {
	}
	err = cmd.Wait()
	waited = true
	if err == nil {
		t.Fatal("child exited normally")
	}
	t.Logf("killed after %d acknowledged entries (%v)", acked, err)
	return acked
}
