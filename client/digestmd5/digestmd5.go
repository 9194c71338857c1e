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
//
// The same exchange, named by WithService, is how the servers of a
// ZooKeeper ensemble authenticate to each other (a Collie server uses this
// package for it).
package digestmd5

import (
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/collie-io/collie/internal/rfc2831"
)

// DigestURI is the digest-uri ZooKeeper's Java client sends: its protocol
// name, then the server name it gives every server.
const DigestURI = "zookeeper/zk-sasl-md5"

// MaxChallenge is the longest server token accepted: RFC 2831 bounds a
// digest-challenge below 2048 bytes, and rspauth is far shorter.
const MaxChallenge = 2048

// maxDirectives bounds the elements of one server token.
const maxDirectives = 32

// ErrMechanism is what every failure of an exchange wraps: a malformed or
// unacceptable challenge, a wrong rspauth (the server does not know the
// password), a token after the exchange ended. No message holds the
// password.
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

// An Option changes what New returns.
type Option func(*Mechanism)

// WithService names the server the exchange is with as the digest-uri
// protocol/serverName. The default is ZooKeeper's client port,
// zookeeper/zk-sasl-md5 (DigestURI); the servers of an ensemble name each
// other zookeeper-quorum/zk-quorum-sasl-md5. Whatever the service, the
// realm answered is the one the server offers.
func WithService(protocol, serverName string) Option {
	return func(m *Mechanism) { m.digestURI = protocol + "/" + serverName }
}

// New returns an exchange that authenticates as username with password,
// drawing its cnonce from crypto/rand.
func New(username, password string, opts ...Option) *Mechanism {
	m := &Mechanism{username: username, password: password, digestURI: DigestURI, newCnonce: randomCnonce}
	for _, o := range opts {
		o(m)
	}
	return m
}

// randomCnonce draws a cnonce as Java's provider does.
func randomCnonce() (string, error) { return rfc2831.NewNonce(rand.Reader) }

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
		d, err := rfc2831.Parse(token, maxDirectives)
		if err != nil {
			return nil, fmt.Errorf("%w: rspauth: %w", ErrMechanism, err)
		}
		got, ok := d.Single("rspauth")
		if !ok || subtle.ConstantTimeCompare([]byte(got), m.rspauth) != 1 {
			return nil, fmt.Errorf("%w: the server's rspauth is wrong: it does not know the password of %q", ErrMechanism, m.username)
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
	d, err := rfc2831.Parse(challenge, maxDirectives)
	if err != nil {
		return nil, fmt.Errorf("challenge: %w", err)
	}
	for _, key := range []string{"nonce", "qop", "charset", "algorithm", "maxbuf", "stale", "cipher"} {
		if d.Count(key) > 1 {
			return nil, fmt.Errorf("the challenge has more than one %s", key)
		}
	}
	nonce, ok := d.Single("nonce")
	if !ok || nonce == "" {
		return nil, errors.New("the challenge has no nonce")
	}
	if alg, _ := d.Single("algorithm"); alg != "md5-sess" {
		return nil, fmt.Errorf("algorithm %q, not md5-sess", alg)
	}
	if qop, ok := d.Single("qop"); ok && !listHas(qop, "auth") {
		return nil, fmt.Errorf("the server offers qop %q, without auth", qop)
	}
	// The first realm the server offers, as ZooKeeper's callback handler
	// chooses it; none means the empty realm.
	realm, _ := d.First("realm")
	utf8Charset := false
	if cs, ok := d.Single("charset"); ok {
		if !strings.EqualFold(cs, "utf-8") {
			return nil, fmt.Errorf("charset %q, not utf-8", cs)
		}
		utf8Charset = true
	}
	for _, text := range []struct{ what, s string }{{"user name", m.username}, {"password", m.password}, {"realm", realm}} {
		if err := checkText(text.s, utf8Charset); err != nil {
			return nil, fmt.Errorf("%s: %w", text.what, err)
		}
	}
	cnonce, err := m.newCnonce()
	if err != nil {
		return nil, fmt.Errorf("no cnonce: %w", err)
	}

	a1 := rfc2831.SessionKey(m.username, realm, m.password, nonce, cnonce, nil)
	response := rfc2831.ResponseValue(a1, "AUTHENTICATE:"+m.digestURI, nonce, cnonce)
	m.rspauth = rfc2831.ResponseValue(a1, ":"+m.digestURI, nonce, cnonce)

	var b strings.Builder
	if utf8Charset {
		b.WriteString("charset=utf-8,")
	}
	q := rfc2831.Quote
	fmt.Fprintf(&b, "username=%s,realm=%s,nonce=%s,nc=00000001,cnonce=%s,digest-uri=%s,maxbuf=65536,response=%s,qop=auth",
		q(m.username), q(realm), q(nonce), q(cnonce), q(m.digestURI), response)
	return []byte(b.String()), nil
}

// checkText reports whether a user name, realm or password can be hashed
// as Java's provider hashes it (rfc2831.Text): beyond ISO 8859-1, only
// for a server that said charset=utf-8.
func checkText(s string, utf8Charset bool) error {
	if !utf8.ValidString(s) {
		return errors.New("not UTF-8 text")
	}
	if _, latin1 := rfc2831.Text(s); !latin1 && !utf8Charset {
		return errors.New("characters beyond ISO 8859-1, and the server did not say charset=utf-8")
	}
	return nil
}

// listHas reports whether a comma list (a qop-options value) holds want.
func listHas(list, want string) bool {
	for item := range strings.SplitSeq(list, ",") {
		if strings.EqualFold(strings.TrimSpace(item), want) {
			return true
		}
	}
	return false
}
