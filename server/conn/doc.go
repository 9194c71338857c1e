// Package conn owns client TCP connections of the ZooKeeper protocol: the
// length-prefixed framing, the connect handshake, the per-session FIFO
// pipeline, pings, auth packets, four-letter words, and the limits that
// protect the server from one bad client.
//
// Each connection runs three goroutines:
//
//   - the reader decodes frames. It answers auth packets itself, at once
//     and with the client's xid, as ZooKeeper does (the identities apply
//     to every request read after it), and hands every other request to
//     the processor. It stops reading while MaxOutstanding requests are
//     in flight, which pushes back on a client that sends faster than the
//     server answers.
//   - the processor admits requests in order: it proposes writes to the
//     Backend at once, in order, and answers a request that does not go
//     through the log at once when nothing of the session is pending.
//   - the writer drains the outbound queue to the socket, many frames per
//     system call.
//
// The apply goroutine of the Backend does the rest: when a write of the
// session is applied, its reply is queued there, and the requests the
// session sent after it, up to its next write, are answered there too,
// before the next entry is applied. So a read sees exactly the session's
// earlier writes, a watch it sets is in place before the session's next
// write takes effect, and replies leave in request order (pipeline.go has
// the details, and how sync and linearizable reads keep their place).
//
// Watch events do not pass through the pipeline: the Backend queues them
// with Conn.Notify while it applies a change, before any reply that could
// show the change is queued, and after the replies of everything the
// session had ordered before the change. That is ZooKeeper's guarantee
// that a client sees the event before the new data.
//
// A frame longer than the jute.maxbuffer limit, a body that does not decode,
// an outbound queue the client does not drain, or a handshake that does not
// arrive in time close the connection; nothing a client sends reaches the
// Backend undecoded.
package conn
