package storage

import (
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

// errTorn marks a record that a crash may have left half written. It is
// only an error when the record is not at the tail of the log.
var errTorn = errors.New("torn record")

// encoder appends records to a segment file. Records collect in buf and reach
// the file in whole pages while a Save is being encoded, and entirely on
// flush.
type encoder struct {
	f     *os.File
	off   int64  // file offset of buf[0]
	buf   []byte // encoded records not yet written
	chain uint32 // checksum of the last record encoded
	start int    // where in buf the record being encoded begins
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
	if _, err := e.f.WriteAt(e.buf[:n], e.off); err != nil {
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
	_, err := e.f.WriteAt(e.buf, e.off)
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
	chain   uint32
	chained bool
}

// readChunk is how much of a segment the decoder reads at a time.
const readChunk = 4 << 20

// reset starts reading a segment; the checksum chain carries over.
func (d *decoder) reset(f *os.File, size int64) {
	d.f = f
	d.pos, d.end = 0, 0
	d.size, d.off = size, 0
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
// valid until the following call. It returns io.EOF at the end of the
// segment, errTorn for a record a crash may have torn, and an error
// matching ErrCorrupt otherwise.
func (d *decoder) next() (recordType, []byte, error) {
	d.recOff = d.off
	rem := d.size - d.off
	if rem == 0 {
		return 0, nil, io.EOF
	}
	if rem < lenBytes {
		return 0, nil, errTorn
	}
	if err := d.fill(lenBytes); err != nil {
		return 0, nil, readErr(err)
	}
	n := binary.LittleEndian.Uint64(d.chunk[d.pos:])
	if n == 0 {
		return 0, nil, io.EOF
	}
	if n>>56 != 0 || n < bodyHeader {
		return 0, nil, fmt.Errorf("%w: bad record length %#x", ErrCorrupt, n)
	}
	if n+uint64(padding(int(n%8))) > uint64(rem-lenBytes) {
		// Runs past the end of the file: the rest never reached it.
		return 0, nil, errTorn
	}
	if n > maxRecordBytes {
		return 0, nil, fmt.Errorf("%w: record of %d bytes exceeds the limit", ErrCorrupt, n)
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
		v := binary.LittleEndian.Uint32(data)
		if d.chained && v != d.chain {
			return 0, nil, fmt.Errorf("%w: segment continues checksum %#x, previous segment ended with %#x", ErrCRCMismatch, v, d.chain)
		}
		seed = v
	}
	if sum := crc32.Update(seed, castagnoli, buf[4:body]); sum != binary.LittleEndian.Uint32(buf) {
		if hasZeroSector(buf[:body], d.off+lenBytes) {
			return 0, nil, errTorn
		}
		return 0, nil, ErrCRCMismatch
	}
	d.chain = binary.LittleEndian.Uint32(buf)
	d.chained = true
	d.pos += lenBytes + frame
	d.off += int64(lenBytes + frame)
	return t, data, nil
}

// readErr turns a short read of a checked length into a torn record: the
// file shrank under the reader.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errTorn
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

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func decodeSnapshot(data []byte) (WALSnapshot, error) {
	if len(data) != 16 {
		return WALSnapshot{}, fmt.Errorf("%w: snapshot record of %d bytes", ErrCorrupt, len(data))
	}
	return WALSnapshot{Index: binary.LittleEndian.Uint64(data), Term: binary.LittleEndian.Uint64(data[8:])}, nil
}
