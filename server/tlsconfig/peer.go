package tlsconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
)

// DialConfig returns the configuration with which a server connects to
// another server, made from its own server configuration c (what
// ServerConfig returns for the ssl.quorum.* settings): the same
// certificates, versions and cipher suites, and the other server's chain
// checked against the CAs c checks its clients' against (c.ClientCAs;
// the system's roots when nil), as ZooKeeper's QuorumX509Util uses one
// SSLContext both ways. The other server's name is not checked here: the
// caller knows which address it dialled and checks it with VerifyName.
func DialConfig(c *tls.Config) *tls.Config {
	roots := c.ClientCAs
	return &tls.Config{
		MinVersion:         c.MinVersion,
		MaxVersion:         c.MaxVersion,
		CipherSuites:       c.CipherSuites,
		Certificates:       c.Certificates,
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyChain(cs.PeerCertificates, roots, x509.ExtKeyUsageServerAuth)
		},
		// Go's client shows no certificate when the server's request names
		// CAs that did not sign it; showing it anyway has the other server
		// say "unknown CA" rather than "no certificate", which is what the
		// operator needs to read.
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if len(c.Certificates) == 0 {
				return &tls.Certificate{}, nil
			}
			return &c.Certificates[0], nil
		},
	}
}

// verifyChain checks that certs, a leaf and the intermediates sent with
// it, chain to roots (the system's when nil) for usage.
func verifyChain(certs []*x509.Certificate, roots *x509.CertPool, usage x509.ExtKeyUsage) error {
	if len(certs) == 0 {
		return errors.New("tls: the peer sent no certificate")
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{usage}}
	for _, ic := range certs[1:] {
		opts.Intermediates.AddCert(ic)
	}
	_, err := certs[0].Verify(opts)
	return err
}

// NameError says that a server's certificate names none of the names it
// was checked against.
type NameError struct {
	Tried []string // the addresses and host names tried, in order
	Valid []string // what the certificate is valid for (its IP and DNS SANs)
}

func (e *NameError) Error() string {
	valid := "no IP address or DNS name"
	if len(e.Valid) > 0 {
		valid = strings.Join(e.Valid, ", ")
	}
	return fmt.Sprintf("certificate name mismatch: the certificate is valid for %s, not for %s", valid, strings.Join(e.Tried, " or "))
}

// VerifyName checks that cert names a server, as ZooKeeper's ZKTrustManager
// does on connections between servers, both ways: first ip, the address
// the connection comes from or goes to; then host, the host of the
// server's server.N line, when it is not that address; then, with reverse,
// the names a reverse lookup of ip gives (ZooKeeper's
// ssl.quorum.allowReverseDnsLookup, true by default between servers). A
// name matches as in HTTPS: an IP address its IP SANs, a host name its DNS
// SANs, wildcards included. The lookup is bounded by ctx.
func VerifyName(ctx context.Context, cert *x509.Certificate, ip net.IP, host string, reverse bool) error {
	var tried []string
	try := func(name string) bool {
		if name == "" || slices.Contains(tried, name) {
			return false
		}
		tried = append(tried, name)
		return cert.VerifyHostname(name) == nil
	}
	if ip != nil && try(ip.String()) {
		return nil
	}
	if try(host) {
		return nil
	}
	if reverse && ip != nil {
		names, _ := net.DefaultResolver.LookupAddr(ctx, ip.String())
		for _, n := range names {
			if try(strings.TrimSuffix(n, ".")) {
				return nil
			}
		}
	}
	valid := slices.Clone(cert.DNSNames)
	for _, a := range cert.IPAddresses {
		valid = append(valid, a.String())
	}
	return &NameError{Tried: tried, Valid: valid}
}
