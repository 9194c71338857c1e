// Package smallfs mounts small file systems for tests that need a disk to
// fill up: a tmpfs of a given size, mounted for one test and unmounted when
// it ends.
package smallfs

import (
	"os"
	"testing"
)

// skip skips a test that cannot mount, unless the environment variable CI
// is "true": CI machines can mount, so there the test fails rather than
// pass without having run.
func skip(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf(format, args...)
	}
	tb.Skipf(format, args...)
}
