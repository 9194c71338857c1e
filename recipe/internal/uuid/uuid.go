// Package uuid makes the random ids the recipes give their participants,
// in the form Java's UUID.randomUUID() gives Curator's.
package uuid

import (
	"crypto/rand"
	"fmt"
)

// New returns a random (version 4) UUID in its canonical text form.
func New() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
