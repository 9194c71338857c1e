// Package server wires a Collie server together: configuration, the raft
// node and its storage, the state machine, the watch registry, the session
// tracker and the client listener. It holds no protocol logic of its own.
//
//	srv, err := server.New(cfg, logger)
//	...
//	go srv.Run(ctx)       // serves until ctx ends or Shutdown
//	srv.Shutdown(ctx)     // stops accepting, closes clients, stops raft
//
// Several servers can live in one process; each has its own logger, data
// directory and ports.
//
// # Goroutines and locks
//
//   - the raft apply goroutine (package replication) applies committed
//     entries: it takes mu for writing and, entry by entry, applies it to
//     the FSM, queues its watch events on the watching connections, and
//     completes it if this server proposed it; a client connection then
//     answers there the requests it holds behind that write (package
//     conn). It releases mu after the batch. The reads waiting for a
//     ReadIndex are answered on it too, under mu for reading.
//   - three goroutines per client connection (package conn); the
//     connection's processor takes mu for reading to answer a request
//     while nothing of its session is pending, so a read sees whole
//     transactions and every event of what it sees has been queued before
//     its reply.
//   - the accept loop, the session expiry loop and the container sweeper.
//
// Lock order: mu, then a connection's pipeline lock, then wmu (watch
// registry), then smu (sessions, connections, waiters). Nothing blocks on
// I/O while holding any of them.
package server
