package sasl

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
)

func users(kv ...string) Passwords {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(u string) (string, bool) { p, ok := m[u]; return p, ok }
}

// fixedRand is a nonce source for tests.
type fixedRand byte

func (r fixedRand) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r) + byte(i)
	}
	return len(p), nil
}

// client computes a digest-response the way RFC 2831 describes it, written
// out here apart from the server's helpers.
type client struct {
	user, password, realm, uri, cnonce, authzid string
	extra                                       string // appended directives
}

func md5hex(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }

func (c client) respond(challenge []byte) []byte {
	nonce := directive(string(challenge), "nonce")
	inner := md5.Sum([]byte(c.user + ":" + c.realm + ":" + c.password))
	a1 := string(inner[:]) + ":" + nonce + ":" + c.cnonce
	if c.authzid != "" {
		a1 += ":" + c.authzid
	}
	resp := md5hex(md5hex(a1) + ":" + nonce + ":00000001:" + c.cnonce + ":auth:" + md5hex("AUTHENTICATE:"+c.uri))
	s := fmt.Sprintf(`username="%s",realm="%s",nonce="%s",cnonce="%s",nc=00000001,qop=auth,digest-uri="%s",response=%s`,
		c.user, c.realm, nonce, c.cnonce, c.uri, resp)
	if c.authzid != "" {
		s += `,authzid="` + c.authzid + `"`
	}
	return []byte(s + c.extra)
}

