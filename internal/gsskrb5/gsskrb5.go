// Package gsskrb5 encodes and decodes the tokens of the Kerberos V5
// GSS-API mechanism that SASL GSSAPI (RFC 4752) carries, for both sides
// of ZooKeeper's SASL exchange:
//
//   - context tokens (RFC 2743 section 3.1, RFC 4121 section 4.1): the
//     mechanism's OID 1.2.840.113554.1.2.2, a two-byte token id (01 00
//     AP-REQ, 02 00 AP-REP, 03 00 KRB-ERROR), then the Kerberos message,
//     all inside an [APPLICATION 0] tag;
//   - the authenticator checksum of type 0x8003 (RFC 4121 section
//     4.1.1), which carries the context flags (mutual authentication);
//   - Wrap tokens without confidentiality (RFC 4121 section 4.2.6.2),
//     with which the SASL security layer is negotiated. Sealed tokens
//     (confidentiality) are refused: the "auth" quality of protection that
//     ZooKeeper offers never needs them, and every client wraps these
//     messages without.
//
// The Kerberos messages themselves (AP-REQ, AP-REP) and the cryptography
// are gokrb5's. Every decoder bounds what it reads and returns an error
// for malformed input; none panics.
package gsskrb5

import (
	"bytes"
	"crypto/hmac"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/types"
)

// Token ids of context tokens.
var (
	TokAPReq    = [2]byte{0x01, 0x00}
	TokAPRep    = [2]byte{0x02, 0x00}
	TokKRBError = [2]byte{0x03, 0x00}
)

// mechOID is the DER encoding of the Kerberos V5 mechanism's OID,
// 1.2.840.113554.1.2.2, tag and length included.
var mechOID = []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}

// ErrMalformed is what every decoding error wraps.
var ErrMalformed = errors.New("gsskrb5: malformed token")

// Context flags of the authenticator checksum (RFC 2744).
const (
	FlagDeleg    = 0x01
	FlagMutual   = 0x02
	FlagReplay   = 0x04
	FlagSequence = 0x08
	FlagConf     = 0x10
	FlagInteg    = 0x20
)

// ChecksumType is the authenticator checksum type that carries the
// context flags.
const ChecksumType = 0x8003

// WrapContextToken frames a Kerberos message as a context token.
func WrapContextToken(id [2]byte, msg []byte) []byte {
	inner := make([]byte, 0, len(mechOID)+2+len(msg))
	inner = append(inner, mechOID...)
	inner = append(inner, id[:]...)
	inner = append(inner, msg...)
	out := []byte{0x60}
	out = appendLength(out, len(inner))
	return append(out, inner...)
}

