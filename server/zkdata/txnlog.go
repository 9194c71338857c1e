package zkdata

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"os"
)

// ErrBadLog wraps damage in a transaction log that is not a torn write
// at its end.
var ErrBadLog = errors.New("zkdata: damaged transaction log")

// LogEnd says how a log file ended.
type LogEnd struct {
	// Offset is where the last whole transaction ends.
	Offset int64
	// Txns is the number of transactions read.
	Txns int
	// Torn is set when the file ends with an incomplete transaction: the
	// record a crash interrupted, never acknowledged to a client, followed
	// by nothing but the zeros ZooKeeper preallocates. TornBytes is its
	// length as far as it got.
	Torn      bool
	TornBytes int64
}

// ReadLogFile reads the transactions of one ZooKeeper log file in order
// and hands each to fn with its offset. A record cut short at the end of
// the file is reported in LogEnd, not as an error; a record that fails its
// checksum or decoding with data after it, or anything after the end, is
// ErrBadLog naming the offset.
func ReadLogFile(path string, fn func(t *Txn, off int64) error) (LogEnd, error) {
	var end LogEnd
	f, err := os.Open(path)
	if err != nil {
		return end, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return end, err
	}
	size := st.Size()
	br := bufio.NewReaderSize(f, 256<<10)
	var head [16]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return end, fmt.Errorf("%w: %s: no file header (%d bytes)", ErrBadLog, path, size)
	}
	if m := binary.BigEndian.Uint32(head[:4]); m != logMagic {
		return end, fmt.Errorf("%w: %s: not a ZooKeeper transaction log (magic %08x)", ErrBadLog, path, m)
	}
	if v := int32(binary.BigEndian.Uint32(head[4:8])); v != 2 {
		return end, fmt.Errorf("%w: %s: log format version %d; ZooKeeper 3.4 to 3.9 write 2", ErrBadLog, path, v)
	}
	off := int64(len(head))
	end.Offset = off
	var rec [12]byte
	var buf []byte
	for {
		n, err := io.ReadFull(br, rec[:])
		if err == io.EOF {
			return end, nil
		}
		if err != nil {
			return end, tornOrDamaged(path, f, off, size, off+int64(n), &end, "a record header cut short")
		}
		sum := binary.BigEndian.Uint64(rec[:8])
		length := int64(int32(binary.BigEndian.Uint32(rec[8:12])))
		if length == 0 && sum == 0 {
			// The zeros ZooKeeper preallocates: the end of the log.
			return end, checkEnd(path, f, off, size)
		}
		if length <= 0 || length > maxTxnBytes || off+12+length+1 > size {
			return end, tornOrDamaged(path, f, off, size, min(off+12+max(length, 0)+1, size), &end, fmt.Sprintf("a record of %d bytes", length))
		}
		if cap(buf) < int(length)+1 {
			buf = make([]byte, length+1)
		}
		buf = buf[:length+1]
		if _, err := io.ReadFull(br, buf); err != nil {
			return end, fmt.Errorf("%w: %s at offset %d: %w", ErrBadLog, path, off, err)
		}
		body := buf[:length]
		if buf[length] != 'B' || uint64(adler32.Checksum(body)) != sum {
			why := "checksum mismatch"
			if buf[length] != 'B' {
				why = "no end-of-record mark"
			}
			return end, tornOrDamaged(path, f, off, size, off+12+length+1, &end, why)
		}
		t, err := DecodeTxn(body)
		if err != nil {
			return end, fmt.Errorf("%w: %s at offset %d: %w", ErrBadLog, path, off, err)
		}
		if err := fn(t, off); err != nil {
			return end, err
		}
		off += 12 + length + 1
		end.Offset = off
		end.Txns++
	}
}

// tornOrDamaged decides about a bad record at off: a torn write if no
// whole record follows it anywhere in the file, so that nothing readable
// is lost by stopping there; damage otherwise.
func tornOrDamaged(path string, f *os.File, off, size, recEnd int64, end *LogEnd, why string) error {
	next, err := findRecord(f, off+1, size)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadLog, path, err)
	}
	if next >= 0 {
		return fmt.Errorf("%w: %s at offset %d: %s, and a whole transaction follows at offset %d: "+
			"the transactions from offset %d on cannot be read in order", ErrBadLog, path, off, why, next, off)
	}
	end.Torn, end.TornBytes = true, recEnd-off
	return nil
}

// checkEnd checks that no whole record follows the end of a log at off.
func checkEnd(path string, f *os.File, off, size int64) error {
	next, err := findRecord(f, off, size)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadLog, path, err)
	}
	if next >= 0 {
		return fmt.Errorf("%w: %s: the log ends at offset %d, but a whole transaction follows at offset %d", ErrBadLog, path, off, next)
	}
	return nil
}

// maxScan bounds how much of a log findRecord reads.
const maxScan = 1 << 30

// findRecord returns the offset of the first whole record (a length that
// fits, the end mark, a matching checksum and a transaction header that
// decodes) at or after from, or -1.
func findRecord(f *os.File, from, size int64) (int64, error) {
	if size-from > maxScan {
		return -1, fmt.Errorf("%d bytes after offset %d to search for transactions: more than %d", size-from, from, maxScan)
	}
	if size-from < 13 {
		return -1, nil
	}
	rest := make([]byte, size-from)
	if _, err := f.ReadAt(rest, from); err != nil && err != io.EOF {
		return -1, err
	}
	for p := 0; p+13 <= len(rest); p++ {
		length := int64(int32(binary.BigEndian.Uint32(rest[p+8 : p+12])))
		if length <= 0 || int64(p)+12+length+1 > int64(len(rest)) || rest[int64(p)+12+length] != 'B' {
			continue
		}
		body := rest[int64(p)+12 : int64(p)+12+length]
		if uint64(adler32.Checksum(body)) != binary.BigEndian.Uint64(rest[p:p+8]) {
			continue
		}
		if _, err := DecodeTxn(body); err == nil {
			return from + int64(p), nil
		}
	}
	return -1, nil
}
