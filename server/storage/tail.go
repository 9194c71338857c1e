package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// crcFrame is the size of a crc record on disk: length word, checksum,
// type, the 4-byte value and padding.
const crcFrame = lenBytes + bodyHeader + 4 + 7

// tailScanChunk is how much of a segment's tail checkTail reads at a time.
const tailScanChunk = 1 << 20

// tail is what lies from the end of the last segment's records on.
type tail struct {
	// batch is the offset of the first intact crc record found there, -1
	// when there is none.
	batch int64
	// end is just past the last byte that is not zero.
	end int64
	// records counts the records that begin there, as far as their
	// length words can be followed.
	records int
}

// checkTail decides whether the last segment, whose records stop at off
// with why (errZeroLength, errTorn or errCutShort), ends there as a crash
// during an append can leave it, and returns what the crash left behind
// to be cut off. Otherwise it returns an error matching ErrCorrupt. The
// rule is documented under "Crashes and corruption" in the package doc.
func checkTail(f *os.File, size, off int64, why error) (tail, error) {
	if errors.Is(why, errCutShort) && size%pageBytes != 0 {
		return tail{}, fmt.Errorf("%w: %w, and the file's size, %d, is not a whole number of pages as appends leave it", ErrCorrupt, why, size)
	}
	t, err := scanTail(f, size, off)
	if err != nil {
		return tail{}, err
	}
	if t.batch >= 0 {
		return tail{}, fmt.Errorf("%w: %w, yet the records of an append made durable after it begin at offset %d", ErrCorrupt, why, t.batch)
	}
	return t, nil
}

// scanTail reads the segment from off to size, looking for an intact crc
// record, and measures what is not zero.
func scanTail(f *os.File, size, off int64) (tail, error) {
	t := tail{batch: -1, end: off}
	next := off // where the next record begins while its framing holds; -1 after
	// Much of a segment's tail is often blocks allocated and never
	// written: they need no reading. (Finding them moves the file's
	// offset, which nothing reads from any more: the records were read
	// before, and appends write at offsets of their own.)
	ranges, err := dataRanges(f, off, size)
	if err != nil {
		return t, err
	}
	buf := make([]byte, tailScanChunk+crcFrame)
	for _, r := range ranges {
		// Keep the 8-byte grid of the records.
		from := off + (r[0]-off)&^(lenBytes-1)
		if next >= 0 && next < from {
			next = -1
		}
		for base := from; base < r[1]; base += tailScanChunk {
			n, err := f.ReadAt(buf[:min(int64(len(buf)), size-base)], base)
			if err != nil && !errors.Is(err, io.EOF) {
				return t, err
			}
			b := buf[:n]
			for i := 0; i < min(n, tailScanChunk, int(r[1]-base)); {
				o := base + int64(i)
				if o%pageBytes == 0 && i+pageBytes <= n && isZero(b[i:i+pageBytes]) {
					if next >= o && next < o+pageBytes {
						next = -1
					}
					i += pageBytes
					continue
				}
				word := b[i:min(i+lenBytes, n)]
				for j := len(word) - 1; j >= 0; j-- {
					if word[j] != 0 {
						t.end = o + int64(j) + 1
						break
					}
				}
				if o == next {
					next = -1
					if len(word) == lenBytes {
						if l := binary.LittleEndian.Uint64(word); l >= bodyHeader && l <= maxRecordBytes {
							t.records++
							next = o + lenBytes + int64(l) + int64(padding(int(l)))
						}
					}
				}
				if isCRCRecord(b[i:]) {
					t.batch = o
					return t, nil
				}
				i += lenBytes
			}
		}
	}
	return t, nil
}

// isCRCRecord reports whether b begins with an intact crc record. Its
// checksum is seeded by its own value, so it can be checked without the
// records before it.
func isCRCRecord(b []byte) bool {
	if len(b) < crcFrame || binary.LittleEndian.Uint64(b) != bodyHeader+4 || recordType(b[lenBytes+4]) != crcType {
		return false
	}
	v := binary.LittleEndian.Uint32(b[lenBytes+bodyHeader:])
	sum := crc32.Update(v, castagnoli, b[lenBytes+4:lenBytes+bodyHeader+4])
	return sum == binary.LittleEndian.Uint32(b[lenBytes:]) && isZero(b[lenBytes+bodyHeader+4:crcFrame])
}

// CorruptError is damage found at a place in a file. It matches
// ErrCorrupt.
type CorruptError struct {
	// Path is the damaged file.
	Path string
	// Offset is where in it the damage begins: every record of a WAL
	// segment before it is intact.
	Offset int64
	// Later are the WAL segments after Path, which hold records logged
	// after the damage.
	Later []string
	Err   error
	// segment is set for damage to a WAL segment, header for damage to
	// the records every segment begins with.
	segment, header bool
}

// Cut says how to cut the log at the damage, giving up every record from
// it on: truncate Path to size bytes, or remove it when size is -1 (its
// header is damaged), and remove the segments in remove. It returns false
// for damage that is not in a WAL segment. Whether to is the operator's
// call: the records cut off may have been acknowledged.
func (e *CorruptError) Cut() (size int64, remove []string, ok bool) {
	if !e.segment {
		return 0, nil, false
	}
	if e.header {
		return -1, append([]string{e.Path}, e.Later...), true
	}
	return e.Offset, e.Later, true
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s, offset %d: %v", e.Path, e.Offset, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }
