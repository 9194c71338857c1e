package fsm

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
)

// Snapshot format (jute encoding throughout):
//
//	magic    "CLSN" (4 bytes)
//	version  int (1)
//	applied  long, lastZxid long
//	sessions int count, then per session: id long, timeout int, owner long
//	nodes    int count, then per node, parents before children:
//	         path, data buffer, acl vector,
//	         czxid, mzxid, pzxid, ctime, mtime longs,
//	         version, cversion, aversion ints, ephemeralOwner long
//
// A snapshot is a consistent cut at the Applied() of BeginSnapshot, even
// when Apply runs while it is written. Nodes come in an order where every
// parent precedes its children, not necessarily sorted.
const (
	snapMagic   = "CLSN"
	snapVersion = 1
)

// ErrBadSnapshot is returned by Restore for a snapshot it cannot read.
var ErrBadSnapshot = errors.New("fsm: bad snapshot")

// Save writes the whole state to w. It needs exclusive access to the FSM
// throughout; BeginSnapshot lets Apply go on while a snapshot is written.
func (f *FSM) Save(w io.Writer) error {
	job := f.BeginSnapshot()
	defer f.EndSnapshot()
	return job.Write(w, func() {}, func() {})
}

// SnapshotJob writes the state as it was when BeginSnapshot was called.
type SnapshotJob struct {
	f        *FSM
	applied  uint64
	lastZxid int64
	sessions []Session
	paths    []string
}

// BeginSnapshot freezes the state for a snapshot. It needs exclusive access
// (no Apply at the same time) and is quick: it lists the paths. Until
// EndSnapshot, Apply keeps the frozen state of what it changes, so the
// job's Write can run beside it.
func (f *FSM) BeginSnapshot() *SnapshotJob {
	return &SnapshotJob{f: f, applied: f.applied, lastZxid: f.lastZxid, sessions: f.Sessions(), paths: f.tree.Freeze()}
}

// EndSnapshot ends the freeze of BeginSnapshot. It needs exclusive access.
func (f *FSM) EndSnapshot() { f.tree.Thaw() }

// snapshotChunk is how many nodes Write encodes per hold of the lock; a
// variable so tests can interleave writes finely.
var snapshotChunk = 4096

// Write encodes the frozen state to w. It reads the tree only between
// lock and unlock, a chunk of nodes at a time, so the caller can let Apply
// run between chunks (lock and unlock take and release a read lock).
func (j *SnapshotJob) Write(w io.Writer, lock, unlock func()) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	e := proto.NewEncoder(make([]byte, 0, 4096))
	e = proto.NewEncoder(append(e.Bytes(), snapMagic...))
	e.Int(snapVersion)
	e.Long(int64(j.applied))
	e.Long(j.lastZxid)
	e.Int(int32(len(j.sessions)))
	for _, s := range j.sessions {
		e.Long(s.ID)
		e.Int(s.Timeout)
		e.Long(int64(s.Owner))
	}
	e.Int(int32(len(j.paths)))
	if _, err := bw.Write(e.Bytes()); err != nil {
		return fmt.Errorf("fsm: save snapshot: %w", err)
	}
	buf := make([]byte, 0, 64<<10)
	for start := 0; start < len(j.paths); start += snapshotChunk {
		buf = buf[:0]
		lock()
		for _, path := range j.paths[start:min(start+snapshotChunk, len(j.paths))] {
			n, ok := j.f.tree.FrozenNode(path)
			if !ok {
				unlock()
				panic(fmt.Sprintf("fsm: frozen path %q has no node", path))
			}
			buf = appendNode(buf, path, n)
		}
		unlock()
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("fsm: save snapshot: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("fsm: save snapshot: %w", err)
	}
	return nil
}

func appendNode(buf []byte, path string, n *tree.Node) []byte {
	e := proto.NewEncoder(buf)
	e.String(path)
	e.Buffer(n.Data)
	e.ACLs(n.ACL)
	e.Long(n.Czxid)
	e.Long(n.Mzxid)
	e.Long(n.Pzxid)
	e.Long(n.Ctime)
	e.Long(n.Mtime)
	e.Int(n.Version)
	e.Int(n.Cversion)
	e.Int(n.Aversion)
	e.Long(n.EphemeralOwner)
	return e.Bytes()
}

// Restore replaces the state with a snapshot written by Save.
func Restore(opts Options, data []byte) (*FSM, error) {
	if len(data) < len(snapMagic) || string(data[:len(snapMagic)]) != snapMagic {
		return nil, fmt.Errorf("%w: no magic", ErrBadSnapshot)
	}
	d := proto.NewDecoder(data[len(snapMagic):])
	if v := d.Int(); v != snapVersion {
		return nil, fmt.Errorf("%w: version %d", ErrBadSnapshot, v)
	}
	f := New(opts)
	f.applied = uint64(d.Long())
	f.lastZxid = d.Long()
	ns := d.Int()
	for i := int32(0); i < ns && d.Err() == nil; i++ {
		s := &Session{ID: d.Long(), Timeout: d.Int(), Owner: uint64(d.Long())}
		f.sessions[s.ID] = s
	}
	nn := d.Int()
	for i := int32(0); i < nn && d.Err() == nil; i++ {
		path := d.String()
		n := &tree.Node{Data: d.Buffer()}
		n.ACL = d.ACLs()
		n.Czxid, n.Mzxid, n.Pzxid = d.Long(), d.Long(), d.Long()
		n.Ctime, n.Mtime = d.Long(), d.Long()
		n.Version, n.Cversion, n.Aversion = d.Int(), d.Int(), d.Int()
		n.EphemeralOwner = d.Long()
		if d.Err() != nil {
			break
		}
		if path != "/" {
			if _, ok := f.tree.Get(proto.Parent(path)); !ok {
				return nil, fmt.Errorf("%w: %q before its parent", ErrBadSnapshot, path)
			}
		}
		f.tree.Restore(path, n)
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	return f, nil
}
