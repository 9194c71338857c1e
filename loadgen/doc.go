// Package loadgen is a load generator for ZooKeeper-protocol servers
// (Collie, Apache ZooKeeper): it owns the workloads, the closed and open
// request loops, latency histograms, side-by-side comparison of two
// servers, and the reports of `collie bench`. It talks to servers only
// through the client package.
//
// # A run
//
// Run takes a Config and goes through these steps for each connect string:
// dial Clients sessions, client i on server i mod n of the connect string;
// make a subtree of its own, Prefix/<workload>-<random>, and lay out what
// the workload needs there; run the warm-up and forget what it measured;
// measure for Duration; close the sessions and delete the subtree (unless
// Keep), also when the run fails or its context ends.
//
// Each session carries Inflight workers, and a worker does one op at a time.
// In a closed loop a worker starts its next op when the last one returns.
// In an open loop (Rate > 0) a pacer makes ops due at fixed times,
// start + n/Rate, and hands them to whichever worker is free; an op's
// latency is measured from when it was due, so that a server that falls
// behind shows it in the latencies instead of being offered less work
// (coordinated omission).
//
// # Workloads
//
//	create    Create a new persistent znode; every worker below a parent of its own
//	set       Set on a znode of the worker's own, or on one of Nodes at random
//	get       Get, on the same key space
//	mixed     Get with probability ReadRatio, otherwise Set
//	pipeline  Inflight requests in flight per session (16 by default),
//	          reads with probability ReadRatio (half Get, a quarter each
//	          Exists and Children), otherwise writes (three in four Set,
//	          the fourth a Create or Delete of a child, in turn), on
//	          znodes the session's own workers write; each read is checked
//	          against the session's acknowledged writes
//	lock      one acquisition and release of an exclusive lock (ephemeral
//	          sequential node, watch on the predecessor only); Nodes locks
//	watch     ExistsW on the worker's node, Set through the next session,
//	          measured from the Set until the notification
//	sessions  open a session and close it
//	fill      one transaction creating as many znodes of Size bytes as the
//	          request limit allows, until Nodes exist
//
// # Read-your-writes
//
// The pipeline workload makes reads queue at the server behind writes of
// their own session, the case where a server must keep the session's
// order, and checks the answers while it measures. Worker i of a run is
// the only writer of its key, so the key's writes take effect in the
// order sent; a value carries the number of sets of its key so far, and
// a key's Stat.Version and Stat.Cversion count its sets and the creations
// and deletions of its child. A read goes to a key of any worker of the
// same session; before sending it, the reader loads the counters the
// key's worker has had acknowledged, and the answer must show them or
// later ones (and none beyond what was sent). A read that does not is a
// violation: it counts as an error, Result.ReadYourWrites counts it, and
// the report says so. The report also gives the share of reads sent while
// a write of their session was in progress, which the server had to hold
// behind that write. A key one of whose writes failed is checked no
// more, since that write may or may not have taken effect. Reads that
// overtake a write of their session still in flight are what the server
// orders, but the client does not say which went on the wire first, so
// the check is against acknowledged writes only: it never flags a correct
// server, and it catches a server that answers a read from before a write
// it has already acknowledged to the session.
//
// # Measurement
//
// Latencies go into a Histogram per worker: log-linear buckets with 128
// per power of two, so memory stays bounded and quantiles are within 0.4%.
// Failed ops are counted as errors and not in the latencies; an op cut short
// because Run's context ended counts as neither. Throughput is the number
// of ops that succeeded over the measured time, which runs until the last
// op of each round has returned.
//
// With Config.Compare, both connect strings are prepared and warmed up,
// then measured in alternating rounds of Round (A, B, A, B...) until each
// has had Duration, so that drift of a shared machine (other work, the
// page cache, thermal limits) hits both alike. A is Connect, the baseline;
// B is Compare; Report.Ratio holds B/A.
//
// # Goroutines
//
// During a round: one per worker, plus the pacer in an open loop, all
// waited for before the round ends. During the whole run: the progress
// writer when Config.Progress is set. The watch workload starts one
// goroutine per op for the change, and waits for it within the op. Run
// returns only once every goroutine it started, and every client's, has
// ended.
package loadgen
