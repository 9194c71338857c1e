package zkdata

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/collie-io/collie/proto"
)

// File magics, as ZooKeeper's FileHeader writes them.
const (
	snapMagic = 0x5a4b534e // "ZKSN"
	logMagic  = 0x5a4b4c47 // "ZKLG"
)

// ErrBadSnapshot wraps every reason a snapshot cannot be used.
var ErrBadSnapshot = errors.New("zkdata: bad snapshot")

// SnapshotInfo is what a snapshot file says of itself.
type SnapshotInfo struct {
	// Zxid is the zxid in the file's name: every transaction up to it is
	// in the snapshot, and some after it may be (a fuzzy snapshot).
	Zxid        int64
	Version     int32
	DBID        int64
	Compression string // "", "gz" or "snappy"
	Sessions    int
	Nodes       int
	// Digest is the tree digest the snapshot ends with, when ZooKeeper
	// wrote one (3.6 and later, digests enabled).
	Digest *SnapshotDigest
}

// SnapshotDigest is the digest of the tree at a zxid, as written after a
// snapshot.
type SnapshotDigest struct {
	Zxid    int64
	Version int32
	Digest  int64
}

// ParseName returns the zxid in a snapshot or log file name
// (snapshot.<hex zxid>[.gz|.snappy], log.<hex zxid>) and the compression
// its suffix names. ok is false for other names.
func ParseName(name, prefix string) (zxid int64, compression string, ok bool) {
	rest, found := strings.CutPrefix(name, prefix+".")
	if !found {
		return 0, "", false
	}
	hex, suffix, _ := strings.Cut(rest, ".")
	switch suffix {
	case "", "gz", "snappy":
	default:
		return 0, "", false
	}
	if prefix != "snapshot" && suffix != "" {
		return 0, "", false
	}
	z, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return 0, "", false
	}
	return int64(z), suffix, true
}

// ReadSnapshotFile reads a ZooKeeper snapshot file whole and checks it
// through its checksums. extended is the server's extendedTypesEnabled.
func ReadSnapshotFile(path string, extended bool) (*DataTree, *SnapshotInfo, error) {
	zxid, compression, ok := ParseName(filepath.Base(path), "snapshot")
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s is not named snapshot.<zxid>[.gz|.snappy]", ErrBadSnapshot, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	defer f.Close()
	var in io.Reader = f
	switch compression {
	case "gz":
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: gzip: %w", ErrBadSnapshot, path, err)
		}
		in = z
	case "snappy":
		in = newSnappyReader(f)
	}
	t, info, err := ReadSnapshot(in, extended)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrBadSnapshot, path, err)
	}
	info.Zxid, info.Compression = zxid, compression
	t.LastZxid = zxid
	return t, info, nil
}

