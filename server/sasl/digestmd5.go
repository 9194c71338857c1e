// Package sasl is ZooKeeper's SASL authentication, as ZooKeeper 3.8 runs
// it through Java's SASL providers: the server side, so that the clients
// that authenticate to ZooKeeper authenticate here unchanged, with the two
// mechanisms ZooKeeper's server offers, DIGEST-MD5 (RFC 2831), when its
// JAAS section holds users, and GSSAPI (Kerberos V5, RFC 4752, in
// gssapi.go), when the section logs in with Kerberos. The client side of
// DIGEST-MD5, with which the servers of an ensemble authenticate to each
// other as ZooKeeper's clients do to a server, is package
// client/digestmd5; what both sides compute and read is internal/rfc2831.
//
// For DIGEST-MD5, ZooKeeper names the server "zk-sasl-md5" and the
// protocol "zookeeper" for its clients (ClientService), so the realm is
// zk-sasl-md5 and the digest-uri zookeeper/zk-sasl-md5; between servers it
// names them "zk-quorum-sasl-md5" and "zookeeper-quorum" (QuorumService).
// It offers only the "auth" quality of protection, so no security layer
// follows the exchange. An exchange is two rounds:
//
//	client: (empty token)
//	server: realm="zk-sasl-md5",nonce="...",charset=utf-8,algorithm=md5-sess
//	client: username="bob",realm="zk-sasl-md5",nonce="...",cnonce="...",nc=00000001,qop=auth,digest-uri="zookeeper/zk-sasl-md5",response=...
//	server: rspauth=...
//
// after which the client is authenticated as its username, and the client
// knows from rspauth that the server knows the password too. A DigestMD5
// or GSSAPI holds the server side of one connection's exchange; they do no
// I/O and start no goroutine.
package sasl

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/collie-io/collie/internal/rfc2831"
	"github.com/collie-io/collie/proto"
)

const (
	// Realm is the realm, and the server name, ZooKeeper gives DIGEST-MD5
	// on its client port.
	Realm = "zk-sasl-md5"
	// DigestURI is the digest-uri a client must send there: ZooKeeper's
	// protocol name, then its server name.
	DigestURI = "zookeeper/" + Realm
	// MaxResponse is the longest token a client may send, as in Java's
	// provider; a longer one fails the exchange.
	MaxResponse = 4096
)

// ErrAuthentication is what every failure of an exchange wraps: a wrong
// password, an unknown user, a malformed or replayed response, a token
// after the exchange has ended. The message says which, and never holds a
// password.
var ErrAuthentication = errors.New("sasl: DIGEST-MD5 authentication failed")

// A Service is what an exchange names the server by: its protocol and
// its server name, which is also the realm.
type Service struct {
	Protocol, ServerName string
}

// The services of ZooKeeper's DIGEST-MD5 exchanges.
var (
	// ClientService is the client port's.
	ClientService = Service{Protocol: "zookeeper", ServerName: Realm}
	// QuorumService is the one between the servers of an ensemble
	// (ZooKeeper's QuorumAuth).
	QuorumService = Service{Protocol: "zookeeper-quorum", ServerName: "zk-quorum-sasl-md5"}
)

// digestURI is the digest-uri a client sends: protocol/server name.
func (s Service) digestURI() string { return s.Protocol + "/" + s.ServerName }

// Passwords looks up the password of a user, as the JAAS file's user_
// options give it.
type Passwords func(username string) (password string, ok bool)

// step is where an exchange stands.
type step uint8

const (
	stepStart    step = iota // the client's first token is due
	stepResponse             // the client's digest-response is due
	stepEnded                // completed or failed: no token is accepted
)

// DigestMD5 is the server side of one DIGEST-MD5 exchange.
type DigestMD5 struct {
	service   Service
	passwords Passwords
	rand      io.Reader
	step      step
	nonce     string
	username  string // set once complete
}

// NewDigestMD5 starts an exchange of the client port (ClientService) that
// checks users against passwords and draws its nonce from rand
// (crypto/rand.Reader outside tests).
func NewDigestMD5(passwords Passwords, rand io.Reader) *DigestMD5 {
	return NewDigestMD5For(ClientService, passwords, rand)
}

// NewDigestMD5For is NewDigestMD5 for the exchanges of service.
func NewDigestMD5For(service Service, passwords Passwords, rand io.Reader) *DigestMD5 {
	return &DigestMD5{service: service, passwords: passwords, rand: rand}
}

// Complete reports whether the client has authenticated.
func (s *DigestMD5) Complete() bool { return s.step == stepEnded && s.username != "" }

