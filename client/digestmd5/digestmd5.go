// Package digestmd5 is the client side of the SASL DIGEST-MD5 mechanism
// (RFC 2831) as ZooKeeper's Java client runs it with a JAAS Client
// section of DigestLoginModule: a user name and password, the realm the
// server offers, the digest-uri zookeeper/zk-sasl-md5, quality of
// protection auth (no security layer follows). A Mechanism satisfies
// client.SASLMechanism:
//
//	cfg := client.Config{SASL: func() client.SASLMechanism {
//		return digestmd5.New("bob", "bobsecret")
//	}}
//
// The exchange is two rounds: an empty first token, answered by the
// server's challenge; the digest-response, answered by rspauth, which
// proves that the server knows the password too and which the mechanism
// checks before it calls the exchange complete. A Mechanism does no I/O.
package digestmd5

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// DigestURI is the digest-uri ZooKeeper's Java client sends: its protocol
// name, then the server name it gives every server.
const DigestURI = "zookeeper/zk-sasl-md5"

// MaxChallenge is the longest server token accepted: RFC 2831 bounds a
// digest-challenge below 2048 bytes, and rspauth is far shorter.
const MaxChallenge = 2048

// rawCnonceLen random bytes make a cnonce of 40 base64 characters, as
// Java's provider draws them.
const rawCnonceLen = 30

// ErrMechanism is what every failure of an exchange wraps: a malformed or
// unacceptable challenge, a wrong rspauth (the server does not know the
// password), a token after the exchange ended.
var ErrMechanism = errors.New("digestmd5")

type step uint8

const (
	stepChallenge step = iota // the server's digest-challenge is due
	stepRspauth               // the server's rspauth is due
	stepEnded                 // complete or failed
)

// Mechanism is one DIGEST-MD5 exchange, for one connection.
type Mechanism struct {
	username, password string
	digestURI          string
	newCnonce          func() (string, error)

	step     step
	rspauth  []byte // the rspauth the server must send
	complete bool
}

// New returns an exchange that authenticates as username with password,
// drawing its cnonce from crypto/rand.
func New(username, password string) *Mechanism {
	return &Mechanism{username: username, password: password, digestURI: DigestURI, newCnonce: randomCnonce}
}

// randomCnonce draws a cnonce as Java's provider does.
func randomCnonce() (string, error) {
	var raw [rawCnonceLen]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(raw[:]), nil
}

// Name is the mechanism's SASL name.
func (m *Mechanism) Name() string { return "DIGEST-MD5" }

// Start returns the empty first token: DIGEST-MD5 has no initial
// response, the server speaks first.
func (m *Mechanism) Start(serverHost string) ([]byte, error) { return []byte{}, nil }

// Complete reports whether the server has proved it knows the password.
func (m *Mechanism) Complete() bool { return m.complete }

// Next answers the server's digest-challenge with the digest-response,
// then checks its rspauth, after which the exchange is complete and Next
// returns nil. Any error wraps ErrMechanism and ends the exchange.
func (m *Mechanism) Next(token []byte) ([]byte, error) {
	if len(token) > MaxChallenge {
		m.step = stepEnded
		return nil, fmt.Errorf("%w: a server token of %d bytes, more than %d", ErrMechanism, len(token), MaxChallenge)
	}
	switch m.step {
	case stepChallenge:
		m.step = stepEnded
		resp, err := m.respond(token)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMechanism, err)
		}
		m.step = stepRspauth
		return resp, nil
	case stepRspauth:
		m.step = stepEnded
		d, err := parseDirectives(token)
		if err != nil {
			return nil, fmt.Errorf("%w: rspauth: %w", ErrMechanism, err)
		}
		got, ok := d.single("rspauth")
		if !ok || subtle.ConstantTimeCompare([]byte(got), m.rspauth) != 1 {
			return nil, fmt.Errorf("%w: the server's rspauth does not prove it knows the password of %q", ErrMechanism, m.username)
		}
		m.complete = true
		return nil, nil
	default:
		return nil, fmt.Errorf("%w: a server token after the exchange ended", ErrMechanism)
	}
}

