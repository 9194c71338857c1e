package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/server/tlsconfig"
)

// collie cli and collie bench reach a secure client port that asks for
// client certificates, with PEM files or with ZooKeeper's stores.
func TestCLIAndBenchOverTLS(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	server := ca.Issue("server", tlstest.Options{})
	client := ca.Issue("client", tlstest.Options{})
	srv := collietest.Start(t, collietest.WithTLS(tlsconfig.Settings{
		KeyStore:   tlsconfig.Store{Location: server.KeyStore("JKS"), Password: tlstest.Password},
		TrustStore: tlsconfig.Store{Location: ca.TrustStore("JKS"), Password: tlstest.Password},
	}))
	noInput, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer noInput.Close()
	cli := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		status := runCLI(args, noInput, &stdout, &stderr)
		return status, stdout.String(), stderr.String()
	}
	pem := []string{"-server", srv.SecureAddr(), "-tls-cert", client.Cert, "-tls-key", client.Key, "-tls-ca", ca.Cert}
	if status, _, stderr := cli(append(pem, "create", "/tls", "data")...); status != 0 || stderr != "Created /tls\n" {
		t.Fatalf("create with PEM files: status %d, stderr %q", status, stderr)
	}
	stores := []string{"-server", srv.SecureAddr(), "-timeout", "5000",
		"-tls-keystore", client.KeyStore("PKCS12"), "-tls-keystore-password", tlstest.Password,
		"-tls-truststore", ca.TrustStore("JKS"), "-tls-truststore-password", tlstest.Password}
	if status, stdout, stderr := cli(append(stores, "get", "/tls")...); status != 0 || stdout != "data\n" {
		t.Fatalf("get with stores: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	// The certificate is the session's x509 identity.
	if status, stdout, stderr := cli(append(pem, "whoami")...); status != 0 || !strings.Contains(stdout, "\nx509: CN=client\n") {
		t.Errorf("whoami: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	// Without a client certificate the server refuses the session.
	if status, _, _ := cli("-server", srv.SecureAddr(), "-timeout", "2000", "-tls-ca", ca.Cert, "ls", "/"); status == 0 {
		t.Error("a client without a certificate was served")
	}
	if status, _, stderr := cli("-server", srv.SecureAddr(), "-tls-cert", client.Cert, "ls", "/"); status != 2 || !strings.Contains(stderr, "-tls-key") {
		t.Errorf("-tls-cert alone: status %d, stderr %q", status, stderr)
	}

	var stdout, stderr bytes.Buffer
	status := runBench(append(pem, "-workload", "set", "-clients", "2", "-duration", "200ms", "-warmup", "0", "-quiet"), &stdout, &stderr)
	if status != 0 || !strings.Contains(stdout.String(), "2 clients") {
		t.Errorf("bench over TLS: status %d, stdout:\n%s\nstderr:\n%s", status, stdout.String(), stderr.String())
	}
}
