package peer

import "testing"

// SetSnapshotChunkHook has f called after each chunk of snapshot data is
// written, with the receiver's id, until the test ends. Set it before
// creating transports.
func SetSnapshotChunkHook(tb testing.TB, f func(to uint64)) {
	old := snapshotChunkHook
	snapshotChunkHook = f
	tb.Cleanup(func() { snapshotChunkHook = old })
}
