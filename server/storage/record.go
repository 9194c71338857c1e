package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"

	"go.etcd.io/raft/v3/raftpb"
)

type recordType uint8

const (
	metadataType recordType = iota + 1
	entryType
	stateType
	crcType
	snapshotType
)

const (
	lenBytes    = 8 // the length word
	bodyHeader  = 5 // checksum and type, in front of the data
	sectorBytes = 512
	// pageBytes is the unit in which records reach the file between fsyncs.
	// It is a multiple of sectorBytes, so a crash zeroes or cuts off whole
	// sectors of a record, which is what tells a torn write from corruption.
	pageBytes = 8 * sectorBytes
	// flushBytes is how much the encoder buffers before it writes whole
	// pages; a Save smaller than this reaches the file in one write.
	flushBytes = 256 << 10
	// maxRecordBytes bounds the body of one record, on write and on read.
	maxRecordBytes = 128 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// padding returns the zero bytes that follow a body of n bytes.
func padding(n int) int { return (8 - n%8) % 8 }

// The ends of a segment's records that a crash may leave, which decoder.next
// reports. Each is only an error when it is not at the tail of the log; at
// the tail, ReadAll decides by what follows (see checkTail).
var (
	// errZeroLength is a zero length word with bytes left in the file: the
	// end of what was written, or a record whose first sector is lost.
	errZeroLength = errors.New("zero length word")
	// errTorn is a record whose checksum fails and that holds a sector of
	// zeros: a record whose sectors did not all reach the disk.
	errTorn = errors.New("checksum mismatch in a record holding a zeroed sector")
	// errCutShort is a record, or a length word, that the end of the file
	// cuts short.
	errCutShort = errors.New("record cut short by the end of the file")
)

// encoder appends records to a segment file. Records collect in buf and reach
// the file in whole pages while a Save is being encoded, and entirely on
// flush.
type encoder struct {
	f     *os.File
	off   int64  // file offset of buf[0]
	buf   []byte // encoded records not yet written
	chain uint32 // checksum of the last record encoded
	start int    // where in buf the record being encoded begins
	// open is set once a record follows the last fsync: the records of
	// the next fsync have begun, with a crc record (see openBatch).
	open bool
}

func newEncoder(f *os.File, off int64, chain uint32) *encoder {
	return &encoder{f: f, off: off, chain: chain, buf: make([]byte, 0, flushBytes+pageBytes)}
}

// offset is the file offset the next record will be written at.
func (e *encoder) offset() int64 { return e.off + int64(len(e.buf)) }

// reserve adds a record frame for n data bytes to buf and returns the slice
// the data goes into; seal must follow before the next reserve.
func (e *encoder) reserve(n int) []byte {
	body := bodyHeader + n
	frame := lenBytes + body + padding(body)
	e.start = len(e.buf)
	e.buf = slices.Grow(e.buf, frame)[:e.start+frame]
	clear(e.buf[e.start+lenBytes+body:])
	return e.buf[e.start+lenBytes+bodyHeader : e.start+lenBytes+body]
}

// seal fills in the length, type and checksum of the reserved record.
func (e *encoder) seal(t recordType, n int) error {
	rec := e.buf[e.start:]
	body := bodyHeader + n
	binary.LittleEndian.PutUint64(rec, uint64(body))
	rec[lenBytes+4] = byte(t)
	seed := e.chain
	if t == crcType {
		seed = binary.LittleEndian.Uint32(rec[lenBytes+bodyHeader:])
	}
	sum := crc32.Update(seed, castagnoli, rec[lenBytes+4:lenBytes+body])
	binary.LittleEndian.PutUint32(rec[lenBytes:], sum)
	e.chain = sum
	if len(e.buf) >= flushBytes {
		return e.writePages()
	}
	return nil
}

// openBatch starts the records that the next fsync will make durable with a
// crc record, unless they have begun. At the end of the last segment, an
// intact crc record after a damaged record proves that the damaged one
// had been made durable before it, which a crash cannot undo (see
// checkTail).
func (e *encoder) openBatch() error {
	if e.open {
		return nil
	}
	e.open = true
	return e.encodeCRC(e.chain)
}

func (e *encoder) encodeBytes(t recordType, data []byte) error {
	copy(e.reserve(len(data)), data)
	return e.seal(t, len(data))
}

func (e *encoder) encodeCRC(prev uint32) error {
	binary.LittleEndian.PutUint32(e.reserve(4), prev)
	return e.seal(crcType, 4)
}

func (e *encoder) encodeEntry(ent *raftpb.Entry) error {
	n := ent.Size()
	if _, err := ent.MarshalToSizedBuffer(e.reserve(n)); err != nil {
		return err
	}
	return e.seal(entryType, n)
}

func (e *encoder) encodeState(st *raftpb.HardState) error {
	n := st.Size()
	if _, err := st.MarshalToSizedBuffer(e.reserve(n)); err != nil {
		return err
	}
	return e.seal(stateType, n)
}

func (e *encoder) encodeSnapshot(s WALSnapshot) error {
	data := e.reserve(16)
	binary.LittleEndian.PutUint64(data, s.Index)
	binary.LittleEndian.PutUint64(data[8:], s.Term)
	return e.seal(snapshotType, 16)
}

// writePages writes the buffered records up to the last page boundary of the
// file, keeping the partial page in buf.
func (e *encoder) writePages() error {
	end := e.off + int64(len(e.buf))
	n := int(end&^(pageBytes-1) - e.off)
	if n <= 0 {
		return nil
	}
	if _, err := writeAt(e.f, e.buf[:n], e.off); err != nil {
		return err
	}
	e.off += int64(n)
	rest := copy(e.buf, e.buf[n:])
	e.buf = e.buf[:rest]
	if cap(e.buf) > 4*flushBytes {
		// One huge entry must not pin a huge buffer for the life of the WAL.
		e.buf = append(make([]byte, 0, flushBytes+pageBytes), e.buf...)
	}
	return nil
}

// flush writes every buffered record. The last page goes whole, its end
// padded with the zeros the file holds there already, and stays in buf to
// be written again with the records that follow it: a write of part of a
// page the kernel does not hold in memory would first read the page from
// disk (spare segments are filled around the page cache).
func (e *encoder) flush() error {
	n := len(e.buf)
	if n == 0 {
		return nil
	}
	padded := (n + pageBytes - 1) &^ (pageBytes - 1)
	e.buf = slices.Grow(e.buf, padded-n)[:padded]
	clear(e.buf[n:])
	_, err := writeAt(e.f, e.buf, e.off)
	e.buf = e.buf[:n]
	if err != nil {
		return err
	}
	done := n &^ (pageBytes - 1)
	e.buf = e.buf[:copy(e.buf, e.buf[done:])]
	e.off += int64(done)
	return nil
}

// resume makes an encoder that is to append at an offset inside a page
// start at the page instead, holding the records already there: every
// write then covers whole pages.
func (e *encoder) resume() error {
	start := e.off &^ (pageBytes - 1)
	n := int(e.off - start)
	if n == 0 {
		return nil
	}
	e.buf = e.buf[:n]
	if _, err := e.f.ReadAt(e.buf, start); err != nil {
		e.buf = e.buf[:0]
		return err
	}
	e.off = start
	return nil
}

// decoder reads the records of one segment after another, checking the
// checksum chain across them. It reads each segment in chunks of its own
// rather than through a bufio.Reader, so a record's data is handed out
// where it was read, not copied. With keep set, a chunk is never reused:
// the data of every record stays valid, and the entries read at start can
// alias it.
type decoder struct {
	keep    bool
	f       io.Reader
	chunk   []byte // chunk[pos:end] is read and not yet decoded; it starts at off
	pos     int
	end     int
	size    int64 // size of the current segment file
	off     int64 // offset just after the last good record
	recOff  int64 // offset of the record last asked for
	recNo   int   // its place in the segment, from 0
	good    int   // records of the current segment read so far
	chain   uint32
	chained bool
}

// readChunk is how much of a segment the decoder reads at a time.
const readChunk = 4 << 20

// reset starts reading a segment; the checksum chain carries over.
func (d *decoder) reset(f *os.File, size int64) {
	d.f = f
	d.pos, d.end = 0, 0
	d.size, d.off, d.good = size, 0, 0
}

// fill makes n bytes from off on available in chunk[pos:], which the caller
// has checked the file holds.
func (d *decoder) fill(n int) error {
	have := d.end - d.pos
	if have >= n {
		return nil
	}
	// Read no further than the file goes: the tail segment is mostly the
	// zeros it was prepared with.
	left := d.size - d.off - int64(have)
	want := have + int(min(int64(max(readChunk, n)-have), left))
	if d.keep || cap(d.chunk) < want {
		fresh := make([]byte, want)
		copy(fresh, d.chunk[d.pos:d.end])
		d.chunk = fresh
	} else {
		copy(d.chunk, d.chunk[d.pos:d.end])
		d.chunk = d.chunk[:want]
	}
	d.pos, d.end = 0, have
	m, err := io.ReadAtLeast(d.f, d.chunk[have:want], n-have)
	d.end += m
	return err
}

// next returns the next record of the segment. Without keep, the data is
// valid until the following call. It returns io.EOF where the file ends
// after a record; errZeroLength, errTorn or errCutShort where a crash may
// have ended the log; and an error matching ErrCorrupt for what no crash
// leaves.
func (d *decoder) next() (recordType, []byte, error) {
	d.recOff, d.recNo = d.off, d.good
	rem := d.size - d.off
	if rem == 0 {
		return 0, nil, io.EOF
	}
	if rem < lenBytes {
		return 0, nil, errCutShort
	}
	if err := d.fill(lenBytes); err != nil {
		return 0, nil, readErr(err)
	}
	n := binary.LittleEndian.Uint64(d.chunk[d.pos:])
	if n == 0 {
		return 0, nil, errZeroLength
	}
	// A length word sits in one sector, which a crash leaves old (zero)
	// or new: any other length is damage, wherever the record ends.
	if n>>56 != 0 || n < bodyHeader || n > maxRecordBytes {
		return 0, nil, fmt.Errorf("%w: bad record length %#x", ErrCorrupt, n)
	}
	if n+uint64(padding(int(n%8))) > uint64(rem-lenBytes) {
		return 0, nil, errCutShort
	}
	body := int(n)
	frame := body + padding(body)
	if err := d.fill(lenBytes + frame); err != nil {
		return 0, nil, readErr(err)
	}
	buf := d.chunk[d.pos+lenBytes : d.pos+lenBytes+frame : d.pos+lenBytes+frame]
	t := recordType(buf[4])
	data := buf[bodyHeader:body:body]
	seed := d.chain
	if t == crcType {
		if len(data) != 4 {
			return 0, nil, fmt.Errorf("%w: crc record of %d bytes", ErrCorrupt, len(data))
		}
		// Seeded by its own value, a crc record is checked before the
		// value is compared with the chain: a torn one is torn, not a
		// break in the chain.
		seed = binary.LittleEndian.Uint32(data)
	}
	if sum := crc32.Update(seed, castagnoli, buf[4:body]); sum != binary.LittleEndian.Uint32(buf) {
		if hasZeroSector(buf[:body], d.off+lenBytes) {
			return 0, nil, errTorn
		}
		return 0, nil, ErrCRCMismatch
	}
	if t == crcType && d.chained && seed != d.chain {
		return 0, nil, fmt.Errorf("%w: crc record carries checksum %#x, the records before it end with %#x", ErrCRCMismatch, seed, d.chain)
	}
	d.chain = binary.LittleEndian.Uint32(buf)
	d.chained = true
	d.good++
	d.pos += lenBytes + frame
	d.off += int64(lenBytes + frame)
	return t, data, nil
}

// readErr turns a short read of a checked length into a record cut short:
// the file shrank under the reader.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errCutShort
	}
	return err
}

// hasZeroSector reports whether b, which starts at file offset off, has a
// disk sector's worth of bytes (the part of b within one 512-byte-aligned
// sector) that are all zero: a sector the crash kept from reaching the disk.
func hasZeroSector(b []byte, off int64) bool {
	for len(b) > 0 {
		n := min(len(b), int(sectorBytes-off%sectorBytes))
		if isZero(b[:n]) {
			return true
		}
		b, off = b[n:], off+int64(n)
	}
	return false
}

var zeroPage [pageBytes]byte

func isZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), pageBytes)
		if !bytes.Equal(b[:n], zeroPage[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

func decodeSnapshot(data []byte) (WALSnapshot, error) {
	if len(data) != 16 {
		return WALSnapshot{}, fmt.Errorf("%w: snapshot record of %d bytes", ErrCorrupt, len(data))
	}
	return WALSnapshot{Index: binary.LittleEndian.Uint64(data), Term: binary.LittleEndian.Uint64(data[8:])}, nil
}
