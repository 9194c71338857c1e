package storage_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/server/storage"
)

// openDisk opens the disk of root/wal and root/snap as who, writes an entry
// so the log is in use, and closes it.
func openIdentityDisk(t *testing.T, walDir, snapDir string, who storage.Identity) (storage.Identity, error) {
	t.Helper()
	d, err := storage.OpenDisk(walDir, snapDir, who, 3, 0, nil)
	if err != nil {
		return storage.Identity{}, err
	}
	defer d.Close()
	if _, _, err := d.ReadLog(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.LoadSnapshot(); err != nil {
		t.Fatal(err)
	}
	if err := d.Save(raftpb.HardState{Term: 1, Commit: 1}, []raftpb.Entry{{Index: 1, Term: 1}}); err != nil {
		t.Fatal(err)
	}
	return d.Identity(), nil
}

func wantRefusal(t *testing.T, err error, parts ...string) {
	t.Helper()
	if !errors.Is(err, storage.ErrIdentity) {
		t.Fatalf("got %v, want a refusal matching ErrIdentity", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("the refusal does not say %q: %v", p, err)
		}
	}
}

func TestIdentityIsRecordedAndKept(t *testing.T) {
	root := t.TempDir()
	wal, snap := filepath.Join(root, "wal"), filepath.Join(root, "snap")
	who := storage.Identity{Server: 3, Replicated: true}
	first, err := openIdentityDisk(t, wal, snap, who)
	if err != nil {
		t.Fatal(err)
	}
	if first.Server != 3 || !first.Replicated || len(first.Token) != 32 {
		t.Fatalf("identity %+v", first)
	}
	again, err := openIdentityDisk(t, wal, snap, who)
	if err != nil {
		t.Fatal(err)
	}
	if again.Token != first.Token {
		t.Errorf("the token changed across a restart: %s, then %s", first.Token, again.Token)
	}

	_, err = openIdentityDisk(t, wal, snap, storage.Identity{Server: 2, Replicated: true})
	wantRefusal(t, err, "written by server 3", "this is server 2")
	_, err = openIdentityDisk(t, wal, snap, storage.Identity{Server: 3})
	wantRefusal(t, err, "a member of an ensemble", "a standalone server")
}

func TestIdentityRefusesMixedHalves(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	who := storage.Identity{Server: 1}
	for _, root := range []string{a, b} {
		if _, err := openIdentityDisk(t, filepath.Join(root, "wal"), filepath.Join(root, "snap"), who); err != nil {
			t.Fatal(err)
		}
	}
	_, err := openIdentityDisk(t, filepath.Join(a, "wal"), filepath.Join(b, "snap"), who)
	wantRefusal(t, err, "different data directories")

	// A log moved whole to a new place is the same server's.
	moved := filepath.Join(t.TempDir(), "wal")
	if err := os.Rename(filepath.Join(a, "wal"), moved); err != nil {
		t.Fatal(err)
	}
	_, err = openIdentityDisk(t, filepath.Join(a, "wal"), filepath.Join(a, "snap"), who)
	wantRefusal(t, err, "no log in", "is gone", "if it was moved")
	id, err := openIdentityDisk(t, moved, filepath.Join(a, "snap"), who)
	if err != nil {
		t.Fatalf("the moved log: %v", err)
	}
	if id.Log != moved {
		t.Errorf("the identity file still places the log at %s, not %s", id.Log, moved)
	}
}

func TestIdentityOfAnUsedLogWithoutSnapshotDirectory(t *testing.T) {
	root := t.TempDir()
	wal, snap := filepath.Join(root, "wal"), filepath.Join(root, "snap")
	who := storage.Identity{Server: 1}
	if _, err := openIdentityDisk(t, wal, snap, who); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(snap); err != nil {
		t.Fatal(err)
	}
	_, err := openIdentityDisk(t, wal, snap, who)
	wantRefusal(t, err, "has no identity file")
}

// A crash between creating the log and writing the identity file leaves
// a log with nothing in it: the next start finishes the job.
func TestIdentityAfterACrashDuringCreation(t *testing.T) {
	root := t.TempDir()
	wal, snap := filepath.Join(root, "wal"), filepath.Join(root, "snap")
	who := storage.Identity{Server: 1}
	d, err := storage.OpenDisk(wal, snap, who, 3, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	token := d.Identity().Token
	d.Close()
	if err := os.Remove(filepath.Join(snap, storage.IdentityFile)); err != nil {
		t.Fatal(err)
	}
	id, err := openIdentityDisk(t, wal, snap, who)
	if err != nil {
		t.Fatal(err)
	}
	if id.Token != token {
		t.Errorf("token %s, want the log's %s", id.Token, token)
	}
}

// A directory written before identities were recorded has a log without
// metadata and no identity file: it starts, and is held to its identity
// from then on.
func TestIdentityOfALegacyDirectory(t *testing.T) {
	root := t.TempDir()
	wal, snap := filepath.Join(root, "wal"), filepath.Join(root, "snap")
	w, err := storage.Create(nil, wal, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	id, err := openIdentityDisk(t, wal, snap, storage.Identity{Server: 2, Replicated: true})
	if err != nil {
		t.Fatal(err)
	}
	if id.Token != "" || id.Server != 2 || !id.Replicated {
		t.Errorf("identity %+v", id)
	}
	b, err := os.ReadFile(filepath.Join(snap, storage.IdentityFile))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk storage.Identity
	if err := json.Unmarshal(b, &onDisk); err != nil || onDisk.Server != 2 {
		t.Fatalf("identity file %s: %v", b, err)
	}
	_, err = openIdentityDisk(t, wal, snap, storage.Identity{Server: 3, Replicated: true})
	wantRefusal(t, err, "written by server 2")
}
