package rfc2831

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"io"
)

// rawNonceLen random bytes make a nonce of 40 base64 characters, as
// Java's provider draws its nonces and cnonces.
const rawNonceLen = 30

// NewNonce draws a nonce or cnonce from r (crypto/rand.Reader outside
// tests).
func NewNonce(r io.Reader) (string, error) {
	var raw [rawNonceLen]byte
	if _, err := io.ReadFull(r, raw[:]); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(raw[:]), nil
}

// SessionKey is H(A1) of RFC 2831 for md5-sess:
// H(H(username:realm:password):nonce:cnonce[:authzid]), authzid left
// out when nil. The user name, realm and password are hashed as Text
// encodes them.
func SessionKey(username, realm, password, nonce, cnonce string, authzid []byte) [md5.Size]byte {
	h := md5.New()
	for i, s := range []string{username, realm, password} {
		if i > 0 {
			h.Write([]byte{':'})
		}
		b, _ := Text(s)
		h.Write(b)
	}
	inner := h.Sum(nil)
	h.Reset()
	h.Write(inner)
	io.WriteString(h, ":"+nonce+":"+cnonce)
	if authzid != nil {
		h.Write([]byte{':'})
		h.Write(authzid)
	}
	var sum [md5.Size]byte
	h.Sum(sum[:0])
	return sum
}

// ResponseValue is the response-value of RFC 2831 for qop auth, in lower
// case hex: HEX(KD(HEX(H(A1)), nonce:00000001:cnonce:auth:HEX(H(A2)))).
// A2 is "AUTHENTICATE:" and the digest-uri for the client's response,
// ":" and the digest-uri for the server's rspauth.
func ResponseValue(a1 [md5.Size]byte, a2, nonce, cnonce string) []byte {
	ha2 := md5.Sum([]byte(a2))
	kd := hex.EncodeToString(a1[:]) + ":" + nonce + ":00000001:" + cnonce + ":auth:" + hex.EncodeToString(ha2[:])
	sum := md5.Sum([]byte(kd))
	return []byte(hex.EncodeToString(sum[:]))
}

// Text encodes a user name, realm or password for hashing as Java's
// provider does: in ISO 8859-1 when every character fits (latin1 is
// true), in UTF-8 otherwise, which RFC 2831 allows only with
// charset=utf-8.
func Text(s string) (b []byte, latin1 bool) {
	b = make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return []byte(s), false
		}
		b = append(b, byte(r))
	}
	return b, true
}
