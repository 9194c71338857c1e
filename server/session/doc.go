// Package session owns session liveness: the leader's tracker that expires
// sessions in tickTime buckets, session id generation, timeout negotiation
// and session passwords, all as ZooKeeper 3.8 does them.
//
// Creating and closing a session are log entries; liveness is not. The
// tracker mirrors the committed session table and turns activity into
// deadlines:
//
//	t := session.NewTracker(tickTime, time.Now())
//
//	// createSession committed (on every replica, so a new leader has them):
//	t.Add(id, timeout, now)
//	// a ping or request of the session, seen here or reported by a peer:
//	t.Touch(id, now)
//	// the client sent closeSession: no activity may revive it now.
//	t.MarkClosing(id)
//	// closeSession committed:
//	t.Remove(id)
//
//	// on the leader, whenever NextExpiry's time arrives:
//	for _, id := range t.Expired(now) {
//		// propose closeSession for id
//	}
//
//	// on becoming leader: nobody has reported activity to us yet.
//	t.ResetAll(now)
//
// A session's deadline is its last activity plus its timeout, rounded up to
// the next multiple of tickTime, so the sessions of one tick expire together
// (ZooKeeper's ExpiryQueue). Expired hands each session out once and marks it
// closing: touches no longer move it, so a client cannot slip back between
// the leader's decision and the commit of its closeSession.
//
// Nothing here reads the clock, starts a goroutine, logs or does I/O: time
// comes in as now. Tracker is not safe for concurrent use; Generator is.
package session
