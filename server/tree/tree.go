package tree

import (
	"fmt"
	"slices"
	"strings"

	"github.com/collie-io/collie/proto"
)

// Owner values that mark a node as a container or a TTL node, as ZooKeeper
// stores them in Stat.EphemeralOwner (EphemeralType).
const (
	ContainerOwner int64 = -1 << 63 // 0x8000000000000000
	ttlMask        int64 = -1 << 56 // 0xff00000000000000
	ttlValueMask   int64 = 1<<40 - 1
)

// TTLOwner returns the ephemeral owner of a TTL node with the given TTL in
// milliseconds.
func TTLOwner(ttl int64) int64 { return ttlMask | ttl }

// Kind is what a node's ephemeral owner makes of it.
type Kind int

const (
	Persistent Kind = iota
	Ephemeral
	Container
	TTL
)

// KindOf classifies an ephemeral owner. TTL owners are only recognised when
// extended types are enabled, as in ZooKeeper.
func KindOf(owner int64, extended bool) Kind {
	switch {
	case extended && owner&ttlMask == ttlMask:
		return TTL
	case owner == ContainerOwner:
		return Container
	case owner != 0:
		return Ephemeral
	}
	return Persistent
}

// TTLOf returns the TTL in milliseconds of a TTL node's owner.
func TTLOf(owner int64) int64 { return owner & ttlValueMask }

// Node is one znode. Its fields are read by the caller and changed only by
// Tree's methods.
type Node struct {
	Data []byte

	Czxid, Mzxid, Pzxid         int64
	Ctime, Mtime                int64
	EphemeralOwner              int64
	Version, Cversion, Aversion int32
	// acl names the node's ACL in the tree's table (Tree.ACL reads it).
	// With it the struct is 96 bytes, an allocation size class of its
	// own: a million nodes are 32 MiB smaller than with a slice here.
	acl ACLRef

	// children maps each child's name to it. The tree is linked through
	// these maps alone: there is no index of full paths, whose keys would
	// cost more than the nodes' own fields.
	children map[string]*Node
}

// Stat returns the node's Stat as a client sees it. The stored Cversion
// counts child creations (it numbers sequential children); a client sees
// creations plus deletions, which is 2*creations - children, exactly as
// ZooKeeper's DataNode.copyStat reports it. The root of a new tree thus
// shows -1, as on ZooKeeper.
//
// Containers and TTL nodes show an ephemeral owner of 0, as ZooKeeper's
// getClientEphemeralOwner reports them; the owner marks them internally only.
func (t *Tree) Stat(n *Node) proto.Stat {
	owner := n.EphemeralOwner
	if KindOf(owner, t.extended) != Ephemeral {
		owner = 0
	}
	return proto.Stat{
		Czxid: n.Czxid, Mzxid: n.Mzxid, Pzxid: n.Pzxid,
		Ctime: n.Ctime, Mtime: n.Mtime,
		Version: n.Version, Cversion: n.Cversion*2 - int32(len(n.children)), Aversion: n.Aversion,
		EphemeralOwner: owner,
		DataLength:     int32(len(n.Data)),
		NumChildren:    int32(len(n.children)),
	}
}

// NumChildren returns the number of children.
func (n *Node) NumChildren() int { return len(n.children) }

