package gsskrb5

import (
	"bytes"
	"testing"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/types"
)

// FuzzParseContextToken parses arbitrary tokens; what parses must frame
// back to the same bytes, as the framing has one encoding.
func FuzzParseContextToken(f *testing.F) {
	f.Add(WrapContextToken(TokAPReq, []byte{0x6e, 0x03, 0x30, 0x01, 0x00}))
	f.Add(WrapContextToken(TokAPRep, bytes.Repeat([]byte{1}, 300)))
	f.Add([]byte{0x60, 0x84, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x60, 0x81, 0x05})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, msg, err := ParseContextToken(b)
		if err != nil {
			return
		}
		if again := WrapContextToken(id, msg); !bytes.Equal(again, b) {
			t.Fatalf("framed again as %x, was %x", again, b)
		}
	})
}

// FuzzUnwrap unwraps arbitrary tokens with a fixed key: only tokens made
// with the key verify, and their payload wraps back to a token that
// unwraps to it.
func FuzzUnwrap(f *testing.F) {
	k := WrapKey{Key: types.EncryptionKey{KeyType: etypeID.AES128_CTS_HMAC_SHA1_96, KeyValue: bytes.Repeat([]byte{7}, 16)}}
	tok, _ := k.Wrap([]byte{1, 0, 0, 0}, 42, true)
	f.Add(tok, true)
	tok, _ = k.Wrap([]byte{1, 1, 0, 0, 'b', 'o', 'b'}, 7, false)
	f.Add(tok, false)
	f.Add([]byte{0x05, 0x04, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0}, false)
	f.Fuzz(func(t *testing.T, token []byte, fromAcceptor bool) {
		payload, seq, err := k.Unwrap(token, fromAcceptor)
		if err != nil {
			return
		}
		again, err := k.Wrap(payload, seq, fromAcceptor)
		if err != nil {
			t.Fatal(err)
		}
		p2, s2, err := k.Unwrap(again, fromAcceptor)
		if err != nil || !bytes.Equal(p2, payload) || s2 != seq {
			t.Fatalf("wrapped again: %x, %d, %v", p2, s2, err)
		}
	})
}
