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
//	lock      one acquisition and release of an exclusive lock (ephemeral
//	          sequential node, watch on the predecessor only); Nodes locks
//	watch     ExistsW on the worker's node, Set through the next session,
//	          measured from the Set until the notification
//	sessions  open a session and close it
//	fill      one transaction creating as many znodes of Size bytes as the
//	          request limit allows, until Nodes exist
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
