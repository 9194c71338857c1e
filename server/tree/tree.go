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
	// ACL is shared between nodes with equal ACLs: never modify it in place.
	ACL []proto.ACL

	Czxid, Mzxid, Pzxid         int64
	Ctime, Mtime                int64
	Version, Cversion, Aversion int32
	EphemeralOwner              int64

	children map[string]struct{}
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
	// nodes maps every absolute path to its node.
	// Invariant: a node's children are exactly the paths one level below it.
	// Invariant: Node.Cversion counts child creations, never deletions.
	nodes map[string]*Node
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

	// journal, when non-nil, records how to undo each mutation.
	journal *[]undo

	// frozen, while a snapshot is being written, holds the node at the
	// freeze of every path changed since: a copy without children, or nil
	// for a path that did not exist. Paths not in it are unchanged.
	frozen map[string]*Node
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
		nodes:      make(map[string]*Node),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
		acls:       newACLCache(),
		extended:   extended,
	}
	empty := []byte{}
	t.nodes["/"] = &Node{Data: empty, ACL: t.acls.intern(OpenACL)}
	t.insert(ZookeeperPath, &Node{Data: empty, ACL: t.acls.intern(OpenACL)})
	t.insert(QuotaPath, &Node{Data: empty, ACL: t.acls.intern(OpenACL)})
	// ZooKeeper creates the config node with aversion -1.
	t.insert(ConfigPath, &Node{Data: empty, ACL: t.acls.intern(ReadACL), Aversion: -1})
	return t
}

