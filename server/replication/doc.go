// Package replication owns the raft node of a Collie server: the
// go.etcd.io/raft/v3 RawNode, the goroutine that drives it, the batching of
// proposals, and the order in which a Ready is made durable, applied and
// acknowledged.
//
// One goroutine, run, owns the RawNode; raft's storage writes are
// asynchronous (raft.Config.AsyncStorageWrites), so run never waits for a
// disk. It sends each Ready's messages to the other members at once (a
// leader's new entries reach the followers while it writes them itself)
// and hands the rest, in raft's order, to two goroutines:
//
//   - appendLoop makes log appends durable: the hard state and entries of
//     every append queued while the previous fsync ran share the next one
//     (group commit), then the entries join the in-memory log raft reads,
//     and only then go the answers that promise them (acknowledgements,
//     votes, and the note to run that they are stable). A received
//     snapshot is written, then its WAL marker, then restored.
//   - applyLoop hands committed entries to Apply in log order, restores
//     received snapshots in their turn, answers the reads waiting for an
//     index, and every SnapCount entries has the state machine freeze its
//     state, which another goroutine encodes to a file while applying goes
//     on; appendLoop then records the file in the log, after the entries
//     and commit index it covers, and compacts the log. TakeSnapshot asks
//     for one out of turn (a backup): the ask waits in applyLoop's queue,
//     is answered by appendLoop once a recorded snapshot holds everything
//     applied when it was made, and then reads that file.
//
// A write is acknowledged to its client from Apply, so only after its
// fsync on a quorum.
//
// An append that finds no space on the disk changed nothing (see
// Storage): appendLoop holds it and makes it again, with backoff, until
// there is space, while Propose refuses new proposals with ErrDiskFull and
// a leader hands its leadership to another voter. A snapshot that finds no
// space is abandoned and tried again later. diskfull.go has the details.
//
// A storage write that fails otherwise (an append, a snapshot file, its
// record in the log) stops the node with ErrStorageFailed, and is never
// tried again: after a failed fsync nobody can tell what reached the disk,
// and the storage refuses further appends. Nothing that write would have promised
// is sent, and a snapshot whose file failed is not recorded. A node
// started again on the same storage recovers what did reach it.
//
// Proposals waiting when run takes one go to raft together, as one
// message, and the messages of a Ready to one member are merged where the
// member would do with one what it did with each in turn (coalesce):
// appends that continue one another, and acknowledgements of appends.
// Raft would otherwise send an append per proposal message and another per
// acknowledgement that moves the commit index.
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
// forwarded to the leader by raft itself, those taken together in one
// message. Raft sends a forwarded proposal or read request once: when the
// transport reports a message to the leader lost, ForwardsLost signals,
// so that whoever waits for a proposal gives up, and the reads waiting
// for their ReadIndex fail, as they do when the leader changes. A snapshot message leaves the
// loop with the metadata only; its data is read from the snapshot file on
// another goroutine and then sent.
package replication
