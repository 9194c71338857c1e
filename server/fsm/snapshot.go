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
// A snapshot is a consistent cut at Applied(): it is written between two
// Apply calls.
const (
	snapMagic   = "CLSN"
	snapVersion = 1
)

// ErrBadSnapshot is returned by Restore for a snapshot it cannot read.
var ErrBadSnapshot = errors.New("fsm: bad snapshot")

// Save writes the whole state to w.
func (f *FSM) Save(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	e := proto.NewEncoder(make([]byte, 0, 4096))
	e = proto.NewEncoder(append(e.Bytes(), snapMagic...))
	e.Int(snapVersion)
	e.Long(int64(f.applied))
	e.Long(f.lastZxid)
	sessions := f.Sessions()
	e.Int(int32(len(sessions)))
	for _, s := range sessions {
		e.Long(s.ID)
		e.Int(s.Timeout)
		e.Long(int64(s.Owner))
	}
	e.Int(int32(f.tree.Len()))
	if _, err := bw.Write(e.Bytes()); err != nil {
		return fmt.Errorf("fsm: save snapshot: %w", err)
	}
	var werr error
	buf := make([]byte, 0, 4096)
	f.tree.Walk(func(path string, n *tree.Node) bool {
		e := proto.NewEncoder(buf[:0])
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
		buf = e.Bytes()
		_, werr = bw.Write(buf)
		return werr == nil
	})
	if werr != nil {
		return fmt.Errorf("fsm: save snapshot: %w", werr)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("fsm: save snapshot: %w", err)
	}
	return nil
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
