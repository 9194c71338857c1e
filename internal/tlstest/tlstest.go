// Package tlstest makes certificate authorities, certificates and the key
// and trust store files ZooKeeper's TLS settings name (PEM, PKCS12 and
// JKS), with the tools an operator uses: openssl for keys, certificates and
// PKCS12 key stores, keytool for JKS files and for PKCS12 trust stores
// (Java trusts only the certificates of a PKCS12 file that carry its own
// trust attribute, which only keytool writes). Every file lives in a
// directory of the test's.
//
// A test without openssl or keytool is skipped, or fails when CI=true, as
// with the other tools the tests run (see package zkref).
package tlstest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/collie-io/collie/internal/zkref"
)

// Password protects every store and encrypted key this package writes.
// keytool wants at least six characters.
const Password = "collie-store-secret"

// An Authority is a certificate authority: a self-signed certificate and
// its key, in Dir.
type Authority struct {
	t    testing.TB
	Name string // the CN of its certificate
	Dir  string
	Cert string // PEM certificate, also a PEM trust store
	key  string

	mu     sync.Mutex
	stores map[string]string // trust stores written so far, by type
}

// Require skips t (fails it when CI=true) unless openssl and keytool are
// installed.
func Require(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"openssl", "keytool"} {
		if _, err := exec.LookPath(tool); err != nil {
			zkref.Require(t, fmt.Errorf("%s not found (Debian packages openssl and default-jre-headless): %w", tool, err))
		}
	}
}

