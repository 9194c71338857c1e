package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
)

// Snapshot format (jute encoding throughout):
//
//	magic    "CLSN" (4 bytes)
//	version  int (5, or 4 when no session has flags, which 4 lacks; 3
//	         lacks the members with a log as well, 2 the secret too)
//	applied  long, lastZxid long
//	secret   buffer (-1 when none is set)
//	held     int count, then the ids (long) of the voters known to have
//	         held the log, ascending
//	sessions int count, then per session: id long, timeout int, owner long,
//	         flags int (1: a ZooKeeper session, Session.ZooKeeper)
//	nodes    int count, then per node, parents before children:
//	         path, data buffer, acl int (see below),
//	         czxid, mzxid, pzxid, ctime, mtime longs,
//	         version, cversion, aversion ints, ephemeralOwner long
//
// Nodes share ACLs, so each distinct ACL is written once: a node's acl is
// an index into the ACLs written so far, or, when it equals their number, a
// new ACL, an acl vector, follows the int.
//
// A snapshot holds the state the entries made, not the rules they were
// applied by: entry versions (entry.go) do not show in it, and the entries
// after it apply by their own versions' rules, as they would have without
// it.
//
// A snapshot is a consistent cut at the Applied() of BeginSnapshot, even
// when Apply runs while it is written. Nodes come in an order where every
// parent precedes its children, not necessarily sorted.
const (
	snapMagic   = "CLSN"
	snapVersion = 5
	// snapVersionNoFlags is the format before sessions had flags,
	// snapVersionNoHeld the one before the members with a log were
	// recorded, snapVersionNoSecret the one before the session secret was
	// replicated; all are still read.
	snapVersionNoFlags  = 4
	snapVersionNoHeld   = 3
	snapVersionNoSecret = 2
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
	secret   []byte
	heldLog  []uint64
	sessions []Session
	cut      *tree.Cut
}

// BeginSnapshot freezes the state for a snapshot. It needs exclusive access
// (no Apply at the same time) and is quick: it copies the sessions only. Until
// EndSnapshot, Apply keeps the frozen state of what it changes, so the
// job's Write can run beside it.
func (f *FSM) BeginSnapshot() *SnapshotJob {
	return &SnapshotJob{f: f, applied: f.applied, lastZxid: f.lastZxid, secret: f.secret, heldLog: f.MembersWithLog(), sessions: f.Sessions(), cut: f.tree.Freeze()}
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
	// Version 4 while no session needs flags, so that a server of the
	// version before reads what this one sends it.
	version := int32(snapVersionNoFlags)
	if slices.ContainsFunc(j.sessions, func(s Session) bool { return sessionFlags(s) != 0 }) {
		version = snapVersion
	}
	e.Int(version)
	e.Long(int64(j.applied))
	e.Long(j.lastZxid)
	e.Buffer(j.secret)
	e.Int(int32(len(j.heldLog)))
	for _, id := range j.heldLog {
		e.Long(int64(id))
	}
	e.Int(int32(len(j.sessions)))
	for _, s := range j.sessions {
		e.Long(s.ID)
		e.Int(s.Timeout)
		e.Long(int64(s.Owner))
		if version >= snapVersion {
			e.Int(sessionFlags(s))
		}
	}
	e.Int(int32(j.cut.Len()))
	if _, err := bw.Write(e.Bytes()); err != nil {
		return fmt.Errorf("fsm: save snapshot: %w", err)
	}
	buf := make([]byte, 0, 64<<10)
	acls := make(aclTable)
	written := 0
	for more := true; more; {
		buf = buf[:0]
		lock()
		more = j.cut.Next(snapshotChunk, func(path []byte, n *tree.Node) {
			buf = appendNode(buf, path, n, j.f.tree.ACL(n), acls)
			written++
		})
		unlock()
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("fsm: save snapshot: %w", err)
		}
	}
	if written != j.cut.Len() {
		panic(fmt.Sprintf("fsm: snapshot cut of %d nodes held %d", j.cut.Len(), written))
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("fsm: save snapshot: %w", err)
	}
	return nil
}

// aclTable numbers the distinct ACLs a snapshot has written. The tree
// shares one slice between nodes with equal ACLs, so the slice's first
// element identifies an ACL.
type aclTable map[*proto.ACL]int32

