package server

import "testing"

// SetAwaitLeaderHook makes f run each time a server waits for a leader
// to resume a session, until t ends. Not for parallel tests.
func SetAwaitLeaderHook(t testing.TB, f func()) {
	testHookAwaitLeader = f
	t.Cleanup(func() { testHookAwaitLeader = nil })
}
