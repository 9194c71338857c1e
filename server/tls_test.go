package server_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/tlsconfig"
)

// tlsPKI is a CA with a server identity and a client identity.
type tlsPKI struct {
	ca             *tlstest.Authority
	server, client *tlstest.Identity
}

func newTLSPKI(t *testing.T) tlsPKI {
	ca := tlstest.NewAuthority(t, "ca")
	return tlsPKI{ca: ca, server: ca.Issue("server", tlstest.Options{}), client: ca.Issue("client", tlstest.Options{})}
}

// settings are the server's TLS settings with its stores as PEM files.
func (p tlsPKI) settings(auth tlsconfig.ClientAuth) tlsconfig.Settings {
	return tlsconfig.Settings{
		KeyStore:   tlsconfig.Store{Location: p.server.KeyStore("PEM-plain")},
		TrustStore: tlsconfig.Store{Location: p.ca.Cert},
		ClientAuth: auth,
	}
}

// clientTLS is a client configuration trusting the CA, with id's
// certificate when id is not nil.
func (p tlsPKI) clientTLS(t *testing.T, id *tlstest.Identity) *tls.Config {
	t.Helper()
	s := tlsconfig.Settings{TrustStore: tlsconfig.Store{Location: p.ca.Cert}}
	if id != nil {
		s.KeyStore = tlsconfig.Store{Location: id.KeyStore("PEM-plain")}
	}
	c, err := s.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// connectTLS connects go-zookeeper over TLS and waits for its session.
func connectTLS(t *testing.T, addr string, cfg *tls.Config) *zk.Conn {
	t.Helper()
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		d := &net.Dialer{Timeout: timeout}
		return tls.DialWithDialer(d, network, address, cfg)
	}
	c, events, err := zk.Connect([]string{addr}, 2*time.Second, zk.WithDialer(dialer), zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitState(t, events, zk.StateHasSession)
	return c
}

// tlsRefused reports why a TLS client with cfg could not use the server at
// addr, or nil when it could: a refused client certificate shows only once
// the client reads (TLS 1.3 sends it after the client's handshake ends).
func tlsRefused(addr string, cfg *tls.Config) error {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "ruok"); err != nil {
		return err
	}
	b, err := io.ReadAll(c)
	if string(b) == "imok" {
		return nil
	}
	if err == nil {
		err = errors.New("closed without an answer")
	}
	return err
}

func TestSecureClientPort(t *testing.T) {
	pki := newTLSPKI(t)
	srv := collietest.Start(t, collietest.WithTLS(pki.settings(tlsconfig.NeedClientAuth)))
	c := connectTLS(t, srv.SecureAddr(), pki.clientTLS(t, pki.client))
	if _, err := c.Create("/tls", []byte("secret data"), 0, acl); err != nil {
		t.Fatal(err)
	}
	// The plaintext port serves the same tree.
	plain, _ := connect(t, srv.Addr())
	if data, _, err := plain.Get("/tls"); err != nil || string(data) != "secret data" {
		t.Fatalf("plaintext get: %q, %v", data, err)
	}
	conf := fourLetter(t, srv.Addr(), "conf")
	if !strings.Contains(conf, "secureClientPort="+strings.Split(srv.SecureAddr(), ":")[1]+"\n") {
		t.Errorf("conf does not show the secure port:\n%s", conf)
	}
}

