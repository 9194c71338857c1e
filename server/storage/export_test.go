package storage

import (
	"os"
	"sync/atomic"
	"testing"
)

// SetSegmentBytes sets the size at which WALs created or opened from now on
// cut their segments, until the test ends.
func SetSegmentBytes(tb testing.TB, n int64) {
	old := segmentBytes
	segmentBytes = n
	tb.Cleanup(func() { segmentBytes = old })
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
