// Package fsm owns Collie's replicated state machine: the znode tree, the
// table of open sessions and the last applied zxid, and the ZooKeeper 3.8
// semantics of every write, decided deterministically as entries are
// applied.
//
// Every replica feeds the same committed entries, in log order, to Apply:
//
//	res := f.Apply(index, entry)
//
// and reaches the same state and the same results, errors included. The zxid
// of an entry is its raft index, so zxids only grow. Apply returns the result
// for the client that sent the request and the watch events the change
// fires; the caller hands the events to its watch registry before it answers
// the client, which gives ZooKeeper's guarantee that a client sees a watch
// event before any reply that shows the change.
//
// An entry's first byte is its version, which names the rules it applies
// under as well as its encoding (entryVersion lists what each version
// changed). Apply decides each entry by its own version's rules, so
// replaying a log, whole or after a snapshot, reaches the same state
// whichever Collie replays it, and a replica applies entries an older
// leader wrote as that leader did. An entry of a version this code does
// not know is refused (ErrUnknownEntry): the replica stops rather than
// diverge.
//
// Validation happens in Apply, in the order of ZooKeeper's
// PrepRequestProcessor, so the first failing check decides the error code
// exactly as it does on ZooKeeper. A multi is applied op by op under the
// tree's journal and rolled back whole when one op fails.
//
// A server that follows a ZooKeeper ensemble instead of a raft log feeds
// the ensemble's committed transactions, in zxid order, to ApplyZooKeeper,
// which changes the state as ZooKeeper's own DataTree does and returns the
// same kind of Result; the zxid of each is ZooKeeper's.
//
// Reads do not go through the log: Read answers them from the local state.
// FSM is not safe for concurrent use; the server serialises Apply against
// Read with a lock. The package does no I/O except through the io.Writer and
// io.Reader given to Save and Restore.
package fsm