// ReadSnapshot reads a snapshot stream, uncompressed: the file header,
// the sessions, the tree, the checksum seal, and the optional digest with
// its own seal. The tree's LastZxid is left 0: the zxid is in the file's
// name.
func ReadSnapshot(in io.Reader, extended bool) (*DataTree, *SnapshotInfo, error) {
	r := newReader(in)
	info := &SnapshotInfo{}
	if magic := r.int(); r.err == nil && magic != snapMagic {
		return nil, nil, fmt.Errorf("not a ZooKeeper snapshot (magic %08x)", uint32(magic))
	}
	info.Version, info.DBID = r.int(), r.long()
	if r.err == nil && info.Version != 2 {
		return nil, nil, fmt.Errorf("snapshot format version %d; ZooKeeper 3.4 to 3.9 write 2", info.Version)
	}
	t := readBody(r, extended)
	if r.err != nil {
		return nil, nil, r.err
	}
	info.Sessions, info.Nodes = len(t.Sessions), len(t.nodes)
	if err := checkSeal(r); err != nil {
		return nil, nil, err
	}
	if !r.atEOF() {
		d := &SnapshotDigest{Zxid: r.long(), Version: r.int()}
		if d.Version < 2 {
			hex := r.string(64, "digest")
			v, err := strconv.ParseUint(hex, 16, 64)
			if r.err == nil && err != nil && hex != "" {
				r.fail("digest %q", hex)
			}
			d.Digest = int64(v)
		} else {
			d.Digest = r.long()
		}
		if err := checkSeal(r); err != nil {
			return nil, nil, fmt.Errorf("after the digest: %w", err)
		}
		if d.Zxid > 0 {
			info.Digest = d
		}
		if !r.atEOF() && r.err == nil {
			return nil, nil, fmt.Errorf("data after the digest at byte %d", r.off)
		}
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	return t, info, nil
}

// ReadSnapshotBody reads what a ZooKeeper leader sends a learner in a
// SNAP: the sessions and the tree, without a file header or seal.
func ReadSnapshotBody(in io.Reader, extended bool) (*DataTree, error) {
	r := newReader(in)
	t := readBody(r, extended)
	if r.err != nil {
		return nil, r.err
	}
	return t, nil
}

// checkSeal reads a checksum seal (the Adler-32 of everything before it,
// then the string "/") and compares it.
func checkSeal(r *reader) error {
	want := int64(r.sum.Sum32())
	got := r.long()
	path := r.string(16, "seal")
	if r.err != nil {
		return r.err
	}
	if got != want || path != "/" {
		return fmt.Errorf("checksum mismatch at byte %d: the file says %08x, its bytes sum to %08x", r.off, uint32(got), uint32(want))
	}
	return nil
}

// readBody reads sessions, the ACL cache and the nodes, as
// SerializeUtils.serializeSnapshot writes them.
func readBody(r *reader, extended bool) *DataTree {
	t := newEmptyTree(extended)
	nSessions := r.int()
	if r.err == nil && nSessions < 0 {
		r.fail("%d sessions", nSessions)
	}
	for range max(nSessions, 0) {
		id, timeout := r.long(), r.int()
		if r.err != nil {
			return t
		}
		t.Sessions[id] = timeout
	}
	// The ACL cache: ids the nodes refer to, -1 being OPEN_ACL_UNSAFE.
	nACLs := r.int()
	if r.err == nil && nACLs < 0 {
		r.fail("%d ACLs", nACLs)
	}
	byID := map[int64][]proto.ACL{-1: openACL}
	for range max(nACLs, 0) {
		id := r.long()
		acl := r.acls()
		if r.err != nil {
			return t
		}
		if acl == nil {
			acl = []proto.ACL{}
		}
		byID[id] = t.acls.intern(acl)
	}
	for {
		path := r.string(maxPathBytes, "path")
		if r.err != nil || path == "/" {
			break
		}
		n := &Node{Data: r.buffer(maxDataBytes, "node data")}
		aclID := r.long()
		s := &n.Stat
		s.Czxid, s.Mzxid, s.Ctime, s.Mtime = r.long(), r.long(), r.long(), r.long()
		s.Version, s.Cversion, s.Aversion = r.int(), r.int(), r.int()
		s.EphemeralOwner, s.Pzxid = r.long(), r.long()
		if r.err != nil {
			break
		}
		if n.Data == nil {
			n.Data = []byte{}
		}
		acl, ok := byID[aclID]
		if !ok {
			r.fail("node %q refers to ACL %d, which the snapshot does not have", path, aclID)
			break
		}
		n.ACL = acl
		if _, dup := t.nodes[path]; dup {
			r.fail("node %q twice", path)
			break
		}
		if path != "" {
			if err := proto.ValidatePath(path); err != nil {
				r.fail("node %q: %v", path, err)
				break
			}
			parent := t.nodes[parentOf(path)]
			if parent == nil {
				r.fail("node %q comes before its parent", path)
				break
			}
			if parent.children == nil {
				parent.children = make(map[string]struct{})
			}
			parent.children[path[strings.LastIndexByte(path, '/')+1:]] = struct{}{}
			t.indexOwner(path, s.EphemeralOwner)
		}
		t.nodes[path] = n
	}
	if r.err == nil && t.nodes[""] == nil {
		r.fail("the snapshot has no root node")
	}
	if r.err == nil {
		t.setupQuotas()
	}
	return t
}