func appendLength(b []byte, n int) []byte {
	switch {
	case n < 0x80:
		return append(b, byte(n))
	case n <= 0xff:
		return append(b, 0x81, byte(n))
	case n <= 0xffff:
		return append(b, 0x82, byte(n>>8), byte(n))
	case n <= 0xffffff:
		return append(b, 0x83, byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, 0x84, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// ParseContextToken returns the token id and the Kerberos message of a
// context token. The framing must be exact: one [APPLICATION 0] element
// with a definite length that spans the whole token.
func ParseContextToken(b []byte) (id [2]byte, msg []byte, err error) {
	if len(b) < 2 || b[0] != 0x60 {
		return id, nil, fmt.Errorf("%w: not an [APPLICATION 0] context token", ErrMalformed)
	}
	n, rest, err := readLength(b[1:])
	if err != nil {
		return id, nil, err
	}
	if n != len(rest) {
		return id, nil, fmt.Errorf("%w: context token length %d, but %d bytes follow", ErrMalformed, n, len(rest))
	}
	if !bytes.HasPrefix(rest, mechOID) {
		return id, nil, fmt.Errorf("%w: not the Kerberos V5 mechanism", ErrMalformed)
	}
	rest = rest[len(mechOID):]
	if len(rest) < 2 {
		return id, nil, fmt.Errorf("%w: no token id", ErrMalformed)
	}
	copy(id[:], rest)
	return id, rest[2:], nil
}

// readLength reads a DER definite length.
func readLength(b []byte) (int, []byte, error) {
	if len(b) == 0 {
		return 0, nil, fmt.Errorf("%w: no length", ErrMalformed)
	}
	if b[0] < 0x80 {
		return int(b[0]), b[1:], nil
	}
	k := int(b[0] & 0x7f)
	if k == 0 || k > 4 || len(b) < 1+k {
		return 0, nil, fmt.Errorf("%w: bad length", ErrMalformed)
	}
	n := 0
	for _, c := range b[1 : 1+k] {
		n = n<<8 | int(c)
	}
	if n < 0x80 || n>>(8*(k-1)) == 0 {
		return 0, nil, fmt.Errorf("%w: length not in its shortest form", ErrMalformed)
	}
	return n, b[1+k:], nil
}

// ChecksumFlags returns the context flags of an authenticator checksum
// of type 0x8003: 16 bytes of length (16), channel bindings, then the
// flags, little-endian.
func ChecksumFlags(c types.Checksum) (uint32, error) {
	if c.CksumType != ChecksumType {
		return 0, fmt.Errorf("%w: authenticator checksum of type %#x, not %#x", ErrMalformed, c.CksumType, ChecksumType)
	}
	if len(c.Checksum) < 24 {
		return 0, fmt.Errorf("%w: authenticator checksum of %d bytes, fewer than 24", ErrMalformed, len(c.Checksum))
	}
	if binary.LittleEndian.Uint32(c.Checksum) != 16 {
		return 0, fmt.Errorf("%w: channel bindings of length %d, not 16", ErrMalformed, binary.LittleEndian.Uint32(c.Checksum))
	}
	return binary.LittleEndian.Uint32(c.Checksum[20:24]), nil
}

// NewChecksum returns an authenticator checksum carrying flags, without
// channel bindings or delegation.
func NewChecksum(flags uint32) types.Checksum {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint32(b, 16)
	binary.LittleEndian.PutUint32(b[20:], flags)
	return types.Checksum{CksumType: ChecksumType, Checksum: b}
}

// Wrap token flags (RFC 4121 section 4.2.2).
const (
	wrapSentByAcceptor = 0x01
	wrapSealed         = 0x02
	wrapAcceptorSubkey = 0x04
)

// Key usages of Wrap tokens (RFC 4121 section 2): a token's checksum is
// keyed by its sender's role.
const (
	usageAcceptorSeal  = 22
	usageInitiatorSeal = 24
)

const wrapHeaderLen = 16

// WrapKey is the key and role with which one side of a context wraps and
// unwraps.
type WrapKey struct {
	Key types.EncryptionKey
	// AcceptorSubkey says that Key is a subkey the acceptor asserted in
	// its AP-REP; tokens of both sides then carry the flag saying so.
	AcceptorSubkey bool
}

// Wrap returns a Wrap token without confidentiality of payload, sent by
// the acceptor or the initiator with sequence number seq.
func (k WrapKey) Wrap(payload []byte, seq uint64, byAcceptor bool) ([]byte, error) {
	flags := byte(0)
	usage := uint32(usageInitiatorSeal)
	if byAcceptor {
		flags |= wrapSentByAcceptor
		usage = usageAcceptorSeal
	}
	if k.AcceptorSubkey {
		flags |= wrapAcceptorSubkey
	}
	sum, err := k.checksum(payload, flags, seq, usage)
	if err != nil {
		return nil, err
	}
	out := make([]byte, wrapHeaderLen, wrapHeaderLen+len(payload)+len(sum))
	out[0], out[1], out[2], out[3] = 0x05, 0x04, flags, 0xff
	binary.BigEndian.PutUint16(out[4:], uint16(len(sum)))
	binary.BigEndian.PutUint64(out[8:], seq)
	out = append(out, payload...)
	return append(out, sum...), nil
}

// checksum is the token's checksum over the payload, then the header
// with EC and RRC zero.
func (k WrapKey) checksum(payload []byte, flags byte, seq uint64, usage uint32) ([]byte, error) {
	et, err := crypto.GetEtype(k.Key.KeyType)
	if err != nil {
		return nil, fmt.Errorf("gsskrb5: wrap key: %w", err)
	}
	data := make([]byte, 0, len(payload)+wrapHeaderLen)
	data = append(data, payload...)
	data = append(data, 0x05, 0x04, flags, 0xff, 0, 0, 0, 0)
	data = binary.BigEndian.AppendUint64(data, seq)
	return et.GetChecksumHash(k.Key.KeyValue, data, usage)
}

// Unwrap checks a Wrap token the other side sent (the acceptor's when
// fromAcceptor) and returns its payload and sequence number. Sealed
// tokens are refused.
func (k WrapKey) Unwrap(token []byte, fromAcceptor bool) (payload []byte, seq uint64, err error) {
	if len(token) < wrapHeaderLen || token[0] != 0x05 || token[1] != 0x04 || token[3] != 0xff {
		return nil, 0, fmt.Errorf("%w: not a Wrap token", ErrMalformed)
	}
	flags := token[2]
	if flags&^(wrapSentByAcceptor|wrapSealed|wrapAcceptorSubkey) != 0 {
		return nil, 0, fmt.Errorf("%w: unknown Wrap token flags %#x", ErrMalformed, flags)
	}
	if (flags&wrapSentByAcceptor != 0) != fromAcceptor {
		return nil, 0, fmt.Errorf("%w: a Wrap token of the wrong side", ErrMalformed)
	}
	if flags&wrapSealed != 0 {
		return nil, 0, fmt.Errorf("%w: a sealed Wrap token; only integrity is negotiated here", ErrMalformed)
	}
	if (flags&wrapAcceptorSubkey != 0) != k.AcceptorSubkey {
		return nil, 0, fmt.Errorf("%w: the Wrap token's acceptor subkey flag does not match the context", ErrMalformed)
	}
	ec := int(binary.BigEndian.Uint16(token[4:]))
	rrc := int(binary.BigEndian.Uint16(token[6:]))
	seq = binary.BigEndian.Uint64(token[8:])
	body := token[wrapHeaderLen:]
	if ec > len(body) {
		return nil, 0, fmt.Errorf("%w: checksum of %d bytes in %d", ErrMalformed, ec, len(body))
	}
	if len(body) > 0 && rrc%len(body) != 0 {
		// The sender rotated the data right by rrc bytes; undo it.
		r := rrc % len(body)
		body = append(append([]byte(nil), body[r:]...), body[:r]...)
	}
	payload, sum := body[:len(body)-ec], body[len(body)-ec:]
	usage := uint32(usageInitiatorSeal)
	if fromAcceptor {
		usage = usageAcceptorSeal
	}
	want, err := k.checksum(payload, flags, seq, usage)
	if err != nil {
		return nil, 0, err
	}
	if !hmac.Equal(want, sum) {
		return nil, 0, fmt.Errorf("%w: Wrap token checksum does not verify", ErrMalformed)
	}
	return payload, seq, nil
}
