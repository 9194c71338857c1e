package digestmd5

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/collie-io/collie/server/sasl"
)

func quorum(user, password string) *Mechanism {
	return New(user, password, WithService(sasl.QuorumService.Protocol, sasl.QuorumService.ServerName))
}

func md5hex(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }

// TestQuorumResponse checks the response of the exchange between servers
// against RFC 2831's formulas, written out apart from the package's
// helpers, and its form against what Java's provider sends.
func TestQuorumResponse(t *testing.T) {
	m := quorum("test", "secret")
	const nonce = "abc="
	response, err := m.Next([]byte(`realm="zk-quorum-sasl-md5",nonce="` + nonce + `",charset=utf-8,algorithm=md5-sess`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := parse(response)
	if err != nil {
		t.Fatal(err)
	}
	cnonce, _ := d.Single("cnonce")
	inner := md5.Sum([]byte("test:zk-quorum-sasl-md5:secret"))
	const uri = "zookeeper-quorum/zk-quorum-sasl-md5"
	ha1 := md5hex(string(inner[:]) + ":" + nonce + ":" + cnonce)
	want := map[string]string{
		"charset": "utf-8", "username": "test", "realm": "zk-quorum-sasl-md5", "nonce": nonce, "nc": "00000001",
		"digest-uri": uri, "maxbuf": "65536", "qop": "auth",
		"response": md5hex(ha1 + ":" + nonce + ":00000001:" + cnonce + ":auth:" + md5hex("AUTHENTICATE:"+uri)),
	}
	for k, v := range want {
		if got, _ := d.Single(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if len(cnonce) != 40 {
		t.Errorf("cnonce %q, want 40 characters as Java's", cnonce)
	}
	rspauth := "rspauth=" + md5hex(ha1+":"+nonce+":00000001:"+cnonce+":auth:"+md5hex(":"+uri))
	if _, err := m.Next([]byte(rspauth)); err != nil || !m.Complete() {
		t.Fatalf("rspauth: %v", err)
	}
}

// TestRspauthRefused: a server that does not prove it knows the password
// leaves the exchange incomplete.
func TestRspauthRefused(t *testing.T) {
	s := sasl.NewDigestMD5For(sasl.QuorumService, users("test", "secret"), rand.Reader)
	challenge, err := s.Next(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, rspauth string }{
		{"wrong rspauth", "rspauth=00000000000000000000000000000000"},
		{"no rspauth", "x=1"},
		{"two", "rspauth=00000000000000000000000000000000,rspauth=00000000000000000000000000000000"},
		{"empty", ""},
	} {
		m := quorum("test", "secret")
		if _, err := m.Next(challenge); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Next([]byte(tt.rspauth)); !errors.Is(err, ErrMechanism) || m.Complete() {
			t.Errorf("%s: %v, complete %v", tt.name, err, m.Complete())
		}
	}
}
