package sasl

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
)

// DigestMD5Client is the client side of one DIGEST-MD5 exchange, as Java's
// provider runs it for a ZooKeeper client or a ZooKeeper server
// authenticating to another: it answers the server's challenge with its
// digest-response, then checks the server's rspauth, which proves that
// the server knows the password too.
type DigestMD5Client struct {
	service            Service
	username, password string
	rand               io.Reader
	step               step
	// a1, nonce and cnonce are kept from the response to check rspauth.
	a1            [16]byte
	nonce, cnonce string
}

// NewDigestMD5Client starts an exchange in which username authenticates
// with password to a server of service, drawing its cnonce from rand
// (crypto/rand.Reader outside tests).
func NewDigestMD5Client(service Service, username, password string, rand io.Reader) *DigestMD5Client {
	return &DigestMD5Client{service: service, username: username, password: password, rand: rand}
}

// Complete reports whether the server has proved it knows the password.
func (c *DigestMD5Client) Complete() bool { return c.step == stepEnded && c.nonce != "" }

// Next takes the server's token and returns the client's: the
// digest-response to the challenge, then nothing once rspauth checks
// out. Any error wraps ErrAuthentication and ends the exchange; none
// holds the password.
func (c *DigestMD5Client) Next(token []byte) ([]byte, error) {
	if len(token) > MaxResponse {
		c.fail()
		return nil, fmt.Errorf("%w: a server token of %d bytes, more than %d", ErrAuthentication, len(token), MaxResponse)
	}
	switch c.step {
	case stepStart:
		c.step = stepResponse
		response, err := c.respond(token)
		if err != nil {
			c.fail()
			return nil, fmt.Errorf("%w: challenge: %v", ErrAuthentication, err)
		}
		return response, nil
	case stepResponse:
		c.step = stepEnded
		if err := c.checkRspauth(token); err != nil {
			c.nonce = ""
			return nil, fmt.Errorf("%w: %v", ErrAuthentication, err)
		}
		return nil, nil
	default:
		return nil, fmt.Errorf("%w: a server token after the exchange ended", ErrAuthentication)
	}
}

func (c *DigestMD5Client) fail() {
	c.step = stepEnded
	c.nonce = ""
}

// respond reads a challenge as Java's provider does and returns the
// digest-response.
func (c *DigestMD5Client) respond(challenge []byte) ([]byte, error) {
	d, err := parseDirectives(challenge, "realm", "nonce", "qop", "stale", "maxbuf", "charset", "algorithm", "cipher")
	if err != nil {
		return nil, err
	}
	nonce, ok := d["nonce"]
	if !ok || len(nonce) == 0 {
		return nil, errors.New("no nonce")
	}
	if alg := d["algorithm"]; string(alg) != "md5-sess" {
		return nil, fmt.Errorf("algorithm %q, not md5-sess", alg)
	}
	if cs, ok := d["charset"]; ok && !strings.EqualFold(string(cs), "utf-8") {
		return nil, fmt.Errorf("charset %q, not utf-8", cs)
	}
	if qop, ok := d["qop"]; ok && !offers(string(qop), "auth") {
		return nil, fmt.Errorf("qop %q does not offer auth", qop)
	}
	// The realm the server offers is taken, as ZooKeeper's callback
	// handler takes it; without one, the server name stands for it.
	realm := c.service.ServerName
	if r, ok := d["realm"]; ok {
		realm = string(r)
	}
	var raw [rawNonceLen]byte
	if _, err := io.ReadFull(c.rand, raw[:]); err != nil {
		return nil, fmt.Errorf("no cnonce: %v", err)
	}
	c.nonce = string(nonce)
	c.cnonce = base64.StdEncoding.EncodeToString(raw[:])
	uri := c.service.digestURI()
	c.a1 = sessionKey(c.username, realm, c.password, c.nonce, c.cnonce, nil)
	response := responseValue(c.a1, "AUTHENTICATE:"+uri, c.nonce, c.cnonce)
	return fmt.Appendf(nil, "charset=utf-8,username=%s,realm=%s,nonce=%s,nc=00000001,cnonce=%s,digest-uri=%s,maxbuf=65536,response=%s,qop=auth",
		quote(c.username), quote(realm), quote(c.nonce), quote(c.cnonce), quote(uri), response), nil
}

// checkRspauth checks the server's last token against the response.
func (c *DigestMD5Client) checkRspauth(token []byte) error {
	d, err := parseDirectives(token, "rspauth")
	if err != nil {
		return err
	}
	got, ok := d["rspauth"]
	if !ok {
		return errors.New("no rspauth from the server")
	}
	want := responseValue(c.a1, ":"+c.service.digestURI(), c.nonce, c.cnonce)
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return errors.New("the server's rspauth is wrong: it does not know the password")
	}
	return nil
}

// offers reports whether a comma-separated list holds v.
func offers(list, v string) bool {
	for item := range strings.SplitSeq(list, ",") {
		if strings.EqualFold(strings.TrimSpace(item), v) {
			return true
		}
	}
	return false
}