// respond checks a digest-challenge as Java's provider does and returns
// the digest-response, keeping the rspauth it expects.
func (m *Mechanism) respond(challenge []byte) ([]byte, error) {
	if len(challenge) == 0 {
		// ZooKeeper without SASL users answers with an empty token.
		return nil, errors.New("the server sent no challenge: it has no SASL users")
	}
	d, err := parseDirectives(challenge)
	if err != nil {
		return nil, err
	}
	for _, key := range []string{"nonce", "qop", "charset", "algorithm", "maxbuf", "stale", "cipher"} {
		if d.count(key) > 1 {
			return nil, fmt.Errorf("the challenge has more than one %s", key)
		}
	}
	nonce, ok := d.single("nonce")
	if !ok || nonce == "" {
		return nil, errors.New("the challenge has no nonce")
	}
	if alg, _ := d.single("algorithm"); alg != "md5-sess" {
		return nil, fmt.Errorf("algorithm %q, not md5-sess", alg)
	}
	if qop, ok := d.single("qop"); ok && !listHas(qop, "auth") {
		return nil, fmt.Errorf("the server offers qop %q, without auth", qop)
	}
	// The first realm the server offers, as ZooKeeper's callback handler
	// chooses it; none means the empty realm.
	realm, _ := d.first("realm")
	utf8Charset := false
	if cs, ok := d.single("charset"); ok {
		if !strings.EqualFold(cs, "utf-8") {
			return nil, fmt.Errorf("charset %q, not utf-8", cs)
		}
		utf8Charset = true
	}
	user, err := encodeText(m.username, utf8Charset)
	if err != nil {
		return nil, fmt.Errorf("user name: %w", err)
	}
	pass, err := encodeText(m.password, utf8Charset)
	if err != nil {
		return nil, fmt.Errorf("password: %w", err)
	}
	realmBytes, err := encodeText(realm, utf8Charset)
	if err != nil {
		return nil, fmt.Errorf("realm: %w", err)
	}
	cnonce, err := m.newCnonce()
	if err != nil {
		return nil, fmt.Errorf("no cnonce: %w", err)
	}

	a1 := sessionKey(user, realmBytes, pass, nonce, cnonce)
	response := kd(a1, nonce, cnonce, "AUTHENTICATE:"+m.digestURI)
	m.rspauth = kd(a1, nonce, cnonce, ":"+m.digestURI)

	var b strings.Builder
	if utf8Charset {
		b.WriteString("charset=utf-8,")
	}
	fmt.Fprintf(&b, "username=%s,realm=%s,nonce=%s,nc=00000001,cnonce=%s,digest-uri=%s,maxbuf=65536,response=%s,qop=auth",
		quote(m.username), quote(realm), quote(nonce), quote(cnonce), quote(m.digestURI), response)
	return []byte(b.String()), nil
}

// sessionKey is H(A1) of RFC 2831 for md5-sess, without authzid:
// H(H(user:realm:password):nonce:cnonce).
func sessionKey(user, realm, password []byte, nonce, cnonce string) [md5.Size]byte {
	inner := md5.Sum(join(user, realm, password))
	return md5.Sum(join(inner[:], []byte(nonce), []byte(cnonce)))
}

// kd is the response-value of RFC 2831 for qop auth, in lower case hex,
// with A2 = a2 (the response's "AUTHENTICATE:uri", rspauth's ":uri").
func kd(a1 [md5.Size]byte, nonce, cnonce, a2 string) []byte {
	ha2 := md5.Sum([]byte(a2))
	sum := md5.Sum([]byte(hex.EncodeToString(a1[:]) + ":" + nonce + ":00000001:" + cnonce + ":auth:" + hex.EncodeToString(ha2[:])))
	return []byte(hex.EncodeToString(sum[:]))
}

func join(parts ...[]byte) []byte {
	var out []byte
	for i, p := range parts {
		if i > 0 {
			out = append(out, ':')
		}
		out = append(out, p...)
	}
	return out
}

// encodeText encodes a user name, realm or password for hashing as Java's
// provider does: in ISO 8859-1 when every character fits, otherwise in
// UTF-8, which only a server that said charset=utf-8 understands.
func encodeText(s string, utf8Charset bool) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, errors.New("not UTF-8 text")
	}
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			if !utf8Charset {
				return nil, errors.New("characters beyond ISO 8859-1, and the server did not say charset=utf-8")
			}
			return []byte(s), nil
		}
		b = append(b, byte(r))
	}
	return b, nil
}

// listHas reports whether a comma list (a qop-options value) holds want.
func listHas(list, want string) bool {
	for _, item := range strings.Split(list, ",") {
		if strings.EqualFold(strings.TrimSpace(item), want) {
			return true
		}
	}
	return false
}

// quote writes s as a quoted-string.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
