package fsm

import (
	"fmt"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
	"github.com/collie-io/collie/server/zkdata"
)

// ApplyZooKeeper applies one transaction a ZooKeeper ensemble committed,
// for a server that follows that ensemble: the tree changes exactly as
// ZooKeeper's DataTree.processTxn changes its own (and the sessions as its
// session tracker does), so that the state stays ZooKeeper's, Stats and
// zxids included. The transaction's zxid becomes LastZxid, and Applied.
//
// The Result is what Apply returns for the same change: the watch events
// it fires and the reply ZooKeeper's FinalRequestProcessor gives the
// client whose request the transaction is, on the server it is connected
// to.
//
// The caller gives the transactions in zxid order, each once. One whose
// zxid is not above LastZxid (a duplicate, or one from the past) changes
// nothing and returns a Result of Zxid 0 with Err RuntimeInconsistency:
// applying it again would move Stats that ZooKeeper moved once.
//
// ZooKeeper applies what its leader logged without checks; Collie's tree
// cannot hold some of what a broken or hostile leader could log, and
// refuses it, changing nothing, with these codes: BadArguments for a path
// that is not a valid znode path and for a TTL out of range, NotEmpty for
// a delete of a node with children, MarshallingError for a record of no
// known type and for a multi holding an operation a multi cannot hold
// (DecodeTxn refuses both).
func (f *FSM) ApplyZooKeeper(txn *zkdata.Txn) Result {
	if txn == nil || txn.Zxid <= f.lastZxid {
		return Result{Err: proto.ErrRuntimeInconsistency}
	}
	f.applied, f.lastZxid = uint64(txn.Zxid), txn.Zxid
	// ZooKeeper's DataTree keeps the zookeeper_stats node of the quota
	// above a node current on every create, delete and setData of a
	// logged transaction too.
	f.tree.KeepQuotaStats(true)
	z := &zkApply{f: f}
	switch txn.Type {
	case proto.OpCreateSession:
		// As ZooKeeperServer.processTxnForSessionEvents: only a
		// createSession with its record opens the session.
		if r, ok := txn.Record.(*zkdata.CreateSessionTxn); ok {
			if s, ok := f.sessions[txn.Session]; ok {
				s.Timeout = r.Timeout
			} else {
				f.sessions[txn.Session] = &Session{ID: txn.Session, Timeout: r.Timeout, ZooKeeper: true}
			}
		}
	case proto.OpCloseSession:
		delete(f.sessions, txn.Session)
	}
	rc := z.process(txn.Header, txn.Record)
	res := Result{Zxid: txn.Zxid, Events: z.events}
	res.Resp, res.Err = reply(txn.Type, rc)
	if txn.Type == proto.OpCloseSession {
		res.Closed = txn.Session
	}
	f.tree.Sweep()
	return res
}

// zkApply is one ZooKeeper transaction being applied.
type zkApply struct {
	f      *FSM
	events []Event
}

// zkResult is ZooKeeper's ProcessTxnResult: what one transaction or
// sub-transaction did, from which the reply is made.
type zkResult struct {
	typ  proto.OpCode
	err  proto.Code
	path string
	// stat is the node's Stat after a create2, createTTL,
	// createContainer, setData or setACL; data its data after a setData.
	stat  proto.Stat
	data  []byte
	multi []zkResult
}

// process is DataTree.processTxn for one transaction or sub-transaction of
// header h. The record decides what changes, as in zkdata.DataTree.
func (z *zkApply) process(h zkdata.Header, rec any) zkResult {
	rc := zkResult{typ: h.Type}
	var createCversion int32
	switch r := rec.(type) {
	case *zkdata.CreateTxn:
		var owner int64
		if r.Ephemeral {
			owner = h.Session
		}
		rc.path, createCversion = r.Path, r.ParentCversion
		rc.err = z.create(r.Path, r.Data, r.ACL, owner, r.ParentCversion, h, &rc)
	case *zkdata.CreateTTLTxn:
		rc.path = r.Path
		if r.TTL <= 0 || r.TTL > proto.MaxTTL {
			// ZooKeeper's EphemeralType.TTL.toEphemeralOwner throws.
			rc.err = proto.ErrBadArguments
			break
		}
		rc.err = z.create(r.Path, r.Data, r.ACL, tree.TTLOwner(r.TTL), r.ParentCversion, h, &rc)
	case *zkdata.CreateContainerTxn:
		rc.path = r.Path
		rc.err = z.create(r.Path, r.Data, r.ACL, tree.ContainerOwner, r.ParentCversion, h, &rc)
	case *zkdata.DeleteTxn:
		rc.path = r.Path
		rc.err = z.delete(r.Path, h.Zxid)
	case *zkdata.SetDataTxn:
		rc.path = r.Path
		rc.err = z.setData(r.Path, r.Data, r.Version, h, &rc)
	case *zkdata.SetACLTxn:
		rc.path = r.Path
		rc.err = z.setACL(r.Path, r.ACL, r.Version, &rc)
	case *zkdata.CheckVersionTxn:
		rc.path = r.Path
	case *zkdata.CreateSessionTxn:
	case *zkdata.CloseSessionTxn:
		z.killSession(h.Session, h.Zxid, r.Paths)
	case *zkdata.ErrorTxn:
		rc.err = r.Err
	case *zkdata.MultiTxn:
		rc.err, rc.multi = z.multi(h, r)
	case nil:
		if h.Type != proto.OpCloseSession {
			rc.err = proto.ErrMarshallingError
			break
		}
		// A closeSession logged before CloseSessionTxn existed.
		z.killSession(h.Session, h.Zxid, nil)
	default:
		rc.err = proto.ErrMarshallingError
	}
	// A create that finds its node there still moves the parent's cversion
	// and pzxid forward (replaying over a fuzzy snapshot, or a node deleted
	// with its session and made again by another), as ZooKeeper does for a
	// create, though not a create2.
	if h.Type == proto.OpCreate && rc.err == proto.ErrNodeExists {
		z.f.tree.SetCversionPzxid(proto.Parent(rc.path), createCversion, h.Zxid)
	}
	return rc
}

