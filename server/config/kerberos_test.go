package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
)

// writeKeytab writes a keytab holding a key of each principal
// (primary/instance) of realm R.
func writeKeytab(t *testing.T, path string, principals ...string) {
	t.Helper()
	kt := keytab.New()
	for _, p := range principals {
		if err := kt.AddEntry(p, "R", "secret", time.Unix(0, 0), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
			t.Fatal(err)
		}
	}
	data, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func krb5JAAS(options string) string {
	return "Server {\n com.sun.security.auth.module.Krb5LoginModule required\n " + options + ";\n};\n"
}

func TestLoadKerberos(t *testing.T) {
	dir := t.TempDir()
	jaas := filepath.Join(dir, "jaas.conf")
	kt := filepath.Join(dir, "zk.keytab")
	writeKeytab(t, kt, "zookeeper/localhost")
	keytabOpts := `useKeyTab=true keyTab="` + kt + `" storeKey=true useTicketCache=false`
	writeFiles(t, dir, map[string]string{
		"krb5.conf":  "[libdefaults]\n default_realm = R\n clockskew = 120\n",
		"other.conf": "[libdefaults]\n default_realm = OTHER\n",
	})
	t.Setenv("KRB5_CONFIG", filepath.Join(dir, "other.conf"))
	t.Setenv("SERVER_JVMFLAGS", "")
	t.Setenv("JVMFLAGS", "")
	load := func(jaasText string, lines ...string) (Config, error) {
		t.Helper()
		writeFiles(t, dir, map[string]string{
			"jaas.conf": jaasText,
			"zoo.cfg": "dataDir=" + dir + "\nclientPort=2181\njava.security.auth.login.config=" + jaas + "\n" +
				strings.Join(lines, "\n") + "\n",
		})
		return Load(filepath.Join(dir, "zoo.cfg"))
	}

	c, err := load(krb5JAAS(keytabOpts+` principal="zookeeper/localhost"`),
		"java.security.krb5.conf="+filepath.Join(dir, "krb5.conf"),
		"kerberos.removeHostFromPrincipal=true",
		"zookeeper.kerberos.removeRealmFromPrincipal=true",
		`security.auth_to_local=RULE:[1:$1@$0](.*@OTHER)s/@.*// DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	k := c.SASLKerberos
	if k == nil || k.Principal != "zookeeper/localhost@R" || k.KeytabFile != kt || k.ClockSkew != 2*time.Minute || len(k.Keytab.Entries) != 1 {
		t.Fatalf("SASLKerberos = %+v", k)
	}
	m := c.Krb5.Mapping()
	for principal, want := range map[string]string{"bob@OTHER": "bob", "zkcli/h@R": "zkcli"} {
		if got, err := m.Identity(principal); err != nil || got != want {
			t.Errorf("identity of %s: %q, %v; want %q", principal, got, err, want)
		}
	}

	// The krb5.conf from the JVM's flags, else KRB5_CONFIG.
	t.Setenv("JVMFLAGS", "-Djava.security.krb5.conf="+filepath.Join(dir, "krb5.conf"))
	if c, err = load(krb5JAAS(keytabOpts + ` principal="zookeeper/localhost"`)); err != nil || c.Krb5.DefaultRealm != "R" {
		t.Fatalf("krb5.conf from JVMFLAGS: %v, realm %q", err, c.Krb5.DefaultRealm)
	}
	t.Setenv("JVMFLAGS", "")
	if c, err = load(krb5JAAS(keytabOpts + ` principal="zookeeper/localhost@R"`)); err != nil || c.Krb5.DefaultRealm != "OTHER" {
		t.Fatalf("krb5.conf from KRB5_CONFIG: %v, realm %q", err, c.Krb5.DefaultRealm)
	}

	// A DIGEST-MD5 section reads the default realm, and a missing krb5.conf
	// is no error unless requireKerberosConfig=true.
	digest := `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob="x"; };`
	if c, err = load(digest, "java.security.krb5.conf=/nonexistent"); err != nil || c.SASLKerberos != nil || c.Krb5.DefaultRealm != "" {
		t.Fatalf("DIGEST-MD5 without a krb5.conf: %v, %+v", err, c.Krb5)
	}
	if _, err = load(digest, "java.security.krb5.conf=/nonexistent", "requireKerberosConfig=true"); err == nil || !strings.Contains(err.Error(), "/nonexistent") {
		t.Errorf("requireKerberosConfig=true without a krb5.conf: %v", err)
	}

	krb5Line := "java.security.krb5.conf=" + filepath.Join(dir, "krb5.conf")
	for _, tt := range []struct {
		name, jaas string
		lines      []string
		want       string
	}{
		{"no krb5.conf", krb5JAAS(keytabOpts + ` principal="zookeeper/localhost"`), []string{"java.security.krb5.conf=/nonexistent"}, "/nonexistent"},
		{"no keytab file", krb5JAAS(`useKeyTab=true keyTab="/nonexistent.keytab" storeKey=true principal="zookeeper/localhost"`), []string{krb5Line}, "/nonexistent.keytab"},
		{"not a keytab", krb5JAAS(`useKeyTab=true keyTab="` + jaas + `" storeKey=true principal="zookeeper/localhost"`), []string{krb5Line}, "not a keytab"},
		{"a principal not in the keytab", krb5JAAS(keytabOpts + ` principal="zookeeper/otherhost"`), []string{krb5Line}, "holds no key of zookeeper/otherhost@R"},
		{"a principal of another realm", krb5JAAS(keytabOpts + ` principal="zookeeper/localhost@X"`), []string{krb5Line}, "holds no key of zookeeper/localhost@X"},
		{"not a service principal", krb5JAAS(keytabOpts + ` principal="zookeeper@R"`), []string{krb5Line}, "not a service principal"},
		{"no useKeyTab", krb5JAAS(`keyTab="` + kt + `" storeKey=true principal="zookeeper/localhost"`), []string{krb5Line}, "useKeyTab"},
		{"no storeKey", krb5JAAS(`useKeyTab=true keyTab="` + kt + `" principal="zookeeper/localhost"`), []string{krb5Line}, "storeKey"},
		{"bad auth_to_local", krb5JAAS(keytabOpts + ` principal="zookeeper/localhost"`), []string{krb5Line, "security.auth_to_local=RULE:[1:$1](a(?=b))"}, "security.auth_to_local"},
	} {
		if _, err := load(tt.jaas, tt.lines...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error with %q", tt.name, err, tt.want)
		}
	}
}
