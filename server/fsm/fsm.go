package fsm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/quota"
	"github.com/collie-io/collie/server/tree"
)

// Session is an open session as every replica knows it.
type Session struct {
	ID      int64
	Timeout int32 // milliseconds
	// Owner is the id of the server the session is connected to.
	Owner uint64
	// ZooKeeper marks a session a ZooKeeper ensemble opened, whose data
	// Collie took over: its password is ZooKeeper's
	// (session.ZooKeeperPassword), which its client holds.
	ZooKeeper bool
}

// Event is a change that fires watches: the registry turns it into
// notifications for the watchers of Path.
type Event struct {
	Type proto.EventType
	Path string
	// ACL is the ACL of the node the event is about (the parent's for
	// NodeChildrenChanged, the node's as it was for NodeDeleted): only
	// watchers allowed to read it are told, as in ZooKeeper.
	ACL []proto.ACL
}

// deleteEvents are the events of deleting path, whose node had acl.
func (f *FSM) deleteEvents(path string, acl []proto.ACL) []Event {
	parent := proto.Parent(path)
	var parentACL []proto.ACL
	if n, ok := f.tree.Get(parent); ok {
		parentACL = f.tree.ACL(n)
	}
	return []Event{{proto.EventNodeDeleted, path, acl}, {proto.EventNodeChildrenChanged, parent, parentACL}}
}

// Result is the outcome of applying one entry.
type Result struct {
	// Zxid is the transaction id of the entry.
	Zxid int64
	// Err is the ZooKeeper error code of a failed request.
	Err proto.Code
	// Resp is the response record for the client; nil for requests that
	// answer with a header only.
	Resp proto.Record
	// Events are the watch events the change fires, in order.
	Events []Event
	// Closed is the session that the entry ended, if any.
	Closed int64
	// QuotaExceeded are the quota limits the request went past, when its
	// server enforces quotas: ZooKeeper's leader logs them, and the
	// request failed if one is hard.
	QuotaExceeded []quota.Exceeded
}

// Options are the settings that change how entries apply. Every replica
// must use the same.
type Options struct {
	// ExtendedTypes enables TTL nodes (extendedTypesEnabled).
	ExtendedTypes bool
	// SASLScheme says this server has a provider for the sasl scheme,
	// for the ACL checks of reads; writes decide by their entry's
	// AuthSchemes.
	SASLScheme bool
	// X509Scheme says the same of the x509 scheme.
	X509Scheme bool
}

// FSM is the state machine. The zero value is not usable; call New.
type FSM struct {
	opts     Options
	tree     *tree.Tree
	sessions map[int64]*Session
	// applied is the index of the last applied entry; lastZxid equals it
	// for every entry that carried a transaction.
	applied  uint64
	lastZxid int64
	// secret is what session passwords are derived from; nil until the
	// first EntrySetSecret.
	secret []byte
	// heldLog are the voters known to have held the log (EntryMemberLog),
	// sorted.
	heldLog []uint64
	// digests are the tree's digests after every transaction whose zxid
	// is a multiple of digestInterval, the newest digestLimit, oldest
	// first: ZooKeeper's digest log, which its hash command lists. Like
	// ZooKeeper's it starts empty at every start, not in snapshots.
	digests []ZxidDigest
}

// ZxidDigest is the tree's digest (tree.Tree.Digest) after a transaction.
type ZxidDigest struct {
	Zxid   int64
	Digest int64
}

// ZooKeeper's DataTree logs a digest every 128 transactions, 0x80 in hex,
// and keeps the last 1024.
const (
	digestInterval = 128
	digestLimit    = 1024
)

// Digests returns the digest log, oldest first; the caller owns it.
func (f *FSM) Digests() []ZxidDigest { return slices.Clone(f.digests) }

// New returns an empty state machine.
func New(opts Options) *FSM {
	return &FSM{opts: opts, tree: tree.New(opts.ExtendedTypes), sessions: make(map[int64]*Session)}
}