// Username returns the name the client authenticated as, once Complete.
func (s *DigestMD5) Username() string { return s.username }

// Next takes the client's token and returns the server's. The first token
// is answered with the challenge whatever it holds (the client sends an
// empty one; Java's provider ignores an initial response too), the second
// with rspauth if it proves the password; any error wraps
// ErrAuthentication and ends the exchange, except that of a token longer
// than MaxResponse, which Java's provider refuses before looking at it.
func (s *DigestMD5) Next(token []byte) ([]byte, error) {
	if len(token) > MaxResponse {
		return nil, fmt.Errorf("%w: a token of %d bytes, more than %d", ErrAuthentication, len(token), MaxResponse)
	}
	switch s.step {
	case stepStart:
		nonce, err := rfc2831.NewNonce(s.rand)
		if err != nil {
			s.step = stepEnded
			return nil, fmt.Errorf("%w: no nonce: %v", ErrAuthentication, err)
		}
		s.nonce = nonce
		s.step = stepResponse
		return []byte("realm=" + rfc2831.Quote(s.service.ServerName) + ",nonce=" + rfc2831.Quote(s.nonce) + ",charset=utf-8,algorithm=md5-sess"), nil
	case stepResponse:
		s.step = stepEnded
		rspauth, username, err := s.verify(token)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrAuthentication, err)
		}
		s.username = username
		return rspauth, nil
	default:
		return nil, fmt.Errorf("%w: a token after the exchange ended", ErrAuthentication)
	}
}

// verify checks a digest-response as Java's provider does and returns
// the rspauth token and the user.
func (s *DigestMD5) verify(token []byte) (rspauth []byte, username string, err error) {
	d, err := parseDirectives(token, "username", "realm", "nonce", "cnonce", "nc",
		"qop", "digest-uri", "response", "maxbuf", "charset", "cipher", "authzid")
	if err != nil {
		return nil, "", err
	}
	if cs, ok := d["charset"]; ok && string(cs) != "utf-8" {
		return nil, "", fmt.Errorf("charset %q, not utf-8", cs)
	}
	if mb, ok := d["maxbuf"]; ok {
		if _, err := strconv.ParseInt(string(mb), 10, 32); err != nil {
			return nil, "", fmt.Errorf("maxbuf %q is not a number", mb)
		}
	}
	user, ok := d["username"]
	if !ok {
		return nil, "", errors.New("no username")
	}
	username = proto.JavaString(string(user))
	realm := s.service.ServerName
	if string(d["realm"]) != realm {
		return nil, "", fmt.Errorf("realm %q, not %s", d["realm"], realm)
	}
	if n, ok := d["nonce"]; !ok || subtle.ConstantTimeCompare(n, []byte(s.nonce)) != 1 {
		return nil, "", errors.New("not the nonce of this exchange")
	}
	cnonce, ok := d["cnonce"]
	if !ok {
		return nil, "", errors.New("no cnonce")
	}
	if nc, ok := d["nc"]; ok {
		if n, err := strconv.ParseUint(string(nc), 16, 32); err != nil || n != 1 {
			return nil, "", fmt.Errorf("nonce count %q, not 00000001", nc)
		}
	}
	if qop, ok := d["qop"]; ok && string(qop) != "auth" {
		// auth-int and auth-conf are not offered: ZooKeeper's clients
		// run no security layer over the connection.
		return nil, "", fmt.Errorf("qop %q, not auth", qop)
	}
	uri, ok := d["digest-uri"]
	if want := s.service.digestURI(); !ok || !strings.EqualFold(string(uri), want) {
		return nil, "", fmt.Errorf("digest-uri %q, not %s", uri, want)
	}
	response, ok := d["response"]
	if !ok {
		return nil, "", errors.New("no response")
	}
	password, ok := s.passwords(username)
	if !ok {
		return nil, "", fmt.Errorf("no user %q", username)
	}
	authzid, hasAuthzid := d["authzid"]
	if !hasAuthzid {
		authzid = nil
	}
	a1 := rfc2831.SessionKey(username, realm, password, s.nonce, string(cnonce), authzid)
	want := rfc2831.ResponseValue(a1, "AUTHENTICATE:"+string(uri), s.nonce, string(cnonce))
	if subtle.ConstantTimeCompare(response, want) != 1 {
		return nil, "", fmt.Errorf("wrong response for user %q (wrong password)", username)
	}
	return append([]byte("rspauth="), rfc2831.ResponseValue(a1, ":"+string(uri), s.nonce, string(cnonce))...), username, nil
}
