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

// zooKeeperSecret is the constant ZooKeeper mixes into a session id to
// seed the generator of its password.
const zooKeeperSecret = 0xB3415C00

// ZooKeeperPassword returns the password a ZooKeeper server gives session
// id: the first PasswordLen bytes of java.util.Random seeded with
// id ^ 0xB3415C00. It depends on the id alone, so sessions a ZooKeeper
// ensemble opened keep their passwords when Collie takes its data over.
func ZooKeeperPassword(id ID) []byte {
	const (
		multiplier = 0x5DEECE66D
		mask       = 1<<48 - 1
	)
	seed := (uint64(int64(id)^zooKeeperSecret) ^ multiplier) & mask
	p := make([]byte, PasswordLen)
	for i := 0; i < len(p); {
		seed = (seed*multiplier + 0xB) & mask
		rnd := int32(seed >> 16)
		for n := min(len(p)-i, 4); n > 0; n-- {
			p[i] = byte(rnd)
			rnd >>= 8
			i++
		}
	}
	return p
}

// CheckZooKeeperPassword reports whether passwd is ZooKeeper's password
// of session id, comparing in constant time.
func CheckZooKeeperPassword(id ID, passwd []byte) bool {
	return id != 0 && hmac.Equal(ZooKeeperPassword(id), passwd)
}
