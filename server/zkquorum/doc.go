// Package zkquorum owns the learner side of Apache ZooKeeper 3.8's quorum
// protocol, as an observer speaks it: finding the leader of a running
// ZooKeeper ensemble, registering with it, receiving its sync (snapshot,
// diff or truncation) and then every committed txn, answering its pings,
// and forwarding client requests and session revalidations to it.
//
// It delivers the leader's bytes; it does not interpret snapshots or txn
// records beyond what the protocol needs (where a snapshot ends, a txn's
// header), and it keeps no tree. The caller applies what it receives.
//
// # Use
//
// A Follower follows the ensemble across leader changes:
//
//	f, err := zkquorum.NewFollower(cfg, lastAppliedZxid)
//	for {
//		ev, err := f.Next(ctx) // err only when ctx ends
//		switch ev.Kind {
//		case zkquorum.EventSnapshot: // replace the state with ev.Snapshot (read it before the next Next)
//		case zkquorum.EventDiff:     // txns follow
//		case zkquorum.EventTrunc:    // drop txns after ev.Zxid
//		case zkquorum.EventTxn:      // apply ev.Txn
//		case zkquorum.EventUpToDate: // in sync: serve clients, forward requests
//		case zkquorum.EventSynced, zkquorum.EventRevalidated: // answers to forwarded syncs and revalidations
//		case zkquorum.EventDisconnected: // leader lost; fail pending answers; a new sync follows
//		}
//	}
//
// Calling Next says everything it returned before is applied: after a
// disconnection the Follower registers with the next leader from there. Dial
// and Conn are one connection to a known leader, without reconnection.
//
// # The protocol
//
// The quorum port carries jute records with no framing: each message is a
// QuorumPacket (int type, long zxid, buffer data, vector<Id> authinfo)
// written field by field, and the SNAP payload follows its packet on the
// stream. Without quorum SASL (quorum.auth.enableSasl) nothing precedes the
// first packet. An observer's connection runs:
//
//	observer → OBSERVERINFO  zxid = acceptedEpoch<<32, data = LearnerInfo{sid, 0x10000, configVersion}
//	leader   → LEADERINFO    zxid = newEpoch<<32, data = int protocol version (0x10000)
//	observer → ACKEPOCH      zxid = last applied zxid, data = int current epoch (-1 if newEpoch was already accepted)
//	leader   → DIFF zxid | TRUNC zxid | SNAP zxid + snapshot + "BenWasHere"
//	leader   → (PROPOSAL, COMMIT)* and INFORM*, in commit order
//	leader   → NEWLEADER     data = the ensemble's configuration; observer → ACK newEpoch<<32
//	leader   → UPTODATE      observer → ACK newEpoch<<32
//	leader   → INFORM* (committed txns), PING (answered with the session touches),
//	           SYNC (answers a forwarded sync), REVALIDATE (answers a revalidation)
//	observer → REQUEST (sessionId, cxid, type, request bytes; authinfo), REVALIDATE (sessionId, timeout)
//
// INFORMs may arrive before NEWLEADER: the leader starts forwarding
// commits to a learner before it has sent the sync. The leader does not
// require an observer to be listed in its configuration. In ZooKeeper 3.8
// only the leader listens on its quorum port (unless observerMasterPort is
// set), which is how a Follower finds it.
//
// # Goroutines
//
// Next runs on the caller's goroutine and does all reading, acknowledging
// and ping answering; Forward and Revalidate write from the caller's
// goroutine under a write lock. A snapshot is read by one goroutine per
// SNAP, which copies the payload into the pipe the caller reads, parsing
// it only to find its end; Next and Close wait for it or end it.
package zkquorum
