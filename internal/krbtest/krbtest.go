// Package krbtest runs a throwaway MIT Kerberos KDC, from Debian's
// krb5-kdc and krb5-admin-server packages, for tests of Kerberos (SASL
// GSSAPI) authentication: a realm of its own in a temporary directory, on
// a free port of 127.0.0.1, with a krb5.conf that clients (Java, MIT's
// library, gokrb5) read to find it, and keytabs made with kadmin.local.
//
//	kdc := krbtest.Start(t)
//	server := kdc.Keytab(t, "zookeeper/localhost")
//	client := kdc.Keytab(t, "bob")
//	// point clients and servers at kdc.Krb5Conf
//
// Nothing touches the machine's own Kerberos configuration: every command
// runs with KRB5_CONFIG and KRB5_KDC_PROFILE naming the files in the
// temporary directory. When the KDC's programs are missing a test is
// skipped, unless the environment variable CI is "true": then it fails, so
// that a CI run can never pass by skipping.
package krbtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/freeport"
)

// Realm is the realm of every KDC Start runs.
const Realm = "COLLIE.TEST"

// The programs of Debian's MIT KDC packages: kdb5_util and krb5kdc come
// with krb5-kdc, kadmin.local with krb5-admin-server, kinit with
// krb5-user.
const (
	kdb5Util    = "/usr/sbin/kdb5_util"
	krb5kdc     = "/usr/sbin/krb5kdc"
	kadminLocal = "/usr/sbin/kadmin.local"
	kinit       = "/usr/bin/kinit"
)

// startTimeout bounds how long the KDC may take to listen.
const startTimeout = 30 * time.Second

// KDC is a running KDC of Realm.
type KDC struct {
	// Krb5Conf is the krb5.conf that names this KDC, with Realm as the
	// default realm and no DNS lookups of hosts or realms.
	Krb5Conf string
	// Addr is the KDC's address, 127.0.0.1:port, on TCP and UDP.
	Addr string

	dir string
	env []string
}

// Available returns nil when the KDC's programs are installed, and
// otherwise an error naming what is missing.
func Available() error {
	var errs []error
	for _, p := range []string{kdb5Util, krb5kdc, kadminLocal} {
		if _, err := os.Stat(p); err != nil {
			errs = append(errs, fmt.Errorf("%s is missing (Debian packages krb5-kdc and krb5-admin-server)", p))
		}
	}
	return errors.Join(errs...)
}

// Require skips t when err says the KDC's programs are missing, or fails
// t when the environment variable CI is "true".
func Require(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("krbtest: %v (CI=true, so this fails rather than skips)", err)
	}
	t.Skipf("krbtest: %v; run ./scripts/test.sh, which installs them", err)
}

