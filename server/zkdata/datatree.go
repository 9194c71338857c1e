package zkdata

import (
	"bytes"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/collie-io/collie/proto"
)

// Stat is a node's StatPersisted: the Stat a client sees, less the two
// fields ZooKeeper computes (dataLength and numChildren).
type Stat struct {
	Czxid, Mzxid      int64
	Ctime, Mtime      int64
	Version, Cversion int32
	Aversion          int32
	EphemeralOwner    int64
	Pzxid             int64
}

// Node is a znode of a DataTree.
type Node struct {
	Data []byte
	// ACL is shared by every node with the same ACL; never modify it.
	ACL      []proto.ACL
	Stat     Stat
	children map[string]struct{}
}

// Children returns the names of the node's children, sorted.
func (n *Node) Children() []string {
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// NumChildren returns how many children the node has.
func (n *Node) NumChildren() int { return len(n.children) }

// Special owners, as ZooKeeper's EphemeralType encodes them.
const (
	containerOwner int64 = -1 << 63 // Long.MIN_VALUE
	ttlOwnerMask   int64 = -1 << 56 // 0xff00000000000000
)

// Paths of ZooKeeper's own nodes.
const (
	quotaRoot = "/zookeeper/quota"
	limitNode = "zookeeper_limits"
	statNode  = "zookeeper_stats"
)

// openACL is world:anyone with every permission: ZooKeeper's
// OPEN_ACL_UNSAFE, which its snapshots name by the ACL id -1.
var openACL = []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}

// DataTree is ZooKeeper's database: the nodes by path (the root is ""),
// the open sessions with their timeouts, and the last zxid applied. It
// applies transactions as ZooKeeper's DataTree and FileTxnSnapLog do, so
// that replaying a log over a fuzzy snapshot ends where ZooKeeper ends.
type DataTree struct {
	nodes map[string]*Node
	// Sessions maps each open session to its timeout in milliseconds.
	Sessions map[int64]int32
	// LastZxid is the zxid of the last transaction applied, or of the
	// snapshot.
	LastZxid int64

	extended   bool
	ephemerals map[int64]map[string]struct{}
	quotas     map[string]struct{} // paths with a zookeeper_limits node
	acls       aclInterner
}

// NewDataTree returns the tree of a new ZooKeeper server: the root,
// /zookeeper and /zookeeper/quota. extended says whether the server ran
// with extendedTypesEnabled, which decides whether an owner of the TTL
// form marks a TTL node or a session.
func NewDataTree(extended bool) *DataTree {
	t := newEmptyTree(extended)
	t.nodes[""] = &Node{Data: []byte{}, ACL: openACL}
	t.nodes[""].children = map[string]struct{}{"zookeeper": {}}
	t.nodes["/zookeeper"] = &Node{Data: []byte{}, ACL: openACL, children: map[string]struct{}{"quota": {}}}
	t.nodes[quotaRoot] = &Node{Data: []byte{}, ACL: openACL}
	return t
}

func newEmptyTree(extended bool) *DataTree {
	return &DataTree{
		nodes:      make(map[string]*Node),
		Sessions:   make(map[int64]int32),
		extended:   extended,
		ephemerals: make(map[int64]map[string]struct{}),
		quotas:     make(map[string]struct{}),
		acls:       aclInterner{byKey: make(map[string][]proto.ACL)},
	}
}

// Len returns the number of nodes, the root included.
func (t *DataTree) Len() int { return len(t.nodes) }

// Node returns the node at path ("/" or "" for the root).
func (t *DataTree) Node(path string) (*Node, bool) {
	if path == "/" {
		path = ""
	}
	n, ok := t.nodes[path]
	return n, ok
}

// Walk calls fn for every node reachable from the root, parents before
// children and siblings in name order, with the root as "/". It stops at
// the first error fn returns.
func (t *DataTree) Walk(fn func(path string, n *Node) error) error {
	return t.walk("", fn)
}

func (t *DataTree) walk(path string, fn func(string, *Node) error) error {
	n := t.nodes[path]
	if n == nil {
		return nil
	}
	shown := path
	if shown == "" {
		shown = "/"
	}
	if err := fn(shown, n); err != nil {
		return err
	}
	for _, c := range n.Children() {
		if err := t.walk(path+"/"+c, fn); err != nil {
			return err
		}
	}
	return nil
}

