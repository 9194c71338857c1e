package zkcompat

import (
	"bytes"
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/tree"
	"github.com/collie-io/collie/server/zkdata"
	"github.com/collie-io/collie/server/zkimport"
)

// zkReply is what ZooKeeper answered a write of the workload.
type zkReply struct {
	op   proto.OpCode
	err  proto.Code
	body []byte
}

// TestApplyZooKeeperMatchesZooKeeper replays a real ZooKeeper 3.8's logged
// transactions, from each of its snapshots on, into zkdata's model of
// ZooKeeper's DataTree and into Collie's state machine through
// fsm.ApplyZooKeeper, both starting from the same snapshot, and compares
// every node (data, ACL, every Stat field), the sessions and their
// ephemerals after every transaction. Replayed from the first, empty,
// snapshot, the reply each transaction makes is compared byte for byte
// with what ZooKeeper answered the client that sent it.
func TestApplyZooKeeperMatchesZooKeeper(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "zk")
	ref := zkref.Start(t, append(zkImportArgs(""), zkref.WithDataDir(dataDir))...)
	// A write's reply carries its transaction's zxid: ZooKeeper answers
	// right after applying it. A reply without a transaction of its own
	// (a read) repeats an earlier zxid, whose reply came first.
	replies := map[int64]zkReply{}
	loadZooKeeperReplies(t, ref, 23, 600, func(op proto.OpCode, hdr proto.ReplyHeader, body []byte) {
		if _, seen := replies[hdr.Zxid]; !seen && (fsm.IsWrite(op) || op == proto.OpCloseSession) {
			replies[hdr.Zxid] = zkReply{op, hdr.Err, body}
		}
	})

	snaps := zkFiles(t, dataDir, "snapshot")
	var txns []*zkdata.Txn
	for _, log := range zkFiles(t, dataDir, "log") {
		_, err := zkdata.ReadLogFile(log, func(txn *zkdata.Txn, _ int64) error {
			if len(txns) == 0 || txn.Zxid > txns[len(txns)-1].Zxid {
				txns = append(txns, txn)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(snaps) < 3 || len(txns) < 300 {
		t.Fatalf("the workload left %d snapshots and %d transactions; the test wants several snapshots", len(snaps), len(txns))
	}
	var fuzzy, checked int
	for _, snap := range snaps {
		// Each snapshot is replayed from its zxid, and again from 25
		// transactions before it: the state then holds what those did,
		// as a fuzzy snapshot holds changes made while it was written,
		// which ZooKeeper applies again.
		for _, overlap := range []int64{0, 25} {
			model := readSnapshot(t, snap)
			snapZxid := model.LastZxid
			// snapshot.0 is the tree ZooKeeper started with, before any
			// transaction: the state every reply was made from, and the
			// state of a new Collie tree (Convert refuses it).
			f := fsm.New(fsm.Options{ExtendedTypes: true})
			from := int64(0)
			if snapZxid > 0 {
				from = max(snapZxid-overlap, 1)
				model.LastZxid = from
				start := readSnapshot(t, snap)
				start.LastZxid = from
				conv, err := zkimport.Convert(start, zkimport.Options{FSM: fsm.Options{ExtendedTypes: true}, Secret: make([]byte, fsm.SecretLen)})
				if err != nil {
					t.Fatal(err)
				}
				f = conv.FSM
			} else if overlap > 0 {
				break
			}
			compareStates(t, filepath.Base(snap)+" as read", model, f)
			applied := 0
			for _, txn := range txns {
				if txn.Zxid <= from {
					continue
				}
				code := model.Apply(txn)
				res := f.ApplyZooKeeper(txn)
				applied++
				where := fmt.Sprintf("%s from zxid %#x, after zxid %#x (%s)", filepath.Base(snap), from, txn.Zxid, txn.Type)
				if res.Zxid != txn.Zxid || f.LastZxid() != txn.Zxid || f.Applied() != uint64(txn.Zxid) {
					t.Fatalf("%s: result zxid %#x, last zxid %#x, applied %d", where, res.Zxid, f.LastZxid(), f.Applied())
				}
				if txn.Type != proto.OpMulti && res.Err != code {
					t.Fatalf("%s: Collie's code %v, the model's %v", where, res.Err, code)
				}
				if code != proto.OK && txn.Type != proto.OpError && txn.Type != proto.OpMulti {
					fuzzy++
				}
				// A later snapshot may hold changes made after its zxid
				// (it is fuzzy): the replies of the transactions it
				// holds were made from another state.
				if want, ok := replies[txn.Zxid]; ok && snapZxid == 0 {
					checkReply(t, where, want, res)
					checked++
				}
				compareStates(t, where, model, f)
			}
			t.Logf("%s from zxid %#x: %d transactions replayed", filepath.Base(snap), from, applied)
		}
	}
	t.Logf("%d transactions, %d replies of ZooKeeper's compared, %d transactions replayed over a state that already held them", len(txns), checked, fuzzy)
	if checked < len(txns)/2 {
		t.Errorf("only %d of %d transactions had their reply compared", checked, len(txns))
	}
	if fuzzy == 0 {
		t.Errorf("no transaction met a state that already held it: the replay cases went untested")
	}
}

func readSnapshot(t *testing.T, path string) *zkdata.DataTree {
	t.Helper()
	tr, _, err := zkdata.ReadSnapshotFile(path, true)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// zkFiles lists a ZooKeeper data directory's files of a kind, by zxid.
func zkFiles(t *testing.T, dataDir, prefix string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dataDir, "version-2", prefix+".*"))
	slices.SortFunc(files, func(a, b string) int {
		za, _, _ := zkdata.ParseName(filepath.Base(a), prefix)
		zb, _, _ := zkdata.ParseName(filepath.Base(b), prefix)
		return cmp.Compare(za, zb)
	})
	return files
}

// checkReply compares the reply ApplyZooKeeper's result makes with the one
// ZooKeeper sent.
func checkReply(t *testing.T, where string, want zkReply, res fsm.Result) {
	t.Helper()
	var body []byte
	if res.Resp != nil {
		body = proto.Marshal(res.Resp)
	}
	if res.Err != want.err || !bytes.Equal(body, want.body) {
		t.Errorf("%s: the reply to %s is err=%v %x; ZooKeeper answered err=%v %x", where, want.op, res.Err, body, want.err, want.body)
	}
}

// compareStates fails unless a state machine holds what the model of
// ZooKeeper's DataTree holds: every node with its data, ACL, persisted
// Stat and children, the sessions with their timeouts, and each session's
// ephemerals. Each side keeps its own /zookeeper/config.
func compareStates(t *testing.T, where string, model *zkdata.DataTree, f *fsm.FSM) {
	t.Helper()
	want := map[string]string{}
	model.Walk(func(path string, n *zkdata.Node) error {
		s := n.Stat
		want[path] = persistedLine(n.Data, n.ACL, s.Czxid, s.Mzxid, s.Pzxid, s.Ctime, s.Mtime, s.Version, s.Cversion, s.Aversion, s.EphemeralOwner, n.Children())
		return nil
	})
	got := map[string]string{}
	tr := f.Tree()
	tr.Walk(func(path string, n *tree.Node) bool {
		got[path] = persistedLine(n.Data, tr.ACL(n), n.Czxid, n.Mzxid, n.Pzxid, n.Ctime, n.Mtime, n.Version, n.Cversion, n.Aversion, n.EphemeralOwner, n.Children())
		return true
	})
	delete(want, tree.ConfigPath)
	delete(got, tree.ConfigPath)
	for _, m := range []map[string]string{want, got} {
		m[tree.ZookeeperPath] = strings.Replace(m[tree.ZookeeperPath], "children=[config quota]", "children=[quota]", 1)
	}
	var bad []string
	for p, w := range want {
		if g := got[p]; g != w {
			bad = append(bad, fmt.Sprintf("%s:\n  ZooKeeper: %s\n  Collie:    %s", p, w, g))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			bad = append(bad, fmt.Sprintf("%s is extra: %s", p, g))
		}
	}
	// Every session is ZooKeeper's: its client holds ZooKeeper's password.
	var wantSessions, gotSessions []string
	ids := map[int64]bool{}
	for id, timeout := range model.Sessions {
		wantSessions = append(wantSessions, fmt.Sprintf("%#x:%d zookeeper=true", id, timeout))
		ids[id] = true
	}
	for _, s := range f.Sessions() {
		gotSessions = append(gotSessions, fmt.Sprintf("%#x:%d zookeeper=%v", s.ID, s.Timeout, s.ZooKeeper))
		ids[s.ID] = true
	}
	slices.Sort(wantSessions)
	slices.Sort(gotSessions)
	if !slices.Equal(wantSessions, gotSessions) {
		bad = append(bad, fmt.Sprintf("sessions: ZooKeeper %v, Collie %v", wantSessions, gotSessions))
	}
	for id := range ids {
		if w, g := model.Ephemerals(id), tr.Ephemerals(id); !slices.Equal(w, g) {
			bad = append(bad, fmt.Sprintf("ephemerals of %#x: ZooKeeper %v, Collie %v", id, w, g))
		}
	}
	slices.Sort(bad)
	if len(bad) > 0 {
		t.Fatalf("%s: %d differences:\n%s", where, len(bad), strings.Join(bad[:min(len(bad), 8)], "\n"))
	}
}

func persistedLine(data []byte, acl []proto.ACL, czxid, mzxid, pzxid, ctime, mtime int64, version, cversion, aversion int32, owner int64, children []string) string {
	return fmt.Sprintf("data=%q acl=%v czxid=%#x mzxid=%#x pzxid=%#x ctime=%d mtime=%d version=%d cversion=%d aversion=%d owner=%#x children=%v",
		data, acl, czxid, mzxid, pzxid, ctime, mtime, version, cversion, aversion, owner, children)
}