// NewAuthority makes a certificate authority whose certificate's CN is
// name, valid for a year.
func NewAuthority(t testing.TB, name string) *Authority {
	t.Helper()
	Require(t)
	dir := t.TempDir()
	a := &Authority{t: t, Name: name, Dir: dir, Cert: filepath.Join(dir, name+"-ca.pem"),
		key: filepath.Join(dir, name+"-ca.key"), stores: map[string]string{}}
	run(t, dir, "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
		"-keyout", a.key, "-out", a.Cert, "-subj", "/CN="+name, "-days", "365",
		"-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
	return a
}

// TrustStore returns a trust store of the given type ("PEM", "PKCS12" or
// "JKS") holding the authority's certificate, with Password. Its name ends
// in the type's extension (.pem, .p12, .jks), so the type can be inferred.
func (a *Authority) TrustStore(typ string) string {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if path, ok := a.stores[typ]; ok {
		return path
	}
	var path string
	switch typ {
	case "PEM":
		path = a.Cert
	case "PKCS12", "JKS":
		path = filepath.Join(a.Dir, a.Name+"-trust"+extension(typ))
		run(a.t, a.Dir, "keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", a.Cert,
			"-keystore", path, "-storetype", typ, "-storepass", Password)
	default:
		a.t.Fatalf("tlstest: unknown store type %q", typ)
	}
	a.stores[typ] = path
	return path
}

// An Identity is a key and a certificate an Authority issued, and the key
// stores that hold them.
type Identity struct {
	a    *Authority
	Name string // the CN of its certificate
	Key  string // PKCS#8 PEM private key, unencrypted
	Cert string // PEM certificate followed by the authority's

	mu     sync.Mutex
	stores map[string]string
}

// Options change a certificate Issue makes.
type Options struct {
	// Expired issues a certificate whose validity ended before it began.
	Expired bool
	// SAN is the subjectAltName extension; default
	// "IP:127.0.0.1,DNS:localhost".
	SAN string
	// Subject is the certificate's subject as openssl's -subj takes it,
	// UTF-8, a '+' joining the attributes of one RDN:
	// "/C=US/O=Example/CN=alice+UID=7". Default "/CN=<name>".
	Subject string
}

// Issue makes a key and a certificate for CN=name (or o.Subject), valid
// for a month for 127.0.0.1 and localhost, for both TLS servers and
// clients. name also names its files.
func (a *Authority) Issue(name string, o Options) *Identity {
	a.t.Helper()
	if o.SAN == "" {
		o.SAN = "IP:127.0.0.1,DNS:localhost"
	}
	if o.Subject == "" {
		o.Subject = "/CN=" + name
	}
	dir := a.Dir
	id := &Identity{a: a, Name: name, Key: filepath.Join(dir, name+".key"), Cert: filepath.Join(dir, name+"-chain.pem"), stores: map[string]string{}}
	csr := filepath.Join(dir, name+".csr")
	leaf := filepath.Join(dir, name+".crt")
	ext := filepath.Join(dir, name+".ext")
	write(a.t, ext, "subjectAltName="+o.SAN+"\nextendedKeyUsage=serverAuth,clientAuth\n")
	run(a.t, dir, "openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
		"-keyout", id.Key, "-out", csr, "-utf8", "-multivalue-rdn", "-subj", o.Subject)
	days := "30"
	if o.Expired {
		days = "-1"
	}
	run(a.t, dir, "openssl", "x509", "-req", "-in", csr, "-CA", a.Cert, "-CAkey", a.key, "-CAcreateserial",
		"-days", days, "-extfile", ext, "-out", leaf)
	write(a.t, id.Cert, read(a.t, leaf)+read(a.t, a.Cert))
	return id
}

// KeyStore returns a key store of the given type holding the identity's
// key and certificate chain, with Password: "PEM" is the key followed by
// the chain in one file (the key encrypted with Password, as ZooKeeper
// wants it when the store has a password: PKCS#8 with PBE-SHA1-3DES;
// "PEM-PBES2" and "PEM-MD5-DES" use those schemes), "PEM-plain" the same
// with the key unencrypted (a store without password), "PKCS12" and "JKS"
// what openssl and keytool write. Names end in the type's extension.
func (id *Identity) KeyStore(typ string) string {
	t := id.a.t
	t.Helper()
	id.mu.Lock()
	defer id.mu.Unlock()
	if path, ok := id.stores[typ]; ok {
		return path
	}
	dir := id.a.Dir
	var path string
	switch typ {
	case "PEM-plain":
		path = filepath.Join(dir, id.Name+"-plain.pem")
		write(t, path, read(t, id.Key)+read(t, id.Cert))
	case "PEM":
		path = filepath.Join(dir, id.Name+".pem")
		enc := filepath.Join(dir, id.Name+"-enc.key")
		// PBES1, which ZooKeeper on Java 17 reads; it cannot read the
		// PBES2 keys openssl writes by default (see "PEM-PBES2").
		run(t, dir, "openssl", "pkcs8", "-topk8", "-v1", "PBE-SHA1-3DES", "-in", id.Key, "-out", enc, "-passout", "pass:"+Password)
		write(t, path, read(t, enc)+read(t, id.Cert))
	case "PEM-PBES2":
		path = filepath.Join(dir, id.Name+"-pbes2.pem")
		enc := filepath.Join(dir, id.Name+"-pbes2.key")
		run(t, dir, "openssl", "pkcs8", "-topk8", "-v2", "aes256", "-in", id.Key, "-out", enc, "-passout", "pass:"+Password)
		write(t, path, read(t, enc)+read(t, id.Cert))
	case "PEM-MD5-DES":
		path = filepath.Join(dir, id.Name+"-md5des.pem")
		enc := filepath.Join(dir, id.Name+"-md5des.key")
		// OpenSSL 3 keeps single DES in its legacy provider.
		run(t, dir, "openssl", "pkcs8", "-topk8", "-v1", "PBE-MD5-DES", "-in", id.Key, "-out", enc, "-passout", "pass:"+Password,
			"-provider", "legacy", "-provider", "default")
		write(t, path, read(t, enc)+read(t, id.Cert))
	case "PKCS12":
		path = filepath.Join(dir, id.Name+".p12")
		run(t, dir, "openssl", "pkcs12", "-export", "-name", id.Name, "-inkey", id.Key, "-in", id.Cert,
			"-out", path, "-passout", "pass:"+Password)
	case "JKS":
		p12 := id.storeLocked("PKCS12")
		path = filepath.Join(dir, id.Name+".jks")
		run(t, dir, "keytool", "-importkeystore", "-noprompt", "-srckeystore", p12, "-srcstoretype", "PKCS12",
			"-srcstorepass", Password, "-destkeystore", path, "-deststoretype", "JKS", "-deststorepass", Password)
	default:
		t.Fatalf("tlstest: unknown store type %q", typ)
	}
	id.stores[typ] = path
	return path
}

func (id *Identity) storeLocked(typ string) string {
	id.mu.Unlock()
	defer id.mu.Lock()
	return id.KeyStore(typ)
}

func extension(typ string) string {
	switch typ {
	case "PKCS12":
		return ".p12"
	case "JKS":
		return ".jks"
	}
	return ".pem"
}

func run(t testing.TB, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("tlstest: %s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
}

func read(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func write(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
