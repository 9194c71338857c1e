package tlsconfig_test

import (
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/server/tlsconfig"
)

func TestFileType(t *testing.T) {
	tests := []struct {
		typ, location string
		want          tlsconfig.Type
		wantErr       bool
	}{
		{"", "/etc/zk/keystore.jks", tlsconfig.JKS, false},
		{"", "/etc/zk/keystore.pem", tlsconfig.PEM, false},
		{"", "/etc/zk/keystore.p12", tlsconfig.PKCS12, false},
		{"", "/etc/zk.d/keystore", "", true},   // the extension of the file, not of a directory
		{"", "/etc/zk/keystore.PEM", "", true}, // ZooKeeper compares extensions exactly
		{"", "/etc/zk/keystore.pfx", "", true},
		{"", "/etc/zk/keystore.bcfks", "", true},
		{"pkcs12", "/etc/zk/keystore.jks", tlsconfig.PKCS12, false}, // the type wins over the extension
		{"Pem", "/etc/zk/keystore", tlsconfig.PEM, false},
		{"BCFKS", "/etc/zk/keystore.bcfks", "", true},
		{"PKCS#12", "/etc/zk/keystore.p12", "", true},
	}
	for _, tt := range tests {
		got, err := tlsconfig.Store{Type: tt.typ, Location: tt.location}.FileType()
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("FileType(type %q, %s) = %q, %v; want %q, error %v", tt.typ, tt.location, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseClientAuth(t *testing.T) {
	for in, want := range map[string]tlsconfig.ClientAuth{
		"": tlsconfig.NeedClientAuth, "need": tlsconfig.NeedClientAuth, "NEED": tlsconfig.NeedClientAuth,
		"want": tlsconfig.WantClientAuth, "None": tlsconfig.NoClientAuth,
	} {
		if got, err := tlsconfig.ParseClientAuth(in); err != nil || got != want {
			t.Errorf("ParseClientAuth(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := tlsconfig.ParseClientAuth("required"); err == nil {
		t.Error(`ParseClientAuth("required") succeeded`)
	}
}

func TestKeyStoreFormats(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	server := ca.Issue("server", tlstest.Options{})
	for _, typ := range []string{"PEM", "PEM-PBES2", "PEM-MD5-DES", "PEM-plain", "PKCS12", "JKS"} {
		t.Run(typ, func(t *testing.T) {
			s := tlsconfig.Store{Location: server.KeyStore(typ), Password: tlstest.Password}
			if typ == "PEM-plain" {
				s.Password = ""
			}
			certs, err := tlsconfig.LoadKeyStore(s)
			if err != nil {
				t.Fatal(err)
			}
			if len(certs) != 1 || certs[0].Leaf.Subject.CommonName != "server" || len(certs[0].Certificate) != 2 {
				t.Fatalf("got %d certificates, want the server's with its CA's after it", len(certs))
			}
			if typ == "PEM-plain" {
				return
			}
			s.Password = "wrong-password"
			if _, err := tlsconfig.LoadKeyStore(s); err == nil {
				t.Error("a wrong password opened the store")
			}
		})
	}
}

// keytool of Java 9 and later writes PKCS12 unless told otherwise, so many
// files named .jks hold PKCS12; Java reads them, and so must Collie.
func TestJKSNamedFileHoldingPKCS12(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	server := ca.Issue("server", tlstest.Options{})
	path := filepath.Join(t.TempDir(), "keystore.jks")
	copyFile(t, server.KeyStore("PKCS12"), path)
	if _, err := tlsconfig.LoadKeyStore(tlsconfig.Store{Location: path, Password: tlstest.Password}); err != nil {
		t.Fatal(err)
	}
}

func TestPasswordPath(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	server := ca.Issue("server", tlstest.Options{})
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte(tlstest.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The file wins over the password, as in ZooKeeper.
	s := tlsconfig.Store{Location: server.KeyStore("JKS"), Password: "not-this-one", PasswordPath: pw}
	if _, err := tlsconfig.LoadKeyStore(s); err != nil {
		t.Fatal(err)
	}
}

func TestTrustStoreFormats(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	for _, typ := range []string{"PEM", "PKCS12", "JKS"} {
		t.Run(typ, func(t *testing.T) {
			certs, err := tlsconfig.LoadTrustStore(tlsconfig.Store{Location: ca.TrustStore(typ), Password: tlstest.Password})
			if err != nil {
				t.Fatal(err)
			}
			if len(certs) != 1 || certs[0].Subject.CommonName != "ca" {
				t.Fatalf("trusts %d certificates, want the CA's", len(certs))
			}
		})
	}
}

// Java trusts no certificate of a PKCS12 file without its trust attribute,
// which openssl 3.0 does not write: such a store is refused, with a hint.
func TestTrustStoreWithoutJavaTrustAttribute(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	path := filepath.Join(ca.Dir, "openssl-trust.p12")
	runTool(t, "openssl", "pkcs12", "-export", "-nokeys", "-in", ca.Cert, "-out", path, "-passout", "pass:"+tlstest.Password)
	_, err := tlsconfig.LoadTrustStore(tlsconfig.Store{Location: path, Password: tlstest.Password})
	if err == nil || !strings.Contains(err.Error(), "keytool -importcert") {
		t.Fatalf("LoadTrustStore = %v, want a refusal that says how to make the store", err)
	}
}

func TestVersions(t *testing.T) {
	tests := []struct {
		protocol, enabled string
		lo, hi            uint16
		wantErr           bool
	}{
		{"", "", tls.VersionTLS12, tls.VersionTLS12, false}, // ZooKeeper's default: TLSv1.2 alone
		{"TLSv1.3", "", tls.VersionTLS13, tls.VersionTLS13, false},
		{"TLS", "", tls.VersionTLS12, tls.VersionTLS13, false},
		{"TLSv1.2", "TLSv1.2,TLSv1.3", tls.VersionTLS12, tls.VersionTLS13, false},
		{"TLSv1.2", "TLSv1.3, TLSv1.2", tls.VersionTLS12, tls.VersionTLS13, false},
		{"TLSv1.2", "TLSv1.1,TLSv1.3", 0, 0, true}, // a gap
		{"SSLv3", "", 0, 0, true},
		{"tlsv1.2", "", 0, 0, true}, // Java's names are case-sensitive
		{"TLSv1.2", "TLSv1.4", 0, 0, true},
	}
	for _, tt := range tests {
		s := tlsconfig.Settings{Protocol: tt.protocol, EnabledProtocols: tt.enabled}
		lo, hi, err := s.Versions()
		if lo != tt.lo || hi != tt.hi || (err != nil) != tt.wantErr {
			t.Errorf("Versions(%q, %q) = %x, %x, %v; want %x, %x, error %v", tt.protocol, tt.enabled, lo, hi, err, tt.lo, tt.hi, tt.wantErr)
		}
	}
}

func TestSuites(t *testing.T) {
	ids, unknown, tls13 := tlsconfig.Settings{}.Suites()
	if len(ids) != 10 || tls13 || !slices.Equal(unknown, []string{"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384"}) {
		t.Errorf("ZooKeeper's default suites: %d known, unknown %v, TLS 1.3 %v; want 10, the two CBC_SHA384, false", len(ids), unknown, tls13)
	}
	ids, unknown, tls13 = tlsconfig.Settings{CipherSuites: "TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}.Suites()
	if !slices.Equal(ids, []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}) || len(unknown) != 0 || !tls13 {
		t.Errorf("got %v, %v, %v", ids, unknown, tls13)
	}
	// TLSv1.3 alone needs one of its suites named, or Java fails every
	// handshake.
	if err := (tlsconfig.Settings{Protocol: "TLSv1.3"}).Check(); err == nil {
		t.Error("TLSv1.3 with ZooKeeper's default suites was accepted")
	}
	if err := (tlsconfig.Settings{Protocol: "TLSv1.3", CipherSuites: "TLS_AES_256_GCM_SHA384"}).Check(); err != nil {
		t.Error(err)
	}
	if err := (tlsconfig.Settings{CipherSuites: "TLS_RSA_WITH_NULL_SHA"}).Check(); err == nil {
		t.Error("a list of no suite Go implements was accepted")
	}
}

// handshake runs a TLS handshake between a server and a client configured
// from settings, and returns the server's error and the client's.
func handshake(t *testing.T, server, client tlsconfig.Settings) (serverErr, clientErr error) {
	t.Helper()
	sc, err := server.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	cc, err := client.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cc.ServerName = "127.0.0.1"
	if len(cc.Certificates) > 0 {
		// Go's client sends only a certificate of a CA the server names;
		// this one sends its own regardless, so the server has to judge it.
		own := cc.Certificates[0]
		cc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &own, nil }
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	errc := make(chan error, 1)
	go func() {
		s := tls.Server(a, sc)
		err := s.Handshake()
		if err == nil {
			// TLS 1.3 reports a refused client certificate on the first read.
			_, err = s.Write([]byte{1})
			buf := make([]byte, 1)
			if err == nil {
				_, err = s.Read(buf)
			}
		}
		a.Close()
		errc <- err
	}()
	c := tls.Client(b, cc)
	clientErr = c.Handshake()
	if clientErr == nil {
		buf := make([]byte, 1)
		if _, clientErr = c.Read(buf); clientErr == nil {
			_, clientErr = c.Write(buf)
		}
	}
	b.Close()
	return <-errc, clientErr
}

func TestHandshakeEveryFormat(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	server := ca.Issue("server", tlstest.Options{})
	client := ca.Issue("client", tlstest.Options{})
	for _, typ := range []string{"PEM", "PKCS12", "JKS"} {
		t.Run(typ, func(t *testing.T) {
			trust := tlsconfig.Store{Location: ca.TrustStore(typ), Password: tlstest.Password}
			s := tlsconfig.Settings{KeyStore: tlsconfig.Store{Location: server.KeyStore(typ), Password: tlstest.Password}, TrustStore: trust}
			c := tlsconfig.Settings{KeyStore: tlsconfig.Store{Location: client.KeyStore(typ), Password: tlstest.Password}, TrustStore: trust}
			if serr, cerr := handshake(t, s, c); serr != nil || cerr != nil {
				t.Fatalf("server: %v; client: %v", serr, cerr)
			}
		})
	}
}

func TestClientAuth(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	other := tlstest.NewAuthority(t, "other")
	server := ca.Issue("server", tlstest.Options{})
	client := ca.Issue("client", tlstest.Options{})
	stranger := other.Issue("stranger", tlstest.Options{})
	expired := ca.Issue("expired", tlstest.Options{Expired: true})
	trust := tlsconfig.Store{Location: ca.Cert}
	keyStore := func(id *tlstest.Identity) tlsconfig.Store {
		if id == nil {
			return tlsconfig.Store{}
		}
		return tlsconfig.Store{Location: id.KeyStore("PEM-plain")}
	}
	tests := []struct {
		auth   tlsconfig.ClientAuth
		client *tlstest.Identity
		ok     bool
	}{
		{tlsconfig.NeedClientAuth, client, true},
		{tlsconfig.NeedClientAuth, nil, false},
		{tlsconfig.NeedClientAuth, stranger, false},
		{tlsconfig.NeedClientAuth, expired, false},
		{tlsconfig.WantClientAuth, nil, true},
		{tlsconfig.WantClientAuth, client, true},
		{tlsconfig.WantClientAuth, stranger, false}, // a certificate given is checked
		{tlsconfig.NoClientAuth, stranger, true},    // and one not asked for is not
	}
	for _, tt := range tests {
		name := "none"
		if tt.client != nil {
			name = tt.client.Name
		}
		t.Run(tt.auth.String()+"/"+name, func(t *testing.T) {
			s := tlsconfig.Settings{KeyStore: keyStore(server), TrustStore: trust, ClientAuth: tt.auth}
			c := tlsconfig.Settings{KeyStore: keyStore(tt.client), TrustStore: trust}
			serr, cerr := handshake(t, s, c)
			if ok := serr == nil && cerr == nil; ok != tt.ok {
				t.Fatalf("server: %v; client: %v; want success %v", serr, cerr, tt.ok)
			}
		})
	}
}

func TestClientChecksServer(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	other := tlstest.NewAuthority(t, "other")
	server := ca.Issue("server", tlstest.Options{})
	elsewhere := ca.Issue("elsewhere", tlstest.Options{SAN: "DNS:zk.example.com"})
	expired := ca.Issue("expired", tlstest.Options{Expired: true})
	serve := func(id *tlstest.Identity) tlsconfig.Settings {
		return tlsconfig.Settings{KeyStore: tlsconfig.Store{Location: id.KeyStore("PEM-plain")}, ClientAuth: tlsconfig.NoClientAuth}
	}
	trusting := func(a *tlstest.Authority) tlsconfig.Settings {
		return tlsconfig.Settings{TrustStore: tlsconfig.Store{Location: a.Cert}}
	}
	if _, err := handshake(t, serve(server), trusting(ca)); err != nil {
		t.Errorf("trusted server: %v", err)
	}
	if _, err := handshake(t, serve(server), trusting(other)); err == nil {
		t.Error("a server of another CA was accepted")
	}
	if _, err := handshake(t, serve(expired), trusting(ca)); err == nil {
		t.Error("an expired server certificate was accepted")
	}
	if _, err := handshake(t, serve(elsewhere), trusting(ca)); err == nil {
		t.Error("a certificate for another name was accepted")
	}
	lax := trusting(ca)
	lax.SkipHostnameVerification = true
	if _, err := handshake(t, serve(elsewhere), lax); err != nil {
		t.Errorf("without hostname verification: %v", err)
	}
	if _, err := handshake(t, serve(expired), lax); err == nil {
		t.Error("without hostname verification, an expired certificate was accepted")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func runTool(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
