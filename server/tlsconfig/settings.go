package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ClientAuth is ssl.clientAuth: whether a server asks for clients'
// certificates.
type ClientAuth int

const (
	// NeedClientAuth refuses a client without a certificate its trust
	// store trusts; ZooKeeper's default.
	NeedClientAuth ClientAuth = iota
	// WantClientAuth asks for a certificate and verifies one that is
	// given, but also serves clients without one.
	WantClientAuth
	// NoClientAuth asks for no certificate.
	NoClientAuth
)

// ParseClientAuth reads ssl.clientAuth as ZooKeeper does: none, want or
// need in any case, and need when empty.
func ParseClientAuth(s string) (ClientAuth, error) {
	switch strings.ToUpper(s) {
	case "", "NEED":
		return NeedClientAuth, nil
	case "WANT":
		return WantClientAuth, nil
	case "NONE":
		return NoClientAuth, nil
	}
	return 0, fmt.Errorf("%q is not none, want or need", s)
}

func (a ClientAuth) String() string {
	switch a {
	case WantClientAuth:
		return "want"
	case NoClientAuth:
		return "none"
	}
	return "need"
}

// DefaultProtocol is ZooKeeper's ssl.protocol when the key is not set: its
// X509Util asks Java for a TLSv1.2 context and enables that protocol only.
const DefaultProtocol = "TLSv1.2"

// DefaultCipherSuites is ZooKeeper 3.8's cipher suite list on Java 9 and
// later, the one used when ssl.ciphersuites is not set. Go implements all
// but the two CBC_SHA384 suites.
var DefaultCipherSuites = []string{
	"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
	"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
	"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
	"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
	"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
	"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
	"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
}

// Settings are the TLS keys of one side of ZooKeeper's client port (the
// ssl.* keys of zoo.cfg, or the zookeeper.ssl.* properties of its Java
// client).
type Settings struct {
	KeyStore   Store // ssl.keyStore.*; a server needs one
	TrustStore Store // ssl.trustStore.*; without one, the system's roots are trusted
	ClientAuth ClientAuth
	// Protocol is ssl.protocol; "" is DefaultProtocol.
	Protocol string
	// EnabledProtocols is ssl.enabledProtocols, comma-separated; "" enables
	// Protocol alone, as ZooKeeper does.
	EnabledProtocols string
	// CipherSuites is ssl.ciphersuites, comma-separated; "" is
	// DefaultCipherSuites.
	CipherSuites string
	// SkipHostnameVerification is ssl.hostnameVerification=false: a client
	// then checks the server's chain but not its name. Servers never check
	// clients' names on the client port, as in ZooKeeper.
	SkipHostnameVerification bool
}

var tlsVersions = map[string]uint16{
	"TLSv1":   tls.VersionTLS10,
	"TLSv1.1": tls.VersionTLS11,
	"TLSv1.2": tls.VersionTLS12,
	"TLSv1.3": tls.VersionTLS13,
}

// Versions returns the TLS versions the settings allow, from ssl.protocol
// and ssl.enabledProtocols. Java's names are case-sensitive, as there.
// Protocol "TLS" (Java's context of every version it enables) allows
// TLSv1.2 and TLSv1.3. Go cannot leave a gap, so enabled protocols must be
// consecutive versions.
func (s Settings) Versions() (lo, hi uint16, err error) {
	protocol := cmp(s.Protocol, DefaultProtocol)
	names := []string{protocol}
	if s.EnabledProtocols != "" {
		names = splitList(s.EnabledProtocols)
	} else if protocol == "TLS" {
		names = []string{"TLSv1.2", "TLSv1.3"}
	}
	if _, ok := tlsVersions[protocol]; !ok && protocol != "TLS" {
		return 0, 0, fmt.Errorf("ssl.protocol %q is not TLS, TLSv1, TLSv1.1, TLSv1.2 or TLSv1.3", protocol)
	}
	var vs []uint16
	for _, n := range names {
		v, ok := tlsVersions[n]
		if !ok {
			return 0, 0, fmt.Errorf("ssl.enabledProtocols: %q is not TLSv1, TLSv1.1, TLSv1.2 or TLSv1.3", n)
		}
		vs = append(vs, v)
	}
	slices.Sort(vs)
	vs = slices.Compact(vs)
	if len(vs) == 0 {
		return 0, 0, errors.New("ssl.enabledProtocols names no protocol")
	}
	lo, hi = vs[0], vs[len(vs)-1]
	if int(hi-lo) != len(vs)-1 {
		return 0, 0, fmt.Errorf("ssl.enabledProtocols %q leaves out a version between its lowest and highest, which is not supported", s.EnabledProtocols)
	}
	return lo, hi, nil
}

