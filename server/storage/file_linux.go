package storage

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// fdatasync flushes a file's data and the metadata needed to read it back,
// skipping what fsync would add (timestamps).
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// preallocate extends f to size bytes of allocated zeros, so appends neither
// grow the file nor have to allocate blocks at fsync time. File systems that
// cannot do it leave the file as it is; appends then grow it.
func preallocate(f *os.File, size int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() >= size {
		return nil
	}
	for {
		err = syscall.Fallocate(int(f.Fd()), 0, 0, size)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	return nil
}

// dataRanges returns the ranges of f between from and to that may hold
// anything but zeros, leaving out holes and blocks allocated but never
// written, which read as zeros. Call it before reading the range: pages
// read into the cache, zeros or not, count as data from then on. A file
// system that cannot tell reports all of it as data.
func dataRanges(f *os.File, from, to int64) ([][2]int64, error) {
	const seekData, seekHole = 3, 4
	seek := func(off int64, whence int) (int64, error) {
		for {
			n, err := syscall.Seek(int(f.Fd()), off, whence)
			if !errors.Is(err, syscall.EINTR) {
				return n, err
			}
		}
	}
	var ranges [][2]int64
	for off := from; off < to; {
		data, err := seek(off, seekData)
		switch {
		case errors.Is(err, syscall.ENXIO):
			return ranges, nil
		case errors.Is(err, syscall.EINVAL):
			return append(ranges, [2]int64{off, to}), nil
		case err != nil:
			return nil, err
		}
		hole, err := seek(data, seekHole)
		if err != nil {
			return nil, err
		}
		if data >= to {
			break
		}
		ranges = append(ranges, [2]int64{data, min(hole, to)})
		off = hole
	}
	return ranges, nil
}

// openDirect opens path for writing around the page cache (O_DIRECT).
func openDirect(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT, 0)
}

// freeBytes returns the bytes free for this process on the file system
// holding dir.
func freeBytes(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