// Tree returns the znode tree for reads. Callers must not modify it.
func (f *FSM) Tree() *tree.Tree { return f.tree }

// Applied returns the index of the last applied entry.
func (f *FSM) Applied() uint64 { return f.applied }

// LastZxid returns the zxid of the last applied transaction.
func (f *FSM) LastZxid() int64 { return f.lastZxid }

// Session returns an open session.
func (f *FSM) Session(id int64) (Session, bool) {
	s, ok := f.sessions[id]
	if !ok {
		return Session{}, false
	}
	return *s, true
}

// Secret returns the session secret, or nil while none is set.
func (f *FSM) Secret() []byte { return f.secret }

// Reidentify makes the state another ensemble's: it replaces the session
// secret, and with it the ensemble id and every session's password, and
// forgets which voters held the old ensemble's log. It is for building a
// new ensemble's first state from a copy of another's (a restored backup),
// never for a running replica, whose secret is fixed.
func (f *FSM) Reidentify(secret []byte) error {
	if len(secret) != SecretLen {
		return fmt.Errorf("fsm: a session secret of %d bytes, not %d", len(secret), SecretLen)
	}
	f.secret = bytes.Clone(secret)
	f.heldLog = nil
	return nil
}

// EnsembleID names the ensemble whose state this is: made from the
// secret, which the ensemble's first leader chose at random, so it is fixed
// when the ensemble forms and depends on no configuration. It is 0 while
// no secret is set (a member that has not yet received the log).
func (f *FSM) EnsembleID() uint64 {
	if f.secret == nil {
		return 0
	}
	h := sha256.New()
	h.Write([]byte("collie ensemble id\x00"))
	h.Write(f.secret)
	return max(binary.BigEndian.Uint64(h.Sum(nil)), 1)
}

// HeldLog reports whether the voter id is known to have held the log.
func (f *FSM) HeldLog(id uint64) bool {
	_, ok := slices.BinarySearch(f.heldLog, id)
	return ok
}

// MembersWithLog returns the voters known to have held the log, sorted.
func (f *FSM) MembersWithLog() []uint64 { return slices.Clone(f.heldLog) }

// MemberLogEntry returns the entry that records that voter id has held
// the log.
func MemberLogEntry(id uint64) *Entry {
	return &Entry{Type: EntryMemberLog, Body: binary.BigEndian.AppendUint64(nil, id)}
}