// Suites returns the TLS 1.0–1.2 cipher suites ssl.ciphersuites names that
// Go implements, in order, and the names it does not implement. Java
// negotiates TLS 1.3 only when the list names one of its suites (Go always
// offers all of them): tls13 reports whether it does.
func (s Settings) Suites() (ids []uint16, unknown []string, tls13 bool) {
	names := DefaultCipherSuites
	if s.CipherSuites != "" {
		names = splitList(s.CipherSuites)
	}
	known := map[string]*tls.CipherSuite{}
	for _, cs := range slices.Concat(tls.CipherSuites(), tls.InsecureCipherSuites()) {
		known[cs.Name] = cs
	}
	for _, n := range names {
		cs, ok := known[n]
		switch {
		case !ok:
			unknown = append(unknown, n)
		case slices.Equal(cs.SupportedVersions, []uint16{tls.VersionTLS13}):
			tls13 = true
		default:
			ids = append(ids, cs.ID)
		}
	}
	return ids, unknown, tls13
}

// params returns the versions and suites to configure, and the cipher
// suite names Go does not implement, which the caller may warn about.
func (s Settings) params() (lo, hi uint16, suites []uint16, unknown []string, err error) {
	lo, hi, err = s.Versions()
	if err != nil {
		return 0, 0, nil, nil, err
	}
	suites, unknown, tls13 := s.Suites()
	if !tls13 && hi == tls.VersionTLS13 {
		// Java would not negotiate TLS 1.3 without one of its suites.
		hi = tls.VersionTLS12
		if lo > hi {
			return 0, 0, nil, nil, errors.New("TLSv1.3 is the only protocol enabled, but ssl.ciphersuites names none of its suites (TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256): no handshake could succeed")
		}
	}
	if lo < tls.VersionTLS13 && len(suites) == 0 {
		return 0, 0, nil, nil, fmt.Errorf("ssl.ciphersuites names no cipher suite Go implements for TLS 1.2 and before (%s)", strings.Join(unknown, ", "))
	}
	return lo, hi, suites, unknown, nil
}

// UnknownCipherSuites returns the names ssl.ciphersuites gives that Go
// does not implement; they are left out. ZooKeeper's defaults, two of
// which Go lacks, are not counted: nobody asked for those by name.
func (s Settings) UnknownCipherSuites() []string {
	if s.CipherSuites == "" {
		return nil
	}
	_, unknown, _ := s.Suites()
	return unknown
}

// Check reports what is wrong with the settings' protocols and suites,
// without reading any file.
func (s Settings) Check() error {
	_, _, _, _, err := s.params()
	return err
}

// ServerConfig reads the stores and returns the configuration of a server
// with these settings. A server needs a key store; without a trust store,
// client certificates are checked against the system's roots (ZooKeeper
// uses Java's).
func (s Settings) ServerConfig() (*tls.Config, error) {
	lo, hi, suites, _, err := s.params()
	if err != nil {
		return nil, err
	}
	if s.KeyStore.Location == "" {
		return nil, errors.New("ssl.keyStore.location is not set: a TLS server needs a key and certificate")
	}
	certs, err := LoadKeyStore(s.KeyStore)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{
		MinVersion:   lo,
		MaxVersion:   hi,
		CipherSuites: suites,
		Certificates: certs,
	}
	if s.TrustStore.Location != "" {
		trusted, err := LoadTrustStore(s.TrustStore)
		if err != nil {
			return nil, err
		}
		c.ClientCAs = Pool(trusted)
	}
	switch s.ClientAuth {
	case NeedClientAuth:
		c.ClientAuth = tls.RequireAndVerifyClientCert
	case WantClientAuth:
		c.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		c.ClientAuth = tls.NoClientCert
	}
	return c, nil
}

// ClientConfig reads the stores and returns the configuration of a client
// with these settings: a key store is optional (a client certificate), and
// without a trust store the system's roots are trusted. Go's client checks
// the server's name, taken from the address it dials unless ServerName is
// set, unless SkipHostnameVerification.
func (s Settings) ClientConfig() (*tls.Config, error) {
	lo, hi, suites, _, err := s.params()
	if err != nil {
		return nil, err
	}
	c := &tls.Config{MinVersion: lo, MaxVersion: hi, CipherSuites: suites}
	if s.KeyStore.Location != "" {
		if c.Certificates, err = LoadKeyStore(s.KeyStore); err != nil {
			return nil, err
		}
	}
	if s.TrustStore.Location != "" {
		trusted, err := LoadTrustStore(s.TrustStore)
		if err != nil {
			return nil, err
		}
		c.RootCAs = Pool(trusted)
	}
	if s.SkipHostnameVerification {
		SkipHostnameVerification(c)
	}
	return c, nil
}

// SkipHostnameVerification makes a client configuration check the server's
// certificate chain against c.RootCAs (the system's roots when nil) but not
// the name in it, as ZooKeeper's client does with
// zookeeper.ssl.hostnameVerification=false.
func SkipHostnameVerification(c *tls.Config) {
	c.InsecureSkipVerify = true
	roots := c.RootCAs
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		return verifyChain(cs.PeerCertificates, roots, x509.ExtKeyUsageServerAuth)
	}
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func cmp(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}
