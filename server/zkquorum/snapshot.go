package zkquorum

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// snapshotSignature follows the snapshot on the stream (LearnerHandler
// writes it; Learner refuses a snapshot without it).
const snapshotSignature = "BenWasHere"

// statPersistedSize is StatPersisted's encoded size: czxid, mzxid, ctime,
// mtime (longs), version, cversion, aversion (ints), ephemeralOwner, pzxid
// (longs).
const statPersistedSize = 4*8 + 3*4 + 2*8

// snapScanner copies a SNAP payload from the leader's stream to a writer,
// parsing just enough of it to know where it ends, since the stream carries
// no length. The payload is ZKDatabase.serializeSnapshot's output:
//
//	int count; count × (long sessionId, int timeout)
//	int aclCount; aclCount × (long aclRef, vector<ACL>)   ACL: int perms, string scheme, string id
//	repeated (string path, DataNode) until the path "/"   DataNode: buffer data, long aclRef, StatPersisted
//
// the same as a snapshot file after its FileHeader and before its digest and
// checksum. The root is the first node, under the path "".
type snapScanner struct {
	src     io.Reader // the leader's stream, teed into the output
	max     int       // bound of a string or buffer
	buf     [8]byte
	scratch [4096]byte // what skip reads into
	node    int64      // nodes seen, for errors
}

// scanSnapshot copies one snapshot payload from r to w and stops right after
// its terminating "/" path. Bytes that break the format are ErrMalformed.
func scanSnapshot(r *bufio.Reader, w io.Writer, max int) error {
	s := &snapScanner{src: io.TeeReader(r, w), max: max}
	return s.scan()
}

func (s *snapScanner) scan() error {
	sessions, err := s.count("session count", false)
	if err != nil {
		return err
	}
	if err := s.skip(int64(sessions)*12, "sessions"); err != nil {
		return err
	}
	acls, err := s.count("ACL cache size", false)
	if err != nil {
		return err
	}
	for range acls {
		if err := s.skip(8, "ACL cache key"); err != nil {
			return err
		}
		n, err := s.count("ACL list length", true)
		if err != nil {
			return err
		}
		for range n {
			if err := s.skip(4, "ACL perms"); err != nil {
				return err
			}
			if err := s.skipBuffer("ACL scheme"); err != nil {
				return err
			}
			if err := s.skipBuffer("ACL id"); err != nil {
				return err
			}
		}
	}
	for ; ; s.node++ {
		end, err := s.path()
		if err != nil || end {
			return err
		}
		if err := s.skipBuffer("node data"); err != nil {
			return err
		}
		if err := s.skip(8+statPersistedSize, "node ACL and stat"); err != nil {
			return err
		}
	}
}

func (s *snapScanner) int(what string) (int32, error) {
	if _, err := io.ReadFull(s.src, s.buf[:4]); err != nil {
		return 0, s.cut(err, what)
	}
	return int32(binary.BigEndian.Uint32(s.buf[:4])), nil
}

// count reads a count that must not be negative, or -1 (null) when
// nullable, which counts as zero.
func (s *snapScanner) count(what string, nullable bool) (int32, error) {
	n, err := s.int(what)
	if err != nil {
		return 0, err
	}
	if n == -1 && nullable {
		return 0, nil
	}
	if n < 0 {
		return 0, fmt.Errorf("%w: snapshot %s %d", ErrMalformed, what, n)
	}
	return n, nil
}

func (s *snapScanner) length(what string) (int64, error) {
	n, err := s.int(what)
	if err != nil {
		return 0, err
	}
	if n == -1 {
		return 0, nil
	}
	if n < 0 || int(n) > s.max {
		return 0, fmt.Errorf("%w: snapshot %s length %d outside [0, %d] (node %d)", ErrMalformed, what, n, s.max, s.node)
	}
	return int64(n), nil
}

func (s *snapScanner) skip(n int64, what string) error {
	for n > 0 {
		chunk := s.scratch[:min(n, int64(len(s.scratch)))]
		if _, err := io.ReadFull(s.src, chunk); err != nil {
			return s.cut(err, what)
		}
		n -= int64(len(chunk))
	}
	return nil
}

func (s *snapScanner) skipBuffer(what string) error {
	n, err := s.length(what)
	if err != nil {
		return err
	}
	return s.skip(n, what)
}

// path reads a node's path and reports whether it is the "/" that ends the
// nodes. Only a one-byte path can be that, so no other is kept.
func (s *snapScanner) path() (end bool, err error) {
	n, err := s.int("path length")
	if err != nil {
		return false, err
	}
	if n < 0 || int(n) > s.max {
		return false, fmt.Errorf("%w: snapshot path length %d outside [0, %d] (node %d)", ErrMalformed, n, s.max, s.node)
	}
	if n != 1 {
		return false, s.skip(int64(n), "path")
	}
	if _, err := io.ReadFull(s.src, s.buf[:1]); err != nil {
		return false, s.cut(err, "path")
	}
	return s.buf[0] == '/', nil
}

func (s *snapScanner) cut(err error, what string) error {
	return fmt.Errorf("snapshot %s (node %d): %w", what, s.node, cutShort(err, what))
}