// Sessions returns every open session, sorted by id.
func (f *FSM) Sessions() []Session {
	out := make([]Session, 0, len(f.sessions))
	for _, s := range f.sessions {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Session) int { return cmpInt64(a.ID, b.ID) })
	return out
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Skip records that index carried no entry for the state machine (a raft
// configuration change or an empty entry), so Applied stays in step with
// the log.
func (f *FSM) Skip(index uint64) {
	if index > f.applied {
		f.applied = index
	}
}

// Apply applies the entry at a raft index, by the rules of the entry's
// version. It panics if index does not follow the last applied one, or if
// the entry is of a version or type this code does not know (UnmarshalEntry
// refuses those): that is a broken log, not a client error.
func (f *FSM) Apply(index uint64, e *Entry) Result {
	if index <= f.applied {
		panic(fmt.Sprintf("fsm: apply of index %d after %d", index, f.applied))
	}
	if !knownVersion(e.version()) {
		panic(fmt.Sprintf("fsm: entry of version %d at index %d", e.Version, index))
	}
	f.applied = index
	zxid := int64(index)
	f.lastZxid = zxid
	res := Result{Zxid: zxid}
	f.tree.KeepQuotaStats(e.quotas())
	switch e.Type {
	case EntryCreateSession:
		f.sessions[e.Session] = &Session{ID: e.Session, Timeout: e.Timeout, Owner: e.Origin}
	case EntryCloseSession:
		if _, ok := f.sessions[e.Session]; ok {
			res.Events = f.closeSession(e.Session, zxid)
			res.Closed = e.Session
		}
	case EntryDeleteContainer:
		res.Err, res.Events = f.deleteContainer(string(e.Body), zxid, e.Time)
	case EntryMoveSession:
		if s, ok := f.sessions[e.Session]; ok {
			s.Owner = e.Origin
		} else {
			res.Err = proto.ErrSessionExpired
		}
	case EntrySetSecret:
		// The first secret stays: sessions already hold passwords made
		// from it. A secret of the wrong length is refused the same way
		// everywhere.
		if f.secret == nil && len(e.Body) == SecretLen {
			f.secret = bytes.Clone(e.Body)
		}
	case EntryMemberLog:
		// A body of another length is ignored the same way everywhere.
		if len(e.Body) == 8 {
			id := binary.BigEndian.Uint64(e.Body)
			if i, ok := slices.BinarySearch(f.heldLog, id); !ok {
				f.heldLog = slices.Insert(f.heldLog, i, id)
			}
		}
	case EntryRequest:
		f.applyRequest(e, zxid, &res)
	default:
		panic(fmt.Sprintf("fsm: entry type %d passed decoding", e.Type))
	}
	f.tree.Sweep()
	if zxid%digestInterval == 0 {
		if len(f.digests) == digestLimit {
			f.digests = slices.Delete(f.digests, 0, 1)
		}
		f.digests = append(f.digests, ZxidDigest{Zxid: zxid, Digest: f.tree.Digest()})
	}
	return res
}

func (f *FSM) closeSession(id, zxid int64) []Event {
	var events []Event
	for _, p := range f.tree.Ephemerals(id) {
		n, _ := f.tree.Get(p)
		acl := f.tree.ACL(n)
		f.tree.Delete(p, zxid)
		events = append(events, f.deleteEvents(p, acl)...)
	}
	delete(f.sessions, id)
	return events
}

func (f *FSM) deleteContainer(path string, zxid, now int64) (proto.Code, []Event) {
	n, ok := f.tree.Get(path)
	if !ok {
		return proto.ErrNoNode, nil
	}
	if n.NumChildren() > 0 {
		return proto.ErrNotEmpty, nil
	}
	switch tree.KindOf(n.EphemeralOwner, f.opts.ExtendedTypes) {
	case tree.Container:
	case tree.TTL:
		if !f.tree.TTLExpired(path, now) {
			return proto.ErrBadArguments, nil
		}
	default:
		return proto.ErrBadArguments, nil
	}
	acl := f.tree.ACL(n)
	f.tree.Delete(path, zxid)
	return proto.OK, f.deleteEvents(path, acl)
}

// txn is the context of one write request being applied.
type txn struct {
	f    *FSM
	e    *Entry
	zxid int64
	// rules are the ACL rules of the entry's version.
	rules  tree.ACLRules
	events []Event
	// quotas, in a multi whose server enforces quotas, are the quotas as
	// they were before the multi, which its checks read.
	quotas   tree.Quotas
	exceeded []quota.Exceeded
}

func (f *FSM) applyRequest(e *Entry, zxid int64, res *Result) {
	req, ok := proto.NewRequest(e.Op)
	if !ok || req == nil || !IsWrite(e.Op) {
		res.Err = proto.ErrUnimplemented
		return
	}
	if err := proto.Unmarshal(e.Body, req); err != nil {
		res.Err = proto.ErrMarshallingError
		return
	}
	if s, ok := f.sessions[e.Session]; ok && s.Owner != e.Origin {
		// The session reconnected to another server since this request
		// was sent through its old connection.
		res.Err = proto.ErrSessionMoved
		return
	}
	t := &txn{f: f, e: e, zxid: zxid, rules: e.aclRules()}
	if e.Op == proto.OpMulti {
		res.Resp, res.Err = t.multi(req.(*proto.MultiRequest))
	} else {
		res.Resp, res.Err = t.op(e.Op, req)
	}
	res.Events = t.events
	res.QuotaExceeded = t.exceeded
}

// IsWrite reports whether a client opcode changes state and so goes through
// the log.
func IsWrite(op proto.OpCode) bool {
	switch op {
	case proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL,
		proto.OpDelete, proto.OpSetData, proto.OpSetACL, proto.OpCheck, proto.OpMulti:
		return true
	}
	return false
}

func (t *txn) op(op proto.OpCode, req proto.Record) (proto.Record, proto.Code) {
	if err := t.checkSession(); err != proto.OK {
		return nil, err
	}
	switch r := req.(type) {
	case *proto.CreateRequest:
		return t.create(op, r.Path, r.Data, r.ACL, r.Flags, -1)
	case *proto.CreateTTLRequest:
		return t.create(op, r.Path, r.Data, r.ACL, r.Flags, r.TTL)
	case *proto.DeleteRequest:
		return nil, t.delete(r.Path, r.Version)
	case *proto.SetDataRequest:
		return t.setData(r.Path, r.Data, r.Version)
	case *proto.SetACLRequest:
		return t.setACL(r.Path, r.ACL, r.Version)
	case *proto.CheckVersionRequest:
		return nil, t.check(r.Path, r.Version)
	}
	return nil, proto.ErrBadArguments
}

func (t *txn) checkSession() proto.Code {
	if _, ok := t.f.sessions[t.e.Session]; !ok {
		return proto.ErrSessionExpired
	}
	return proto.OK
}

func (t *txn) emit(typ proto.EventType, path string, acl []proto.ACL) {
	t.events = append(t.events, Event{typ, path, acl})
}

// createParent returns the parent of a create's path as ZooKeeper's
// validatePathForCreate finds it: the path is only checked for a slash and
// for NUL here; the full check comes after the sequence suffix is added.
func createParent(path string) (string, bool) {
	i := strings.LastIndexByte(path, '/')
	if i < 0 || strings.IndexByte(path, 0) >= 0 {
		return "", false
	}
	if i == 0 {
		return "/", true
	}
	return path[:i], true
}

func (t *txn) create(op proto.OpCode, path string, data []byte, acl []proto.ACL, flags proto.CreateMode, ttl int64) (proto.Record, proto.Code) {
	if !flags.Valid() {
		return nil, proto.ErrBadArguments
	}
	if flags.TTL() && !t.f.opts.ExtendedTypes {
		return nil, proto.ErrUnimplemented
	}
	if flags.TTL() {
		if ttl <= 0 || ttl > proto.MaxTTL {
			return nil, proto.ErrBadArguments
		}
	} else if ttl >= 0 {
		return nil, proto.ErrBadArguments
	}
	parentPath, ok := createParent(path)
	if !ok {
		return nil, proto.ErrBadArguments
	}
	acl, ok = tree.FixupACL(acl, t.e.Auth, t.rules)
	if !ok {
		return nil, proto.ErrInvalidACL
	}
	parent, ok := t.f.tree.Get(parentPath)
	if !ok {
		return nil, proto.ErrNoNode
	}
	if !tree.CheckACL(t.f.tree.ACL(parent), proto.PermCreate, t.e.Auth, t.rules) {
		return nil, proto.ErrNoAuth
	}
	if flags.Sequential() {
		path = tree.SequenceName(path, parent.Cversion)
	}
	if proto.ValidatePath(path) != nil {
		return nil, proto.ErrBadArguments
	}
	if _, exists := t.f.tree.Get(path); exists {
		return nil, proto.ErrNodeExists
	}
	if tree.KindOf(parent.EphemeralOwner, t.f.opts.ExtendedTypes) == tree.Ephemeral {
		return nil, proto.ErrNoChildrenForEphemerals
	}
	if code := t.checkQuota(path, nil, data, 1); code != proto.OK {
		return nil, code
	}
	var owner int64
	switch {
	case op == proto.OpCreateContainer:
		owner = tree.ContainerOwner
	case flags.TTL():
		owner = tree.TTLOwner(ttl)
	case flags.Ephemeral():
		owner = t.e.Session
	}
	// Null data stays null: ZooKeeper answers a later getData with a null
	// buffer, which clients such as Kazoo show differently from empty.
	n := t.f.tree.Create(path, data, acl, owner, t.zxid, t.e.Time)
	t.emit(proto.EventNodeCreated, path, t.f.tree.ACL(n))
	t.emit(proto.EventNodeChildrenChanged, parentPath, t.f.tree.ACL(parent))
	if op == proto.OpCreate {
		return &proto.CreateResponse{Path: path}, proto.OK
	}
	return &proto.Create2Response{Path: path, Stat: t.f.tree.Stat(n)}, proto.OK
}

// special paths cannot be deleted (ZooKeeper's isSpecialPath).
func special(path string) bool {
	return path == "/" || path == tree.ZookeeperPath || path == tree.QuotaPath || path == tree.ConfigPath
}

func (t *txn) delete(path string, version int32) proto.Code {
	// Like ZooKeeper's getParentPathAndValidate, delete checks only for a
	// slash and NUL: "/a/" has parent "/a" and is then not found.
	parentPath, ok := createParent(path)
	if !ok || special(path) {
		return proto.ErrBadArguments
	}
	parent, ok := t.f.tree.Get(parentPath)
	if !ok {
		return proto.ErrNoNode
	}
	if !tree.CheckACL(t.f.tree.ACL(parent), proto.PermDelete, t.e.Auth, t.rules) {
		return proto.ErrNoAuth
	}
	n, ok := t.f.tree.Get(path)
	if !ok {
		return proto.ErrNoNode
	}
	if version != -1 && version != n.Version {
		return proto.ErrBadVersion
	}
	if n.NumChildren() > 0 {
		return proto.ErrNotEmpty
	}
	acl := t.f.tree.ACL(n)
	t.f.tree.Delete(path, t.zxid)
	t.emit(proto.EventNodeDeleted, path, acl)
	t.emit(proto.EventNodeChildrenChanged, parentPath, t.f.tree.ACL(parent))
	return proto.OK
}

func (t *txn) setData(path string, data []byte, version int32) (proto.Record, proto.Code) {
	if proto.ValidatePath(path) != nil {
		return nil, proto.ErrBadArguments
	}
	n, ok := t.f.tree.Get(path)
	if !ok {
		return nil, proto.ErrNoNode
	}
	if !tree.CheckACL(t.f.tree.ACL(n), proto.PermWrite, t.e.Auth, t.rules) {
		return nil, proto.ErrNoAuth
	}
	// Before the version, as in ZooKeeper.
	if code := t.checkQuota(path, n.Data, data, 0); code != proto.OK {
		return nil, code
	}
	if version != -1 && version != n.Version {
		return nil, proto.ErrBadVersion
	}
	n = t.f.tree.SetData(path, data, n.Version+1, t.zxid, t.e.Time)
	t.emit(proto.EventNodeDataChanged, path, t.f.tree.ACL(n))
	return &proto.SetDataResponse{Stat: t.f.tree.Stat(n)}, proto.OK
}

// checkQuota makes ZooKeeper's quota check (checkQuota) of a create
// (count 1) or a setData (count 0) that replaces old with data at path,
// when the entry's server enforces quotas. It fails with QuotaExceeded
// past a hard limit, and with MarshallingError where ZooKeeper cannot read
// the quota's limits or stats (a runtime exception there). ZooKeeper checks
// against the tree as it was before the request, which for a multi is
// before its first op (t.quotas): ops of one multi are not counted against
// each other.
func (t *txn) checkQuota(path string, old, data []byte, count int64) proto.Code {
	if !t.e.quotas() || !t.e.EnforceQuota {
		return proto.OK
	}
	var q tree.QuotaState
	var ok bool
	if t.quotas != nil {
		q, ok = t.quotas.Quota(path)
	} else {
		q, ok = t.f.tree.Quota(path)
	}
	if !ok {
		return proto.OK
	}
	over, refused, err := quota.Check(q.Path, q.Limits, q.HaveLimits, q.Stats, q.HaveStats, count, int64(len(data)-len(old)))
	t.exceeded = append(t.exceeded, over...)
	switch {
	case err != nil:
		return proto.ErrMarshallingError
	case refused:
		return proto.ErrQuotaExceeded
	}
	return proto.OK
}

func (t *txn) setACL(path string, acl []proto.ACL, version int32) (proto.Record, proto.Code) {
	if proto.ValidatePath(path) != nil {
		return nil, proto.ErrBadArguments
	}
	acl, ok := tree.FixupACL(acl, t.e.Auth, t.rules)
	if !ok {
		return nil, proto.ErrInvalidACL
	}
	n, ok := t.f.tree.Get(path)
	if !ok {
		return nil, proto.ErrNoNode
	}
	if !tree.CheckACL(t.f.tree.ACL(n), proto.PermAdmin, t.e.Auth, t.rules) {
		return nil, proto.ErrNoAuth
	}
	if version != -1 && version != n.Aversion {
		return nil, proto.ErrBadVersion
	}
	n = t.f.tree.SetACL(path, acl, n.Aversion+1)
	return &proto.SetACLResponse{Stat: t.f.tree.Stat(n)}, proto.OK
}

func (t *txn) check(path string, version int32) proto.Code {
	if proto.ValidatePath(path) != nil {
		return proto.ErrBadArguments
	}
	n, ok := t.f.tree.Get(path)
	if !ok {
		return proto.ErrNoNode
	}
	if !tree.CheckACL(t.f.tree.ACL(n), proto.PermRead, t.e.Auth, t.rules) {
		return proto.ErrNoAuth
	}
	if version != -1 && version != n.Version {
		return proto.ErrBadVersion
	}
	return proto.OK
}

// multi applies ops in order and keeps all or none. When an op fails, the
// ops before it report OK, the failing op its error, and the ops after it
// RuntimeInconsistency, all as error results, as ZooKeeper answers. The
// whole request fails with MarshallingError, nothing applied, where
// ZooKeeper fails it: when an op is not a write (ZooKeeper does not read
// reads mixed with writes, and fails on reads alone), and see multiOp.
//
// An entry of version 1 never fails whole: an op that is not a write fails
// as an op, with BadArguments.
func (t *txn) multi(m *proto.MultiRequest) (proto.Record, proto.Code) {
	v1 := t.e.version() == 1
	if k := multiKind(m.Ops); !v1 && (k == opsRead || k == opsInvalid) {
		return nil, proto.ErrMarshallingError
	}
	resp := &proto.MultiResponse{Results: make([]proto.OpResult, 0, len(m.Ops))}
	if t.e.quotas() && t.e.EnforceQuota {
		t.quotas = t.f.tree.SaveQuotas()
	}
	t.f.tree.Begin()
	failed := -1
	for i, op := range m.Ops {
		if v1 && !IsWrite(op.Type) {
			failed = i
			resp.Results = append(resp.Results, proto.OpResult{Type: proto.OpError, Err: proto.ErrBadArguments})
			break
		}
		typ, req, ok := multiOp(op, v1)
		if !ok {
			t.f.tree.Rollback()
			t.events = nil
			return nil, proto.ErrMarshallingError
		}
		r, code := t.op(typ, req)
		if code == proto.ErrMarshallingError {
			// Only a quota check fails an op so: ZooKeeper's runtime
			// exception there fails the whole multi.
			t.f.tree.Rollback()
			t.events = nil
			return nil, proto.ErrMarshallingError
		}
		if code != proto.OK {
			failed = i
			resp.Results = append(resp.Results, proto.OpResult{Type: proto.OpError, Err: code})
			break
		}
		resp.Results = append(resp.Results, multiResult(typ, r))
	}
	if failed < 0 {
		t.f.tree.Commit()
		return resp, proto.OK
	}
	t.f.tree.Rollback()
	t.events = nil
	for i := range failed {
		resp.Results[i] = proto.OpResult{Type: proto.OpError, Err: proto.OK}
	}
	for range m.Ops[failed+1:] {
		resp.Results = append(resp.Results, proto.OpResult{Type: proto.OpError, Err: proto.ErrRuntimeInconsistency})
	}
	return resp, proto.OK
}

// multiOp returns the op a multi's op really is, type and request:
// ZooKeeper rebuilds each create from its flags (Op.create). Create2
// becomes create, and a create whose flags say container becomes
// createContainer. A createTTL whose flags name no TTL mode becomes a plain
// create of those flags, its TTL dropped unchecked; one whose flags are
// not a mode at all fails as a create does.
//
// A create, create2 or createContainer whose flags name a TTL mode becomes
// a createTTL that ZooKeeper then cannot read its request as (a
// ClassCastException in PrepRequestProcessor): the whole multi fails with
// MarshallingError. ok is false for it.
//
// For an entry of version 1 (v1), ok is always true and the request stays
// as it came: a create with a TTL mode is a create, and a createTTL
// without one keeps its TTL, which create then checks against the flags
// as it does for a request alone.
func multiOp(op proto.MultiOp, v1 bool) (typ proto.OpCode, req proto.Record, ok bool) {
	var flags proto.CreateMode
	switch r := op.Req.(type) {
	case *proto.CreateRequest:
		if r.Flags.TTL() && !v1 {
			return 0, nil, false
		}
		flags = r.Flags
	case *proto.CreateTTLRequest:
		if r.Flags.TTL() {
			return proto.OpCreateTTL, r, true
		}
		if !v1 {
			op.Req = &proto.CreateRequest{Path: r.Path, Data: r.Data, ACL: r.ACL, Flags: r.Flags}
		}
		flags = r.Flags
	default:
		return op.Type, op.Req, true
	}
	if flags.Container() {
		return proto.OpCreateContainer, op.Req, true
	}
	return proto.OpCreate, op.Req, true
}

func multiResult(op proto.OpCode, r proto.Record) proto.OpResult {
	switch op {
	case proto.OpCreate:
		// A create answers with a path only, even where create2 would
		// give a Stat.
		if c2, ok := r.(*proto.Create2Response); ok {
			r = &proto.CreateResponse{Path: c2.Path}
		}
		return proto.OpResult{Type: proto.OpCreate, Resp: r}
	case proto.OpCreateContainer, proto.OpCreateTTL:
		return proto.OpResult{Type: proto.OpCreate2, Resp: r}
	case proto.OpSetData:
		return proto.OpResult{Type: proto.OpSetData, Resp: r}
	case proto.OpDelete:
		return proto.OpResult{Type: proto.OpDelete}
	}
	return proto.OpResult{Type: proto.OpCheck}
}

// WhoAmI returns the client infos of a connection's identities, given in
// the order the connection added them, as ZooKeeper's whoAmI answers: in
// the order ZooKeeper lists them (tree.ConnOrder), a digest identity
// showing its user name and super none: ZooKeeper asks each scheme's
// provider for the user, and super has no provider (its x509 super
// identity holds the subject, which decides its place in the order).
func WhoAmI(ids []proto.ID) []proto.ClientInfo {
	out := make([]proto.ClientInfo, 0, len(ids))
	for _, id := range tree.ConnOrder(ids) {
		user := id.ID
		switch id.Scheme {
		case tree.SchemeDigest:
			user, _, _ = strings.Cut(id.ID, ":")
		case tree.SchemeSuper:
			user = ""
		}
		out = append(out, proto.ClientInfo{AuthScheme: id.Scheme, User: user})
	}
	return out
}
