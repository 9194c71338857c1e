package server

import (
	"testing"

	"github.com/collie-io/collie/server/replication"
)

// SetAwaitLeaderHook makes f run each time a server waits for a leader
// to resume a session, until t ends. Not for parallel tests.
func SetAwaitLeaderHook(t testing.TB, f func()) {
	testHookAwaitLeader = f
	t.Cleanup(func() { testHookAwaitLeader = nil })
}

// SetStorageHook makes every server created until t ends hand its node
// f's Storage, given the disk. Not for parallel tests.
func SetStorageHook(t testing.TB, f func(replication.Storage) replication.Storage) {
	testHookStorage = f
	t.Cleanup(func() { testHookStorage = nil })
}

// Damaged is Server.damaged for a server of cfg's role.
func Damaged(standalone bool, err error) error {
	s := &Server{}
	s.cfg.Standalone = standalone
	return s.damaged(err)
}