func appendNode(buf []byte, path []byte, n *tree.Node, acl []proto.ACL, acls aclTable) []byte {
	e := proto.NewEncoder(buf)
	e.Buffer(path)
	e.Buffer(n.Data)
	var key *proto.ACL
	if len(acl) > 0 {
		key = &acl[0]
	}
	if i, ok := acls[key]; ok {
		e.Int(i)
	} else {
		i = int32(len(acls))
		acls[key] = i
		e.Int(i)
		e.ACLs(acl)
	}
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

// Restore returns the state machine of a snapshot written by Save, read
// from r as a stream: the snapshot is never held in memory whole.
func Restore(opts Options, r io.Reader) (*FSM, error) {
	f, err := restore(opts, newSnapReader(r))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	return f, nil
}

func restore(opts Options, r *snapReader) (*FSM, error) {
	if magic := r.bytes(len(snapMagic)); r.err != nil || string(magic) != snapMagic {
		return nil, errors.New("no magic")
	}
	v := r.int()
	if v < snapVersionNoSecret || v > snapVersion {
		return nil, fmt.Errorf("format version %d; this Collie reads versions %d to %d", v, snapVersionNoSecret, snapVersion)
	}
	f := New(opts)
	f.applied = uint64(r.long())
	f.lastZxid = r.long()
	if v >= snapVersionNoHeld {
		var scratch slabs
		if secret := r.buffer(&scratch); secret != nil {
			if len(secret) != SecretLen {
				return nil, fmt.Errorf("session secret of %d bytes", len(secret))
			}
			f.secret = bytes.Clone(secret)
		}
	}
	if v >= snapVersionNoFlags {
		nh := r.count()
		for range nh {
			id := uint64(r.long())
			if r.err != nil {
				return nil, r.err
			}
			if n := len(f.heldLog); n > 0 && id <= f.heldLog[n-1] {
				return nil, fmt.Errorf("members with a log out of order: %d after %d", id, f.heldLog[n-1])
			}
			f.heldLog = append(f.heldLog, id)
		}
	}
	ns := r.count()
	for range ns {
		s := &Session{ID: r.long(), Timeout: r.int(), Owner: uint64(r.long())}
		if v >= snapVersion {
			flags := r.int()
			if flags&^sessionFlagZooKeeper != 0 {
				return nil, fmt.Errorf("session %#x has unknown flags %#x", s.ID, flags)
			}
			s.ZooKeeper = flags&sessionFlagZooKeeper != 0
		}
		if r.err != nil {
			return nil, r.err
		}
		f.sessions[s.ID] = s
	}
	nn := r.count()
	if r.err != nil {
		return nil, r.err
	}
	// Decoding the nodes and linking them into the tree take about the
	// same time, so they overlap: a goroutine decodes batches of nodes
	// while this one inserts them. It ends before restore returns, so the
	// state machine keeps no goroutine and r is not read after.
	batches := make(chan []restoredNode, 4)
	stop := make(chan struct{})
	decoded := make(chan error, 1)
	go func() { decoded <- decodeNodes(r, nn, batches, stop) }()
	var acls []tree.ACLRef
	var insertErr error
	for batch := range batches {
		for i := range batch {
			rn := &batch[i]
			if rn.definesACL {
				acls = append(acls, f.tree.InternACL(rn.newACL))
			}
			if err := f.tree.Restore(rn.path, rn.n, acls[rn.acl]); err != nil {
				insertErr = err
				break
			}
		}
		if insertErr != nil {
			close(stop)
			for range batches {
			}
			break
		}
	}
	if err := <-decoded; insertErr == nil && err != nil {
		insertErr = err
	}
	if insertErr != nil {
		return nil, insertErr
	}
	f.tree.Sweep()
	return f, nil
}

// sessionFlagZooKeeper is Session.ZooKeeper in a snapshot.
const sessionFlagZooKeeper = 1

func sessionFlags(s Session) int32 {
	if s.ZooKeeper {
		return sessionFlagZooKeeper
	}
	return 0
}

// restoredNode is a node decoded from a snapshot, ready to be linked into
// the tree.
type restoredNode struct {
	path string
	n    *tree.Node
	acl  int32 // index into the snapshot's ACLs
	// definesACL is set on the first node of an ACL, which carries it.
	definesACL bool
	newACL     []proto.ACL
}

// restoreBatch is the number of nodes handed over at a time.
const restoreBatch = 1024

var errRestoreStopped = errors.New("restore stopped")

// decodeNodes decodes count nodes from r and sends them on out in
// batches, then checks that the stream ends. It closes out when it returns,
// and stops early when stop is closed.
func decodeNodes(r *snapReader, count int, out chan<- []restoredNode, stop <-chan struct{}) error {
	defer close(out)
	send := func(batch []restoredNode) error {
		select {
		case out <- batch:
			return nil
		case <-stop:
			return errRestoreStopped
		}
	}
	var alloc slabs
	defined := int32(0) // ACLs seen so far
	batch := make([]restoredNode, 0, restoreBatch)
	for range count {
		rn := restoredNode{path: r.string(), n: alloc.node()}
		n := rn.n
		n.Data = r.buffer(&alloc)
		switch rn.acl = r.int(); {
		case rn.acl >= 0 && rn.acl < defined:
		case rn.acl == defined:
			rn.definesACL, rn.newACL = true, r.acls()
			defined++
		default:
			r.fail("node %q has ACL %d of %d", rn.path, rn.acl, defined)
		}
		n.Czxid, n.Mzxid, n.Pzxid = r.long(), r.long(), r.long()
		n.Ctime, n.Mtime = r.long(), r.long()
		n.Version, n.Cversion, n.Aversion = r.int(), r.int(), r.int()
		n.EphemeralOwner = r.long()
		if r.err != nil {
			return r.err
		}
		if err := proto.ValidatePath(rn.path); err != nil {
			return fmt.Errorf("node %q: %w", rn.path, err)
		}
		if batch = append(batch, rn); len(batch) == restoreBatch {
			if err := send(batch); err != nil {
				return err
			}
			batch = make([]restoredNode, 0, restoreBatch)
		}
	}
	if len(batch) > 0 {
		if err := send(batch); err != nil {
			return err
		}
	}
	if _, err := r.r.ReadByte(); err != io.EOF {
		return errors.New("data after the last node")
	}
	return nil
}

// snapReader decodes the jute encoding of a snapshot from a stream. Like
// proto.Decoder, its first error sticks and later reads return zeros.
type snapReader struct {
	r       *bufio.Reader
	err     error
	scratch []byte
}

func newSnapReader(r io.Reader) *snapReader {
	return &snapReader{r: bufio.NewReaderSize(r, 64<<10)}
}

func (r *snapReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// bytes reads n bytes into a buffer that the next read reuses.
func (r *snapReader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > cap(r.scratch) {
		r.scratch = r.readNew(n)
		return r.scratch
	}
	b := r.scratch[:n]
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.fail("cut short: %w", err)
		return nil
	}
	return b
}

// readNew reads n bytes into a new slice. A large n is read in pieces, so
// that a length the stream does not back allocates only what it holds.
func (r *snapReader) readNew(n int) []byte {
	if n <= 64<<10 {
		b := make([]byte, n)
		if _, err := io.ReadFull(r.r, b); err != nil {
			r.fail("cut short: %w", err)
			return nil
		}
		return b
	}
	b, err := io.ReadAll(io.LimitReader(r.r, int64(n)))
	if err == nil && len(b) < n {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		r.fail("cut short: %w", err)
		return nil
	}
	return b
}

func (r *snapReader) int() int32 {
	b := r.bytes(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *snapReader) long() int64 {
	b := r.bytes(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// maxSnapField bounds a length read from a snapshot before anything is
// allocated for it; the file's checksum was verified, so this only guards
// against a snapshot this code did not write.
const maxSnapField = 1 << 30

func (r *snapReader) length() int {
	n := r.int()
	if n < -1 || n > maxSnapField {
		r.fail("length %d", n)
		return 0
	}
	return int(n)
}

// count reads the number of elements of a vector; -1 (null) reads as 0.
func (r *snapReader) count() int { return max(r.length(), 0) }

// buffer reads a jute buffer into a slice of its own from alloc; null
// reads as nil.
func (r *snapReader) buffer(alloc *slabs) []byte {
	n := r.length()
	if r.err != nil || n < 0 {
		return nil
	}
	if n > slabSize/4 {
		return r.readNew(n)
	}
	b := alloc.bytes(n)
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.fail("cut short: %w", err)
		return nil
	}
	return b
}

// slabs hands out the nodes and the small values of a restore from larger
// allocations: a million nodes cost thousands of allocations instead of
// millions, and values are not rounded up to the allocator's size classes.
// The price is that a slab stays in memory until every node or value
// carved from it is gone; slabs are small (slabSize) to keep that cheap.
type slabs struct {
	nodes []tree.Node
	data  []byte
}

const (
	slabSize  = 4096
	slabNodes = 32
)

func (s *slabs) node() *tree.Node {
	if len(s.nodes) == 0 {
		s.nodes = make([]tree.Node, slabNodes)
	}
	n := &s.nodes[0]
	s.nodes = s.nodes[1:]
	return n
}

// bytes returns n bytes whose capacity is n, so that an append to them
// never writes over their neighbours; n is at most slabSize.
func (s *slabs) bytes(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	if len(s.data) < n {
		s.data = make([]byte, slabSize)
	}
	b := s.data[:n:n]
	s.data = s.data[n:]
	return b
}

func (r *snapReader) string() string { return string(r.bytes(r.count())) }

// acls reads a vector of ACLs; null reads as nil.
func (r *snapReader) acls() []proto.ACL {
	n := r.length()
	if n < 0 {
		return nil
	}
	acl := make([]proto.ACL, 0, min(n, 64))
	for range n {
		if r.err != nil {
			return nil
		}
		a := proto.ACL{Perms: r.int()}
		a.ID.Scheme = r.string()
		a.ID.ID = r.string()
		acl = append(acl, a)
	}
	return acl
}
