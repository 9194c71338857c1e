package digestmd5

import (
	"bytes"
	"errors"
	"testing"

	"github.com/collie-io/collie/server/sasl"
)

// fixedCnonce makes an exchange repeatable.
func fixedCnonce() (string, error) { return "fixed", nil }

// FuzzExchange gives a mechanism arbitrary server tokens. Nothing may
// panic, every failure wraps ErrMechanism, the response to a challenge
// must parse, and the exchange completes only on the rspauth that proves
// the password. A seed is a whole exchange with Collie's server.
func FuzzExchange(f *testing.F) {
	s := sasl.NewDigestMD5(users("bob", "bobsecret"), bytes.NewReader(make([]byte, 64)))
	challenge, _ := s.Next(nil)
	m := New("bob", "bobsecret")
	m.newCnonce = fixedCnonce
	response, _ := m.Next(challenge)
	rspauth, err := s.Next(response)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(challenge, rspauth, []byte{})
	f.Add([]byte(`realm="zk-sasl-md5",nonce="n",charset=utf-8,algorithm=md5-sess`), []byte("rspauth=00"), []byte{})
	f.Add([]byte(`realm="a",realm="b",nonce="n",qop="auth",algorithm=md5-sess`), []byte(`rspauth="x"`), []byte("more"))
	f.Add([]byte(`nonce=`), []byte(`rspauth="`), []byte{})
	f.Add([]byte{}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, challenge, rspauth, third []byte) {
		m := New("bob", "bobsecret")
		m.newCnonce = fixedCnonce
		// failed checks an error of the first two tokens, which leaves
		// the exchange incomplete.
		failed := func(err error) bool {
			if err != nil && (!errors.Is(err, ErrMechanism) || m.Complete()) {
				t.Fatalf("error %v, complete %v", err, m.Complete())
			}
			return err != nil
		}
		resp, err := m.Next(challenge)
		if !failed(err) {
			if _, perr := parse(resp); perr != nil {
				t.Fatalf("response %q does not parse: %v", resp, perr)
			}
		}
		want := append([]byte(nil), m.rspauth...)
		if _, err := m.Next(rspauth); !failed(err) && (!m.Complete() || !bytes.Contains(rspauth, want) || len(want) != 32) {
			t.Fatalf("rspauth %q accepted, complete %v, expected %q", rspauth, m.Complete(), want)
		}
		if _, err := m.Next(third); !errors.Is(err, ErrMechanism) {
			t.Fatalf("a third token: %v", err)
		}
	})
}
