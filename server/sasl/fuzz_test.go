package sasl

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

// FuzzDirectives parses arbitrary digest-responses; whatever parses must
// parse again to the same values once written back with quoted values.
func FuzzDirectives(f *testing.F) {
	f.Add([]byte(`username="bob",realm="zk-sasl-md5",nonce="n",cnonce="c",nc=00000001,qop=auth,digest-uri="zookeeper/zk-sasl-md5",response=0123`))
	f.Add([]byte(` a = "x\"y" ,, b=2`))
	f.Add([]byte(`a="unterminated`))
	keys := []string{"username", "realm", "nonce", "cnonce", "nc", "qop", "digest-uri", "response", "a", "b"}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseDirectives(b, keys...)
		if err != nil {
			return
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(d)) {
			parts = append(parts, k+"="+quote(string(d[k])))
		}
		again, err := parseDirectives([]byte(strings.Join(parts, ",")), keys...)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", strings.Join(parts, ","), err)
		}
		if !maps.EqualFunc(d, again, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Fatalf("re-parse differs: %q, %q", d, again)
		}
	})
}

// FuzzDigestMD5 sends arbitrary tokens to an exchange. Nothing may panic,
// and a client that is not bob with his password never authenticates: the
// only tokens that do are built by the seed's client.
func FuzzDigestMD5(f *testing.F) {
	bob := client{user: "bob", password: "bobsecret", realm: Realm, uri: DigestURI, cnonce: "c1"}
	seed := NewDigestMD5(users("bob", "bobsecret"), fixedRand(9))
	challenge, _ := seed.Next(nil)
	f.Add([]byte{}, bob.respond(challenge), []byte{})
	f.Add([]byte("initial"), []byte(`username="bob",realm="zk-sasl-md5"`), []byte("again"))
	f.Fuzz(func(t *testing.T, first, second, third []byte) {
		s := NewDigestMD5(users("bob", "bobsecret"), fixedRand(9))
		for i, tok := range [][]byte{first, second, third} {
			_, err := s.Next(tok)
			if err == nil && s.Complete() && i != 1 {
				t.Fatalf("complete after token %d", i)
			}
		}
		if s.Complete() && s.Username() != "bob" {
			t.Fatalf("authenticated as %q", s.Username())
		}
	})
}

// FuzzDigestMD5Client hands arbitrary server tokens to a client. Nothing
// may panic, every failure is ErrAuthentication, and the client completes
// only on the rspauth of a server that knows the password.
func FuzzDigestMD5Client(f *testing.F) {
	s := NewDigestMD5For(QuorumService, users("test", "secret"), fixedRand(3))
	challenge, _ := s.Next(nil)
	c := NewDigestMD5Client(QuorumService, "test", "secret", fixedRand(4))
	response, _ := c.Next(challenge)
	rspauth, _ := s.Next(response)
	f.Add(challenge, rspauth)
	f.Add([]byte(`nonce="n",qop="auth,auth-int",algorithm=md5-sess,realm=r`), []byte("rspauth=0"))
	f.Add([]byte(`nonce=`), []byte(`rspauth="`))
	f.Fuzz(func(t *testing.T, challenge, last []byte) {
		c := NewDigestMD5Client(QuorumService, "test", "secret", fixedRand(4))
		for _, tok := range [][]byte{challenge, last} {
			if _, err := c.Next(tok); err != nil {
				if !errors.Is(err, ErrAuthentication) || c.Complete() {
					t.Fatalf("error %v, complete %v", err, c.Complete())
				}
				return
			}
		}
		if !c.Complete() {
			t.Fatal("two tokens taken without error, yet not complete")
		}
		// Only the server's own rspauth for this exchange completes it.
		want := responseValue(c.a1, ":"+QuorumService.digestURI(), c.nonce, c.cnonce)
		d, _ := parseDirectives(last, "rspauth")
		if string(d["rspauth"]) != string(want) {
			t.Fatalf("completed on %q", last)
		}
	})
}
