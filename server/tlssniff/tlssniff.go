// Package tlssniff owns how a port that serves both TLS and plaintext
// (ZooKeeper's port unification) tells one connection from the other: by
// its first byte, as Netty's OptionalSslHandler does for ZooKeeper.
package tlssniff

import (
	"bufio"
	"net"
)

// RecordHandshake is the first byte of every TLS connection: the content
// type of a handshake record. ZooKeeper's frames start with the high byte
// of their length, 0 for any frame it accepts; four-letter words and HTTP
// requests start with a letter.
const RecordHandshake = 0x16

// Sniff reads the first byte of nc, within whatever deadline the caller has
// set, and returns a connection whose reads return that byte first, and
// whether it starts a TLS handshake.
func Sniff(nc net.Conn) (conn net.Conn, isTLS bool, err error) {
	r := bufio.NewReaderSize(nc, 16)
	first, err := r.Peek(1)
	if err != nil {
		return nc, false, err
	}
	return &peekedConn{Conn: nc, r: r}, first[0] == RecordHandshake, nil
}

// peekedConn is a connection whose first bytes were read to see how it
// begins; reads return them first.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
