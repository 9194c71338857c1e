package tlsconfig_test

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/server/tlsconfig"
)

// watching starts r.Watch for the test and returns a channel that receives
// after each reload.
func watching(t *testing.T, r *tlsconfig.Reloader) <-chan struct{} {
	t.Helper()
	reloaded := make(chan struct{}, 16)
	tlsconfig.SetReloadedHook(t.Cleanup, func() { reloaded <- struct{}{} })
	ctx := t.Context()
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx) }()
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	return reloaded
}

func awaitReload(t *testing.T, reloaded <-chan struct{}) {
	t.Helper()
	select {
	case <-reloaded:
	case <-time.After(30 * time.Second):
		t.Fatal("no reload within 30s")
	}
}

// servedName returns the CN of the certificate a server configured by r
// presents to a new connection.
func servedName(t *testing.T, r *tlsconfig.Reloader) string {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		s := tls.Server(a, r.Config())
		s.Handshake()
		a.Close()
	}()
	c := tls.Client(b, &tls.Config{InsecureSkipVerify: true})
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// replace puts a copy of from at path as a deployment tool would: written
// beside it, then renamed over it.
func replace(t *testing.T, from, path string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".new-"+filepath.Base(path))
	copyFile(t, from, tmp)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestReloadKeyStore(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	first := ca.Issue("first", tlstest.Options{})
	second := ca.Issue("second", tlstest.Options{})
	dir := t.TempDir()
	path := filepath.Join(dir, "keystore.jks")
	copyFile(t, first.KeyStore("JKS"), path)
	r, err := tlsconfig.NewReloader(tlsconfig.Settings{
		KeyStore:   tlsconfig.Store{Location: path, Password: tlstest.Password},
		ClientAuth: tlsconfig.NoClientAuth,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := r.Config()
	reloaded := watching(t, r)
	if got := servedName(t, r); got != "first" {
		t.Fatalf("serves %q, want first", got)
	}

	replace(t, second.KeyStore("JKS"), path)
	awaitReload(t, reloaded)
	if got := servedName(t, r); got != "second" {
		t.Fatalf("after a rename onto the store: serves %q, want second", got)
	}
	// A configuration taken before the change gives the new material too:
	// it asks for the current one at each handshake.
	if cfg, _ := old.GetConfigForClient(nil); cfg.Certificates[0].Leaf.Subject.CommonName != "second" {
		t.Error("a configuration taken earlier still hands out the first certificate")
	}

	// A damaged file keeps the previous material; the next good write is
	// read.
	if err := os.WriteFile(path, []byte("not a key store"), 0o600); err != nil {
		t.Fatal(err)
	}
	copyFile(t, first.KeyStore("JKS"), path)
	awaitReload(t, reloaded)
	if got := servedName(t, r); got != "first" {
		t.Fatalf("after writing in place: serves %q, want first", got)
	}
}

func TestReloadKeepsPreviousOnDamage(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	first := ca.Issue("first", tlstest.Options{})
	path := filepath.Join(t.TempDir(), "keystore.pem")
	copyFile(t, first.KeyStore("PEM-plain"), path)
	r, err := tlsconfig.NewReloader(tlsconfig.Settings{KeyStore: tlsconfig.Store{Location: path}, ClientAuth: tlsconfig.NoClientAuth}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("-----BEGIN GARBAGE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(); err == nil {
		t.Fatal("a damaged store was loaded")
	}
	if got := servedName(t, r); got != "first" {
		t.Fatalf("serves %q after a failed reload, want first", got)
	}
}

func TestReloadTrustStore(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	next := tlstest.NewAuthority(t, "next")
	server := ca.Issue("server", tlstest.Options{})
	client := next.Issue("client", tlstest.Options{})
	dir := t.TempDir()
	trust := filepath.Join(dir, "truststore.p12")
	copyFile(t, ca.TrustStore("PKCS12"), trust)
	r, err := tlsconfig.NewReloader(tlsconfig.Settings{
		KeyStore:   tlsconfig.Store{Location: server.KeyStore("PKCS12"), Password: tlstest.Password},
		TrustStore: tlsconfig.Store{Location: trust, Password: tlstest.Password},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reloaded := watching(t, r)
	clientCert, err := tlsconfig.LoadKeyStore(tlsconfig.Store{Location: client.KeyStore("PEM-plain")})
	if err != nil {
		t.Fatal(err)
	}
	accepted := func() bool {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		errc := make(chan error, 1)
		go func() {
			s := tls.Server(a, r.Config())
			errc <- s.Handshake()
			a.Close()
		}()
		c := tls.Client(b, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &clientCert[0], nil }})
		c.Handshake()
		b.Close()
		return <-errc == nil
	}
	if accepted() {
		t.Fatal("a client of the other CA was accepted before the trust store changed")
	}
	replace(t, next.TrustStore("PKCS12"), trust)
	awaitReload(t, reloaded)
	if !accepted() {
		t.Fatal("a client of the new CA was refused after the trust store changed")
	}
}
