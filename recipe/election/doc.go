// Package election elects a leader among processes that share a
// ZooKeeper-protocol ensemble. It is built on the client package and offers
// three recipes:
//
//   - Latch, laid out as Apache Curator's LeaderLatch, so that Curator
//     latches and these on one path elect one leader between them. Every
//     participant queues a node; the first in line leads until it closes
//     or loses its session, then the next one does.
//   - Selector, laid out as Curator's LeaderSelector (whose nodes are those
//     of an InterProcessMutex). Each turn of leadership runs a function, and
//     leadership passes on when the function returns.
//   - Master, the simplest election: one ephemeral node at a fixed path.
//     Whoever creates it is master until it resigns or its session ends;
//     everyone else waits for the node to go, and anyone can read who the
//     master is.
//
// # Layout
//
// A Latch creates, under its path, an ephemeral sequential node named
// "_c_<uuid>-latch-<10-digit sequence>" holding the participant's id; a
// Selector names its nodes "_c_<uuid>-lock-<sequence>", with the id too.
// The "_c_<uuid>-" prefix is that of a protected create (see
// client.CreateProtected): a create whose reply was lost is found again
// rather than left behind holding a place in line. Missing parents are
// created as containers, which the server removes once they are empty.
// The leader is the child with the smallest sequence, comparing names by
// what follows their last "latch-" (or "lock-"), as Curator does. Every
// other participant watches only the node just before its own, so a leader
// that goes wakes exactly one participant, and leadership passes in the
// order the nodes were created. The leader watches its own node, so that
// its deletion by anyone ends its leadership.
//
// A Master's node is the path itself, ephemeral, holding the master's data.
// Every contender waits on that one node, and its deletion wakes them all:
// fine for a few contenders, such as the instances of a service that must
// run a daily job once; for many, use a Latch.
//
// # Terms, loss and fencing
//
// A Term is one uninterrupted period of leadership. It is trustworthy only
// while its Lost channel is open. Lost closes as soon as the client's
// connection breaks (the session may be expiring, and someone else may lead
// by the time it is back; Curator's default treats a suspended connection
// the same way), when the session expires, when the client closes, when the
// leader's node is deleted, and when the leader gives leadership up.
//
// Even a leader that watches Lost can be paused (a long garbage collection,
// a stopped virtual machine) past the moment it lost leadership. Token, the
// zxid that created the leader's node, fences its late actions: every new
// leader has a larger token than every leader before it, so a resource that
// remembers the largest token it has seen can refuse the rest. For writes
// to the ensemble itself, a Latch or Selector term's node is never reused:
// a transaction that begins with client.CheckOp(term.Node(),
// client.AnyVersion) is refused once the term's node is gone.
//
// # Sessions
//
// A Latch survives connection losses: it gives up leadership when the
// connection breaks and takes it back, with a new Term and the same token,
// when the session resumes with its node still first in line. When the
// session expires, its node is gone; the Latch creates a new one, at the end
// of the line, once the client has a new session. The recipes never renew a
// session themselves: set client.Config.RenewSession, as Curator always
// does, or call Renew.
//
// # Using a latch
//
//	latch := election.NewLatch(c, "/app/leader", "host-1")
//	if err := latch.Start(ctx); err != nil { ... }
//	defer latch.Close(context.Background())
//	for {
//		term, err := latch.Await(ctx)
//		if err != nil { ... }
//		lead(term) // until <-term.Lost()
//	}
//
// # Using a selector
//
//	sel := election.NewSelector(c, "/app/jobs/compact", "host-1")
//	err := sel.Run(ctx, func(ctx context.Context, term *election.Term) error {
//		// Leading: ctx is cancelled when leadership is lost.
//		return compact(ctx, term.Token())
//	})
//
// # Using a master
//
//	m := election.NewMaster(c, "/app/master", []byte("10.0.0.7:8080"))
//	term, err := m.Campaign(ctx) // returns once this process is master
//	if err != nil { ... }
//	defer m.Resign(context.Background())
//
//	info, ok, err := m.Current(ctx) // who is master, from any process
package election
