package digestmd5

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzDirectives parses arbitrary server tokens; whatever parses must
// parse again to the same elements once written back with quoted values.
func FuzzDirectives(f *testing.F) {
	f.Add([]byte(`realm="zk-sasl-md5",nonce="abc",charset=utf-8,algorithm=md5-sess`))
	f.Add([]byte(`rspauth=0123456789abcdef`))
	f.Add([]byte(` a = "x\"y" ,, b=2`))
	f.Add([]byte(`a="unterminated`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseDirectives(b)
		if err != nil {
			return
		}
		var parts []string
		for _, x := range d {
			parts = append(parts, x.key+"="+quote(x.value))
		}
		again, err := parseDirectives([]byte(strings.Join(parts, ",")))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", strings.Join(parts, ","), err)
		}
		if !equal(d, again) {
			t.Fatalf("re-parse differs: %q, %q", d, again)
		}
	})
}

// FuzzExchange gives a mechanism arbitrary server tokens. Nothing may
// panic, the response to a challenge must parse, and the exchange
// completes only on the rspauth that proves the password.
func FuzzExchange(f *testing.F) {
	f.Add([]byte(`realm="zk-sasl-md5",nonce="n",charset=utf-8,algorithm=md5-sess`), []byte("rspauth=00"), []byte{})
	f.Add([]byte(`realm="a",realm="b",nonce="n",qop="auth",algorithm=md5-sess`), []byte(`rspauth="x"`), []byte("more"))
	f.Add([]byte{}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, challenge, rspauth, third []byte) {
		m := New("bob", "bobsecret")
		m.newCnonce = func() (string, error) { return "fixed", nil }
		resp, err := m.Next(challenge)
		if err == nil {
			if _, perr := parseDirectives(resp); perr != nil {
				t.Fatalf("response %q does not parse: %v", resp, perr)
			}
		}
		want := append([]byte(nil), m.rspauth...)
		if _, err := m.Next(rspauth); err == nil && (!m.Complete() || !bytes.Contains(rspauth, want) || len(want) != 32) {
			t.Fatalf("rspauth %q accepted, complete %v, expected %q", rspauth, m.Complete(), want)
		}
		if _, err := m.Next(third); err == nil {
			t.Fatal("a third token accepted")
		}
	})
}
