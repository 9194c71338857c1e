// Package backup owns the format of Collie's backup files, the snapshots
// `collie snapshot save` fetches from a running server's admin port: a
// header that says what the file holds, the state machine's snapshot
// (package fsm's Save format) and a trailer that lets a reader tell a whole
// file from a truncated or altered one.
//
// The layout, integers big-endian:
//
//	magic     "COLLIEBK" (8 bytes)
//	version   uint32 (1)
//	index     uint64  raft index of the last entry the state holds
//	term      uint64  its raft term
//	zxid      int64   zxid of the last transaction the state holds
//	ensemble  uint64  id of the ensemble the state is from (fsm.EnsembleID)
//	server    uint64  id (myid) of the server that wrote it; 1 standalone
//	taken     int64   when it was taken, Unix nanoseconds
//	size      uint64  length of the snapshot data
//	crc       uint32  CRC-32C of the header fields above, magic included
//	data      size bytes: the fsm snapshot
//	end       "CLBKEND\n" (8 bytes)
//	sum       32 bytes: SHA-256 of everything before end
//
// The header's checksum lets a reader trust the size before it reads the
// data; the trailer's sum covers the whole file, so a flipped bit anywhere
// or a file cut short is found once the file is read to its end. A Reader
// hands out the data as it reads and reports damage when it reaches the
// end, so a caller that restores from it must discard what it built when
// Read ends with an error.
//
// Load reads a file whole and decodes its state; WriteFile writes one
// received from a server, under its name only once it is whole.
package backup

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"time"
)

const (
	// Magic begins every backup file.
	Magic   = "COLLIEBK"
	version = 1
	// HeaderSize is the length of the header, checksum included.
	HeaderSize = len(Magic) + 4 + 8*7 + 4
	endMagic   = "CLBKEND\n"
	// TrailerSize is the length of the trailer.
	TrailerSize = len(endMagic) + sha256.Size
)

// ErrDamaged marks a file that is not a whole, unaltered backup file.
var ErrDamaged = errors.New("backup: damaged file")

// ErrNotBackup marks a file that does not begin with Magic.
var ErrNotBackup = errors.New("backup: not a Collie backup file")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header says what a backup file holds.
type Header struct {
	// Index and Term are the raft position of the last entry the state
	// holds; Zxid the zxid of its last transaction.
	Index, Term uint64
	Zxid        int64
	// Ensemble is the id of the ensemble the state belongs to, 0 when it
	// has none yet.
	Ensemble uint64
	// Server is the id of the server that took it.
	Server uint64
	Taken  time.Time
	// Size is the length of the snapshot data.
	Size int64
}

// Marshal returns the header's bytes.
func (h Header) Marshal() []byte {
	b := make([]byte, 0, HeaderSize)
	b = append(b, Magic...)
	b = binary.BigEndian.AppendUint32(b, version)
	b = binary.BigEndian.AppendUint64(b, h.Index)
	b = binary.BigEndian.AppendUint64(b, h.Term)
	b = binary.BigEndian.AppendUint64(b, uint64(h.Zxid))
	b = binary.BigEndian.AppendUint64(b, h.Ensemble)
	b = binary.BigEndian.AppendUint64(b, h.Server)
	b = binary.BigEndian.AppendUint64(b, uint64(h.Taken.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(h.Size))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// maxSize bounds the data length a header may claim: a larger one is
// damage, whatever its checksum says.
const maxSize = 1 << 50

// ParseHeader reads a header from the first HeaderSize bytes of b.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < len(Magic) || string(b[:len(Magic)]) != Magic {
		return Header{}, ErrNotBackup
	}
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: the header is cut short (%d of %d bytes)", ErrDamaged, len(b), HeaderSize)
	}
	b = b[:HeaderSize]
	body, sum := b[:HeaderSize-4], binary.BigEndian.Uint32(b[HeaderSize-4:])
	v := binary.BigEndian.Uint32(b[len(Magic):])
	if crc32.Checksum(body, castagnoli) != sum {
		if v != version {
			// Every version keeps the checksum last in its header of
			// HeaderSize bytes; a later one may lay out the rest otherwise.
			return Header{}, fmt.Errorf("%w: the header's checksum does not match (it says format version %d; this Collie reads version %d)", ErrDamaged, v, version)
		}
		return Header{}, fmt.Errorf("%w: the header's checksum does not match", ErrDamaged)
	}
	if v != version {
		return Header{}, fmt.Errorf("backup: format version %d; this Collie reads version %d", v, version)
	}
	f := body[len(Magic)+4:]
	u := func(i int) uint64 { return binary.BigEndian.Uint64(f[8*i:]) }
	h := Header{Index: u(0), Term: u(1), Zxid: int64(u(2)), Ensemble: u(3), Server: u(4), Taken: time.Unix(0, int64(u(5))).UTC()}
	if size := u(6); size > maxSize {
		return Header{}, fmt.Errorf("%w: the header claims %d bytes of data", ErrDamaged, size)
	} else {
		h.Size = int64(size)
	}
	return h, nil
}

