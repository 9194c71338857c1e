package session

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
)

// PasswordLen is the length of a session password, as ZooKeeper's.
const PasswordLen = 16

// Password returns the password of session id: the first PasswordLen bytes
// of HMAC-SHA256 keyed with the cluster secret over the id in big-endian
// order. Every server that knows the secret derives the same password, so a
// client may reconnect to any of them. (ZooKeeper seeds java.util.Random with
// id ^ superSecret instead; the password is opaque to clients either way.)
func Password(secret []byte, id ID) []byte {
	mac := hmac.New(sha256.New, secret)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(id))
	mac.Write(b[:])
	return mac.Sum(nil)[:PasswordLen]
}

// CheckPassword reports whether passwd is the password of session id. It
// compares in constant time so that a client cannot guess a password byte by
// byte from response times.
func CheckPassword(secret []byte, id ID, passwd []byte) bool {
	return hmac.Equal(Password(secret, id), passwd)
}
