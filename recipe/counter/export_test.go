package counter

import "testing"

// SetBeforeWrite makes every AtomicLong update run f, with the counter,
// between its read and its write, until the test ends.
func SetBeforeWrite(t testing.TB, f func(*AtomicLong)) {
	beforeWrite = f
	t.Cleanup(func() { beforeWrite = nil })
}
