package storage

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
)

// SetSegmentBytes sets the size at which WALs created or opened from now on
// cut their segments, until the test ends.
func SetSegmentBytes(tb testing.TB, n int64) {
	old := segmentBytes
	segmentBytes = n
	tb.Cleanup(func() { segmentBytes = old })
}

// NoSpares turns off the preparing of spare segments until the test ends,
// so that segments are cut only when full.
func NoSpares(tb testing.TB) {
	old := spares
	spares = false
	tb.Cleanup(func() { spares = old })
}

// CountSyncs counts the fsyncs of appended WAL records until the test ends.
func CountSyncs(tb testing.TB) *atomic.Int64 {
	old := syncData
	var n atomic.Int64
	syncData = func(f *os.File) error {
		n.Add(1)
		return old(f)
	}
	tb.Cleanup(func() { syncData = old })
	return &n
}

const SectorBytes = sectorBytes

// WaitSpare waits until the spare segment w is preparing, if any, is ready
// or has failed.
func WaitSpare(w *WAL) {
	w.mu.Lock()
	s := w.spare
	w.mu.Unlock()
	if s != nil {
		<-s.done
	}
}

const SpareName = spareName

// MisalignDirectWrites gives the direct writes of spares a buffer that is
// not aligned to a page, until the test ends. It reports whether the file
// system of dir refuses such a write (EINVAL), as it would refuse every
// direct write on a file system that accepts O_DIRECT only at open.
func MisalignDirectWrites(tb testing.TB, dir string) bool {
	old := directZeros
	directZeros = func(n int) []byte { return alignedZeros(n + 1)[1:] }
	tb.Cleanup(func() { directZeros = old })
	probe := filepath.Join(dir, "direct-probe")
	f, err := os.Create(probe)
	if err != nil {
		tb.Fatal(err)
	}
	f.Close()
	defer os.Remove(probe)
	d, err := openDirect(probe)
	if err != nil {
		return false
	}
	defer d.Close()
	_, err = d.WriteAt(directZeros(pageBytes), 0)
	return errors.Is(err, syscall.EINVAL)
}

// FileHook runs f before each file operation whose failure the WAL and the
// snapshots must survive, until the test ends: op is "write" (WAL
// records), "fdatasync" (appended WAL records, a new segment), "fsync"
// (snapshot files, truncated segments, directories), "rename" or
// "remove", and path is the file: for a rename, its new name; for an open
// file, the name it was opened under (a segment made from a spare is
// spare.wal.tmp, one a cut made is its name with .tmp). An error from f
// fails the operation without doing it. Set it before the WAL or
// snapshotter is used.
func FileHook(tb testing.TB, f func(op, path string) error) {
	oldWrite, oldData, oldSync, oldRename, oldRemove := writeAt, syncData, syncFile, rename, remove
	tb.Cleanup(func() {
		writeAt, syncData, syncFile, rename, remove = oldWrite, oldData, oldSync, oldRename, oldRemove
	})
	writeAt = func(file *os.File, b []byte, off int64) (int, error) {
		if err := f("write", file.Name()); err != nil {
			return 0, err
		}
		return oldWrite(file, b, off)
	}
	syncData = func(file *os.File) error {
		if err := f("fdatasync", file.Name()); err != nil {
			return err
		}
		return oldData(file)
	}
	syncFile = func(file *os.File) error {
		if err := f("fsync", file.Name()); err != nil {
			return err
		}
		return oldSync(file)
	}
	rename = func(from, to string) error {
		if err := f("rename", to); err != nil {
			return err
		}
		return oldRename(from, to)
	}
	remove = func(path string) error {
		if err := f("remove", path); err != nil {
			return err
		}
		return oldRemove(path)
	}
}
