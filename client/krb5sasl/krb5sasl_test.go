package krb5sasl

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-io/collie/internal/krbtest"
)

// TestServicePrincipal names the service as ZooKeeper's Java client does.
func TestServicePrincipal(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		host string
		want string
	}{
		{Config{}, "127.0.0.1", "zookeeper/localhost"}, // the address maps back to its name
		{Config{NoCanonicalize: true}, "127.0.0.1", "zookeeper/127.0.0.1"},
		{Config{ServiceName: "zk", NoCanonicalize: true}, "zk1.example", "zk/zk1.example"},
		{Config{ServerPrincipal: "zookeeper/fixed"}, "127.0.0.1", "zookeeper/fixed"},
		{Config{ServerPrincipal: "zookeeper/fixed@R"}, "127.0.0.1", "zookeeper/fixed"},
		{Config{}, "no-such-host.invalid", "zookeeper/no-such-host.invalid"},
	} {
		c := &Client{cfg: tt.cfg}
		if got := c.servicePrincipal(tt.host); got != tt.want {
			t.Errorf("%+v, host %s: %s, want %s", tt.cfg, tt.host, got, tt.want)
		}
	}
}

// TestLogins logs in from a keytab and from the credential cache kinit
// wrote, and gets a ticket for the service either way; a keytab whose
// keys the KDC has replaced does not log in.
func TestLogins(t *testing.T) {
	kdc := krbtest.Start(t)
	kdc.AddPrincipal(t, "zookeeper/localhost")
	kt := kdc.Keytab(t, "bob")
	for name, cfg := range map[string]Config{
		"keytab":           {Keytab: kt, Principal: "bob"},
		"keytab and realm": {Keytab: kt, Principal: "bob@" + krbtest.Realm},
		"credential cache": {CCache: "FILE:" + kdc.Kinit(t, "bob", kt)},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.Krb5Conf, cfg.NoCanonicalize = kdc.Krb5Conf, true
			cl, err := NewClient(cfg)
			if err != nil {
				t.Fatalf("%v\nKDC log:\n%s", err, kdc.Log())
			}
			defer cl.Close()
			m := cl.Mechanism()
			token, err := m.Start("localhost")
			if err != nil || len(token) == 0 || m.Complete() {
				t.Fatalf("Start: %d bytes, %v, complete %v", len(token), err, m.Complete())
			}
			if m.ServicePrincipal() != "zookeeper/localhost" || m.Name() != "GSSAPI" {
				t.Errorf("%s to %s", m.Name(), m.ServicePrincipal())
			}
			if _, err := m.Next([]byte("not an AP-REP")); err == nil {
				t.Error("a garbage answer accepted")
			}
		})
	}
	ccache := kdc.Kinit(t, "bob", kt)
	kdc.Keytab(t, "bob")
	for _, tt := range []struct {
		name string
		cfg  Config
		want string // in the error
	}{
		{"a stale keytab", Config{Keytab: kt, Principal: "bob"}, "login of bob@" + krbtest.Realm},
		{"a principal not in the keytab", Config{Keytab: kt, Principal: "alice"}, "holds no key of alice@" + krbtest.Realm},
		{"a keytab that is no file", Config{Keytab: filepath.Join(t.TempDir(), "none"), Principal: "bob"}, "keytab "},
		{"the cache of another principal", Config{CCache: ccache, Principal: "alice"}, "is bob@" + krbtest.Realm + "'s, not alice@" + krbtest.Realm + "'s"},
		{"no cache", Config{CCache: "FILE:" + filepath.Join(t.TempDir(), "none")}, "no ticket cache"},
		{"a kernel keyring", Config{CCache: "KEYRING:persistent:0"}, "only FILE caches"},
	} {
		tt.cfg.Krb5Conf = kdc.Krb5Conf
		if cl, err := NewClient(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error with %q", tt.name, err, tt.want)
			if cl != nil {
				cl.Close()
			}
		}
	}
	t.Setenv("KRB5CCNAME", "FILE:"+ccache)
	cl, err := NewClient(Config{Krb5Conf: kdc.Krb5Conf, Principal: "bob"})
	if err != nil {
		t.Fatalf("the cache KRB5CCNAME names: %v", err)
	}
	cl.Close()
}
