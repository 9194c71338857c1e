package client

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/collie-io/collie/proto"
)

// A SASLMechanism is the client side of one SASL mechanism for one connection.
//
// The client calls Start once, with the host of the server's address as
// the connect string names it, and sends the token it returns, even an
// empty one. It gives Next each token the server answers with until
// Complete reports true; a token Next returns is sent even then, and the
// server's answer to it ends the exchange, whatever it holds. An error
// from Start or Next, or a server reply with an error code, fails the
// exchange (StateAuthFailed). Messages of errors must not hold secrets:
// the client logs them.
type SASLMechanism interface {
	Name() string                                        // "DIGEST-MD5", "GSSAPI"
	Start(serverHost string) (initial []byte, err error) // the first token to send (may be empty, as DIGEST-MD5's)
	Next(challenge []byte) (response []byte, err error)  // the answer to each server token
	Complete() bool                                      // true once the exchange has succeeded
}

// saslError wraps the failures of an exchange that are the client's or
// the server's verdict, as opposed to a broken connection: they end the
// client in StateAuthFailed.
type saslError struct{ err error }

func (e *saslError) Error() string { return e.err.Error() }
func (e *saslError) Unwrap() error { return e.err }

// authenticate runs the SASL exchange of Config.SASL on a connection
// whose session was just established, before any other packet, as
// ZooKeeper's Java client does: each token goes in a sasl packet (opcode
// 102) with the next xid, and the server answers each at once. The
// exchange ends when the mechanism is complete and has nothing more to
// send, or when the server has answered the mechanism's last token.
//
// It is bounded by the connection's read timeout, the time the Java
// client lets a connection stay silent while it authenticates. A
// *saslError says the exchange failed (the server refused, the mechanism
// failed); any other error, that the connection did.
func (c *Client) authenticate(cn *conn, timeout time.Duration) error {
	mech := c.cfg.SASL()
	host, _, err := net.SplitHostPort(cn.addr)
	if err != nil {
		host = cn.addr
	}
	cn.nc.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(c.ctx, func() { cn.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	token, err := mech.Start(host)
	if err != nil {
		return &saslError{fmt.Errorf("SASL %s: %w: %w", mech.Name(), err, ErrAuthFailed)}
	}
	for {
		challenge, err := cn.saslRound(mech.Name(), token)
		if err != nil {
			return err
		}
		if mech.Complete() {
			// The server has answered the mechanism's last token.
			break
		}
		token, err = mech.Next(challenge)
		if err != nil {
			return &saslError{fmt.Errorf("SASL %s: %w: %w", mech.Name(), err, ErrAuthFailed)}
		}
		if mech.Complete() && token == nil {
			break
		}
	}
	return cn.nc.SetDeadline(time.Time{})
}

// saslRound sends one sasl packet and returns the server's token. A reply
// with an error code fails the exchange, as it fails the Java client's,
// which then finds no token. Notifications read meanwhile are delivered.
func (cn *conn) saslRound(mech string, token []byte) ([]byte, error) {
	c := cn.c
	xid := c.nextXid()
	e := proto.NewEncoder(make([]byte, 0, 32+len(token)))
	e.Int(0)
	hdr := proto.RequestHeader{Xid: xid, Type: proto.OpSASL}
	hdr.Encode(e)
	req := proto.GetSASLRequest{Token: token}
	if req.Token == nil {
		req.Token = []byte{}
	}
	req.Encode(e)
	frame := e.Bytes()
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	if _, err := cn.nc.Write(frame); err != nil {
		return nil, err
	}
	for {
		frame, err := cn.readFrame()
		if err != nil {
			return nil, fmt.Errorf("sasl reply: %w", err)
		}
		d := proto.NewDecoder(frame)
		var rh proto.ReplyHeader
		rh.Decode(d)
		if err := d.Err(); err != nil {
			return nil, fmt.Errorf("sasl reply: %w", err)
		}
		switch rh.Xid {
		case proto.XidPing:
			continue
		case proto.XidNotification:
			var ev proto.WatcherEvent
			ev.Decode(d)
			if err := d.Err(); err != nil {
				return nil, fmt.Errorf("notification: %w", err)
			}
			c.watches.deliver(&ev, c.chroot)
			continue
		case xid:
		default:
			return nil, fmt.Errorf("reply with xid %d to the sasl packet of xid %d", rh.Xid, xid)
		}
		switch rh.Err {
		case proto.OK:
		case ErrAuthFailed:
			return nil, &saslError{fmt.Errorf("SASL %s: the server refused the credentials: %w", mech, ErrAuthFailed)}
		default:
			return nil, &saslError{fmt.Errorf("SASL %s: the server answered %w: %w", mech, rh.Err, ErrAuthFailed)}
		}
		var resp proto.SetSASLResponse
		if d.Remaining() > 0 {
			resp.Decode(d)
			if err := d.Err(); err != nil {
				return nil, fmt.Errorf("sasl reply: %w", err)
			}
		}
		return resp.Token, nil
	}
}

// authFailed ends the client after a failed SASL exchange, as the Java
// client's AUTH_FAILED state does: no connection is tried again, every
// waiting and later request fails with err (which wraps ErrAuthFailed),
// and every watch ends with it. The session lives on at the server until
// it expires.
func (c *Client) authFailed(err error) {
	c.mu.Lock()
	c.authErr = err
	c.setStateLocked(StateAuthFailed)
	close(c.failed)
	c.mu.Unlock()
	c.queue.refuse(err)
	c.watches.endAll(err, c.chroot, false)
}

// isSASLFailure reports whether err is the verdict of a SASL exchange.
func isSASLFailure(err error) bool {
	var se *saslError
	return errors.As(err, &se)
}
