package backup

import (
	"crypto/hmac"
	"crypto/sha256"
)

// SecretLen is the length of the session secret NewSecret makes (that of
// fsm.SecretLen).
const SecretLen = sha256.Size

// NewSecret derives the session secret of an ensemble restored from a
// backup file: from the file's secret, the file's SHA-256 and the
// operator's token, so that every member restored from the same file with
// the same token gets the same secret (and so the same ensemble id and the
// same session passwords), while the ensemble the file came from, and a
// restore with another token, get another. Keyed with the old secret, it
// cannot be computed by someone who has the file's sum but not the file.
func NewSecret(old []byte, sum [sha256.Size]byte, token string) []byte {
	mac := hmac.New(sha256.New, old)
	mac.Write([]byte("collie restored ensemble\x00"))
	mac.Write(sum[:])
	mac.Write([]byte(token))
	return mac.Sum(nil)
}
