// Package client is a Go client for ZooKeeper-protocol servers: Collie, or
// Apache ZooKeeper 3.5 and later. It owns a session and everything that
// keeps it usable: the connect string with its chroot, the connection and
// its failover to the next server, pings, re-establishing the session
// after a connection loss, re-arming watches, expiry and renewal, and
// retries of what is safe to retry. Every request and record is the proto
// package's.
//
// # Using a client
//
// Dial connects and returns once the session is established. Every request
// takes a context first; it bounds the wait, never the session.
//
//	c, err := client.Dial(ctx, "zk1:2181,zk2:2181,zk3:2181/app", client.Config{
//		SessionTimeout: 10 * time.Second,
//	})
//	if err != nil { ... }
//	defer c.Close()
//
//	path, stat, err := c.Create(ctx, "/config", []byte("v1"), client.ModePersistent, nil)
//	data, stat, err := c.Get(ctx, "/config")
//	stat, err = c.Set(ctx, "/config", []byte("v2"), stat.Version)
//	if errors.Is(err, client.ErrBadVersion) { ... } // someone else wrote first
//
// Errors from the server are proto's codes (client.ErrNoNode is
// proto.ErrNoNode) wrapped with the operation and path, so errors.Is
// matches them. Paths are validated before anything is sent.
//
// Requests from all goroutines share one connection: each is encoded into a
// pooled buffer and queued; one writer goroutine writes everything queued
// with one system call, one reader goroutine decodes replies in order.
// Many goroutines issuing requests at once is the way to go fast.
//
// # Connection loss, expiry and what is safe to retry
//
// When a connection breaks, the client tries the next server (in a random
// order fixed at Dial), presenting the session's id and password and the
// last zxid it has seen, so that no server older than what it has read
// takes it. Meanwhile the state is StateDisconnected and new requests wait
// for the next connection; requests that were already written fail with
// ErrConnectionLoss, because only the server knows whether it applied them.
// The client never resends a write on its own; ErrConnectionLoss says what
// a caller may do. Config.Retry resends idempotent requests (reads, Sync,
// AddAuth, AddWatch); Retry and a RetryPolicy (ExponentialBackoff,
// RetryNTimes, RetryForever) retry a function of the caller's;
// CreateProtected makes creates recoverable.
//
// A session expires when the server says so on reconnection, or when no
// server could be reached for the whole session timeout (the server will
// have expired it by then). Everything waiting then fails with
// ErrSessionExpired, ephemeral nodes are gone, watches end, and the client
// stays in StateExpired until Renew starts a new session, or starts one at
// once with Config.RenewSession. StateChanges streams every transition
// (StateConnected, StateDisconnected, StateReconnected, StateReadOnly,
// StateExpired, StateClosed, the model being Curator's ConnectionState);
// code that holds a lock or leadership must stop relying on it at
// StateDisconnected and give it up at StateExpired.
//
// Close sends closeSession after the requests already made, so the
// session's ephemerals go at once, and returns when every goroutine of the
// client has exited.
//
// # Watches: channels, and streams with their own queue
//
// A one-shot watch, set by GetW, ExistsW or ChildrenW, is a channel with
// room for exactly one Event, like go-zookeeper's: the event of the change,
// or EventNotWatching when the session ends first, or a removal event from
// RemoveWatches. The client never blocks delivering it and never delivers a
// second one, and a caller can select on it beside its context.
//
// A persistent watch (AddWatch, plain or recursive) is a Stream: a channel
// fed by a goroutine of its own from an unbounded queue, so the reader
// never waits for a slow consumer and never drops an event. Channels were
// chosen over callbacks for both because they compose with select and
// contexts, and a callback run by the reader would stall every request of
// the client while it runs. A stream also receives EventSession events:
// after StateDisconnected events may have been missed, and a consumer
// should read what it watches again at StateReconnected (ZooKeeper does
// not replay persistent watches). Close the stream to remove the watch;
// when the session expires it ends with EventNotWatching.
//
// A server keeps a single watch per path and connection, in one mode (in
// ZooKeeper 3.8, a one-shot watch set on a path turns its persistent watch
// into a one-shot one). The client therefore asks the server only for the
// persistent watch of a path that has one and serves the path's one-shot
// watches from its events, so the two kinds can be mixed freely.
//
// After a reconnection within the session, every watch is re-armed with
// setWatches2 (setWatches when there is no persistent watch, for servers
// before 3.6) relative to the last zxid seen: a one-shot watch whose node
// changed meanwhile fires then, exactly once, and the others stay armed.
//
// # SASL
//
// Config.SASL authenticates every connection with a SASLMechanism (package
// digestmd5 has ZooKeeper's DIGEST-MD5) as ZooKeeper's Java client does:
// right after the session is established, before any other packet, while
// requests wait. A refused exchange ends the client in StateAuthFailed,
// where everything fails with ErrAuthFailed and no connection is tried
// again; Dial returns that error when it happens on the first connection.
//
// # Goroutines
//
// A Client runs a session loop (connect, fail over, expire, renew), a
// reader and a writer per connection, and one goroutine per Stream. All
// exit by the time Close returns. Logging goes to Config.Logger, discarded
// by default.
package client