func (z *zkApply) create(path string, data []byte, acl []proto.ACL, owner int64, parentCversion int32, h zkdata.Header, rc *zkResult) proto.Code {
	if path == "/" || proto.ValidatePath(path) != nil {
		return proto.ErrBadArguments
	}
	parentPath := proto.Parent(path)
	parent, ok := z.f.tree.Get(parentPath)
	if !ok {
		return proto.ErrNoNode
	}
	if _, exists := z.f.tree.Get(path); exists {
		return proto.ErrNodeExists
	}
	if acl == nil {
		// ZooKeeper's ACL cache reads a null list as world:anyone.
		acl = tree.OpenACL
	}
	n := z.f.tree.CreateAt(path, data, acl, owner, parentCversion, h.Zxid, h.Time)
	rc.stat = z.f.tree.Stat(n)
	z.emit(proto.EventNodeCreated, path, z.f.tree.ACL(n))
	z.emit(proto.EventNodeChildrenChanged, parentPath, z.f.tree.ACL(parent))
	return proto.OK
}

// delete is DataTree.deleteNode: the parent's pzxid moves forward even
// when the node is already gone.
func (z *zkApply) delete(path string, zxid int64) proto.Code {
	if path == "/" {
		// ZooKeeper finds the root as the parent of "/" and then no
		// child of that name.
		z.f.tree.RaisePzxid(path, zxid)
		return proto.ErrNoNode
	}
	if proto.ValidatePath(path) != nil {
		return proto.ErrBadArguments
	}
	parentPath := proto.Parent(path)
	if _, ok := z.f.tree.Get(parentPath); !ok {
		return proto.ErrNoNode
	}
	n, ok := z.f.tree.Get(path)
	if !ok {
		z.f.tree.RaisePzxid(parentPath, zxid)
		return proto.ErrNoNode
	}
	if n.NumChildren() > 0 {
		return proto.ErrNotEmpty
	}
	acl := z.f.tree.ACL(n)
	z.f.tree.Delete(path, zxid)
	z.events = append(z.events, z.f.deleteEvents(path, acl)...)
	return proto.OK
}

func (z *zkApply) setData(path string, data []byte, version int32, h zkdata.Header, rc *zkResult) proto.Code {
	if proto.ValidatePath(path) != nil {
		return proto.ErrBadArguments
	}
	if _, ok := z.f.tree.Get(path); !ok {
		return proto.ErrNoNode
	}
	n := z.f.tree.SetData(path, data, version, h.Zxid, h.Time)
	rc.stat, rc.data = z.f.tree.Stat(n), n.Data
	z.emit(proto.EventNodeDataChanged, path, z.f.tree.ACL(n))
	return proto.OK
}

func (z *zkApply) setACL(path string, acl []proto.ACL, aversion int32, rc *zkResult) proto.Code {
	if proto.ValidatePath(path) != nil {
		return proto.ErrBadArguments
	}
	if _, ok := z.f.tree.Get(path); !ok {
		return proto.ErrNoNode
	}
	if acl == nil {
		acl = tree.OpenACL
	}
	n := z.f.tree.SetACL(path, acl, aversion)
	rc.stat = z.f.tree.Stat(n)
	return proto.OK
}

// killSession deletes the paths a closeSession lists, whoever owns them,
// then the session's other ephemerals, as DataTree.killSession does. A
// path that cannot be deleted is passed over.
func (z *zkApply) killSession(session, zxid int64, listed []string) {
	for _, p := range listed {
		z.delete(p, zxid)
	}
	for _, p := range z.f.tree.Ephemerals(session) {
		z.delete(p, zxid)
	}
}

