package tree

import "github.com/collie-io/collie/proto"

type undoKind uint8

const (
	undoCreate undoKind = iota
	undoDelete
	undoSetData
	undoSetACL
	// undoChildZxids puts back a node's cversion and pzxid, kept in
	// parentCversion and parentPzxid.
	undoChildZxids
)

// undo holds what one mutation changed, enough to put it back.
type undo struct {
	kind undoKind
	path string
	// node is the deleted node (undoDelete).
	node *Node
	// parentCversion and parentPzxid are the parent's before a create or
	// delete, or the node's own (undoChildZxids).
	parentCversion int32
	parentPzxid    int64
	data           []byte
	acl            ACLRef
	version        int32
	mzxid, mtime   int64
}

func (t *Tree) record(u undo) {
	if t.journal != nil {
		*t.journal = append(*t.journal, u)
	}
}

// Begin starts recording mutations so that Rollback can undo them; a multi
// calls it before its first op. Commit or Rollback ends the recording.
func (t *Tree) Begin() {
	j := make([]undo, 0, 8)
	t.journal = &j
}

// Commit keeps every mutation since Begin.
func (t *Tree) Commit() { t.journal = nil }

// Rollback undoes every mutation since Begin, newest first, leaving the
// tree exactly as it was.
func (t *Tree) Rollback() {
	j := *t.journal
	t.journal = nil
	for i := len(j) - 1; i >= 0; i-- {
		u := j[i]
		switch u.kind {
		case undoCreate:
			n := t.lookup(u.path)
			parentPath := proto.Parent(u.path)
			parent := t.lookup(parentPath)
			t.unlink(parent, u.path, n)
			t.beforeChange(parentPath, parent)
			parent.Cversion, parent.Pzxid = u.parentCversion, u.parentPzxid
			t.afterChange(parentPath, parent)
		case undoDelete:
			parentPath := proto.Parent(u.path)
			parent := t.lookup(parentPath)
			t.insert(parent, u.path, u.node)
			t.beforeChange(parentPath, parent)
			parent.Cversion, parent.Pzxid = u.parentCversion, u.parentPzxid
			t.afterChange(parentPath, parent)
		case undoSetData:
			n := t.lookup(u.path)
			t.beforeChange(u.path, n)
			t.dataSize += int64(len(u.data) - len(n.Data))
			n.Data, n.Version, n.Mzxid, n.Mtime = u.data, u.version, u.mzxid, u.mtime
			t.afterChange(u.path, n)
		case undoSetACL:
			n := t.lookup(u.path)
			t.beforeChange(u.path, n)
			t.setACL(n, u.acl)
			n.Aversion = u.version
			t.afterChange(u.path, n)
		case undoChildZxids:
			n := t.lookup(u.path)
			t.beforeChange(u.path, n)
			n.Cversion, n.Pzxid = u.parentCversion, u.parentPzxid
			t.afterChange(u.path, n)
		}
	}
}
