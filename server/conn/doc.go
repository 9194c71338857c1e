// Package conn owns client TCP connections of the ZooKeeper protocol: the
// length-prefixed framing, the connect handshake, the per-session FIFO
// pipeline, pings, auth packets, four-letter words, and the limits that
// protect the server from one bad client.
//
// Each connection runs three goroutines:
//
//   - the reader decodes frames. It answers auth packets itself (ZooKeeper
//     applies them before any later request) and hands every other request to
//     the processor. It stops reading while MaxOutstanding requests are in
//     flight, which pushes back on a client that sends faster than the server
//     answers.
//   - the processor owns the FIFO of requests in flight. Writes go to the
//     Backend at once, in order, and complete when the Backend calls back;
//     reads and other local requests wait until every earlier request of the
//     session has completed, then run. Replies leave in request order, so a
//     session sees its own writes.
//   - the writer drains the outbound queue to the socket, many frames per
//     system call.
//
// Watch events do not pass through the processor: the Backend queues them
// with Conn.Notify while it applies a change, before any reply that could
// show the change is queued. That is ZooKeeper's guarantee that a client sees
// the event before the new data.
//
// A frame longer than the jute.maxbuffer limit, a body that does not decode,
// an outbound queue the client does not drain, or a handshake that does not
// arrive in time close the connection; nothing a client sends reaches the
// Backend undecoded.
package conn