func TestSecureClientPortAlone(t *testing.T) {
	pki := newTLSPKI(t)
	srv := collietest.Start(t, collietest.WithTLS(pki.settings(tlsconfig.NoClientAuth)), collietest.WithConfig(func(c *config.Config) {
		c.ClientPort, c.ClientPortAddress = 0, ""
	}))
	c := connectTLS(t, srv.SecureAddr(), pki.clientTLS(t, nil))
	if _, err := c.Create("/alone", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	// Four-letter words work over TLS too, as in ZooKeeper.
	if err := tlsRefused(srv.SecureAddr(), pki.clientTLS(t, nil)); err != nil {
		t.Fatalf("ruok over TLS: %v", err)
	}
}

func TestSecureClientPortClientAuth(t *testing.T) {
	pki := newTLSPKI(t)
	other := tlstest.NewAuthority(t, "other")
	stranger := other.Issue("stranger", tlstest.Options{})
	expired := pki.ca.Issue("expired", tlstest.Options{Expired: true})
	tests := []struct {
		auth   tlsconfig.ClientAuth
		client *tlstest.Identity
		ok     bool
	}{
		{tlsconfig.NeedClientAuth, pki.client, true},
		{tlsconfig.NeedClientAuth, nil, false},
		{tlsconfig.NeedClientAuth, stranger, false},
		{tlsconfig.NeedClientAuth, expired, false},
		{tlsconfig.WantClientAuth, nil, true},
		{tlsconfig.WantClientAuth, pki.client, true},
		{tlsconfig.WantClientAuth, expired, false},
		{tlsconfig.NoClientAuth, nil, true},
	}
	servers := map[tlsconfig.ClientAuth]*collietest.Server{}
	for _, tt := range tests {
		srv := servers[tt.auth]
		if srv == nil {
			srv = collietest.Start(t, collietest.WithTLS(pki.settings(tt.auth)))
			servers[tt.auth] = srv
		}
		cfg := pki.clientTLS(t, tt.client)
		if tt.client != nil {
			// Sent whatever CA the server names, so the server judges it.
			own := cfg.Certificates[0]
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &own, nil }
		}
		name := "no certificate"
		if tt.client != nil {
			name = tt.client.Name
		}
		if err := tlsRefused(srv.SecureAddr(), cfg); (err == nil) != tt.ok {
			t.Errorf("clientAuth=%v, %s: error %v, want success %v", tt.auth, name, err, tt.ok)
		}
	}
	// A client that does not trust the server's CA gives up.
	distrust := &tls.Config{RootCAs: tlsconfig.Pool(nil)}
	if err := tlsRefused(servers[tlsconfig.NoClientAuth].SecureAddr(), distrust); err == nil {
		t.Error("a client trusting another CA accepted the server")
	}
}

// A plaintext client, garbage or a client that never finishes its
// handshake costs its own connection only; the server keeps serving TLS
// clients.
func TestSecureClientPortBadClients(t *testing.T) {
	pki := newTLSPKI(t)
	srv := collietest.Start(t, collietest.WithTLS(pki.settings(tlsconfig.NoClientAuth)))
	good := connectTLS(t, srv.SecureAddr(), pki.clientTLS(t, nil))

	// go-zookeeper in plaintext: its connect request is not a TLS hello.
	plain, events, err := zk.Connect([]string{srv.SecureAddr()}, 2*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	select {
	case ev := <-events:
		for ev.State != zk.StateHasSession && ev.State != zk.StateDisconnected {
			ev = <-events
		}
		if ev.State == zk.StateHasSession {
			t.Error("a plaintext client got a session on the TLS port")
		}
	case <-time.After(10 * time.Second):
		t.Error("plaintext client: no state change within 10s")
	}

	for _, garbage := range []string{"ruok", "\x16\x03\x01\x00\x05hello", strings.Repeat("\xff", 64)} {
		nc, err := net.Dial("tcp", srv.SecureAddr())
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(20 * time.Second))
		io.WriteString(nc, garbage)
		if b, err := io.ReadAll(nc); len(b) > 0 && strings.Contains(string(b), "imok") {
			t.Errorf("%q: answered in plaintext: %q, %v", garbage, b, err)
		}
		nc.Close()
	}

	// A connection that sends nothing is closed once the handshake's time
	// is up, which the session timeout bounds (2s here).
	idle, err := net.Dial("tcp", srv.SecureAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	idle.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("idle connection: %v, want it closed by the server", err)
	}

	if _, err := good.Create("/still-serving", nil, 0, acl); err != nil {
		t.Fatalf("the TLS client after the bad ones: %v", err)
	}
	if mntr := fourLetter(t, srv.Addr(), "mntr"); strings.Contains(mntr, "zk_unsuccessful_handshake\t0\n") || !strings.Contains(mntr, "zk_unsuccessful_handshake\t") {
		t.Errorf("mntr does not count the failed handshakes:\n%s", mntr)
	}
}

