package tlsconfig_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/server/tlsconfig"
)

// leaf reads the first certificate of id's chain.
func leaf(t *testing.T, id *tlstest.Identity) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(id.Cert)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A server's certificate names it by the address of the connection, else
// by the host of its server.N line, as IP address or DNS name.
func TestVerifyName(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	byIP := leaf(t, ca.Issue("by-ip", tlstest.Options{SAN: "IP:10.0.0.2"}))
	byName := leaf(t, ca.Issue("by-name", tlstest.Options{SAN: "DNS:zk2.example.com,DNS:*.zk.example.com"}))
	ip := func(s string) net.IP { return net.ParseIP(s) }
	tests := []struct {
		cert *x509.Certificate
		ip   net.IP
		host string
		ok   bool
	}{
		{byIP, ip("10.0.0.2"), "", true},
		{byIP, ip("10.0.0.2"), "zk2.example.com", true},
		{byIP, ip("127.0.0.1"), "10.0.0.2", true}, // the server line's address
		{byIP, ip("10.0.0.3"), "zk3.example.com", false},
		{byName, ip("10.0.0.2"), "zk2.example.com", true},
		{byName, ip("10.0.0.2"), "a.zk.example.com", true},
		{byName, ip("10.0.0.2"), "zk3.example.com", false},
		{byName, ip("10.0.0.2"), "", false},
	}
	for _, tt := range tests {
		err := tlsconfig.VerifyName(context.Background(), tt.cert, tt.ip, tt.host, false)
		if (err == nil) != tt.ok {
			t.Errorf("%v for %v, %q: %v, want ok %v", tt.cert.Subject, tt.ip, tt.host, err, tt.ok)
		}
		var ne *tlsconfig.NameError
		if err != nil && (!errors.As(err, &ne) || !strings.Contains(err.Error(), "certificate is valid for")) {
			t.Errorf("error %v is not a NameError saying what the certificate names", err)
		}
	}
}

// DialConfig connects with the server's own certificate and checks the
// other's chain against the server's trust store, not its name.
func TestDialConfig(t *testing.T) {
	ca, other := tlstest.NewAuthority(t, "ca"), tlstest.NewAuthority(t, "other")
	server := func(id *tlstest.Identity) *tls.Config {
		c, err := tlsconfig.Settings{
			KeyStore:   tlsconfig.Store{Location: id.KeyStore("PEM-plain")},
			TrustStore: tlsconfig.Store{Location: ca.Cert},
		}.ServerConfig()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := server(ca.Issue("a", tlstest.Options{SAN: "DNS:a.example.com"}))
	b := server(ca.Issue("b", tlstest.Options{SAN: "DNS:b.example.com"}))
	stranger := server(other.Issue("stranger", tlstest.Options{}))
	connect := func(dialler, receiver *tls.Config) (error, error) {
		c1, c2 := net.Pipe()
		defer c1.Close()
		defer c2.Close()
		done := make(chan error, 1)
		go func() { done <- tls.Server(c2, receiver).Handshake(); c2.Close() }()
		err := tls.Client(c1, tlsconfig.DialConfig(dialler)).Handshake()
		c1.Close()
		return err, <-done
	}
	if d, r := connect(a, b); d != nil || r != nil {
		t.Errorf("two servers of the CA: %v, %v", d, r)
	}
	if _, r := connect(stranger, a); r == nil || !strings.Contains(r.Error(), "unknown authority") {
		t.Errorf("a dialler of another CA: receiver says %v, want unknown authority", r)
	}
	if d, _ := connect(a, stranger); d == nil || !strings.Contains(d.Error(), "unknown authority") {
		t.Errorf("a receiver of another CA: dialler says %v, want unknown authority", d)
	}
}
