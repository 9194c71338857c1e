package server_test

import (
	"crypto/tls"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/tlsconfig"
	"github.com/collie-io/collie/server/tree"
)

// dialTLS opens a session of the Go client over TLS with cfg.
func dialTLS(t *testing.T, addr string, cfg *tls.Config) *client.Client {
	t.Helper()
	c, err := client.Dial(t.Context(), addr, client.Config{TLS: cfg, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("TLS session at %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func whoAmI(t *testing.T, c *client.Client) []client.ClientInfo {
	t.Helper()
	infos, err := c.WhoAmI(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

// A TLS client's certificate gives it the identity x509:<subject>, the
// subject as Java's X500Principal.getName() writes it; x509 ACLs let it in
// and keep others out; the superUser subject is super; a client without a
// certificate has no x509 identity and cannot get one with addauth.
func TestX509Identities(t *testing.T) {
	pki := newTLSPKI(t)
	alice := pki.ca.Issue("alice", tlstest.Options{Subject: "/C=US/O=Example/OU=dev/CN=alice"})
	bob := pki.ca.Issue("bob", tlstest.Options{Subject: "/O=Example/CN=Bob, Jr."})
	admin := pki.ca.Issue("admin", tlstest.Options{Subject: "/O=Example/CN=admin"})
	const aliceID, bobID, adminID = "CN=alice,OU=dev,O=Example,C=US", `CN=Bob\, Jr.,O=Example`, "CN=admin,O=Example"
	srv := collietest.Start(t, collietest.WithTLS(pki.settings(tlsconfig.WantClientAuth)), collietest.WithConfig(func(c *config.Config) {
		c.X509SuperUser = adminID
	}))
	ctx := t.Context()
	ca := dialTLS(t, srv.SecureAddr(), pki.clientTLS(t, alice))
	cb := dialTLS(t, srv.SecureAddr(), pki.clientTLS(t, bob))
	cs := dialTLS(t, srv.SecureAddr(), pki.clientTLS(t, admin))
	anon := dialTLS(t, srv.SecureAddr(), pki.clientTLS(t, nil))

	ip := client.ClientInfo{AuthScheme: "ip", User: "127.0.0.1"}
	for _, tt := range []struct {
		name string
		c    *client.Client
		want []client.ClientInfo
	}{
		{"alice", ca, []client.ClientInfo{ip, {AuthScheme: "x509", User: aliceID}}},
		{"bob", cb, []client.ClientInfo{ip, {AuthScheme: "x509", User: bobID}}},
		// Super shows no user, as in ZooKeeper: it has no provider.
		{"admin", cs, []client.ClientInfo{ip, {AuthScheme: "super"}, {AuthScheme: "x509", User: adminID}}},
		{"no certificate", anon, []client.ClientInfo{ip}},
	} {
		// The order is ZooKeeper's (tree.ConnOrder), compared with
		// ZooKeeper's own in zkcompat; here the identities are.
		got := whoAmI(t, tt.c)
		slices.SortFunc(got, func(a, b client.ClientInfo) int { return strings.Compare(a.AuthScheme, b.AuthScheme) })
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: whoAmI = %v, want %v", tt.name, got, tt.want)
		}
	}

	x509ACL := func(id string) []client.ACL {
		return []client.ACL{{Perms: proto.PermAll, ID: client.ID{Scheme: "x509", ID: id}}}
	}
	if _, _, err := ca.Create(ctx, "/alice", []byte("a"), client.ModePersistent, x509ACL(aliceID)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ca.Create(ctx, "/bob", []byte("b"), client.ModePersistent, x509ACL(bobID)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, path string
		c          *client.Client
		want       error
	}{
		{"alice her node", "/alice", ca, nil},
		{"alice bob's node", "/bob", ca, client.ErrNoAuth},
		{"bob his node", "/bob", cb, nil},
		{"bob alice's node", "/alice", cb, client.ErrNoAuth},
		{"the super user", "/alice", cs, nil},
		{"no certificate", "/alice", anon, client.ErrNoAuth},
	} {
		if _, _, err := tt.c.Get(ctx, tt.path); !errors.Is(err, tt.want) && (err != nil || tt.want != nil) {
			t.Errorf("%s: get %s: %v, want %v", tt.name, tt.path, err, tt.want)
		}
	}

	// "auth" expands to the caller's x509 identity.
	auth := []client.ACL{{Perms: proto.PermRead | proto.PermAdmin, ID: client.ID{Scheme: "auth"}}}
	if _, _, err := cb.Create(ctx, "/auth", nil, client.ModePersistent, auth); err != nil {
		t.Fatal(err)
	}
	want := []client.ACL{{Perms: proto.PermRead | proto.PermAdmin, ID: client.ID{Scheme: "x509", ID: bobID}}}
	if got, _, err := cb.GetACL(ctx, "/auth"); err != nil || !slices.Equal(got, want) {
		t.Errorf("auth ACL = %v, %v; want %v", got, err, want)
	}
	// Java's X500Principal must read an x509 id.
	if _, _, err := ca.Create(ctx, "/bad", nil, client.ModePersistent, x509ACL("alice")); !errors.Is(err, client.ErrInvalidACL) {
		t.Errorf("x509:alice: %v, want InvalidACL", err)
	}

	// addauth x509 authenticates the certificate again: a client with one
	// keeps its identities; one without fails and loses its connection.
	if err := ca.AddAuth(ctx, "x509", []byte("ignored")); err != nil {
		t.Errorf("alice: addauth x509: %v", err)
	}
	if got := whoAmI(t, ca); len(got) != 2 {
		t.Errorf("alice after addauth x509: whoAmI = %v", got)
	}
	if err := anon.AddAuth(ctx, "x509", nil); !errors.Is(err, client.ErrAuthFailed) {
		t.Errorf("no certificate: addauth x509: %v, want AuthFailed", err)
	}
}

// Without a certificate asked for (clientAuth=none), and on the
// plaintext port, there is no x509 identity; x509 ACLs are valid all the
// same, as the server has the provider.
func TestX509WithoutCertificates(t *testing.T) {
	pki := newTLSPKI(t)
	srv := collietest.Start(t, collietest.WithTLS(pki.settings(tlsconfig.NoClientAuth)))
	c := dialTLS(t, srv.SecureAddr(), pki.clientTLS(t, pki.client))
	if got := whoAmI(t, c); len(got) != 1 || got[0].AuthScheme != "ip" {
		t.Errorf("clientAuth=none: whoAmI = %v, want the address alone", got)
	}
	acl := []client.ACL{{Perms: proto.PermAll, ID: client.ID{Scheme: "x509", ID: "CN=client"}}}
	if _, _, err := c.Create(t.Context(), "/x", nil, client.ModePersistent, acl); err != nil {
		t.Fatalf("create with an x509 ACL: %v", err)
	}
	if _, _, err := c.Get(t.Context(), "/x"); !errors.Is(err, client.ErrNoAuth) {
		t.Errorf("get without an x509 identity: %v, want NoAuth", err)
	}
}

// In an ensemble each write decides by the providers of the server that
// proposed it, recorded in its log entry: an x509 ACL is valid through a
// server with a TLS port and InvalidACL through one without any (server
// 3 here), and every replica ends with the same nodes and ACLs.
func TestX509Ensemble(t *testing.T) {
	pki := newTLSPKI(t)
	alice := pki.ca.Issue("alice", tlstest.Options{Subject: "/O=Example/CN=alice"})
	const aliceID = "CN=alice,O=Example"
	configured := 0 // the options run for servers 1, 2, 3 in turn
	e := collietest.StartEnsemble(t, 3, 0, collietest.WithConfig(func(c *config.Config) {
		c.SuperDigest = tree.DigestID("super:secret")
		if configured++; configured < 3 {
			collietest.WithTLS(pki.settings(tlsconfig.NeedClientAuth))(c)
		}
	}))
	servers := e.Servers()
	ctx := t.Context()
	acl := []client.ACL{{Perms: proto.PermAll, ID: client.ID{Scheme: "x509", ID: aliceID}}}

	plain := make([]*client.Client, len(servers))
	for i, s := range servers {
		c, err := client.Dial(ctx, s.Addr(), client.Config{SessionTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		plain[i] = c
	}
	// Super, through the digest, reads every ACL.
	if err := plain[2].AddAuth(ctx, "digest", []byte("super:secret")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := plain[2].Create(ctx, "/via3", nil, client.ModePersistent, acl); !errors.Is(err, client.ErrInvalidACL) {
		t.Errorf("an x509 ACL through server 3, without the provider: %v, want InvalidACL", err)
	}
	if _, _, err := plain[1].Create(ctx, "/via2", nil, client.ModePersistent, acl); err != nil {
		t.Errorf("an x509 ACL through server 2: %v", err)
	}
	ca := dialTLS(t, servers[0].SecureAddr(), pki.clientTLS(t, alice))
	if _, _, err := ca.Create(ctx, "/alice", []byte("a"), client.ModePersistent, acl); err != nil {
		t.Fatal(err)
	}
	for i, s := range servers {
		c := plain[i]
		if err := c.Sync(ctx, "/"); err != nil {
			t.Fatal(err)
		}
		if i != 2 {
			if _, _, err := c.Get(ctx, "/alice"); !errors.Is(err, client.ErrNoAuth) {
				t.Errorf("server %d: a client without the certificate reads: %v, want NoAuth", i+1, err)
			}
			if err := c.AddAuth(ctx, "digest", []byte("super:secret")); err != nil {
				t.Fatal(err)
			}
		}
		for _, path := range []string{"/alice", "/via2"} {
			if got, _, err := c.GetACL(ctx, path); err != nil || !slices.Equal(got, acl) {
				t.Errorf("server %d: ACL of %s = %v, %v; want %v", i+1, path, got, err, acl)
			}
		}
		if ok, _, err := c.Exists(ctx, "/via3"); ok || err != nil {
			t.Errorf("server %d: /via3 exists: %v, %v", i+1, ok, err)
		}
		if s.SecureAddr() == "" {
			continue
		}
		if data, _, err := dialTLS(t, s.SecureAddr(), pki.clientTLS(t, alice)).Get(ctx, "/alice"); err != nil || string(data) != "a" {
			t.Errorf("server %d: alice reads %q, %v", i+1, data, err)
		}
	}
}

// enforce.auth.schemes=x509 serves a client with a certificate and
// refuses one without, with SessionClosedRequireSASL, as ZooKeeper.
func TestX509Required(t *testing.T) {
	pki := newTLSPKI(t)
	srv := collietest.Start(t, collietest.WithTLS(pki.settings(tlsconfig.WantClientAuth)), collietest.WithConfig(func(c *config.Config) {
		c.EnforceAuthSchemes = []string{"x509"}
	}))
	ctx := t.Context()
	with := dialTLS(t, srv.SecureAddr(), pki.clientTLS(t, pki.client))
	if _, _, err := with.Create(ctx, "/required", nil, client.ModePersistent, nil); err != nil {
		t.Errorf("with a certificate: %v", err)
	}
	without := dialTLS(t, srv.SecureAddr(), pki.clientTLS(t, nil))
	if _, _, err := without.Exists(ctx, "/required"); !errors.Is(err, client.ErrSessionClosedRequireSASL) {
		t.Errorf("without a certificate: %v, want SessionClosedRequireSASL", err)
	}
}

// On a unified client port a TLS client's certificate gives the same
// identity; a plaintext client there has none.
func TestX509UnifiedPort(t *testing.T) {
	pki := newTLSPKI(t)
	srv := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
		c.ClientPortUnification = true
		c.SSL = pki.settings(tlsconfig.WantClientAuth)
	}))
	if got := whoAmI(t, dialTLS(t, srv.Addr(), pki.clientTLS(t, pki.client))); !slices.Contains(got, client.ClientInfo{AuthScheme: "x509", User: "CN=client"}) {
		t.Errorf("TLS on the unified port: whoAmI = %v, want x509:CN=client among them", got)
	}
	plain, err := client.Dial(t.Context(), srv.Addr(), client.Config{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if got := whoAmI(t, plain); len(got) != 1 || got[0].AuthScheme != "ip" {
		t.Errorf("plaintext on the unified port: whoAmI = %v, want the address alone", got)
	}
}