// Children returns the names of the children, sorted.
func (n *Node) Children() []string {
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Tree is the znode tree. The zero value is not usable; call New.
type Tree struct {
	root *Node
	// count is the number of nodes, the root included.
	count int
	// Invariant: Node.Cversion counts child creations, never deletions.

	// ephemerals indexes ephemeral nodes by owning session.
	ephemerals map[int64]map[string]struct{}
	containers map[string]struct{}
	ttls       map[string]struct{}
	acls       aclCache
	// extended enables TTL nodes (extendedTypesEnabled).
	extended bool
	// dataSize is the sum of the lengths of every path and every node's data,
	// as ZooKeeper's approximate data size.
	dataSize int64
	// digest is ZooKeeper's digest of the tree (see Digest).
	// Invariant: the sum of nodeDigest over every node.
	digest uint64

	// quotas counts, by path, the zookeeper_limits nodes that give the
	// path a quota (see quota.go).
	quotas map[string]int
	// keepQuotaStats says mutations keep quota stats (KeepQuotaStats).
	keepQuotaStats bool

	// journal, when non-nil, records how to undo each mutation.
	journal *[]undo

	// restoreParent is the parent of the last node restored, at
	// restoreParentPath, or nil.
	restoreParent     *Node
	restoreParentPath string

	// frozen, while a snapshot's cut is open (see Freeze), holds what the
	// cut needs of every node changed since: its state and its children
	// at the freeze. Nodes not in it are unchanged.
	frozen map[*Node]*frozenNode
}

// System nodes that every ZooKeeper 3.8 server has.
const (
	ZookeeperPath = "/zookeeper"
	QuotaPath     = "/zookeeper/quota"
	ConfigPath    = "/zookeeper/config"
)

// New returns a tree with the root and ZooKeeper's system nodes.
func New(extended bool) *Tree {
	t := &Tree{
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
		quotas:     make(map[string]int),
		acls:       newACLCache(),
		extended:   extended,
	}
	empty := []byte{}
	t.root = &Node{Data: empty, acl: t.acls.intern(OpenACL)}
	t.acls.acquire(t.root.acl)
	t.count = 1
	t.afterChange("/", t.root)
	zk := &Node{Data: empty, acl: t.acls.intern(OpenACL)}
	t.insert(t.root, ZookeeperPath, zk)
	t.insert(zk, QuotaPath, &Node{Data: empty, acl: t.acls.intern(OpenACL)})
	// ZooKeeper creates the config node with aversion -1.
	t.insert(zk, ConfigPath, &Node{Data: empty, acl: t.acls.intern(ReadACL), Aversion: -1})
	return t
}

// OpenACL is world:anyone with every permission; ReadACL is world:anyone
// read-only (the ACL of /zookeeper/config).
var (
	OpenACL = []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
	ReadACL = []proto.ACL{{Perms: proto.PermRead, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
)

// ACL returns n's ACL. The slice is shared between nodes with equal ACLs:
// never modify it.
func (t *Tree) ACL(n *Node) []proto.ACL { return t.acls.get(n.acl) }

// Sweep drops the ACLs that no node uses any more. The state machine calls
// it after each entry; while a snapshot's cut is open it waits for Thaw.
func (t *Tree) Sweep() {
	if t.frozen == nil {
		t.acls.sweep()
	}
}

// Extended reports whether TTL nodes are enabled.
func (t *Tree) Extended() bool { return t.extended }

// Get returns the node at path.
func (t *Tree) Get(path string) (*Node, bool) {
	n := t.lookup(path)
	return n, n != nil
}

// lookup walks from the root to path, one name at a time; nil if there is
// no node at path. path must be valid.
func (t *Tree) lookup(path string) *Node {
	n := t.root
	if path == "/" {
		return n
	}
	rest := path[1:]
	for n != nil {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return n.children[rest]
		}
		n = n.children[rest[:i]]
		rest = rest[i+1:]
	}
	return nil
}

// Len returns the number of nodes, the root and system nodes included.
func (t *Tree) Len() int { return t.count }

// ReportedCount is the node count as ZooKeeper's servers report it (srvr's
// Node count, mntr's zk_znode_count, the znode_count metric): their
// DataTree holds the root twice, as "" and as "/", and counts both.
func (t *Tree) ReportedCount() int { return t.count + 1 }

// DataSize returns the approximate bytes of paths and data, as ZooKeeper's
// approximate_data_size.
func (t *Tree) DataSize() int64 { return t.dataSize }

// insert links n under parent, the node at path's parent, and indexes it.
func (t *Tree) insert(parent *Node, path string, n *Node) {
	if parent.children == nil {
		parent.children = make(map[string]*Node)
	}
	// A name of its own: a slice of path would keep the whole request's
	// path alive for as long as the node lives.
	parent.children[strings.Clone(proto.Base(path))] = n
	t.acls.acquire(n.acl)
	t.count++
	t.dataSize += int64(len(path) + len(n.Data))
	t.index(path, n)
	t.afterChange(path, n)
}

// unlink removes n, a leaf, from parent and from the indexes.
func (t *Tree) unlink(parent *Node, path string, n *Node) {
	if n == t.restoreParent {
		t.restoreParent = nil
	}
	delete(parent.children, proto.Base(path))
	t.beforeChange(path, n)
	t.acls.release(n.acl)
	t.count--
	t.dataSize -= int64(len(path) + len(n.Data))
	t.unindex(path, n)
}

func (t *Tree) index(path string, n *Node) {
	t.indexQuota(path)
	switch KindOf(n.EphemeralOwner, t.extended) {
	case Ephemeral:
		set := t.ephemerals[n.EphemeralOwner]
		if set == nil {
			set = make(map[string]struct{})
			t.ephemerals[n.EphemeralOwner] = set
		}
		set[path] = struct{}{}
	case Container:
		t.containers[path] = struct{}{}
	case TTL:
		t.ttls[path] = struct{}{}
	}
}

func (t *Tree) unindex(path string, n *Node) {
	t.unindexQuota(path)
	switch KindOf(n.EphemeralOwner, t.extended) {
	case Ephemeral:
		if set := t.ephemerals[n.EphemeralOwner]; set != nil {
			delete(set, path)
			if len(set) == 0 {
				delete(t.ephemerals, n.EphemeralOwner)
			}
		}
	case Container:
		delete(t.containers, path)
	case TTL:
		delete(t.ttls, path)
	}
}

// SequenceName returns the name a sequential create of path gets: path
// followed by the parent's cversion, ten digits zero-padded. ZooKeeper
// formats with %010d, so a negative cversion keeps its sign.
func SequenceName(path string, parentCversion int32) string {
	return fmt.Sprintf("%s%010d", path, parentCversion)
}

// Create adds a node. The caller has checked that the parent exists and
// the path does not. The parent's cversion goes up by one and its pzxid
// becomes zxid.
func (t *Tree) Create(path string, data []byte, acl []proto.ACL, owner int64, zxid, time int64) *Node {
	parent := t.lookup(proto.Parent(path))
	return t.add(parent, path, data, acl, owner, zxid, time, func() {
		parent.Cversion++
		parent.Pzxid = zxid
	})
}

// CreateAt adds a node as ZooKeeper's DataTree.createNode applies a logged
// create, whose parentCversion is the parent's cversion after it (-1: one
// more than it is now). The parent's cversion and pzxid change only when
// that is above its cversion now, so that a create replayed over a state
// that already holds later changes does not take them back. The caller has
// checked that the parent exists and the path does not.
func (t *Tree) CreateAt(path string, data []byte, acl []proto.ACL, owner int64, parentCversion int32, zxid, time int64) *Node {
	parent := t.lookup(proto.Parent(path))
	return t.add(parent, path, data, acl, owner, zxid, time, func() {
		if parentCversion == -1 {
			parentCversion = parent.Cversion + 1
		}
		if parentCversion > parent.Cversion {
			parent.Cversion, parent.Pzxid = parentCversion, zxid
		}
	})
}

// add links a new node under parent, keeping what a cut and a rollback need
// of the parent first, and has moveParent move the parent's cversion and
// pzxid.
func (t *Tree) add(parent *Node, path string, data []byte, acl []proto.ACL, owner int64, zxid, time int64, moveParent func()) *Node {
	t.preserve(parent)
	t.preserveChildren(parent)
	t.record(undo{kind: undoCreate, path: path, parentCversion: parent.Cversion, parentPzxid: parent.Pzxid})
	parentPath := proto.Parent(path)
	t.beforeChange(parentPath, parent)
	n := &Node{
		Data: data, acl: t.acls.intern(acl),
		Czxid: zxid, Mzxid: zxid, Pzxid: zxid,
		Ctime: time, Mtime: time,
		EphemeralOwner: owner,
	}
	t.insert(parent, path, n)
	moveParent()
	t.afterChange(parentPath, parent)
	t.quotaCreated(path, len(data))
	return n
}

// SetCversionPzxid sets the cversion and pzxid of the node at path, which
// must exist, as ZooKeeper's DataTree.setCversionPzxid does when a logged
// create finds its node already there: only when cversion (-1: one more
// than the node's) is above the node's cversion now.
func (t *Tree) SetCversionPzxid(path string, cversion int32, zxid int64) {
	n := t.lookup(path)
	if cversion == -1 {
		cversion = n.Cversion + 1
	}
	if cversion <= n.Cversion {
		return
	}
	t.preserve(n)
	t.record(undo{kind: undoChildZxids, path: path, parentCversion: n.Cversion, parentPzxid: n.Pzxid})
	t.beforeChange(path, n)
	n.Cversion, n.Pzxid = cversion, zxid
	t.afterChange(path, n)
}

// RaisePzxid sets the pzxid of the node at path, which must exist, to zxid
// if that is higher: what ZooKeeper's DataTree.deleteNode does to the
// parent of a child that is already gone.
func (t *Tree) RaisePzxid(path string, zxid int64) {
	n := t.lookup(path)
	if zxid <= n.Pzxid {
		return
	}
	t.preserve(n)
	t.record(undo{kind: undoChildZxids, path: path, parentCversion: n.Cversion, parentPzxid: n.Pzxid})
	t.beforeChange(path, n)
	n.Pzxid = zxid
	t.afterChange(path, n)
}

// Delete removes a node that has no children. The parent's pzxid becomes
// zxid if that is higher; its cversion does not change, as in ZooKeeper.
func (t *Tree) Delete(path string, zxid int64) {
	n := t.lookup(path)
	if n == nil || len(n.children) > 0 {
		panic(fmt.Sprintf("tree: delete of %q which is missing or has children", path))
	}
	parent := t.lookup(proto.Parent(path))
	// The deleted node itself is not changed, only unlinked: a cut that
	// still holds it reads it as it is.
	t.preserve(parent)
	t.preserveChildren(parent)
	t.record(undo{kind: undoDelete, path: path, node: n, parentCversion: parent.Cversion, parentPzxid: parent.Pzxid})
	parentPath := proto.Parent(path)
	t.beforeChange(parentPath, parent)
	if zxid > parent.Pzxid {
		parent.Pzxid = zxid
	}
	t.afterChange(parentPath, parent)
	t.unlink(parent, path, n)
	t.addQuotaUsage(path, -1, -int64(len(n.Data)))
}

// SetData replaces a node's data and sets its version.
func (t *Tree) SetData(path string, data []byte, version int32, zxid, time int64) *Node {
	n := t.lookup(path)
	t.preserve(n)
	t.record(undo{kind: undoSetData, path: path, data: n.Data, version: n.Version, mzxid: n.Mzxid, mtime: n.Mtime})
	t.beforeChange(path, n)
	bytes := int64(len(data) - len(n.Data))
	t.dataSize += bytes
	n.Data = data
	n.Version = version
	n.Mzxid = zxid
	n.Mtime = time
	t.afterChange(path, n)
	// Even a change of no bytes writes the stats again, in the form
	// ZooKeeper writes them, as it does.
	t.addQuotaUsage(path, 0, bytes)
	return n
}

// SetACL replaces a node's ACL and sets its aversion.
func (t *Tree) SetACL(path string, acl []proto.ACL, aversion int32) *Node {
	n := t.lookup(path)
	t.preserve(n)
	t.record(undo{kind: undoSetACL, path: path, acl: n.acl, version: n.Aversion})
	t.beforeChange(path, n)
	t.setACL(n, t.acls.intern(acl))
	n.Aversion = aversion
	t.afterChange(path, n)
	return n
}

func (t *Tree) setACL(n *Node, ref ACLRef) {
	t.acls.acquire(ref)
	t.acls.release(n.acl)
	n.acl = ref
}

// Ephemerals returns the paths of a session's ephemeral nodes, sorted.
func (t *Tree) Ephemerals(session int64) []string {
	set := t.ephemerals[session]
	paths := make([]string, 0, len(set))
	for p := range set {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}

// EphemeralSessions returns the sessions that own ephemeral nodes, sorted.
func (t *Tree) EphemeralSessions() []int64 {
	ids := make([]int64, 0, len(t.ephemerals))
	for id := range t.ephemerals {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// EphemeralCount returns the number of ephemeral nodes.
func (t *Tree) EphemeralCount() int {
	n := 0
	for _, set := range t.ephemerals {
		n += len(set)
	}
	return n
}

// Candidates returns, sorted, the containers that have had children and
// have none now, and the TTL nodes without children whose TTL has run out
// at now (milliseconds): the nodes ZooKeeper's ContainerManager deletes.
func (t *Tree) Candidates(now int64) []string {
	var paths []string
	for p := range t.containers {
		if n := t.lookup(p); n.Cversion > 0 && len(n.children) == 0 {
			paths = append(paths, p)
		}
	}
	for p := range t.ttls {
		if t.TTLExpired(p, now) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths
}

// TTLExpired reports whether path is a childless TTL node whose TTL has run
// out at now (milliseconds since the last change of the node).
func (t *Tree) TTLExpired(path string, now int64) bool {
	n := t.lookup(path)
	if n == nil || len(n.children) > 0 || KindOf(n.EphemeralOwner, t.extended) != TTL {
		return false
	}
	return now-n.Mtime > TTLOf(n.EphemeralOwner)
}

// Walk calls fn for every node in depth-first order, parents before
// children and siblings sorted, until fn returns false.
func (t *Tree) Walk(fn func(path string, n *Node) bool) {
	t.walk("/", t.root, fn)
}

func (t *Tree) walk(path string, n *Node, fn func(string, *Node) bool) bool {
	if !fn(path, n) {
		return false
	}
	for _, name := range n.Children() {
		if !t.walk(proto.Join(path, name), n.children[name], fn) {
			return false
		}
	}
	return true
}

// CountDescendants returns the number of nodes below path (ZooKeeper's
// getAllChildrenNumber).
func (t *Tree) CountDescendants(path string) int {
	if path == "/" {
		return t.count - 1
	}
	n := t.lookup(path)
	if n == nil {
		return 0
	}
	count := 0
	stack := []*Node{n}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range n.children {
			count++
			stack = append(stack, c)
		}
	}
	return count
}

// HasPrefix reports whether path is prefix or below it.
func HasPrefix(path, prefix string) bool {
	if prefix == "/" || path == prefix {
		return true
	}
	return strings.HasPrefix(path, prefix) && path[len(prefix)] == '/'
}

// InternACL returns the reference of acl in the tree's table, for
// Restore. It stays valid until the next Sweep.
func (t *Tree) InternACL(acl []proto.ACL) ACLRef { return t.acls.intern(acl) }

// Restore puts a node read from a snapshot at path, keeping its Stat as
// given, with the ACL acl (from InternACL). Parents must be restored before
// their children; the root and the system nodes, which New creates, take
// the snapshot's values.
func (t *Tree) Restore(path string, n *Node, acl ACLRef) error {
	n.acl = acl
	if path == "/" {
		t.beforeChange(path, t.root)
		t.afterChange(path, n)
		n.children = t.root.children
		t.dataSize += int64(len(n.Data) - len(t.root.Data))
		t.acls.acquire(acl)
		t.acls.release(t.root.acl)
		t.root = n
		t.restoreParent = nil
		return nil
	}
	// Siblings come one after the other in a snapshot: look their parent
	// up once.
	parentPath := proto.Parent(path)
	parent := t.restoreParent
	if parent == nil || parentPath != t.restoreParentPath {
		parent = t.lookup(parentPath)
		if parent == nil {
			return fmt.Errorf("tree: %q restored before its parent", path)
		}
		t.restoreParent, t.restoreParentPath = parent, parentPath
	}
	if old, ok := parent.children[proto.Base(path)]; ok {
		// A node replaced may be the remembered parent.
		t.restoreParent = nil
		n.children = old.children
		t.beforeChange(path, old)
		t.afterChange(path, n)
		t.dataSize += int64(len(n.Data) - len(old.Data))
		t.acls.acquire(acl)
		t.acls.release(old.acl)
		t.unindex(path, old)
		parent.children[proto.Base(path)] = n
		t.index(path, n)
		return nil
	}
	t.insert(parent, path, n)
	return nil
}

// frozenNode is what a cut keeps of a node changed since the freeze.
type frozenNode struct {
	// node is a copy of the node at the freeze, children aside, if its
	// own fields have changed since (changed is set).
	node    Node
	changed bool
	// children are the node's children at the freeze, if they have
	// changed since (childrenSaved is set).
	children      []child
	childrenSaved bool
}

type child struct {
	name string
	node *Node
}

// Freeze opens a consistent cut of the tree for a snapshot and returns it.
// Until Thaw, mutations keep what the cut needs of the nodes they change,
// so the cut can be read while the tree goes on changing: a snapshot is
// written beside writes instead of stopping them. Freeze itself is quick;
// it copies nothing.
func (t *Tree) Freeze() *Cut {
	t.frozen = make(map[*Node]*frozenNode)
	return &Cut{t: t, count: t.count}
}

// Thaw ends the cut opened by Freeze.
func (t *Tree) Thaw() {
	t.frozen = nil
	t.acls.sweep()
}

// preserve keeps n's own fields as they are, if a cut is open and this is
// their first change since the freeze.
func (t *Tree) preserve(n *Node) {
	if t.frozen == nil {
		return
	}
	if f := t.frozenEntry(n); !f.changed {
		f.node = *n
		f.node.children = nil
		f.changed = true
	}
}

// preserveChildren keeps n's children as they are, if a cut is open and
// this is their first change since the freeze.
func (t *Tree) preserveChildren(n *Node) {
	if t.frozen == nil {
		return
	}
	if f := t.frozenEntry(n); !f.childrenSaved {
		f.children = childList(n)
		f.childrenSaved = true
	}
}

func (t *Tree) frozenEntry(n *Node) *frozenNode {
	f := t.frozen[n]
	if f == nil {
		f = &frozenNode{}
		t.frozen[n] = f
	}
	return f
}

func childList(n *Node) []child {
	list := make([]child, 0, len(n.children))
	for name, c := range n.children {
		list = append(list, child{name, c})
	}
	return list
}

// Cut is the tree as it was at a Freeze. It is read a chunk at a time, by
// Next, under the same lock as the tree's mutations, so that they can run
// between two chunks.
type Cut struct {
	t     *Tree
	count int
	// stack holds, for each node on the way down to the next one, its
	// children at the freeze and how many have been visited.
	stack   []cutFrame
	path    []byte
	started bool
}

type cutFrame struct {
	children []child
	next     int
	// pathLen is the length of this node's path in Cut.path; 0 for the
	// root, whose children's paths start with the separator.
	pathLen int
}

// Len returns the number of nodes in the cut.
func (c *Cut) Len() int { return c.count }

// Next calls fn for up to max nodes of the cut, in an order where every
// parent precedes its children, and reports whether nodes remain. fn gets
// the node's path (valid only during the call) and the node as it was at
// the freeze, which it must not modify or keep. Calls must hold the lock
// that serialises the tree's mutations (a read lock suffices).
func (c *Cut) Next(max int, fn func(path []byte, n *Node)) bool {
	if c.t.frozen == nil {
		panic("tree: Cut.Next after Thaw")
	}
	for visited := 0; visited < max; visited++ {
		if !c.started {
			c.started = true
			c.path = append(c.path[:0], '/')
			c.visit(c.t.root, 0, fn)
			continue
		}
		top := c.top()
		for top != nil && top.next == len(top.children) {
			c.stack = c.stack[:len(c.stack)-1]
			top = c.top()
		}
		if top == nil {
			return false
		}
		ch := top.children[top.next]
		top.next++
		c.path = append(append(c.path[:top.pathLen], '/'), ch.name...)
		c.visit(ch.node, len(c.path), fn)
	}
	for top := c.top(); top != nil && top.next == len(top.children); top = c.top() {
		c.stack = c.stack[:len(c.stack)-1]
	}
	return len(c.stack) > 0
}

func (c *Cut) top() *cutFrame {
	if len(c.stack) == 0 {
		return nil
	}
	return &c.stack[len(c.stack)-1]
}

// visit hands n, as it was at the freeze, to fn and puts its children at
// the freeze on the stack.
func (c *Cut) visit(n *Node, pathLen int, fn func([]byte, *Node)) {
	view := n
	var children []child
	saved := false
	if f := c.t.frozen[n]; f != nil {
		if f.changed {
			view = &f.node
		}
		children, saved = f.children, f.childrenSaved
	}
	if !saved {
		// Unchanged since the freeze: the live children are the cut's.
		children = childList(n)
	}
	fn(c.path, view)
	if len(children) > 0 {
		c.stack = append(c.stack, cutFrame{children: children, pathLen: pathLen})
	}
}
