package storage

import (
	"os"
	"testing"
)

// FailAllocations has the allocation of WAL segment blocks (a new
// segment's, or a segment's beyond its size) fail with the error fail
// returns for the file, when it returns one, until the test ends.
func FailAllocations(tb testing.TB, fail func(path string) error) {
	old := allocate
	allocate = func(f *os.File, size int64) error {
		if err := fail(f.Name()); err != nil {
			return err
		}
		return old(f, size)
	}
	tb.Cleanup(func() { allocate = old })
}

// FailSyncs has the fsyncs of appended WAL records and of new segments
// fail with the error fail returns for the file, when it returns one,
// until the test ends.
func FailSyncs(tb testing.TB, fail func(path string) error) {
	old := syncData
	syncData = func(f *os.File) error {
		if err := fail(f.Name()); err != nil {
			return err
		}
		return old(f)
	}
	tb.Cleanup(func() { syncData = old })
}
