package zkimport

import (
	"errors"
	"testing"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/zkdata"
)

// sample is a ZooKeeper database: a session with an ephemeral, a
// persistent node, at zxid 3.
func sample() *zkdata.DataTree {
	t := zkdata.NewDataTree(false)
	acl := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
	for _, txn := range []*zkdata.Txn{
		{Header: zkdata.Header{Session: 7, Zxid: 1, Type: proto.OpCreateSession}, Record: &zkdata.CreateSessionTxn{Timeout: 30000}},
		{Header: zkdata.Header{Session: 7, Zxid: 2, Time: 1000, Type: proto.OpCreate}, Record: &zkdata.CreateTxn{Path: "/p", Data: []byte("x"), ACL: acl, ParentCversion: -1}},
		{Header: zkdata.Header{Session: 7, Zxid: 3, Time: 1001, Type: proto.OpCreate}, Record: &zkdata.CreateTxn{Path: "/p/e", ACL: acl, Ephemeral: true, ParentCversion: -1}},
	} {
		t.Apply(txn)
	}
	return t
}

func TestConvertKeepsSessions(t *testing.T) {
	res, err := Convert(sample(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := res.FSM.Session(7)
	if !ok || !s.ZooKeeper || s.Timeout != 30000 || res.LastZxid != 3 {
		t.Fatalf("session %+v %v, last zxid %d", s, ok, res.LastZxid)
	}
	if n, ok := res.FSM.Tree().Get("/p/e"); !ok || n.EphemeralOwner != 7 {
		t.Fatalf("/p/e: %v", ok)
	}
}

func TestConvertDropsSessions(t *testing.T) {
	res, err := Convert(sample(), Options{DropSessions: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.FSM.Session(7); ok {
		t.Error("the session is still open")
	}
	if _, ok := res.FSM.Tree().Get("/p/e"); ok {
		t.Error("the session's ephemeral is still there")
	}
	p, _ := res.FSM.Tree().Get("/p")
	if res.LastZxid != 4 || p.Pzxid != 4 || res.Dropped[7] != 1 {
		t.Errorf("last zxid %d, /p's pzxid %d, dropped %v: want the close at zxid 4", res.LastZxid, p.Pzxid, res.Dropped)
	}
}

func TestConvertChecksDigest(t *testing.T) {
	res, err := Convert(sample(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	good := res.FSM.Tree().Digest()
	if _, err := Convert(sample(), Options{Digest: &zkdata.TxnDigest{Version: 2, TreeDigest: good}}); err != nil {
		t.Errorf("the tree's own digest: %v", err)
	}
	if _, err := Convert(sample(), Options{Digest: &zkdata.TxnDigest{Version: 2, TreeDigest: good + 1}}); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("a wrong digest: %v", err)
	}
}

func TestEnsembleSecret(t *testing.T) {
	a, _ := Convert(sample(), Options{EnsembleToken: "t"})
	b, _ := Convert(sample(), Options{EnsembleToken: "t"})
	c, _ := Convert(sample(), Options{EnsembleToken: "u"})
	d, _ := Convert(sample(), Options{EnsembleToken: "t", DropSessions: true})
	ids := []uint64{a.FSM.EnsembleID(), b.FSM.EnsembleID(), c.FSM.EnsembleID(), d.FSM.EnsembleID()}
	if ids[0] != ids[1] || ids[0] == ids[2] || ids[0] == ids[3] {
		t.Errorf("ensemble ids %x: the same data and token must agree, another token or session choice differ", ids)
	}
}
