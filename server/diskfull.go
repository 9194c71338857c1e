package server

import (
	"fmt"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/conn"
)

// errDiskFull answers a write refused because the disk holding the log is
// full (replication.ErrDiskFull): the write did not take effect, and will
// not. It is ZooKeeper's OperationTimeout, the code of a write the server
// could not carry out in time that its clients handle best:
//
//   - ZooKeeper 3.8 itself never answers a write on a full disk: its
//     SyncRequestProcessor fails, the server shuts down (the JVM exits),
//     and clients lose their connections, as with a crash.
//   - Every client knows OperationTimeout (Java since 3.0, the C client,
//     Kazoo), and the retrying layers retry it with backoff: Curator's
//     RetryLoop, KazooRetry, this module's client.Retry. Since the write
//     did not happen, retrying it is safe, even for a sequential create;
//     once space is freed, the retry succeeds.
//   - ThrottledOp (-127), which says "not executed, retry with backoff"
//     most exactly, is new in 3.7: Kazoo 2.8 raises RuntimeError on it in
//     its reader thread, and Curator does not retry it. NotReadOnly (-119)
//     is known to Java, C and Kazoo, but no retrying layer retries it,
//     and it speaks of read-only sessions, which this is not.
//     ConnectionLoss would close the connection (Collie's clients learn
//     of it as ZooKeeper's do), and clients that see their connection
//     drop suspend their locks and elections.
//
// The server's log says why, once, when the disk fills (see package
// replication), and mntr's collie_disk_full says 1 while it is full.
const errDiskFull = proto.ErrOperationTimeout

// errNoSessionDiskFull refuses a new session while the disk is full:
// creating one is a write. The connection closes, and the client tries
// again (another server of an ensemble, or this one later).
var errNoSessionDiskFull = fmt.Errorf("server: the disk is full: no session can be created: %w", conn.ErrNotServing)

// diskFullGauge is mntr's collie_disk_full for the node's DiskFull.
func diskFullGauge(err error) string {
	if err != nil {
		return "1"
	}
	return "0"
}
