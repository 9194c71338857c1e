//go:build !linux

package smallfs

import "testing"

// Mount skips the test: mounting a tmpfs is Linux's.
func Mount(tb testing.TB, size int64) string {
	tb.Helper()
	skip(tb, "smallfs: mounting a tmpfs needs Linux")
	return ""
}

// Free is not reached: Mount skips first.
func Free(tb testing.TB, dir string) int64 { panic("smallfs: Linux only") }

// Fill is not reached: Mount skips first.
func Fill(tb testing.TB, dir string, free int64) string { panic("smallfs: Linux only") }