func directive(s, key string) string {
	for _, part := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(part, "="); ok && k == key {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

func TestExchange(t *testing.T) {
	bob := client{user: "bob", password: "bobsecret", realm: Realm, uri: DigestURI, cnonce: "c1"}
	tests := []struct {
		name    string
		c       client
		wantErr string // "" when the client authenticates
	}{
		{"right password", bob, ""},
		{"authzid is part of the hash, the user the identity", client{user: "bob", password: "bobsecret", realm: Realm, uri: DigestURI, cnonce: "c1", authzid: "alice"}, ""},
		{"digest-uri in another case", client{user: "bob", password: "bobsecret", realm: Realm, uri: "ZooKeeper/ZK-SASL-MD5", cnonce: "c1"}, ""},
		{"wrong password", client{user: "bob", password: "nope", realm: Realm, uri: DigestURI, cnonce: "c1"}, "wrong password"},
		{"unknown user", client{user: "mallory", password: "bobsecret", realm: Realm, uri: DigestURI, cnonce: "c1"}, `no user "mallory"`},
		{"other realm", client{user: "bob", password: "bobsecret", realm: "example.com", uri: DigestURI, cnonce: "c1"}, "realm"},
		{"other digest-uri", client{user: "bob", password: "bobsecret", realm: Realm, uri: "zookeeper/host", cnonce: "c1"}, "digest-uri"},
		{"qop auth-int", client{user: "bob", password: "bobsecret", realm: Realm, uri: DigestURI, cnonce: "c1", extra: ",qop=auth-int"}, `more than one "qop"`},
		{"charset other than utf-8", client{user: "bob", password: "bobsecret", realm: Realm, uri: DigestURI, cnonce: "c1", extra: ",charset=latin1"}, "charset"},
		{"unknown directives are ignored", client{user: "bob", password: "bobsecret", realm: Realm, uri: DigestURI, cnonce: "c1", extra: `,foo="bar",,  `}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewDigestMD5(users("bob", "bobsecret"), fixedRand(7))
			challenge, err := s.Next(nil)
			if err != nil {
				t.Fatal(err)
			}
			want := `realm="zk-sasl-md5",nonce="` + s.nonce + `",charset=utf-8,algorithm=md5-sess`
			if string(challenge) != want || len(s.nonce) != 40 {
				t.Fatalf("challenge = %s, want %s with a nonce of 40 characters", challenge, want)
			}
			rspauth, err := s.Next(tt.c.respond(challenge))
			if tt.wantErr != "" {
				if !errors.Is(err, ErrAuthentication) || !strings.Contains(err.Error(), tt.wantErr) || s.Complete() {
					t.Fatalf("Next = %v, complete %v; want ErrAuthentication saying %q", err, s.Complete(), tt.wantErr)
				}
				if strings.Contains(err.Error(), "bobsecret") {
					t.Errorf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil || !s.Complete() || s.Username() != "bob" {
				t.Fatalf("Next = %v, complete %v, user %q", err, s.Complete(), s.Username())
			}
			nonce := directive(string(challenge), "nonce")
			inner := md5.Sum([]byte("bob:" + Realm + ":bobsecret"))
			a1 := string(inner[:]) + ":" + nonce + ":c1"
			if tt.c.authzid != "" {
				a1 += ":" + tt.c.authzid
			}
			wantAuth := "rspauth=" + md5hex(md5hex(a1)+":"+nonce+":00000001:c1:auth:"+md5hex(":"+tt.c.uri))
			if string(rspauth) != wantAuth {
				t.Errorf("rspauth = %s, want %s", rspauth, wantAuth)
			}
			// The response again, as a replay on the same exchange, is refused.
			if _, err := s.Next(tt.c.respond(challenge)); !errors.Is(err, ErrAuthentication) {
				t.Errorf("a token after the end: %v, want ErrAuthentication", err)
			}
		})
	}
}

// TestReplayOnAnotherExchange sends a response that authenticated one
// exchange to another: its nonce is not the new exchange's.
func TestReplayOnAnotherExchange(t *testing.T) {
	c := client{user: "bob", password: "bobsecret", realm: Realm, uri: DigestURI, cnonce: "c1"}
	first := NewDigestMD5(users("bob", "bobsecret"), fixedRand(1))
	challenge, _ := first.Next(nil)
	response := c.respond(challenge)
	if _, err := first.Next(response); err != nil {
		t.Fatal(err)
	}
	second := NewDigestMD5(users("bob", "bobsecret"), fixedRand(2))
	if _, err := second.Next(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Next(response); !errors.Is(err, ErrAuthentication) || !strings.Contains(err.Error(), "nonce") {
		t.Fatalf("replayed response: %v, want a nonce mismatch", err)
	}
}

func TestOversizedToken(t *testing.T) {
	s := NewDigestMD5(users("bob", "bobsecret"), fixedRand(1))
	if _, err := s.Next(make([]byte, MaxResponse+1)); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("oversized first token: %v", err)
	}
	// As in Java's provider, the refusal comes before the exchange moves
	// on: a token of the right size still gets the challenge.
	if _, err := s.Next(make([]byte, MaxResponse)); err != nil {
		t.Fatalf("first token of %d bytes: %v", MaxResponse, err)
	}
	if _, err := s.Next(bytes.Repeat([]byte("a"), MaxResponse+1)); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("oversized response: %v", err)
	}
}

// TestLatin1Names hashes a name and password that fit ISO 8859-1 in that
// charset, as Java's provider does, and one that does not in UTF-8.
func TestLatin1Names(t *testing.T) {
	for _, tt := range []struct{ user, password, hashedAs string }{
		{"bjørn", "pässword", "bj\xf8rn:" + Realm + ":p\xe4ssword"},
		{"ユーザー", "pässword", "ユーザー:" + Realm + ":p\xe4ssword"},
	} {
		s := NewDigestMD5(users(tt.user, tt.password), fixedRand(3))
		challenge, _ := s.Next(nil)
		nonce := directive(string(challenge), "nonce")
		inner := md5.Sum([]byte(tt.hashedAs))
		resp := md5hex(md5hex(string(inner[:])+":"+nonce+":cn") + ":" + nonce + ":00000001:cn:auth:" + md5hex("AUTHENTICATE:"+DigestURI))
		token := fmt.Sprintf(`charset=utf-8,username="%s",realm="%s",nonce="%s",cnonce="cn",nc=00000001,qop=auth,digest-uri="%s",response=%s`,
			tt.user, Realm, nonce, DigestURI, resp)
		if _, err := s.Next([]byte(token)); err != nil || s.Username() != tt.user {
			t.Errorf("%s: %v, user %q", tt.user, err, s.Username())
		}
	}
}

func TestParseDirectives(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]string
		wantErr bool
	}{
		{`a=1,b="two"`, map[string]string{"a": "1", "b": "two"}, false},
		{` A = "x\"y\\z" , , b=2 `, map[string]string{"a": `x"y\z`, "b": "2"}, false},
		{`a="",b=`, nil, true},
		{`a=""`, map[string]string{"a": ""}, false},
		{`a="x"y`, nil, true},
		{`a="x`, nil, true},
		{`a="x\`, nil, true},
		{`a=1,a=2`, nil, true},
		{`c=1,c=2,a=1`, map[string]string{"a": "1"}, false},
		{`=1`, nil, true},
		{`a 1`, nil, true},
		{`a`, nil, true},
		{strings.Repeat(",", 1000) + "a=1", map[string]string{"a": "1"}, false},
		{strings.Repeat("c=1,", maxDirectives+1), nil, true},
	}
	for _, tt := range tests {
		got, err := parseDirectives([]byte(tt.in), "a", "b")
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: error %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		gotS := map[string]string{}
		for k, v := range got {
			gotS[k] = string(v)
		}
		if !maps.Equal(gotS, tt.want) {
			t.Errorf("%q = %v, want %v", tt.in, gotS, tt.want)
		}
	}
}
