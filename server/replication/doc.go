// Package replication owns the raft node of a Collie server: the
// go.etcd.io/raft/v3 RawNode, the goroutine that drives it, the batching of
// proposals, and the order in which a Ready is made durable, applied and
// acknowledged.
//
// One goroutine, run, owns the RawNode. Every Ready is handled in the order
// that survives a crash at any instant (as etcd's raftexample):
//
//  1. a received snapshot is written to disk, then its WAL marker;
//  2. the hard state and new entries are appended to the WAL with one fsync
//     (every proposal queued at that moment rides on it: group commit);
//  3. the entries are appended to the in-memory raft log, and messages sent;
//  4. committed entries are handed to Apply, in log order;
//  5. every SnapCount applied entries the state machine freezes its state
//     and encodes it on another goroutine while applying goes on; when the
//     encoding is done, run writes the snapshot and compacts the log;
//  6. Advance.
//
// A write is acknowledged to its client from Apply, so only after the fsync
// of step 2 on a quorum.
//
// # Ensembles
//
// In an ensemble the members are fixed by the configuration: Voters (the
// leader and followers) and Learners (ZooKeeper's observers, which receive
// the log and never vote). At its first start every member writes a
// snapshot of the empty state at index 1 holding that membership, so a
// fresh ensemble needs no bootstrap step and learners are members from the
// first entry. Messages go out
// through a Transport and come in through Step; the transport tells raft
// of lost messages and finished snapshot transfers with ReportUnreachable
// and ReportSnapshot. Proposals made on a follower or a learner are
// forwarded to the leader by raft itself. A snapshot message leaves the
// loop with the metadata only; its data is read from the snapshot file on
// another goroutine and then sent.
package replication