// Ephemerals returns the paths of the ephemeral nodes session owns.
func (t *DataTree) Ephemerals(session int64) []string {
	paths := make([]string, 0, len(t.ephemerals[session]))
	for p := range t.ephemerals[session] {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

type ownerKind int

const (
	persistentKind ownerKind = iota
	ephemeralKind
	containerKind
	ttlKind
)

func (t *DataTree) kind(owner int64) ownerKind {
	switch {
	case owner == containerOwner:
		return containerKind
	case t.extended && owner&ttlOwnerMask == ttlOwnerMask:
		return ttlKind
	case owner != 0:
		return ephemeralKind
	}
	return persistentKind
}

func (t *DataTree) indexOwner(path string, owner int64) {
	if t.kind(owner) != ephemeralKind {
		return
	}
	set := t.ephemerals[owner]
	if set == nil {
		set = make(map[string]struct{})
		t.ephemerals[owner] = set
	}
	set[path] = struct{}{}
}

// Apply applies one logged transaction as a starting ZooKeeper replays
// it, sessions included, and returns the error code ZooKeeper's
// processTxn would have reported (an error is part of replaying, not a
// failure: a fuzzy snapshot may already hold what a transaction does).
func (t *DataTree) Apply(txn *Txn) proto.Code {
	switch txn.Type {
	case proto.OpCreateSession:
		if r, ok := txn.Record.(*CreateSessionTxn); ok {
			t.Sessions[txn.Session] = r.Timeout
		}
	case proto.OpCloseSession:
		delete(t.Sessions, txn.Session)
	}
	rc := t.process(txn.Header, txn.Record)
	if txn.Zxid > t.LastZxid {
		t.LastZxid = txn.Zxid
	}
	return rc
}

// process is DataTree.processTxn for one transaction or sub-transaction.
func (t *DataTree) process(h Header, rec any) proto.Code {
	var rc proto.Code
	var createPath string
	var createCversion int32
	switch r := rec.(type) {
	case *CreateTxn:
		owner := int64(0)
		if r.Ephemeral {
			owner = h.Session
		}
		rc = t.createNode(r.Path, r.Data, r.ACL, owner, r.ParentCversion, h.Zxid, h.Time)
		createPath, createCversion = r.Path, r.ParentCversion
	case *CreateTTLTxn:
		rc = t.createNode(r.Path, r.Data, r.ACL, ttlOwnerMask|r.TTL, r.ParentCversion, h.Zxid, h.Time)
	case *CreateContainerTxn:
		rc = t.createNode(r.Path, r.Data, r.ACL, containerOwner, r.ParentCversion, h.Zxid, h.Time)
	case *DeleteTxn:
		rc = t.deleteNode(r.Path, h.Zxid)
	case *SetDataTxn:
		rc = t.setData(r.Path, r.Data, r.Version, h.Zxid, h.Time)
	case *SetACLTxn:
		rc = t.setACL(r.Path, r.ACL, r.Version)
	case *CloseSessionTxn:
		t.killSession(h.Session, h.Zxid, r.Paths)
	case nil:
		if h.Type == proto.OpCloseSession {
			t.killSession(h.Session, h.Zxid, nil)
		}
	case *ErrorTxn:
		rc = r.Err
	case *MultiTxn:
		rc = t.multi(h, r)
	}
	// A create that finds its node already there is a transaction a fuzzy
	// snapshot holds, or a node deleted with its session and made again:
	// ZooKeeper still moves the parent's cversion and pzxid forward.
	if h.Type == proto.OpCreate && rc == proto.ErrNodeExists {
		if err := t.setCversionPzxid(parentOf(createPath), createCversion, h.Zxid); err != proto.OK {
			rc = err
		}
	}
	return rc
}

func (t *DataTree) multi(h Header, m *MultiTxn) proto.Code {
	failed := slices.ContainsFunc(m.Txns, func(s SubTxn) bool { return s.Type == proto.OpError })
	postFailed := false
	var rc proto.Code
	for _, sub := range m.Txns {
		typ, rec := sub.Type, sub.Record
		if sub.Type == proto.OpError {
			postFailed = true
		}
		if failed && sub.Type != proto.OpError {
			// ZooKeeper turns every operation of a failed multi into an
			// error, so none takes effect.
			code := proto.OK
			if postFailed {
				code = proto.ErrRuntimeInconsistency
			}
			typ, rec = proto.OpError, &ErrorTxn{Err: code}
		}
		sh := h
		sh.Type = typ
		if src := t.process(sh, rec); src != proto.OK && rc == proto.OK {
			rc = src
		}
	}
	return rc
}

// parentOf returns the parent of path as the nodes map keys it: "" for
// the root.
func parentOf(path string) string {
	return path[:max(strings.LastIndexByte(path, '/'), 0)]
}

func (t *DataTree) createNode(path string, data []byte, acl []proto.ACL, owner int64, parentCversion int32, zxid, time int64) proto.Code {
	slash := strings.LastIndexByte(path, '/')
	if slash < 0 {
		return proto.ErrNoNode
	}
	parentPath, name := path[:slash], path[slash+1:]
	parent := t.nodes[parentPath]
	if parent == nil {
		return proto.ErrNoNode
	}
	if _, ok := parent.children[name]; ok {
		return proto.ErrNodeExists
	}
	if parentCversion == -1 {
		parentCversion = parent.Stat.Cversion + 1
	}
	// A create replayed over a fuzzy snapshot must not take the
	// parent's cversion and pzxid back.
	if parentCversion > parent.Stat.Cversion {
		parent.Stat.Cversion = parentCversion
		parent.Stat.Pzxid = zxid
	}
	if parent.children == nil {
		parent.children = make(map[string]struct{})
	}
	parent.children[name] = struct{}{}
	if data == nil {
		data = []byte{}
	}
	t.nodes[path] = &Node{Data: data, ACL: t.acls.intern(acl), Stat: Stat{
		Czxid: zxid, Mzxid: zxid, Pzxid: zxid, Ctime: time, Mtime: time, EphemeralOwner: owner,
	}}
	t.indexOwner(path, owner)
	if strings.HasPrefix(parentPath, quotaRoot) {
		switch name {
		case limitNode:
			t.quotas[strings.TrimPrefix(parentPath, quotaRoot)] = struct{}{}
		case statNode:
			t.recountQuota(strings.TrimPrefix(parentPath, quotaRoot))
		}
	}
	if prefix, ok := t.quotaPrefix(path); ok {
		t.addQuotaUsage(prefix, int64(len(data)), 1)
	}
	return proto.OK
}

func (t *DataTree) deleteNode(path string, zxid int64) proto.Code {
	slash := strings.LastIndexByte(path, '/')
	if slash < 0 {
		return proto.ErrNoNode
	}
	parentPath, name := path[:slash], path[slash+1:]
	parent := t.nodes[parentPath]
	if parent == nil {
		return proto.ErrNoNode
	}
	// The child may be gone already (a fuzzy snapshot), but the parent's
	// pzxid still moves forward, as in ZooKeeper.
	delete(parent.children, name)
	if zxid > parent.Stat.Pzxid {
		parent.Stat.Pzxid = zxid
	}
	n := t.nodes[path]
	if n == nil {
		return proto.ErrNoNode
	}
	delete(t.nodes, path)
	if t.kind(n.Stat.EphemeralOwner) == ephemeralKind {
		if set := t.ephemerals[n.Stat.EphemeralOwner]; set != nil {
			delete(set, path)
			if len(set) == 0 {
				delete(t.ephemerals, n.Stat.EphemeralOwner)
			}
		}
	}
	if strings.HasPrefix(parentPath, "/zookeeper") && name == limitNode {
		delete(t.quotas, strings.TrimPrefix(parentPath, quotaRoot))
	}
	if prefix, ok := t.quotaPrefix(path); ok {
		t.addQuotaUsage(prefix, -int64(len(n.Data)), -1)
	}
	return proto.OK
}

func (t *DataTree) setData(path string, data []byte, version int32, zxid, time int64) proto.Code {
	n := t.nodes[path]
	if n == nil {
		return proto.ErrNoNode
	}
	old := n.Data
	if data == nil {
		data = []byte{}
	}
	n.Data = data
	n.Stat.Mtime, n.Stat.Mzxid, n.Stat.Version = time, zxid, version
	if prefix, ok := t.quotaPrefix(path); ok {
		t.addQuotaUsage(prefix, int64(len(data)-len(old)), 0)
	}
	return proto.OK
}

func (t *DataTree) setACL(path string, acl []proto.ACL, version int32) proto.Code {
	n := t.nodes[path]
	if n == nil {
		return proto.ErrNoNode
	}
	n.Stat.Aversion = version
	n.ACL = t.acls.intern(acl)
	return proto.OK
}

func (t *DataTree) setCversionPzxid(path string, cversion int32, zxid int64) proto.Code {
	path = strings.TrimSuffix(path, "/")
	n := t.nodes[path]
	if n == nil {
		return proto.ErrNoNode
	}
	if cversion == -1 {
		cversion = n.Stat.Cversion + 1
	}
	if cversion > n.Stat.Cversion {
		n.Stat.Cversion, n.Stat.Pzxid = cversion, zxid
	}
	return proto.OK
}

// killSession deletes the ephemerals of a closed session: those the
// transaction lists, then any others the tree has for it.
func (t *DataTree) killSession(session, zxid int64, listed []string) {
	own := t.ephemerals[session]
	delete(t.ephemerals, session)
	for _, p := range listed {
		delete(own, p)
		t.deleteNode(p, zxid)
	}
	rest := make([]string, 0, len(own))
	for p := range own {
		rest = append(rest, p)
	}
	// ZooKeeper deletes them in its HashSet's order; the order changes no
	// Stat, since a delete moves a parent's pzxid to the same zxid.
	sort.Strings(rest)
	for _, p := range rest {
		t.deleteNode(p, zxid)
	}
}

// quotaPrefix returns the deepest path with a quota that is path or an
// ancestor of it, as ZooKeeper's getMaxPrefixWithQuota; a quota on the
// root counts for nothing.
func (t *DataTree) quotaPrefix(path string) (string, bool) {
	if len(t.quotas) == 0 {
		return "", false
	}
	for p := path; p != ""; p = parentOf(p) {
		if _, ok := t.quotas[p]; ok {
			return p, true
		}
	}
	return "", false
}

// addQuotaUsage adds to the count and bytes of the quota at prefix, in
// its zookeeper_stats node's data, which ZooKeeper changes in place: the
// stat node's own Stat does not move.
func (t *DataTree) addQuotaUsage(prefix string, bytesDiff int64, countDiff int64) {
	n := t.nodes[quotaRoot+prefix+"/"+statNode]
	if n == nil {
		return
	}
	st := parseStatsTrack(n.Data)
	st.set("count", st.get("count")+countDiff)
	st.set("bytes", st.get("bytes")+bytesDiff)
	n.Data = st.bytes()
}

// recountQuota sets the usage of the quota at path to what its subtree
// holds, as ZooKeeper does when a stat node is made or a snapshot loaded.
func (t *DataTree) recountQuota(path string) {
	n := t.nodes[quotaRoot+path+"/"+statNode]
	if n == nil {
		return
	}
	var count, size int64
	var walk func(p string)
	walk = func(p string) {
		m := t.nodes[p]
		if m == nil {
			return
		}
		count++
		size += int64(len(m.Data))
		for c := range m.children {
			walk(p + "/" + c)
		}
	}
	walk(path)
	st := statsTrack{}
	st.set("bytes", size)
	st.set("count", count)
	n.Data = st.bytes()
}

// setupQuotas finds the quotas after a snapshot is loaded and recounts
// their usage, as ZooKeeper's DataTree.setupQuota does.
func (t *DataTree) setupQuotas() {
	var visit func(p string)
	visit = func(p string) {
		n := t.nodes[p]
		if n == nil {
			return
		}
		if len(n.children) == 0 {
			if strings.HasSuffix(p, "/"+limitNode) {
				real := strings.TrimSuffix(strings.TrimPrefix(p, quotaRoot), "/"+limitNode)
				t.recountQuota(real)
				t.quotas[real] = struct{}{}
			}
			return
		}
		for c := range n.children {
			visit(p + "/" + c)
		}
	}
	visit(quotaRoot)
}

// statsTrack is ZooKeeper's StatsTrack: key=value pairs.
type statsTrack map[string]int64

func parseStatsTrack(b []byte) statsTrack {
	st := statsTrack{}
	for _, pair := range strings.FieldsFunc(string(b), func(r rune) bool { return r == ',' || r == ';' }) {
		k, v, _ := strings.Cut(pair, "=")
		v, _, _ = strings.Cut(v, "=")
		if v == "" {
			st[k] = -1
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			// ZooKeeper's parse throws here and the change is lost with
			// it; keeping the old data is the nearest.
			continue
		}
		st[k] = n
	}
	return st
}

func (st statsTrack) get(k string) int64 {
	if v, ok := st[k]; ok {
		return v
	}
	return -1
}

func (st statsTrack) set(k string, v int64) { st[k] = v }

// bytes writes the pairs as StatsTrack.toString: count and bytes first,
// then, after an extra '=', the others sorted and ';'-separated.
func (st statsTrack) bytes() []byte {
	var b bytes.Buffer
	b.WriteString("count=" + strconv.FormatInt(st.get("count"), 10) + ",bytes=" + strconv.FormatInt(st.get("bytes"), 10))
	var keys []string
	for k := range st {
		if k != "count" && k != "bytes" {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		b.WriteByte('=')
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString(";" + k + "=" + strconv.FormatInt(st[k], 10))
		}
	}
	return b.Bytes()
}

// aclInterner shares one slice among nodes with equal ACLs.
type aclInterner struct {
	byKey map[string][]proto.ACL
}

func (a *aclInterner) intern(acl []proto.ACL) []proto.ACL {
	if acl == nil {
		// ZooKeeper's ACL cache takes a null list for OPEN_ACL_UNSAFE.
		return openACL
	}
	var k strings.Builder
	for _, e := range acl {
		k.WriteString(strconv.Itoa(int(e.Perms)))
		k.WriteByte(0)
		k.WriteString(e.ID.Scheme)
		k.WriteByte(0)
		k.WriteString(e.ID.ID)
		k.WriteByte(0)
	}
	if v, ok := a.byKey[k.String()]; ok {
		return v
	}
	v := slices.Clone(acl)
	a.byKey[k.String()] = v
	return v
}
