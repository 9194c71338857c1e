// Package peer is the transport between the servers of a Collie ensemble:
// it carries go.etcd.io/raft/v3 messages, and small application messages
// (session touches, for instance), over TCP on the peer port of the
// server.N lines. It owns the listener, one outgoing connection per peer
// with its queue and writer, the connections that carry snapshots, the
// wire format and its limits, reconnection, and the counters operators
// see. It knows nothing of raft's state: what to send, and what to do with
// what arrives, is the raft loop's business.
//
// # Using it from a raft loop
//
// New listens; Start begins accepting and connecting, and only then are the
// handlers called, so they may refer to a node created after the
// transport. Send never blocks: the raft loop calls it with the messages of
// each Ready, after the Ready's entries are durable.
//
//	var node *replication.Node
//	t, err := peer.New(peer.Config{
//		ID:        1,
//		// What each server says of itself, and judges of the others.
//		Describe: func() []byte { return describe() },
//		Admit:    func(from uint64, desc []byte) *peer.Refusal { return judge(from, desc) },
//		Listen:    "10.0.0.1:2888",
//		Peers:     map[uint64]string{2: "10.0.0.2:2888", 3: "10.0.0.3:2888"},
//		// Each handler hands over to the loop and returns once the node
//		// has stopped.
//		Raft:           func(m raftpb.Message) { node.Step(m) },
//		Unreachable:    func(id uint64) { node.ReportUnreachable(id) },
//		SnapshotStatus: func(id uint64, failed bool) { node.ReportSnapshot(id, failed) },
//		Logger:         logger,
//	})
//	if err != nil { ... }
//	node, err = replication.Start(replication.Config{Transport: t, ...})
//	if err != nil { ... }
//	t.Start()
//	...
//	t.Close() // waits for every goroutine, handlers included
//	node.Stop()
//
// Handlers are called from the transport's goroutines. Raft and App are
// called in the order the peer sent, and a blocked handler holds up that
// peer's messages only. Unreachable and SnapshotStatus are never called from
// inside Send, so the raft loop may call Send while holding what its
// handlers need. A handler that blocks forever makes Close wait forever.
//
// # Sending
//
// Each peer has a queue of Config.QueueLen messages and one goroutine that
// writes it to a single stream connection through a buffer, flushed when
// the queue is momentarily empty. Send drops a message, counts it and
// tells Unreachable when the peer is not connected or its queue is full:
// raft resends what matters and probes a follower it was told is
// unreachable, so memory stays bounded whatever the peer does. A lost
// connection is redialled after a jittered backoff that doubles up to
// Config.MaxBackoff; what was queued when it broke is dropped. Messages of
// one peer, raft's and the application's, arrive in the order they were
// sent; any of them may be missing.
//
// A MsgSnap carries the whole state, possibly hundreds of megabytes. It travels on a connection of its own, opened for it, so that
// heartbeats and appends never wait behind it; SnapshotStatus is told
// whether the receiver got it whole and handed it to Raft.
//
// # Wire format
//
// All integers are big-endian. A connection starts with the dialler's
// hello, 32 bytes, then its description:
//
//	offset size  field
//	0      4     magic "CLPR"
//	4      2     version, 2
//	6      1     kind: 1 stream, 2 snapshot
//	7      1     reserved, 0
//	8      8     flags: 1, the sender authenticates (see below); other
//	             bits are ignored (a cluster id in version 1)
//	16     8     sender id
//	24     8     receiver id
//	32     2     n, at most MaxDescription
//	34     n     the sender's description (Config.Describe)
//
// (A block, here and below, is a 2-byte length and that many bytes, at
// most MaxDescription.)
//
// The receiver answers with the magic, its version (2 bytes), a status
// byte and a reserved 0 byte; in version 2 its own description follows, as
// a 2-byte length and the bytes, then a refusal: a code byte and a reason,
// a 2-byte length and UTF-8 text (code 0 and no reason unless it refuses).
// To a hello of another version it answers the first 8 bytes only, with
// status 1, and closes. Status 0 accepts; otherwise the receiver closes
// the connection, and the status says why: 1 unsupported version, 3 the
// receiver has another id, 4 the sender is not one of its peers, 5 unknown
// kind, 6 Config.Admit refused the sender's description, for the reason
// given, 8 the sender is refused for authentication, for the reason given,
// 9 the receiver takes TLS peers only and the sender spoke plaintext, 10
// the sender's TLS certificate does not name it, for the reason given
// (status 2, a wrong cluster id, is no longer sent). The dialler then
// judges the receiver's description with Admit too, and closes the
// connection if it refuses: nothing passes between two servers unless
// each admits the other. A hello with a wrong magic or reserved byte gets
// no answer. The hello and description must arrive within
// Config.HandshakeTimeout.
//
// # Authentication
//
// With Config.Auth the servers authenticate to each other (SASL
// DIGEST-MD5 between servers, ZooKeeper's quorum.auth.*), before
// descriptions are judged. The dialler that authenticates sets flag 1;
// the receiver, once version, kind and ids are right, asks Auth.Accept,
// and either refuses with status 8 (an empty description and the
// reason: it requires authentication and the sender did not ask, or it
// runs no exchange and the sender asked) or, for a sender that asked,
// answers the 8 bytes of a reply with status 7 and runs the exchange,
// the receiver speaking first. Each of its tokens is a state byte and a
// block:
//
//	0  a token the dialler answers with a block of its own
//	1  the dialler is authenticated; the block is the receiver's last
//	   token (DIGEST-MD5's rspauth, its proof that it knows the password
//	   too), and the reply follows as to a hello without the flag
//	2  the exchange failed; the block is the reason; the receiver closes
//
// at most 5 rounds. A dialler that authenticates goes on only if the
// exchange completes on both sides: a receiver that answers such a hello
// with status 0 or 6 without an exchange has not proved itself, and what
// it says is not believed. Every dial refused for authentication fails
// with ErrUnauthenticated. Since each of two servers dials the other, a
// server whose own dial is refused so must not act on what the other
// sends it over the other connection (it would follow a leader it cannot
// answer): with Config.Auth, a peer's messages are handed over only once
// this server has connected to that peer, and not while that peer
// refuses its authentication.
//
// On a stream connection the dialler then sends frames, and the receiver
// sends nothing:
//
//	offset size  field
//	0      1     kind: 1 raft message, 2 application message
//	1      4     payload length n, at most Config.MaxFrame
//	5      n     payload: a raftpb.Message in its protobuf encoding, or
//	             the application's bytes
//
// A raft message must be from the handshake's sender, to its receiver, and
// not a MsgSnap. A stream may stay idle for long (raft is quiet between
// followers); TCP keepalives notice a peer host that vanished, and once a
// frame has begun, every chunk of it must arrive within Config.IOTimeout.
//
// A snapshot connection carries one frame and its acknowledgement:
//
//	offset size  field
//	0      1     kind: 3 snapshot
//	1      4     length n of the message, at most Config.MaxFrame
//	5      n     the MsgSnap, protobuf, with empty Snapshot.Data
//	5+n    8     length d of the snapshot data, at most Config.MaxSnapshot
//	13+n   d     the snapshot data
//
// The data travels beside the message rather than inside it, so that
// neither side holds it in memory: SendSnapshot streams it from a reader
// (the snapshot file), and a receiver with Config.StoreSnapshot streams it
// to disk as it arrives, then calls Raft with the message alone. Without
// StoreSnapshot the receiver puts the data back into Snapshot.Data and
// calls Raft; its buffer grows only as bytes arrive, so a length announced
// and not sent costs nothing. Either way it then answers one byte, 0.
//
// # TLS
//
// With Config.TLS, all of the above may travel inside TLS: the dialler
// begins with a TLS handshake when TLS.Dial says so, and the receiver
// tells a TLS connection from a plaintext one by its first byte, 0x16 for
// a TLS handshake record ('C' begins a hello). It takes either kind, or
// only TLS unless TLS.AcceptPlaintext, as ZooKeeper's sslQuorum and
// portUnification decide; so an ensemble moves from plaintext to TLS
// without stopping: first every server accepts both, then each dials
// with TLS, then each refuses plaintext. Both sides show certificates
// (unless the receiver's ClientAuth asks for none) that must chain to the
// other's trust store, and with TLS.VerifyName each checks that the
// other's certificate names it: the address of the connection or the host
// of its configured address (tlsconfig.VerifyName). The receiver knows
// which server claims to be dialling only from the hello, so it checks
// the name after reading it and answers status 8 with what the
// certificate names. A failed handshake is logged on both sides with a
// reason an operator can act on (unknown CA, expired, name mismatch,
// plaintext peer on a TLS-only port), at Warn once a minute per peer host
// and reason, at Debug in between.
//
// Anything else (a frame over its limit, an unknown kind, a message that
// does not decode or is misaddressed, a stalled handshake) closes that one
// connection, logged at Warn with the remote address and counted in
// Stats.Rejected; the transport goes on serving its peers. A newer
// connection of the same kind from the same peer replaces the older one.
package peer
