package client

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/tlsconfig"
)

// tlsServers runs f against a Collie and a ZooKeeper 3.8 server with a
// secure client port from the same PKCS12 stores, which ask for client
// certificates; addr is that port's address.
func tlsServers(t *testing.T, f func(t *testing.T, addr string, ca *tlstest.Authority)) {
	ca := tlstest.NewAuthority(t, "ca")
	server := ca.Issue("server", tlstest.Options{})
	settings := tlsconfig.Settings{
		KeyStore:   tlsconfig.Store{Location: server.KeyStore("PKCS12"), Password: tlstest.Password},
		TrustStore: tlsconfig.Store{Location: ca.TrustStore("PKCS12"), Password: tlstest.Password},
	}
	t.Run("collie", func(t *testing.T) {
		srv := collietest.Start(t, collietest.WithTLS(settings), collietest.WithConfig(func(c *config.Config) {
			c.MaxSessionTimeout = 20 * time.Second
		}))
		f(t, srv.SecureAddr(), ca)
	})
	t.Run("zookeeper", func(t *testing.T) {
		port := collietest.FreePort(t)
		zkref.Start(t,
			zkref.WithConfig("serverCnxnFactory", "org.apache.zookeeper.server.NettyServerCnxnFactory"),
			zkref.WithConfig("secureClientPort", strconv.Itoa(port)),
			zkref.WithConfig("secureClientPortAddress", "127.0.0.1"),
			zkref.WithConfig("ssl.keyStore.location", settings.KeyStore.Location),
			zkref.WithConfig("ssl.keyStore.password", tlstest.Password),
			zkref.WithConfig("ssl.trustStore.location", settings.TrustStore.Location),
			zkref.WithConfig("ssl.trustStore.password", tlstest.Password))
		f(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), ca)
	})
}

func TestTLS(t *testing.T) {
	tlsServers(t, func(t *testing.T, addr string, ca *tlstest.Authority) {
		id := ca.Issue("client", tlstest.Options{})
		cfg, err := tlsconfig.Settings{
			KeyStore:   tlsconfig.Store{Location: id.KeyStore("JKS"), Password: tlstest.Password},
			TrustStore: tlsconfig.Store{Location: ca.TrustStore("JKS"), Password: tlstest.Password},
		}.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
		defer cancel()
		c, err := Dial(ctx, addr, Config{TLS: cfg, SessionTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, _, err := c.Create(ctx, "/tls", []byte("v"), ModePersistent, nil); err != nil {
			t.Fatal(err)
		}
		if data, _, err := c.Get(ctx, "/tls"); err != nil || string(data) != "v" {
			t.Fatalf("get: %q, %v", data, err)
		}

		// Without a certificate, or trusting another CA, there is no
		// session.
		for name, bad := range map[string]*tls.Config{
			"no certificate": {RootCAs: cfg.RootCAs},
			"another CA":     {Certificates: cfg.Certificates, RootCAs: tlsconfig.Pool(nil)},
		} {
			short, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			_, err := Dial(short, addr, Config{TLS: bad})
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: Dial = %v, want no session", name, err)
			}
		}
	})
}
