package digestmd5

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/collie-io/collie/internal/rfc2831"
	"github.com/collie-io/collie/server/sasl"
)

// TestRFC2831Example answers the challenge of RFC 2831's example (section
// 4, an IMAP login of chris with password secret) with the example's
// cnonce: the response and the rspauth must be the RFC's.
func TestRFC2831Example(t *testing.T) {
	m := New("chris", "secret", WithService("imap", "elwood.innosoft.com"))
	m.newCnonce = func() (string, error) { return "OA6MHXh6VqTrRk", nil }
	resp, err := m.Next([]byte(`realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",algorithm=md5-sess,charset=utf-8`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := parse(resp)
	if err != nil {
		t.Fatalf("response %s: %v", resp, err)
	}
	for key, want := range map[string]string{
		"username": "chris", "realm": "elwood.innosoft.com", "nonce": "OA6MG9tEQGm2hh", "cnonce": "OA6MHXh6VqTrRk",
		"nc": "00000001", "qop": "auth", "digest-uri": "imap/elwood.innosoft.com", "charset": "utf-8",
		"response": "d388dad90d4bbd760a152321f2143af7",
	} {
		if got, ok := d.Single(key); !ok || got != want {
			t.Errorf("%s = %q, want %q (response %s)", key, got, want, resp)
		}
	}
	if m.Complete() {
		t.Fatal("complete before rspauth")
	}
	if out, err := m.Next([]byte("rspauth=ea40f60335c427b5527b84dbabcdfffd")); err != nil || out != nil || !m.Complete() {
		t.Fatalf("rspauth: %q, %v, complete %v", out, err, m.Complete())
	}
	if _, err := m.Next([]byte("rspauth=ea40f60335c427b5527b84dbabcdfffd")); !errors.Is(err, ErrMechanism) {
		t.Errorf("a token after the end: %v", err)
	}
}

func users(kv ...string) sasl.Passwords {
	return func(u string) (string, bool) {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == u {
				return kv[i+1], true
			}
		}
		return "", false
	}
}

// exchange runs m against Collie's server side, as a connection carries
// it, and returns the server's verdict and the client's.
func exchange(t *testing.T, m *Mechanism, server *sasl.DigestMD5, tamper func([]byte) []byte) (serverErr, clientErr error) {
	t.Helper()
	token, err := m.Start("zk1.example.com")
	if err != nil || len(token) != 0 {
		t.Fatalf("Start = %q, %v; want an empty token", token, err)
	}
	for i := 0; i < 3 && !m.Complete(); i++ {
		challenge, err := server.Next(token)
		if err != nil {
			return err, nil
		}
		if tamper != nil {
			challenge = tamper(challenge)
		}
		token, err = m.Next(challenge)
		if err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func TestAgainstCollieServer(t *testing.T) {
	tests := []struct {
		name, user, password string
		server               sasl.Passwords
		tamper               func([]byte) []byte
		wantServer           string // the server refuses, saying this
		wantClient           string // the client fails, saying this
	}{
		{name: "right password", user: "bob", password: "bobsecret", server: users("bob", "bobsecret")},
		{name: "empty password", user: "empty", password: "", server: users("empty", "")},
		{name: "ISO 8859-1 name and password", user: "bjørn", password: "pässword", server: users("bjørn", "pässword")},
		{name: "name beyond ISO 8859-1", user: "ユーザー", password: "パス", server: users("ユーザー", "パス")},
		{name: "wrong password", user: "bob", password: "nope", server: users("bob", "bobsecret"), wantServer: "wrong password"},
		{name: "unknown user", user: "mallory", password: "x", server: users("bob", "bobsecret"), wantServer: "no user"},
		{
			name: "a server that does not know the password", user: "bob", password: "bobsecret", server: users("bob", "bobsecret"),
			tamper: func(b []byte) []byte {
				if v, ok := bytes.CutPrefix(b, []byte("rspauth=")); ok {
					// Another first digit, whatever the real one is: the
					// value is a random exchange's, so it may start with
					// any.
					first := byte('0')
					if v[0] == first {
						first = '1'
					}
					return append([]byte{'r', 's', 'p', 'a', 'u', 't', 'h', '=', first}, v[1:]...)
				}
				return b
			},
			wantClient: "rspauth",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(tt.user, tt.password)
			server := sasl.NewDigestMD5(tt.server, rand.Reader)
			serverErr, clientErr := exchange(t, m, server, tt.tamper)
			switch {
			case tt.wantServer != "":
				if serverErr == nil || !strings.Contains(serverErr.Error(), tt.wantServer) || m.Complete() {
					t.Fatalf("server: %v, client complete %v; want the server to refuse (%s)", serverErr, m.Complete(), tt.wantServer)
				}
			case tt.wantClient != "":
				if !errors.Is(clientErr, ErrMechanism) || !strings.Contains(clientErr.Error(), tt.wantClient) || m.Complete() {
					t.Fatalf("client: %v, complete %v; want a failure (%s)", clientErr, m.Complete(), tt.wantClient)
				}
				if strings.Contains(clientErr.Error(), tt.password) {
					t.Errorf("the error shows the password: %v", clientErr)
				}
			default:
				if serverErr != nil || clientErr != nil || !m.Complete() || !server.Complete() || server.Username() != tt.user {
					t.Fatalf("server %v, client %v; complete %v/%v as %q", serverErr, clientErr, m.Complete(), server.Complete(), server.Username())
				}
			}
		})
	}
}

// Two exchanges never share a cnonce, so a response cannot be replayed
// from one connection on another even with the server's nonce fixed.
func TestFreshCnonce(t *testing.T) {
	challenge := []byte(`realm="zk-sasl-md5",nonce="n",charset=utf-8,algorithm=md5-sess`)
	a, err := New("bob", "x").Next(challenge)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New("bob", "x").Next(challenge)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := parse(a)
	db, _ := parse(b)
	ca, _ := da.Single("cnonce")
	cb, _ := db.Single("cnonce")
	if len(ca) != 40 || ca == cb {
		t.Fatalf("cnonces %q and %q: want two different ones of 40 characters", ca, cb)
	}
}

func TestChallengesRefused(t *testing.T) {
	for _, tt := range []struct{ challenge, want string }{
		{"", "no SASL users"},
		{`realm="r",charset=utf-8,algorithm=md5-sess`, "no nonce"},
		{`realm="r",nonce="a",nonce="b",algorithm=md5-sess`, "more than one nonce"},
		{`realm="r",nonce="a",algorithm=md5`, "md5-sess"},
		{`realm="r",nonce="a"`, "md5-sess"},
		{`realm="r",nonce="a",qop="auth-int,auth-conf",algorithm=md5-sess`, "without auth"},
		{`realm="r",nonce="a",charset=latin1,algorithm=md5-sess`, "charset"},
		{`realm="r",nonce="a,algorithm=md5-sess`, "closing quote"},
		{strings.Repeat("x", MaxChallenge+1), "more than 2048"},
	} {
		m := New("bob", "bobsecret")
		if resp, err := m.Next([]byte(tt.challenge)); !errors.Is(err, ErrMechanism) || !strings.Contains(err.Error(), tt.want) || resp != nil {
			t.Errorf("%q: %q, %v; want an error saying %q", tt.challenge, resp, err, tt.want)
		}
		if _, err := m.Next([]byte("rspauth=00")); !errors.Is(err, ErrMechanism) || m.Complete() {
			t.Errorf("%q: after the failure, rspauth: %v, complete %v", tt.challenge, err, m.Complete())
		}
	}
	// Without charset=utf-8 a name beyond ISO 8859-1 cannot be sent.
	if _, err := New("ユーザー", "x").Next([]byte(`nonce="a",algorithm=md5-sess`)); err == nil || !strings.Contains(err.Error(), "ISO 8859-1") {
		t.Errorf("a name beyond ISO 8859-1 without charset: %v", err)
	}
}

// The first realm offered is the one answered, as ZooKeeper's callback
// handler picks it; qop options are a list.
func TestRealmAndQopChoice(t *testing.T) {
	resp, err := New("bob", "x").Next([]byte(`realm="first",realm="second",nonce="a",qop="auth-int, auth",algorithm=md5-sess`))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := parse(resp)
	if r, _ := d.Single("realm"); r != "first" {
		t.Errorf("realm %q in %s", r, resp)
	}
	if _, ok := d.First("charset"); ok {
		t.Errorf("charset sent although the server did not offer it: %s", resp)
	}
}

// parse reads a token of the exchange as the server's side would.
func parse(token []byte) (rfc2831.Directives, error) { return rfc2831.Parse(token, 64) }
