package datadir_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/datadir"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/storage"
	"github.com/collie-io/collie/server/tree"
)

// memberLogEntries returns entries from..to of term, each a state machine
// entry naming its index.
func memberLogEntries(from, to, term uint64) []raftpb.Entry {
	var ents []raftpb.Entry
	for i := from; i <= to; i++ {
		ents = append(ents, raftpb.Entry{Index: i, Term: term, Data: fsm.MemberLogEntry(i*10 + term).Marshal()})
	}
	return ents
}

// newDisk makes a standalone server's data directory in dir and returns
// it open for appending.
func newDisk(t *testing.T, dir string) *storage.Disk {
	t.Helper()
	d, err := storage.OpenDisk(filepath.Join(dir, "wal"), filepath.Join(dir, "snap"), storage.Identity{Server: 1}, 3, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.ReadLog(); err != nil {
		t.Fatal(err)
	}
	return d
}

func mustOpen(t *testing.T, dir string) *datadir.Dir {
	t.Helper()
	d, err := datadir.Open(dir, "", fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestDumpEntriesShowsTheWritesThatStand: where a new leader replaced
// uncommitted entries, the dump has the replacing writes only, as a
// server reads the log.
func TestDumpEntriesShowsTheWritesThatStand(t *testing.T) {
	dir := t.TempDir()
	disk := newDisk(t, dir)
	if err := disk.Save(raftpb.HardState{Term: 1, Commit: 3}, memberLogEntries(1, 6, 1)); err != nil {
		t.Fatal(err)
	}
	if err := disk.Save(raftpb.HardState{Term: 2, Commit: 3}, memberLogEntries(4, 4, 2)); err != nil {
		t.Fatal(err)
	}
	if err := disk.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := mustOpen(t, dir).DumpEntries(&out, true); err != nil {
		t.Fatal(err)
	}
	var got []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var e datadir.EntryJSON
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Entry == nil || e.Entry.Type != "member_log" {
			t.Fatalf("entry %s", sc.Text())
		}
		got = append(got, fmt.Sprintf("%d/%d/%d", e.Index, e.Term, e.Entry.Member))
	}
	if want := "1/1/11 2/1/21 3/1/31 4/2/42"; strings.Join(got, " ") != want {
		t.Errorf("entries %v, want %s", got, want)
	}
}

// TestTruncateKeepsTheSnapshotRecord: a cut that would remove the WAL's
// record of the snapshot a server starts from is refused, since the log
// could no longer be replayed from it; a cut after the record is made.
func TestTruncateKeepsTheSnapshotRecord(t *testing.T) {
	dir := t.TempDir()
	disk := newDisk(t, dir)
	if err := disk.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 30}, memberLogEntries(1, 30, 1)); err != nil {
		t.Fatal(err)
	}
	snap := raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 20, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{1}}}, Data: []byte("state")}
	if err := disk.SaveSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	if err := disk.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 40}, memberLogEntries(31, 40, 1)); err != nil {
		t.Fatal(err)
	}
	if err := disk.Close(); err != nil {
		t.Fatal(err)
	}
	walDir := filepath.Join(dir, "wal")
	at := map[uint64]storage.WALRecord{}
	if _, err := storage.ScanWAL(walDir, func(r storage.WALRecord) error {
		if r.Entry != nil {
			at[r.Entry.Index] = r
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(walDir, at[35].Segment)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[at[35].Offset+8+4+1+3] ^= 0x40
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}

	d := mustOpen(t, dir)
	report, err := d.Verify()
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Problems) != 1 || report.Problems[0].File != seg || report.Problems[0].Offset != at[35].Offset {
		t.Fatalf("verify: %+v", report.Problems)
	}
	if _, err := d.Truncate(at[25].Segment, at[25].Offset, filepath.Join(t.TempDir(), "b1")); err == nil || !strings.Contains(err.Error(), "snapshot 20") {
		t.Fatalf("a cut before the snapshot's record: %v", err)
	}
	res, err := d.Truncate(at[33].Segment, at[33].Offset, filepath.Join(t.TempDir(), "b2"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Snapshot != 20 || res.LastIndexNow != 32 || res.Entries != 2 || res.FirstIndex != 33 || res.LastIndex != 34 {
		t.Errorf("truncate: %+v", res)
	}
	if report, err := d.Verify(); err != nil || !report.Clean() {
		t.Errorf("verify after the cut: %+v, %v", report, err)
	}
}

// TestDumpEntriesShowsQuotaEnforcement: a request's entry says whether its
// server enforced quotas, in JSON and in text.
func TestDumpEntriesShowsQuotaEnforcement(t *testing.T) {
	dir := t.TempDir()
	disk := newDisk(t, dir)
	body := proto.Marshal(&proto.CreateRequest{Path: "/q/a", ACL: tree.OpenACL})
	var ents []raftpb.Entry
	for i, enforce := range []bool{false, true} {
		e := &fsm.Entry{Type: fsm.EntryRequest, Session: 1, Op: proto.OpCreate, EnforceQuota: enforce, Body: body}
		ents = append(ents, raftpb.Entry{Index: uint64(i + 1), Term: 1, Data: e.Marshal()})
	}
	if err := disk.Save(raftpb.HardState{Term: 1, Commit: 2}, ents); err != nil {
		t.Fatal(err)
	}
	if err := disk.Close(); err != nil {
		t.Fatal(err)
	}
	d := mustOpen(t, dir)
	var out bytes.Buffer
	if _, err := d.DumpEntries(&out, true); err != nil {
		t.Fatal(err)
	}
	var got []bool
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var e datadir.EntryJSON
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Entry.EnforceQuota)
	}
	if fmt.Sprint(got) != "[false true]" {
		t.Errorf("enforce_quota of the entries: %v, want [false true]", got)
	}
	out.Reset()
	if _, err := d.DumpEntries(&out, false); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 2 ||
		strings.Contains(lines[0], "enforce_quota") || !strings.Contains(lines[1], " enforce_quota=true") {
		t.Errorf("text dump:\n%s", out.String())
	}
}
