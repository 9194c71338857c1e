package lock

import (
	"slices"
	"testing"
)

// OnWoken makes f be called every time a watch wakes a contender waiting
// in line, until the test ends.
func OnWoken(t testing.TB, f func()) {
	wokenHook.Store(&f)
	t.Cleanup(func() { wokenHook.Store(nil) })
}

// KazooLine returns those of names that a Mutex from NewKazooMutex counts
// in line, in line order.
func KazooLine(names []string) []string {
	return NewKazooMutex(nil, "/").line.sorted(slices.Clone(names))
}
