package admin_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/logbuf"
	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/server"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/tlsconfig"
)

// httpsServer is a server whose admin port serves HTTPS, and what it logged.
type httpsServer struct {
	addr string
	logs *logbuf.Buffer
}

// adminPKI is a CA, the server's identity from it, a client it issued and
// one another CA issued.
type adminPKI struct {
	ca, otherCA       *tlstest.Authority
	server            *tlstest.Identity
	client, stranger  *tlstest.Identity
	keyStore, trusted string // the server's stores, password-protected PEM
}

func newAdminPKI(t *testing.T) *adminPKI {
	ca := tlstest.NewAuthority(t, "admin-ca")
	other := tlstest.NewAuthority(t, "other-ca")
	p := &adminPKI{ca: ca, otherCA: other, server: ca.Issue("server", tlstest.Options{}),
		client: ca.Issue("client", tlstest.Options{}), stranger: other.Issue("stranger", tlstest.Options{})}
	p.keyStore = p.server.KeyStore("PEM")
	p.trusted = ca.TrustStore("PEM")
	return p
}

// startHTTPS starts a standalone server whose admin port serves with the
// ssl.quorum.* stores of pki, configured further by adjust, logging
// everything into its httpsServer's logs.
func startHTTPS(t *testing.T, pki *adminPKI, adjust func(*config.Config)) *httpsServer {
	t.Helper()
	cfg := collietest.Config(t)
	collietest.WithAdminServer()(&cfg)
	cfg.AdminServerPort = collietest.FreePort(t)
	cfg.QuorumSSL = tlsconfig.Settings{
		KeyStore:   tlsconfig.Store{Location: pki.keyStore, Password: tlstest.Password},
		TrustStore: tlsconfig.Store{Location: pki.trusted, Password: tlstest.Password},
	}
	adjust(&cfg)
	logs := &logbuf.Buffer{}
	srv, err := server.New(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("server stopped before serving: %v\n%s", err, logs)
	case <-time.After(30 * time.Second):
		t.Fatal("server not serving after 30s")
	}
	return &httpsServer{addr: srv.AdminAddr().String(), logs: logs}
}

