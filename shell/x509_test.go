package shell

import (
	"strings"
	"testing"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/server/tlsconfig"
)

// Over TLS with a client certificate, whoami shows the x509 identity, and
// setAcl and getAcl write and print x509 ids with commas as zkCli.sh
// prints them (jute's %2C for a comma).
func TestX509Identity(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	server := ca.Issue("server", tlstest.Options{})
	alice := ca.Issue("alice", tlstest.Options{Subject: "/O=Example/CN=alice"})
	srv := collietest.Start(t, collietest.WithTLS(tlsconfig.Settings{
		KeyStore:   tlsconfig.Store{Location: server.KeyStore("PEM-plain")},
		TrustStore: tlsconfig.Store{Location: ca.Cert},
		ClientAuth: tlsconfig.NeedClientAuth,
	}))
	clientTLS, err := tlsconfig.Settings{
		KeyStore:   tlsconfig.Store{Location: alice.KeyStore("PEM-plain")},
		TrustStore: tlsconfig.Store{Location: ca.Cert},
	}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	status, stdout, stderr := execCommand(t, Config{Server: srv.SecureAddr(), TLS: clientTLS}, "whoami")
	if status != 0 || !strings.Contains(stdout, "\nx509: CN=alice,O=Example\n") {
		t.Fatalf("whoami: status %d\n%s%s", status, stdout, stderr)
	}

	sh := startShell(t, Config{Server: srv.SecureAddr(), TLS: clientTLS})
	sh.send("create /n", "setAcl /n x509:CN=alice,O=Example:cdrwa,world:anyone:r", "getAcl /n")
	want := "'x509,'CN=alice%2CO=Example\n: cdrwa\n'world,'anyone\n: r\n"
	sh.out.waitFor(t, "the x509 ACL", func(text string) bool { return strings.Contains(text, want) })
	if sh.end() != 0 {
		t.Errorf("shell failed:\n%s", sh.out)
	}
}