// OpenACL is world:anyone with every permission; ReadACL is world:anyone
// read-only (the ACL of /zookeeper/config).
var (
	OpenACL = []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
	ReadACL = []proto.ACL{{Perms: proto.PermRead, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
)

// Extended reports whether TTL nodes are enabled.
func (t *Tree) Extended() bool { return t.extended }

// Get returns the node at path.
func (t *Tree) Get(path string) (*Node, bool) {
	n, ok := t.nodes[path]
	return n, ok
}

// Len returns the number of nodes, the root and system nodes included.
func (t *Tree) Len() int { return len(t.nodes) }

// DataSize returns the approximate bytes of paths and data, as ZooKeeper's
// approximate_data_size.
func (t *Tree) DataSize() int64 { return t.dataSize }

// insert links n under its parent and indexes it; the parent must exist.
func (t *Tree) insert(path string, n *Node) {
	parent := t.nodes[proto.Parent(path)]
	if parent.children == nil {
		parent.children = make(map[string]struct{})
	}
	parent.children[proto.Base(path)] = struct{}{}
	t.nodes[path] = n
	t.dataSize += int64(len(path) + len(n.Data))
	t.index(path, n)
}

func (t *Tree) index(path string, n *Node) {
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
	parent := t.nodes[proto.Parent(path)]
	t.preserve(path)
	t.preserve(proto.Parent(path))
	t.record(undo{kind: undoCreate, path: path, parentCversion: parent.Cversion, parentPzxid: parent.Pzxid})
	n := &Node{
		Data: data, ACL: t.acls.intern(acl),
		Czxid: zxid, Mzxid: zxid, Pzxid: zxid,
		Ctime: time, Mtime: time,
		EphemeralOwner: owner,
	}
	t.insert(path, n)
	parent.Cversion++
	parent.Pzxid = zxid
	return n
}

// Delete removes a node that has no children. The parent's pzxid becomes
// zxid if that is higher; its cversion does not change, as in ZooKeeper.
func (t *Tree) Delete(path string, zxid int64) {
	n := t.nodes[path]
	if n == nil || len(n.children) > 0 {
		panic(fmt.Sprintf("tree: delete of %q which is missing or has children", path))
	}
	parent := t.nodes[proto.Parent(path)]
	t.preserve(path)
	t.preserve(proto.Parent(path))
	t.record(undo{kind: undoDelete, path: path, node: n, parentCversion: parent.Cversion, parentPzxid: parent.Pzxid})
	delete(parent.children, proto.Base(path))
	if zxid > parent.Pzxid {
		parent.Pzxid = zxid
	}
	delete(t.nodes, path)
	t.dataSize -= int64(len(path) + len(n.Data))
	t.unindex(path, n)
}

// SetData replaces a node's data and sets its version.
func (t *Tree) SetData(path string, data []byte, version int32, zxid, time int64) *Node {
	n := t.nodes[path]
	t.preserve(path)
	t.record(undo{kind: undoSetData, path: path, data: n.Data, version: n.Version, mzxid: n.Mzxid, mtime: n.Mtime})
	t.dataSize += int64(len(data) - len(n.Data))
	n.Data = data
	n.Version = version
	n.Mzxid = zxid
	n.Mtime = time
	return n
}

// SetACL replaces a node's ACL and sets its aversion.
func (t *Tree) SetACL(path string, acl []proto.ACL, aversion int32) *Node {
	n := t.nodes[path]
	t.preserve(path)
	t.record(undo{kind: undoSetACL, path: path, acl: n.ACL, version: n.Aversion})
	n.ACL = t.acls.intern(acl)
	n.Aversion = aversion
	return n
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
		if n := t.nodes[p]; n.Cversion > 0 && len(n.children) == 0 {
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
	n, ok := t.nodes[path]
	if !ok || len(n.children) > 0 || KindOf(n.EphemeralOwner, t.extended) != TTL {
		return false
	}
	return now-n.Mtime > TTLOf(n.EphemeralOwner)
}

// Walk calls fn for every node in depth-first order, parents before
// children and siblings sorted, until fn returns false.
func (t *Tree) Walk(fn func(path string, n *Node) bool) {
	t.walk("/", t.nodes["/"], fn)
}

func (t *Tree) walk(path string, n *Node, fn func(string, *Node) bool) bool {
	if !fn(path, n) {
		return false
	}
	for _, name := range n.Children() {
		p := proto.Join(path, name)
		if !t.walk(p, t.nodes[p], fn) {
			return false
		}
	}
	return true
}

// CountDescendants returns the number of nodes below path (ZooKeeper's
// getAllChildrenNumber).
func (t *Tree) CountDescendants(path string) int {
	if path == "/" {
		return len(t.nodes) - 1
	}
	if _, ok := t.nodes[path]; !ok {
		return 0
	}
	count := 0
	stack := []string{path}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for name := range t.nodes[p].children {
			count++
			stack = append(stack, proto.Join(p, name))
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

// Reserve makes room for n nodes, so restoring a snapshot of n nodes does
// not grow the index step by step.
func (t *Tree) Reserve(n int) {
	if n <= len(t.nodes) {
		return
	}
	nodes := make(map[string]*Node, n)
	for p, node := range t.nodes {
		nodes[p] = node
	}
	t.nodes = nodes
}

// InternACL returns the slice the tree shares for ACLs equal to acl.
func (t *Tree) InternACL(acl []proto.ACL) []proto.ACL { return t.acls.intern(acl) }

// Restore puts a node read from a snapshot at path, keeping its Stat as
// given. Parents must be restored before their children; the root and the
// system nodes, which New creates, take the snapshot's values.
func (t *Tree) Restore(path string, n *Node) {
	n.ACL = t.acls.intern(n.ACL)
	if old, ok := t.nodes[path]; ok {
		n.children = old.children
		t.dataSize += int64(len(n.Data) - len(old.Data))
		t.unindex(path, old)
		t.nodes[path] = n
		t.index(path, n)
		return
	}
	t.insert(path, n)
}

// Freeze starts a consistent cut for a snapshot and returns every path at
// this moment, parents before children. Until Thaw, mutations keep the
// state each node had at the freeze, so FrozenNode can read the cut while
// the tree goes on changing: a snapshot is written beside writes instead
// of stopping them.
func (t *Tree) Freeze() []string {
	t.frozen = make(map[string]*Node)
	var byDepth [][]string
	for p := range t.nodes {
		d := strings.Count(p, "/")
		if p == "/" {
			d = 0
		}
		for len(byDepth) <= d {
			byDepth = append(byDepth, nil)
		}
		byDepth[d] = append(byDepth[d], p)
	}
	paths := make([]string, 0, len(t.nodes))
	for _, ps := range byDepth {
		paths = append(paths, ps...)
	}
	return paths
}

// Thaw ends the cut started by Freeze.
func (t *Tree) Thaw() { t.frozen = nil }

// FrozenNode returns the node at path as it was at the freeze; false if it
// did not exist then. Callers must not modify the node.
func (t *Tree) FrozenNode(path string) (*Node, bool) {
	if n, changed := t.frozen[path]; changed {
		return n, n != nil
	}
	n, ok := t.nodes[path]
	return n, ok
}

// preserve keeps the node at path as it is, if a snapshot's cut is open
// and this is its first change since the freeze.
func (t *Tree) preserve(path string) {
	if t.frozen == nil {
		return
	}
	if _, done := t.frozen[path]; done {
		return
	}
	n, ok := t.nodes[path]
	if !ok {
		t.frozen[path] = nil
		return
	}
	c := *n
	c.children = nil
	t.frozen[path] = &c
}
