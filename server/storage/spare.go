package storage

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// spareName is the file the next segment is prepared in.
const spareName = "spare" + walSuffix + tmpSuffix

// spareChunk is the size of each write of zeros, and spareSyncEvery how
// many bytes go between fsyncs: a spare is flushed a little at a time so
// that the WAL's own fsyncs never wait behind tens of megabytes of it.
const (
	spareChunk     = 1 << 20
	spareSyncEvery = 4 << 20
)

var errSpareStopped = errors.New("storage: spare segment discarded")

// spare is a segment file prepared ahead of the cut that will need it, on a
// goroutine of its own so that the cut does not wait for it.
//
// Its blocks are written with zeros and synced, not merely allocated as
// preallocate does. On ext4 and XFS an allocated block is "unwritten" until
// data lands in it, and turning it into a written one changes the file's
// extent map: every fdatasync after appends into such blocks must commit
// the file system's journal. Appends over written blocks change no
// metadata, so their fdatasync flushes the data alone, about a third
// faster and cheaper in CPU on the machines Collie was measured on.
type spare struct {
	path string
	size int64
	stop atomic.Bool
	done chan struct{} // closed once f or err is set
	f    *os.File      // the prepared file, when err is nil
	err  error
}

// startSpare starts preparing a spare of size bytes in dir.
func startSpare(dir string, size int64) *spare {
	s := &spare{path: filepath.Join(dir, spareName), size: size, done: make(chan struct{})}
	go s.prepare()
	return s
}

func (s *spare) prepare() {
	defer close(s.done)
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		s.err = err
		return
	}
	s.err = s.fill(f)
	if s.err != nil {
		f.Close()
		os.Remove(s.path)
		return
	}
	s.f = f
}

// fill writes the spare's zeros around the page cache where the file system
// allows it: zeros copied into the cache cost as much CPU as the appends
// that overwrite them, and their writeback competes with the WAL's fsyncs
// in bursts. The appends never read the pages back, since the WAL writes
// whole pages (see encoder.flush).
func (s *spare) fill(f *os.File) error {
	whole := s.size &^ (pageBytes - 1)
	from := int64(0)
	if d, err := openDirect(s.path); err == nil {
		err = writeZeros(d, directZeros(spareChunk), 0, whole, 0, &s.stop)
		d.Close()
		switch {
		case err == nil:
			from = whole
		case errors.Is(err, syscall.EINVAL):
			// A file system that takes direct writes on open but not on
			// write: the page cache it is.
		default:
			return err
		}
	}
	if from < s.size {
		if err := writeZeros(f, make([]byte, min(spareChunk, s.size-from)), from, s.size, spareSyncEvery, &s.stop); err != nil {
			return err
		}
	}
	return fdatasync(f)
}

// writeZeros writes zeros (a buffer of them) to f from offset from to end,
// a chunk at a time until stop is set, with an fdatasync every syncEvery
// bytes unless that is 0.
func writeZeros(f *os.File, zeros []byte, from, end, syncEvery int64, stop *atomic.Bool) error {
	var unsynced int64
	for off := from; off < end; off += int64(len(zeros)) {
		if stop.Load() {
			return errSpareStopped
		}
		n := min(int64(len(zeros)), end-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return err
		}
		if unsynced += n; syncEvery > 0 && unsynced >= syncEvery {
			if err := fdatasync(f); err != nil {
				return err
			}
			unsynced = 0
		}
	}
	return nil
}

// directZeros is alignedZeros; tests replace it to have direct writes
// refused.
var directZeros = alignedZeros

// alignedZeros returns n zero bytes starting at a page boundary in memory,
// as direct I/O requires.
func alignedZeros(n int) []byte {
	b := make([]byte, n+pageBytes)
	skip := -int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) & (pageBytes - 1)
	return b[skip : skip+n]
}

// ready reports, without waiting, whether the spare can be taken.
func (s *spare) ready() bool {
	select {
	case <-s.done:
		return s.err == nil
	default:
		return false
	}
}

// failed returns the error that ended the preparation, nil while it goes on
// or when it succeeded.
func (s *spare) failed() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// discard stops the preparation, waits for it to end, and removes the file.
func (s *spare) discard() {
	s.stop.Store(true)
	<-s.done
	if s.f != nil {
		s.f.Close()
		os.Remove(s.path)
	}
}