// With client.portUnification, one port serves TLS and plaintext clients,
// each connection told apart by its first byte.
func TestPortUnification(t *testing.T) {
	pki := newTLSPKI(t)
	srv := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
		c.ClientPortUnification = true
		c.SSL = pki.settings(tlsconfig.NeedClientAuth)
	}))
	secure := connectTLS(t, srv.Addr(), pki.clientTLS(t, pki.client))
	plain, _ := connect(t, srv.Addr())
	if _, err := secure.Create("/unified", []byte("over TLS"), 0, acl); err != nil {
		t.Fatal(err)
	}
	if data, _, err := plain.Get("/unified"); err != nil || string(data) != "over TLS" {
		t.Fatalf("plaintext get: %q, %v", data, err)
	}
	if got := fourLetter(t, srv.Addr(), "ruok"); got != "imok" {
		t.Errorf("plaintext ruok: %q", got)
	}
	if err := tlsRefused(srv.Addr(), pki.clientTLS(t, pki.client)); err != nil {
		t.Errorf("ruok over TLS: %v", err)
	}
	// The TLS side keeps its settings: a client without a certificate is
	// refused, as is a handshake that never finishes.
	if err := tlsRefused(srv.Addr(), pki.clientTLS(t, nil)); err == nil {
		t.Error("a TLS client without a certificate was served")
	}
	stalled, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	stalled.SetDeadline(time.Now().Add(30 * time.Second))
	stalled.Write([]byte{0x16, 0x03})
	if _, err := stalled.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("stalled handshake: %v, want it closed by the server", err)
	}
	if _, err := plain.Set("/unified", []byte("plain"), -1); err != nil {
		t.Fatalf("plaintext client after the bad ones: %v", err)
	}
	if _, err := secure.Set("/unified", []byte("tls"), -1); err != nil {
		t.Fatalf("TLS client after the bad ones: %v", err)
	}
}

// With client.certReload, a key store replaced under a running server is
// used for new connections; connections made before keep working.
func TestCertReload(t *testing.T) {
	pki := newTLSPKI(t)
	renewed := pki.ca.Issue("renewed", tlstest.Options{})
	keyStore := filepath.Join(t.TempDir(), "keystore.p12")
	copyFile(t, pki.server.KeyStore("PKCS12"), keyStore)
	settings := pki.settings(tlsconfig.NoClientAuth)
	settings.KeyStore = tlsconfig.Store{Location: keyStore, Password: tlstest.Password}
	srv := collietest.Start(t, collietest.WithTLS(settings), collietest.WithConfig(func(c *config.Config) { c.ClientCertReload = true }))
	before := connectTLS(t, srv.SecureAddr(), pki.clientTLS(t, nil))
	if got := servedName(t, srv.SecureAddr()); got != "server" {
		t.Fatalf("serves %q, want server", got)
	}

	tmp := keyStore + ".new"
	copyFile(t, renewed.KeyStore("PKCS12"), tmp)
	if err := os.Rename(tmp, keyStore); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for servedName(t, srv.SecureAddr()) != "renewed" {
		if time.Now().After(deadline) {
			t.Fatal("the renewed certificate is not served 30s after it replaced the old one")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := before.Create("/after-reload", nil, 0, acl); err != nil {
		t.Fatalf("a session connected before the reload: %v", err)
	}
	after := connectTLS(t, srv.SecureAddr(), pki.clientTLS(t, nil))
	if _, _, err := after.Get("/after-reload"); err != nil {
		t.Fatal(err)
	}
}

// servedName returns the CN of the certificate the TLS port at addr
// presents.
func servedName(t *testing.T, addr string) string {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
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