// zkMultiOp reports whether op is one of the operations DataTree.processTxn
// reads in a multi.
func zkMultiOp(op proto.OpCode) bool {
	switch op {
	case proto.OpCreate, proto.OpCreateTTL, proto.OpCreateContainer, proto.OpDelete,
		proto.OpDeleteContainer, proto.OpSetData, proto.OpError, proto.OpCheck:
		return true
	}
	return false
}

// multi applies the sub-transactions in order. A multi that failed holds
// an error for the op that failed and nothing applies: ZooKeeper turns
// every op into an error, OK before the failed one and
// RuntimeInconsistency after it. The code is the first sub-transaction's
// that failed.
func (z *zkApply) multi(h zkdata.Header, m *zkdata.MultiTxn) (proto.Code, []zkResult) {
	failed := false
	for _, sub := range m.Txns {
		if !zkMultiOp(sub.Type) {
			return proto.ErrMarshallingError, nil
		}
		failed = failed || sub.Type == proto.OpError
	}
	results := make([]zkResult, 0, len(m.Txns))
	code := proto.OK
	postFailed := false
	for _, sub := range m.Txns {
		sh := h
		sh.Type = sub.Type
		rec := sub.Record
		if sub.Type == proto.OpError {
			postFailed = true
		} else if failed {
			sh.Type, rec = proto.OpError, &zkdata.ErrorTxn{Err: proto.OK}
			if postFailed {
				rec = &zkdata.ErrorTxn{Err: proto.ErrRuntimeInconsistency}
			}
		}
		rc := z.process(sh, rec)
		if rc.err != proto.OK && code == proto.OK {
			code = rc.err
		}
		results = append(results, rc)
	}
	return code, results
}

func (z *zkApply) emit(typ proto.EventType, path string, acl []proto.ACL) {
	z.events = append(z.events, Event{typ, path, acl})
}

// reply is the answer FinalRequestProcessor makes from a transaction's
// result for a request of type op: the record, and the error code of the
// reply header. A failed request answers with the code alone, as Apply's
// results do.
func reply(op proto.OpCode, rc zkResult) (proto.Record, proto.Code) {
	if op == proto.OpMulti {
		if rc.multi == nil && rc.err != proto.OK {
			return nil, rc.err
		}
		// A multi answers OK whatever its ops did: each op says.
		resp := &proto.MultiResponse{Results: make([]proto.OpResult, 0, len(rc.multi))}
		for _, sub := range rc.multi {
			if sub.typ == proto.OpError && sub.err == proto.ErrSessionMoved {
				return nil, proto.ErrSessionMoved
			}
			resp.Results = append(resp.Results, opResult(sub))
		}
		return resp, proto.OK
	}
	if rc.err != proto.OK {
		return nil, rc.err
	}
	switch op {
	case proto.OpCreate:
		return &proto.CreateResponse{Path: rc.path}, proto.OK
	case proto.OpCreate2, proto.OpCreateTTL, proto.OpCreateContainer:
		return &proto.Create2Response{Path: rc.path, Stat: rc.stat}, proto.OK
	case proto.OpSetData:
		return &proto.SetDataResponse{Stat: rc.stat}, proto.OK
	case proto.OpReconfig:
		return &proto.GetDataResponse{Data: rc.data, Stat: rc.stat}, proto.OK
	case proto.OpSetACL:
		return &proto.SetACLResponse{Stat: rc.stat}, proto.OK
	}
	return nil, proto.OK
}

// opResult is the result of one op of a multi as FinalRequestProcessor
// makes it, by the sub-transaction's type: a create answers with its path
// only, the other creates with a Stat too.
func opResult(rc zkResult) proto.OpResult {
	switch rc.typ {
	case proto.OpCreate:
		return proto.OpResult{Type: proto.OpCreate, Resp: &proto.CreateResponse{Path: rc.path}}
	case proto.OpCreateTTL, proto.OpCreateContainer:
		return proto.OpResult{Type: proto.OpCreate2, Resp: &proto.Create2Response{Path: rc.path, Stat: rc.stat}}
	case proto.OpDelete, proto.OpDeleteContainer:
		return proto.OpResult{Type: proto.OpDelete}
	case proto.OpSetData:
		return proto.OpResult{Type: proto.OpSetData, Resp: &proto.SetDataResponse{Stat: rc.stat}}
	case proto.OpCheck:
		return proto.OpResult{Type: proto.OpCheck}
	case proto.OpError:
		return proto.OpResult{Type: proto.OpError, Err: rc.err}
	}
	panic(fmt.Sprintf("fsm: op %d passed zkMultiOp", rc.typ))
}
