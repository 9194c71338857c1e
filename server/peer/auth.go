package peer

import (
	"errors"
	"fmt"
	"io"
	"net"
)

// Auth is how the servers of an ensemble authenticate to each other in
// the handshake (SASL between servers). The dialling side of a
// connection authenticates to the accepting side; since every two
// servers dial each other, each authenticates to the other once its own
// connection is up.
type Auth struct {
	// Dial starts the exchange by which this server authenticates to
	// peer when it dials it. Nil: it dials without authenticating. A
	// dialler that authenticates requires the receiver to take part and
	// to complete the exchange (with DIGEST-MD5, to prove that it knows
	// the password too): a receiver that takes it without an exchange is
	// refused.
	Dial func(peer uint64) ClientExchange
	// Accept judges a dialler before anything else passes: asks says
	// whether it asked to authenticate. It returns the exchange to run
	// with a dialler that asks (nil refuses it), or a Refusal, whose
	// Reason the dialler is told. A dialler that does not ask is taken
	// without an exchange unless Accept refuses it.
	Accept func(peer uint64, asks bool) (ServerExchange, *Refusal)
}

// ClientExchange is the dialling side of an authentication exchange, in
// which the receiver speaks first: a DIGEST-MD5 digestmd5.Mechanism.
type ClientExchange interface {
	// Next takes the receiver's token and returns the next one to send.
	Next(token []byte) ([]byte, error)
	// Complete reports whether the receiver has proved itself.
	Complete() bool
}

// ServerExchange is the receiving side of an authentication exchange:
// sasl.DigestMD5. Its first Next gets a nil token.
type ServerExchange interface {
	// Next takes the dialler's token and returns the next one to send.
	// An error that wraps a *Refusal tells the dialler its Reason; the
	// whole error is logged here only.
	Next(token []byte) ([]byte, error)
	// Complete reports whether the dialler has authenticated.
	Complete() bool
}

// ErrUnauthenticated is what a dial that failed for authentication
// wraps: the receiver requires it and the dialler does not, the receiver
// cannot authenticate a dialler that requires it, or the exchange failed.
// Redialling will not help until a configuration changes.
var ErrUnauthenticated = errors.New("peer: authentication between servers failed")

// flagAuthenticate, in a hello's flags, asks the receiver for an
// exchange.
const flagAuthenticate uint64 = 1

// maxAuthRounds bounds the tokens of one exchange (DIGEST-MD5 needs two
// from the receiver), as ZooKeeper bounds its quorum exchanges.
const maxAuthRounds = 5

// The state byte of each of the receiver's tokens.
const (
	authContinue byte = 0 // the dialler answers with a token
	authDone     byte = 1 // the dialler is authenticated; the reply follows
	authFailed   byte = 2 // the block is the reason; the receiver closes
)

// errNoExchange refuses a dialler that asks to authenticate when this
// server does not run exchanges.
var errNoExchange = &Refusal{Reason: "this server does not authenticate its peers (SASL between servers is off here), and the dialling server requires it"}

// acceptAuth judges the dialler of hello h by Config.Auth and, when it
// asked, runs the exchange, the reply with statusAuthenticate first. It
// returns whether the exchange ran and, when the dialler is refused, why:
// the Refusal for the dialler and the error to log.
func (t *Transport) acceptAuth(conn net.Conn, h hello) (ran bool, refusal *Refusal, err error) {
	asks := h.flags&flagAuthenticate != 0
	var ex ServerExchange
	switch {
	case t.cfg.Auth != nil:
		ex, refusal = t.cfg.Auth.Accept(h.from, asks)
	case asks:
		refusal = errNoExchange
	}
	switch {
	case refusal != nil:
		return false, refusal, fmt.Errorf("from %d: %w: %w", h.from, ErrUnauthenticated, refusal)
	case !asks:
		return false, nil, nil
	case ex == nil:
		return false, errNoExchange, fmt.Errorf("from %d: %w: %w", h.from, ErrUnauthenticated, errNoExchange)
	}
	if _, err := conn.Write(reply{version: wireVersion, status: statusAuthenticate}.append(nil)); err != nil {
		return true, nil, fmt.Errorf("handshake reply: %w", err)
	}
	var token []byte
	for round := 0; ; round++ {
		out, err := ex.Next(token)
		if err == nil && len(out) > MaxDescription {
			err = fmt.Errorf("a token of %d bytes, more than %d", len(out), MaxDescription)
		}
		if err != nil {
			reason := "authentication failed (the receiver's log says why)"
			var r *Refusal
			if errors.As(err, &r) {
				reason = r.Reason[:min(len(r.Reason), MaxDescription)]
			}
			if _, werr := conn.Write(appendBlock([]byte{authFailed}, []byte(reason))); werr != nil {
				return true, nil, fmt.Errorf("handshake: %w", werr)
			}
			return true, nil, fmt.Errorf("from %d: %w: %w", h.from, ErrUnauthenticated, err)
		}
		if ex.Complete() {
			if _, err := conn.Write(appendBlock([]byte{authDone}, out)); err != nil {
				return true, nil, fmt.Errorf("handshake: %w", err)
			}
			return true, nil, nil
		}
		if round == maxAuthRounds {
			return true, nil, fmt.Errorf("from %d: %w: more than %d rounds", h.from, errProtocol, maxAuthRounds)
		}
		if _, err := conn.Write(appendBlock([]byte{authContinue}, out)); err != nil {
			return true, nil, fmt.Errorf("handshake: %w", err)
		}
		if token, err = readBlock(conn, "authentication token"); err != nil {
			return true, nil, err
		}
	}
}

// dialAuth runs the dialling side of an exchange, once the receiver has
// answered statusAuthenticate, up to its last token.
func dialAuth(conn io.ReadWriter, ex ClientExchange, peer uint64) error {
	for round := 0; ; round++ {
		var state [1]byte
		if _, err := io.ReadFull(conn, state[:]); err != nil {
			return fmt.Errorf("%w: authentication: %w", errProtocol, err)
		}
		token, err := readBlock(conn, "authentication token")
		if err != nil {
			return err
		}
		switch state[0] {
		case authFailed:
			return fmt.Errorf("%w: server %d refused it: %s", ErrUnauthenticated, peer, token)
		case authContinue, authDone:
		default:
			return fmt.Errorf("%w: authentication state %d", errProtocol, state[0])
		}
		out, err := ex.Next(token)
		if err == nil && len(out) > MaxDescription {
			err = fmt.Errorf("a token of %d bytes, more than %d", len(out), MaxDescription)
		}
		if err != nil {
			return fmt.Errorf("%w: to server %d: %w", ErrUnauthenticated, peer, err)
		}
		if state[0] == authDone {
			if !ex.Complete() {
				return fmt.Errorf("%w: server %d ended the exchange before proving itself", ErrUnauthenticated, peer)
			}
			return nil
		}
		if round == maxAuthRounds {
			return fmt.Errorf("%w: more than %d authentication rounds", errProtocol, maxAuthRounds)
		}
		if _, err := conn.Write(appendBlock(nil, out)); err != nil {
			return fmt.Errorf("handshake: %w", err)
		}
	}
}
