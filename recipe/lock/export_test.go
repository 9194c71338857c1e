package lock

import "testing"

// OnWoken makes f be called every time a watch wakes a contender waiting
// in line, until the test ends.
func OnWoken(t testing.TB, f func()) {
	wokenHook.Store(&f)
	t.Cleanup(func() { wokenHook.Store(nil) })
}
