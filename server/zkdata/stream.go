package zkdata

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/adler32"
	"io"

	"github.com/collie-io/collie/proto"
)

// Bounds on what one field of a file may claim. The files come from a
// server the operator names, but may be damaged: a length is checked
// against these before anything is allocated, and buffers grow as their
// bytes actually arrive.
const (
	maxPathBytes = 1 << 20  // a path; ZooKeeper's are far shorter
	maxDataBytes = 64 << 20 // a node's data: jute.maxbuffer, set high
	maxACLs      = 1 << 16  // entries of one ACL
)

// reader decodes jute from a stream and keeps the Adler-32 checksum
// ZooKeeper's CheckedInputStream keeps over every byte read. Its first
// error sticks; later reads return zero values. off counts the bytes
// read, for messages.
type reader struct {
	r   *bufio.Reader
	sum hash.Hash32
	off int64
	err error
	buf [8]byte
}

func newReader(r io.Reader) *reader {
	return &reader{r: bufio.NewReaderSize(r, 256<<10), sum: adler32.New()}
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: "+format, append([]any{r.off}, args...)...)
	}
}

func (r *reader) full(b []byte) bool {
	if r.err != nil {
		return false
	}
	n, err := io.ReadFull(r.r, b)
	r.sum.Write(b[:n])
	r.off += int64(n)
	if err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			r.fail("the file ends early (%d bytes read)", r.off)
		} else {
			r.fail("%v", err)
		}
		return false
	}
	return true
}

func (r *reader) int() int32 {
	if !r.full(r.buf[:4]) {
		return 0
	}
	return int32(binary.BigEndian.Uint32(r.buf[:4]))
}

func (r *reader) long() int64 {
	if !r.full(r.buf[:8]) {
		return 0
	}
	return int64(binary.BigEndian.Uint64(r.buf[:8]))
}

func (r *reader) boolean() bool {
	if !r.full(r.buf[:1]) {
		return false
	}
	return r.buf[0] != 0
}

// bytes reads n bytes, growing the result as they arrive so that a
// damaged length costs no more memory than the bytes that follow it.
func (r *reader) bytes(n int, limit int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > limit {
		r.fail("%s of %d bytes (at most %d)", what, n, limit)
		return nil
	}
	const step = 1 << 20
	b := make([]byte, 0, min(n, step))
	for len(b) < n {
		k := min(n-len(b), step)
		b = append(b, make([]byte, k)...)
		if !r.full(b[len(b)-k:]) {
			return nil
		}
	}
	return b
}

func (r *reader) buffer(limit int, what string) []byte {
	n := r.int()
	if r.err != nil || n == -1 {
		return nil
	}
	return r.bytes(int(n), limit, what)
}

func (r *reader) string(limit int, what string) string {
	n := r.int()
	if r.err != nil || n == -1 {
		return ""
	}
	return string(r.bytes(int(n), limit, what))
}

func (r *reader) acls() []proto.ACL {
	n := r.int()
	if r.err != nil || n == -1 {
		return nil
	}
	if n < 0 || n > maxACLs {
		r.fail("ACL of %d entries", n)
		return nil
	}
	var acl []proto.ACL
	for range n {
		a := proto.ACL{Perms: r.int()}
		a.ID.Scheme = r.string(maxPathBytes, "ACL scheme")
		a.ID.ID = r.string(maxPathBytes, "ACL id")
		if r.err != nil {
			return nil
		}
		acl = append(acl, a)
	}
	return acl
}

// atEOF reports whether the stream has ended, without consuming a byte.
func (r *reader) atEOF() bool {
	if r.err != nil {
		return false
	}
	_, err := r.r.Peek(1)
	return err == io.EOF
}
