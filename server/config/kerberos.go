package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/collie-io/collie/server/krbname"
)

// krb5ConfKey is the Java system property that names the krb5.conf.
const krb5ConfKey = "java.security.krb5.conf"

// defaultKrb5Conf is the krb5.conf read when nothing names one.
const defaultKrb5Conf = "/etc/krb5.conf"

// SASLKerberos is what the server needs to accept Kerberos (GSSAPI)
// clients: the service principal of the JAAS section's
// Krb5LoginModule, its keys, and the krb5.conf's settings.
type SASLKerberos struct {
	Principal  string         // primary/instance@REALM, the realm added from the krb5.conf when the option has none
	KeytabFile string         // the keyTab option
	Keytab     *keytab.Keytab // read at start
	ClockSkew  time.Duration  // the krb5.conf's clockskew (5 minutes by default)
}

// Krb5Settings are the zoo.cfg keys of Kerberos, which also shape the
// identities of DIGEST-MD5 users, as in ZooKeeper.
type Krb5Settings struct {
	// ConfFile is java.security.krb5.conf, or -D of it in
	// SERVER_JVMFLAGS or JVMFLAGS; Load falls back to KRB5_CONFIG, then
	// /etc/krb5.conf, and records here the file it read.
	ConfFile string
	// DefaultRealm is the krb5.conf's default_realm, read by Load; ""
	// without a krb5.conf.
	DefaultRealm string
	RemoveHost   bool           // kerberos.removeHostFromPrincipal
	RemoveRealm  bool           // kerberos.removeRealmFromPrincipal
	AuthToLocal  *krbname.Rules // security.auth_to_local; nil is DEFAULT
	// RequireConfig is requireKerberosConfig: a krb5.conf that cannot be
	// read stops the start even when only DIGEST-MD5 is configured.
	RequireConfig bool
}

// Mapping is how the identities of SASL clients are made.
func (k Krb5Settings) Mapping() krbname.Mapping {
	return krbname.Mapping{Rules: k.AuthToLocal, DefaultRealm: k.DefaultRealm, RemoveHost: k.RemoveHost, RemoveRealm: k.RemoveRealm}
}

// setKerberos applies a key of Kerberos and reports whether it was one.
func (p *parser) setKerberos(key, name, value string) bool {
	k := &p.c.Krb5
	var err error
	switch {
	case key == krb5ConfKey || name == krb5ConfKey:
		k.ConfFile = strings.TrimPrefix(value, "file:")
		if k.ConfFile == "" {
			err = &ValueError{Key: key, Value: value, Problem: "is not a file name"}
		}
	case name == "kerberos.removeHostFromPrincipal":
		// ZooKeeper compares with "true" exactly; anything else keeps the host.
		k.RemoveHost = value == "true"
	case name == "kerberos.removeRealmFromPrincipal":
		k.RemoveRealm = value == "true"
	case name == "security.auth_to_local":
		if k.AuthToLocal, err = krbname.ParseRules(value); err != nil {
			err = fmt.Errorf("%s: %w", key, err)
		}
	case name == "requireKerberosConfig":
		k.RequireConfig = value == "true"
	case name == "kinit" || name == "kerberos.minReLoginTimeMs":
		// They renew the ticket-granting ticket of ZooKeeper's own
		// login; accepting clients needs only the keytab, so Collie
		// never holds one. Ignored, with the usual warning.
		p.c.Unknown = append(p.c.Unknown, key)
	default:
		return false
	}
	if err != nil {
		p.errs = append(p.errs, err)
	}
	return true
}

// loadKrb5Conf finds and reads the krb5.conf when SASL is configured.
// Without a Krb5LoginModule, as in ZooKeeper, only its default realm is
// wanted, and a file that cannot be read leaves it "" unless
// requireKerberosConfig is true; with one, it must be read.
func (c *Config) loadKrb5Conf(getenv func(string) string, kerberos bool) error {
	k := &c.Krb5
	if k.ConfFile == "" {
		k.ConfFile = strings.TrimPrefix(serverJVMProperty(getenv, krb5ConfKey), "file:")
	}
	if k.ConfFile == "" {
		k.ConfFile = getenv("KRB5_CONFIG")
	}
	if k.ConfFile == "" {
		k.ConfFile = defaultKrb5Conf
	}
	kc, err := readKrb5Conf(k.ConfFile)
	switch {
	case err != nil && (kerberos || k.RequireConfig):
		return err
	case err != nil:
		return nil
	}
	k.DefaultRealm = kc.LibDefaults.DefaultRealm
	if c.SASLKerberos != nil {
		c.SASLKerberos.ClockSkew = kc.LibDefaults.Clockskew
	}
	return nil
}

func readKrb5Conf(path string) (*krbconfig.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: the krb5.conf %w (name it with %s, or KRB5_CONFIG)", krb5ConfKey, err, krb5ConfKey)
		}
		return nil, fmt.Errorf("%s: %w", krb5ConfKey, err)
	}
	kc, err := krbconfig.NewFromString(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", krb5ConfKey, path, err)
	}
	return kc, nil
}

// krb5Login reads the options of a Krb5LoginModule of the server's
// section, as Java's Krb5LoginModule takes them for ZooKeeper's server:
// the service principal's keys from a keytab, stored in the login
// (storeKey=true), from which every client's ticket is opened.
func krb5Login(section string, m JAASModule) (*SASLKerberos, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("JAAS section %s: %s: %s", section, m.Class, fmt.Sprintf(format, args...))
	}
	if m.Options["useKeyTab"] != "true" {
		return nil, fail(`useKeyTab="true" is needed: the server accepts clients with the keys of a keytab`)
	}
	if m.Options["storeKey"] != "true" {
		return nil, fail(`storeKey="true" is needed: without it the login keeps no key to accept clients with`)
	}
	kt := strings.TrimPrefix(m.Options["keyTab"], "file:")
	if kt == "" {
		return nil, fail("keyTab names no file")
	}
	principal := m.Options["principal"]
	primary, _, _ := strings.Cut(principal, "@")
	if service, host, ok := strings.Cut(primary, "/"); !ok || service == "" || host == "" || strings.Contains(host, "/") {
		return nil, fail("principal %q is not a service principal, service/host[@REALM], as ZooKeeper's server needs", principal)
	}
	return &SASLKerberos{Principal: principal, KeytabFile: kt}, nil
}

// loadKeytab completes the service principal with the default realm and
// reads the keytab, which must hold its key.
func (c *Config) loadKeytab() error {
	k := c.SASLKerberos
	if !strings.Contains(k.Principal, "@") {
		if c.Krb5.DefaultRealm == "" {
			return fmt.Errorf("principal %q has no realm, and the krb5.conf %s no default_realm", k.Principal, c.Krb5.ConfFile)
		}
		k.Principal += "@" + c.Krb5.DefaultRealm
	}
	data, err := os.ReadFile(k.KeytabFile)
	if err != nil {
		return fmt.Errorf("keyTab: %w", err)
	}
	k.Keytab = keytab.New()
	if err := k.Keytab.Unmarshal(data); err != nil {
		return fmt.Errorf("keyTab %s: not a keytab: %w", k.KeytabFile, err)
	}
	name, realm, _ := strings.Cut(k.Principal, "@")
	for _, e := range k.Keytab.Entries {
		if e.Principal.Realm == realm && strings.Join(e.Principal.Components, "/") == name {
			return nil
		}
	}
	return fmt.Errorf("keyTab %s holds no key of %s", k.KeytabFile, k.Principal)
}
