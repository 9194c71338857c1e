// Package proto owns the ZooKeeper 3.8 client wire protocol as Collie speaks
// it: the jute binary encoding, every request and response record of
// zookeeper.jute under its ZooKeeper name, opcodes, error codes, Stat, ACLs,
// path validation and the size limits that protect a server from its clients.
//
// It is shared by the server and the Go client and does no I/O: frames are
// []byte in, records out, and back.
//
// # Encoding
//
// Jute writes every value big-endian: int as 4 bytes, long as 8, boolean as
// one byte, a buffer or string as a 4-byte length followed by the bytes (-1
// for null), and a vector as a 4-byte count followed by the elements (-1 for
// null). A record is its fields in schema order with no framing of its own. On
// the socket, every packet is preceded by its 4-byte length.
//
// A Decoder never trusts a length: a length longer than what is left of the
// frame fails the decode with ErrMalformed and allocates nothing.
package proto