// Start creates a realm in a temporary directory and runs its KDC until
// the test ends. It skips t when the KDC is not installed (fails it when
// CI=true).
func Start(t testing.TB) *KDC {
	t.Helper()
	Require(t, Available())
	dir := t.TempDir()
	port, err := freeport.Take()
	if err != nil {
		t.Fatal(err)
	}
	k := &KDC{
		Krb5Conf: filepath.Join(dir, "krb5.conf"),
		Addr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:      dir,
	}
	kdcConf := filepath.Join(dir, "kdc.conf")
	k.env = append(os.Environ(), "KRB5_CONFIG="+k.Krb5Conf, "KRB5_KDC_PROFILE="+kdcConf, "KRB5CCNAME=FILE:"+filepath.Join(dir, "ccache"))
	write(t, k.Krb5Conf, fmt.Sprintf(`[libdefaults]
	default_realm = %[1]s
	dns_lookup_kdc = false
	dns_lookup_realm = false
	dns_canonicalize_hostname = false
	rdns = false
	udp_preference_limit = 1
	ticket_lifetime = 1h
	forwardable = false
	default_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
	default_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
	permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96

[realms]
	%[1]s = {
		kdc = %[2]s
	}

[domain_realm]
	localhost = %[1]s
	.localhost = %[1]s
`, Realm, k.Addr))
	write(t, kdcConf, fmt.Sprintf(`[kdcdefaults]
	kdc_ports = %[2]d
	kdc_tcp_ports = %[2]d

[realms]
	%[1]s = {
		database_name = %[3]s
		key_stash_file = %[4]s
		acl_file = %[5]s
		max_life = 1h
		supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
	}

[logging]
	kdc = FILE:%[6]s
`, Realm, port, filepath.Join(dir, "principal"), filepath.Join(dir, "stash"),
		filepath.Join(dir, "kadm5.acl"), filepath.Join(dir, "kdc.log")))
	write(t, filepath.Join(dir, "kadm5.acl"), "")

	// The master password only guards this throwaway database.
	k.run(t, kdb5Util, "create", "-s", "-r", Realm, "-P", "collie-test-master")

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, krb5kdc, "-n", "-r", Realm, "-P", filepath.Join(dir, "kdc.pid"))
	cmd.Env = k.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("krbtest: start krb5kdc: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cancel()
		<-exited
	})
	deadline := time.Now().Add(startTimeout)
	for {
		c, err := net.DialTimeout("tcp", k.Addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("krbtest: krb5kdc exited before listening on %s:\n%s\n%s", k.Addr, out.String(), k.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("krbtest: krb5kdc does not listen on %s after %v:\n%s", k.Addr, startTimeout, k.Log())
		}
		time.Sleep(20 * time.Millisecond) // polling for the listener, not waiting for correctness
	}
	return k
}

// AddPrincipal creates principal (in Realm unless it names a realm) with
// a random key.
func (k *KDC) AddPrincipal(t testing.TB, principal string) {
	t.Helper()
	k.kadmin(t, "addprinc -randkey "+principal)
}

// Keytab creates principal with a random key, unless it exists, and
// writes its current keys into a new keytab file, which it returns. Each
// call gives the principal new keys (ktadd does), so a keytab written
// before holds keys the KDC no longer issues tickets for.
func (k *KDC) Keytab(t testing.TB, principal string) string {
	t.Helper()
	if !strings.Contains(k.kadmin(t, "getprinc "+principal), "Principal: ") {
		k.AddPrincipal(t, principal)
	}
	f, err := os.CreateTemp(k.dir, "keytab-*")
	if err != nil {
		t.Fatal(err)
	}
	path := f.Name()
	f.Close()
	os.Remove(path) // ktadd adds to an existing keytab only if it is one
	k.kadmin(t, "ktadd -k "+path+" "+principal)
	return path
}

// Kinit logs principal in with its keytab, as a user's kinit would, into
// a new credential cache file, which it returns. It skips t when kinit
// is not installed (fails it when CI=true).
func (k *KDC) Kinit(t testing.TB, principal, keytab string) string {
	t.Helper()
	if _, err := os.Stat(kinit); err != nil {
		Require(t, fmt.Errorf("%s is missing (Debian package krb5-user)", kinit))
	}
	f, err := os.CreateTemp(k.dir, "ccache-*")
	if err != nil {
		t.Fatal(err)
	}
	path := f.Name()
	f.Close()
	k.run(t, kinit, "-k", "-t", keytab, "-c", "FILE:"+path, principal)
	return path
}

// Env returns the environment a Kerberos program of this realm runs
// with: KRB5_CONFIG naming Krb5Conf, and a credential cache of its own.
func (k *KDC) Env() []string { return k.env }

// Log returns what the KDC has logged, for a failing test's message.
func (k *KDC) Log() string {
	data, _ := os.ReadFile(filepath.Join(k.dir, "kdc.log"))
	return string(data)
}

func (k *KDC) kadmin(t testing.TB, query string) string {
	t.Helper()
	return k.run(t, kadminLocal, "-r", Realm, "-q", query)
}

func (k *KDC) run(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = k.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("krbtest: %s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func write(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