// Encode returns a reader of the whole backup file: h's header, then
// exactly h.Size bytes of data read from data, then the trailer. Reading
// it fails if data holds fewer or more bytes than h.Size.
func Encode(h Header, data io.Reader) io.Reader {
	sum := sha256.New()
	head := h.Marshal()
	sum.Write(head)
	return &encoder{head: bytes.NewReader(head), data: data, left: h.Size, sum: sum}
}

type encoder struct {
	head  *bytes.Reader
	data  io.Reader
	left  int64
	sum   hash.Hash
	tail  *bytes.Reader
	extra [1]byte
}

func (e *encoder) Read(p []byte) (int, error) {
	if e.head.Len() > 0 {
		return e.head.Read(p)
	}
	if e.left > 0 {
		if int64(len(p)) > e.left {
			p = p[:e.left]
		}
		n, err := e.data.Read(p)
		e.sum.Write(p[:n])
		e.left -= int64(n)
		switch {
		case err == io.EOF && e.left > 0:
			return n, fmt.Errorf("backup: the snapshot data ended %d bytes early", e.left)
		case err != nil && err != io.EOF:
			return n, err
		}
		return n, nil
	}
	if e.tail == nil {
		if n, _ := io.ReadFull(e.data, e.extra[:]); n > 0 {
			return 0, errors.New("backup: the snapshot data is longer than its size")
		}
		e.tail = bytes.NewReader(append([]byte(endMagic), e.sum.Sum(nil)...))
	}
	return e.tail.Read(p)
}

// Reader reads the data of a backup file and checks the file whole as it
// reaches the end.
type Reader struct {
	r      io.Reader
	h      Header
	sum    hash.Hash
	left   int64
	err    error
	digest [sha256.Size]byte
}

// NewReader reads the header from r and returns a reader of the data.
func NewReader(r io.Reader) (*Reader, error) {
	head := make([]byte, HeaderSize)
	n, err := io.ReadFull(r, head)
	if err != nil {
		if n >= len(Magic) && string(head[:len(Magic)]) == Magic || n < len(Magic) && n > 0 && string(head[:n]) == Magic[:n] {
			return nil, fmt.Errorf("%w: the file ends within its header (%d of %d bytes)", ErrDamaged, n, HeaderSize)
		}
		if n == 0 {
			return nil, fmt.Errorf("%w: the file is empty", ErrNotBackup)
		}
		return nil, ErrNotBackup
	}
	h, err := ParseHeader(head)
	if err != nil {
		return nil, err
	}
	sum := sha256.New()
	sum.Write(head)
	return &Reader{r: r, h: h, sum: sum, left: h.Size}, nil
}

// Header returns the file's header.
func (r *Reader) Header() Header { return r.h }

// Read reads the snapshot data. When the data is all read it reads the
// trailer and returns io.EOF only if the file is whole and its sum
// matches; otherwise an error wrapping ErrDamaged.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.left == 0 {
		r.err = r.finish()
		return 0, r.err
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.r.Read(p)
	r.sum.Write(p[:n])
	r.left -= int64(n)
	switch {
	case err == io.EOF && r.left > 0:
		r.err = fmt.Errorf("%w: the file is cut short: it ends %d bytes into its %d bytes of snapshot data", ErrDamaged, r.h.Size-r.left, r.h.Size)
		return n, r.err
	case err != nil && err != io.EOF:
		r.err = err
		return n, err
	}
	return n, nil
}

func (r *Reader) finish() error {
	var tail [TrailerSize + 1]byte
	n, err := io.ReadFull(r.r, tail[:])
	switch {
	case err != nil && err != io.ErrUnexpectedEOF && err != io.EOF:
		return err
	case n < TrailerSize:
		return fmt.Errorf("%w: the file is cut short: it ends %d bytes into its %d-byte trailer", ErrDamaged, n, TrailerSize)
	case n > TrailerSize:
		return fmt.Errorf("%w: bytes follow the trailer", ErrDamaged)
	case string(tail[:len(endMagic)]) != endMagic:
		return fmt.Errorf("%w: no trailer after the snapshot data", ErrDamaged)
	}
	got := r.sum.Sum(nil)
	if !bytes.Equal(got, tail[len(endMagic):TrailerSize]) {
		return fmt.Errorf("%w: the SHA-256 of the file does not match its trailer: the file was altered", ErrDamaged)
	}
	copy(r.digest[:], got)
	return io.EOF
}

// Sum returns the SHA-256 the trailer holds, once Read has returned
// io.EOF; it identifies the file.
func (r *Reader) Sum() [sha256.Size]byte { return r.digest }

// Verify reads the whole file from r and returns its header, or what is
// wrong with it. It does not decode the data.
func Verify(r io.Reader) (Header, [sha256.Size]byte, error) {
	br, err := NewReader(r)
	if err != nil {
		return Header{}, [sha256.Size]byte{}, err
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return br.Header(), [sha256.Size]byte{}, err
	}
	return br.Header(), br.Sum(), nil
}
