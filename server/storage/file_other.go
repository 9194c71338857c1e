//go:build !linux

package storage

import "os"

// fdatasync flushes a file to stable storage.
func fdatasync(f *os.File) error { return f.Sync() }

// preallocate does nothing where fallocate is missing; appends grow the file.
func preallocate(*os.File, int64) error { return nil }