// httpsClient trusts ca and shows the certificate of id, when not nil.
func httpsClient(t *testing.T, ca *tlstest.Authority, id *tlstest.Identity) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(ca.Cert)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	c := &tls.Config{RootCAs: roots}
	if id != nil {
		cert, err := tls.LoadX509KeyPair(id.Cert, id.Key)
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	tr := &http.Transport{TLSClientConfig: c}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// get fetches url and returns the answer's status, HSTS header and body.
func get(hc *http.Client, url string) (status int, sts, body string, err error) {
	resp, err := hc.Get(url)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Strict-Transport-Security"), string(b), err
}

// ruok checks that url answers ruok as a working server does.
func ruok(t *testing.T, hc *http.Client, url string) (sts string) {
	t.Helper()
	status, sts, body, err := get(hc, url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	var m map[string]any
	if status != http.StatusOK || json.Unmarshal([]byte(body), &m) != nil || m["command"] != "ruok" || m["error"] != nil {
		t.Fatalf("GET %s: %d %q", url, status, body)
	}
	return sts
}

const wantSTS = "max-age=86400; includeSubDomains"

func TestForceHTTPS(t *testing.T) {
	pki := newAdminPKI(t)
	srv := startHTTPS(t, pki, func(c *config.Config) { c.AdminForceHTTPS = true })
	if sts := ruok(t, httpsClient(t, pki.ca, nil), "https://"+srv.addr+"/commands/ruok"); sts != wantSTS {
		t.Errorf("Strict-Transport-Security %q, want %q as ZooKeeper's Jetty sends", sts, wantSTS)
	}
	status, _, body, err := get(httpClient(t), "http://"+srv.addr+"/commands/ruok")
	if err != nil || status != http.StatusBadRequest || strings.Contains(body, "ruok") {
		t.Errorf("plain HTTP on a forceHttps port: %d %q, %v; want 400", status, body, err)
	}
	// A client that does not trust the server's CA does not get through.
	if _, _, _, err := get(httpsClient(t, pki.otherCA, nil), "https://"+srv.addr+"/commands/ruok"); err == nil {
		t.Error("a client trusting another CA accepted the server's certificate")
	}
}

func TestPortUnificationServesHTTPAndHTTPS(t *testing.T) {
	pki := newAdminPKI(t)
	srv := startHTTPS(t, pki, func(c *config.Config) { c.AdminPortUnification = true })
	hs := httpsClient(t, pki.ca, nil)
	hc := httpClient(t)
	// Twice each, alternating, so kept-alive connections of both kinds
	// serve again.
	for range 2 {
		if sts := ruok(t, hs, "https://"+srv.addr+"/commands/ruok"); sts != wantSTS {
			t.Errorf("HTTPS: Strict-Transport-Security %q, want %q", sts, wantSTS)
		}
		if sts := ruok(t, hc, "http://"+srv.addr+"/commands/ruok"); sts != "" {
			t.Errorf("HTTP: Strict-Transport-Security %q, want none", sts)
		}
	}
	// A handshake that stalls holds its own connection only (and must not
	// hold up the stop at cleanup); a garbled one is closed.
	stalled, err := net.Dial("tcp", srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	stalled.Write([]byte{0x16, 0x03})
	garbled, err := net.Dial("tcp", srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer garbled.Close()
	garbled.SetDeadline(time.Now().Add(10 * time.Second))
	garbled.Write([]byte("\x16\x03\x01\x00\x05garbage\r\n\r\n"))
	if n, err := io.Copy(io.Discard, garbled); err != nil {
		t.Errorf("a garbled handshake: the connection stayed open (%d bytes read): %v", n, err)
	}
	ruok(t, httpsClient(t, pki.ca, nil), "https://"+srv.addr+"/commands/ruok")
	ruok(t, httpClient(t), "http://"+srv.addr+"/commands/ruok")
}

func TestNeedClientAuth(t *testing.T) {
	pki := newAdminPKI(t)
	for _, mode := range []struct {
		name   string
		adjust func(*config.Config)
	}{
		{"forceHttps", func(c *config.Config) { c.AdminForceHTTPS, c.AdminNeedClientAuth = true, true }},
		{"portUnification", func(c *config.Config) { c.AdminPortUnification, c.AdminNeedClientAuth = true, true }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			srv := startHTTPS(t, pki, mode.adjust)
			url := "https://" + srv.addr + "/commands/ruok"
			for _, refused := range []struct {
				name string
				id   *tlstest.Identity
			}{{"without a certificate", nil}, {"with a certificate of another CA", pki.stranger}} {
				status, _, body, err := get(httpsClient(t, pki.ca, refused.id), url)
				if err == nil {
					t.Errorf("a client %s was served: %d %q", refused.name, status, body)
				} else if !strings.Contains(err.Error(), "certificate") {
					t.Errorf("a client %s: %v, want a TLS alert about its certificate", refused.name, err)
				}
			}
			ruok(t, httpsClient(t, pki.ca, pki.client), url)
			if strings.Contains(srv.logs.String(), tlstest.Password) {
				t.Errorf("the key store's password is in the log:\n%s", srv.logs)
			}
		})
	}
}

// TestHTTPSKeepsPasswordsOut reads every admin command and the metrics over
// HTTPS: none shows the stores' password, and neither does the log.
func TestHTTPSKeepsPasswordsOut(t *testing.T) {
	pki := newAdminPKI(t)
	srv := startHTTPS(t, pki, func(c *config.Config) { c.AdminForceHTTPS = true })
	hs := httpsClient(t, pki.ca, nil)
	_, _, list, err := get(hs, "https://"+srv.addr+"/commands")
	if err != nil {
		t.Fatal(err)
	}
	urls := []string{"/metrics"}
	for _, name := range linkedCommands(list) {
		urls = append(urls, "/commands/"+name)
	}
	if len(urls) < 10 {
		t.Fatalf("only %d commands listed:\n%s", len(urls)-1, list)
	}
	for _, u := range urls {
		status, _, body, err := get(hs, "https://"+srv.addr+u)
		if err != nil || status != http.StatusOK {
			t.Errorf("GET %s: %d, %v", u, status, err)
		}
		if strings.Contains(body, tlstest.Password) {
			t.Errorf("GET %s shows the stores' password:\n%s", u, body)
		}
	}
	if logs := srv.logs.String(); strings.Contains(logs, tlstest.Password) {
		t.Errorf("the stores' password is in the log:\n%s", logs)
	} else if !strings.Contains(logs, "HTTPS on the admin port") {
		t.Errorf("the log does not say the admin port serves HTTPS:\n%s", logs)
	}
}

// A key store that cannot be read stops the start, rather than leaving the
// admin port in plain HTTP or, as ZooKeeper does, without an admin server.
func TestHTTPSWithUnreadableKeyStoreRefusesToStart(t *testing.T) {
	pki := newAdminPKI(t)
	cfg := collietest.Config(t)
	collietest.WithAdminServer()(&cfg)
	cfg.AdminServerPort = collietest.FreePort(t)
	cfg.AdminForceHTTPS = true
	cfg.QuorumSSL = tlsconfig.Settings{
		KeyStore:   tlsconfig.Store{Location: pki.keyStore, Password: "not-" + tlstest.Password},
		TrustStore: tlsconfig.Store{Location: pki.trusted},
	}
	srv, err := runFailing(t, cfg)
	if err == nil || !strings.Contains(err.Error(), "HTTPS on the admin port") {
		t.Errorf("Run with an unreadable key store: %v, want an error about the admin port's HTTPS", err)
	} else if strings.Contains(err.Error(), tlstest.Password) {
		t.Errorf("the error shows the password: %v", err)
	}
	if srv.Addr() != nil || srv.AdminAddr() != nil {
		t.Errorf("ports opened although the admin server could not start: client %v, admin %v", srv.Addr(), srv.AdminAddr())
	}
}
