//go:build !linux

package storage

import (
	"errors"
	"os"
)

// fdatasync flushes a file to stable storage.
func fdatasync(f *os.File) error { return f.Sync() }

// preallocate does nothing where fallocate is missing; appends grow the file.
func preallocate(*os.File, int64) error { return nil }

// dataRanges reports the whole range as data.
func dataRanges(_ *os.File, from, to int64) ([][2]int64, error) {
	return [][2]int64{{from, to}}, nil
}

// openDirect reports that writes around the page cache are not supported
// here: spares are written through it.
func openDirect(string) (*os.File, error) {
	return nil, errors.ErrUnsupported
}

// freeBytes reports that free space is not known here.
func freeBytes(string) (int64, bool) { return 0, false }
