package session

import (
	"bytes"
	"testing"
	"time"
)

func TestPassword(t *testing.T) {
	secret := []byte("cluster secret")
	p := Password(secret, 0x0590_1b52_4c95_0000)
	if len(p) != PasswordLen {
		t.Fatalf("len = %d, want %d", len(p), PasswordLen)
	}
	if again := Password(secret, 0x0590_1b52_4c95_0000); !bytes.Equal(p, again) {
		t.Fatalf("Password is not deterministic: %x then %x", p, again)
	}
	if other := Password(secret, 0x0590_1b52_4c95_0001); bytes.Equal(p, other) {
		t.Fatal("two ids share a password")
	}
	if other := Password([]byte("another secret"), 0x0590_1b52_4c95_0000); bytes.Equal(p, other) {
		t.Fatal("two secrets give the same password")
	}
}

func TestCheckPassword(t *testing.T) {
	secret := []byte("cluster secret")
	const id ID = 0x0590_1b52_4c95_0000
	good := Password(secret, id)
	flipped := bytes.Clone(good)
	flipped[PasswordLen-1] ^= 1
	tests := []struct {
		name   string
		secret []byte
		id     ID
		passwd []byte
		want   bool
	}{
		{"right password", secret, id, good, true},
		{"last bit flipped", secret, id, flipped, false},
		{"another session's password", secret, id + 1, good, false},
		{"another cluster's secret", []byte("x"), id, good, false},
		{"truncated", secret, id, good[:PasswordLen-1], false},
		{"too long", secret, id, append(bytes.Clone(good), 0), false},
		{"empty, as a new session sends", secret, id, nil, false},
		{"zeros, as a new session sends", secret, id, make([]byte, PasswordLen), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckPassword(tt.secret, tt.id, tt.passwd); got != tt.want {
				t.Fatalf("CheckPassword = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNegotiate(t *testing.T) {
	const tick = 2 * time.Second
	tests := []struct {
		name                string
		requested, min, max time.Duration
		want                time.Duration
	}{
		{"within bounds", 10 * time.Second, 2 * tick, 20 * tick, 10 * time.Second},
		{"below min", time.Second, 2 * tick, 20 * tick, 2 * tick},
		{"zero", 0, 2 * tick, 20 * tick, 2 * tick},
		{"above max", time.Hour, 2 * tick, 20 * tick, 20 * tick},
		{"at min", 2 * tick, 2 * tick, 20 * tick, 2 * tick},
		{"at max", 20 * tick, 2 * tick, 20 * tick, 20 * tick},
		// processConnectRequest raises to min first, then lowers to max.
		{"min above max", time.Second, 10 * time.Second, 5 * time.Second, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Negotiate(tt.requested, tt.min, tt.max); got != tt.want {
				t.Fatalf("Negotiate(%v, %v, %v) = %v, want %v", tt.requested, tt.min, tt.max, got, tt.want)
			}
		})
	}
}
