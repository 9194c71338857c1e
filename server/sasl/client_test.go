package sasl

import (
	"errors"
	"strings"
	"testing"
)

// TestClientAgainstServer runs both sides of exchanges of each service.
func TestClientAgainstServer(t *testing.T) {
	for _, svc := range []Service{ClientService, QuorumService} {
		for _, tt := range []struct {
			name, user, password string
			wantErr              string // the server's refusal; "" when both complete
		}{
			{"right password", "test", "secret", ""},
			{"latin-1 password", "test", "sécret", ""},
			{"wrong password", "test", "guess", "wrong password"},
			{"unknown user", "mallory", "secret", `no user "mallory"`},
		} {
			t.Run(svc.Protocol+"/"+tt.name, func(t *testing.T) {
				passwords := users("test", "secret")
				if tt.name == "latin-1 password" {
					passwords = users("test", "sécret")
				}
				s := NewDigestMD5For(svc, passwords, fixedRand(1))
				c := NewDigestMD5Client(svc, tt.user, tt.password, fixedRand(2))
				challenge, err := s.Next(nil)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(challenge), `realm="`+svc.ServerName+`"`) {
					t.Errorf("challenge %s does not name realm %s", challenge, svc.ServerName)
				}
				response, err := c.Next(challenge)
				if err != nil {
					t.Fatalf("client response: %v", err)
				}
				if strings.Contains(string(response), tt.password) {
					t.Fatalf("the response shows the password: %s", response)
				}
				rspauth, err := s.Next(response)
				if tt.wantErr != "" {
					if !errors.Is(err, ErrAuthentication) || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("server: %v, want %q", err, tt.wantErr)
					}
					return
				}
				if err != nil || s.Username() != tt.user {
					t.Fatalf("server: %v, user %q", err, s.Username())
				}
				last, err := c.Next(rspauth)
				if err != nil || last != nil || !c.Complete() {
					t.Fatalf("client on rspauth: %q, %v, complete %v", last, err, c.Complete())
				}
				if _, err := c.Next(rspauth); !errors.Is(err, ErrAuthentication) {
					t.Errorf("a token after the end: %v", err)
				}
			})
		}
	}
}

// TestClientResponse checks the response against RFC 2831's formulas,
// written out apart from the package's helpers, and its form against
// what Java's provider sends.
func TestClientResponse(t *testing.T) {
	c := NewDigestMD5Client(QuorumService, "test", "secret", fixedRand(5))
	const nonce = "abc="
	response, err := c.Next([]byte(`realm="zk-quorum-sasl-md5",nonce="` + nonce + `",charset=utf-8,algorithm=md5-sess`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := parseDirectives(response, "charset", "username", "realm", "nonce", "nc", "cnonce", "digest-uri", "maxbuf", "response", "qop")
	if err != nil {
		t.Fatal(err)
	}
	cnonce := string(d["cnonce"])
	inner := md5hexRaw("test:zk-quorum-sasl-md5:secret")
	const uri = "zookeeper-quorum/zk-quorum-sasl-md5"
	ha1 := md5hex(inner + ":" + nonce + ":" + cnonce)
	want := map[string]string{
		"charset": "utf-8", "username": "test", "realm": "zk-quorum-sasl-md5", "nonce": nonce, "nc": "00000001",
		"digest-uri": uri, "maxbuf": "65536", "qop": "auth",
		"response": md5hex(ha1 + ":" + nonce + ":00000001:" + cnonce + ":auth:" + md5hex("AUTHENTICATE:"+uri)),
	}
	for k, v := range want {
		if string(d[k]) != v {
			t.Errorf("%s = %q, want %q", k, d[k], v)
		}
	}
	if len(cnonce) != 40 {
		t.Errorf("cnonce %q, want 40 characters as Java's", cnonce)
	}
	rspauth := "rspauth=" + md5hex(ha1+":"+nonce+":00000001:"+cnonce+":auth:"+md5hex(":"+uri))
	if _, err := c.Next([]byte(rspauth)); err != nil || !c.Complete() {
		t.Fatalf("rspauth: %v", err)
	}
}

func md5hexRaw(s string) string {
	h := md5hex(s)
	b := make([]byte, 16)
	for i := range b {
		b[i] = unhex(h[2*i])<<4 | unhex(h[2*i+1])
	}
	return string(b)
}

func unhex(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}

// TestClientRefuses lists what the client does not go on with: a
// challenge it cannot answer, and a server that does not prove it knows
// the password.
func TestClientRefuses(t *testing.T) {
	for _, tt := range []struct {
		name, challenge, want string
	}{
		{"no nonce", `realm="zk-quorum-sasl-md5",algorithm=md5-sess`, "no nonce"},
		{"another algorithm", `nonce="n",algorithm=md5`, "algorithm"},
		{"no algorithm", `nonce="n"`, "algorithm"},
		{"auth not offered", `nonce="n",qop="auth-int,auth-conf",algorithm=md5-sess`, "qop"},
		{"another charset", `nonce="n",charset=latin1,algorithm=md5-sess`, "charset"},
		{"malformed", `nonce="n`, "quote"},
		{"oversized", strings.Repeat("a", MaxResponse+1), "more than"},
	} {
		c := NewDigestMD5Client(QuorumService, "test", "secret", fixedRand(1))
		if _, err := c.Next([]byte(tt.challenge)); !errors.Is(err, ErrAuthentication) || !strings.Contains(err.Error(), tt.want) || c.Complete() {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}

	s := NewDigestMD5For(QuorumService, users("test", "secret"), fixedRand(1))
	challenge, _ := s.Next(nil)
	for _, tt := range []struct{ name, rspauth string }{
		{"wrong rspauth", "rspauth=00000000000000000000000000000000"},
		{"no rspauth", "x=1"},
		{"empty", ""},
	} {
		c := NewDigestMD5Client(QuorumService, "test", "secret", fixedRand(2))
		if _, err := c.Next(challenge); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Next([]byte(tt.rspauth)); !errors.Is(err, ErrAuthentication) || c.Complete() {
			t.Errorf("%s: %v, complete %v", tt.name, err, c.Complete())
		}
	}

	// A client of one service is refused by a server of the other: the
	// realm and digest-uri differ.
	s = NewDigestMD5For(ClientService, users("test", "secret"), fixedRand(1))
	challenge, _ = s.Next(nil)
	c := NewDigestMD5Client(QuorumService, "test", "secret", fixedRand(2))
	response, err := c.Next(challenge)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(response); !errors.Is(err, ErrAuthentication) || !strings.Contains(err.Error(), "digest-uri") {
		t.Errorf("a quorum client at the client port: %v", err)
	}
}
