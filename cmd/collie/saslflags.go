package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/client/digestmd5"
	"github.com/collie-io/collie/client/krb5sasl"
	"github.com/collie-io/collie/server/config"
)

// saslFlags are the SASL flags of collie cli and collie bench. Without
// any, the login comes as zkCli.sh takes it: from the JAAS file that
// -Djava.security.auth.login.config names in CLIENT_JVMFLAGS or JVMFLAGS,
// its section Client (or -Dzookeeper.sasl.clientconfig's), unless
// -Dzookeeper.sasl.client=false; a Kerberos login reads the krb5.conf
// -Djava.security.krb5.conf names there. -jaas names the file instead,
// -sasl-user with a password gives a DIGEST-MD5 login directly, and
// -sasl-principal (with -sasl-keytab) a Kerberos one.
type saslFlags struct {
	jaas         string
	section      string
	user         string
	password     string
	passwordFile string
	principal    string
	keytab       string
	krb5Conf     string
}

// clientJVMFlags are the environment variables zkCli.sh puts on java's
// command line, in that order.
var clientJVMFlags = []string{"CLIENT_JVMFLAGS", "JVMFLAGS"}

// The Java client's system properties collie cli and bench read.
const (
	saslClientSectionProperty = "zookeeper.sasl.clientconfig"
	saslClientProperty        = "zookeeper.sasl.client"
	// Kerberos: the service principal's first part (default
	// zookeeper), the whole service principal instead, and whether the
	// server's host is canonicalized through DNS.
	saslServiceNameProperty  = "zookeeper.sasl.client.username"
	serverPrincipalProperty  = "zookeeper.server.principal"
	saslCanonicalizeProperty = "zookeeper.sasl.client.canonicalize.hostname"
)

func (f *saslFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.jaas, "jaas", "", "JAAS `file` whose client section holds the SASL login (DigestLoginModule username and password, or Krb5LoginModule); default: -D"+config.JAASProperty+" in CLIENT_JVMFLAGS or JVMFLAGS")
	fs.StringVar(&f.section, "sasl-config", "", "the JAAS `section` of the login ("+saslClientSectionProperty+"); default "+config.DefaultSASLClientSection)
	fs.StringVar(&f.user, "sasl-user", "", "SASL DIGEST-MD5 user `name`, with -sasl-password-file (instead of a JAAS file)")
	fs.StringVar(&f.passwordFile, "sasl-password-file", "", "`file` holding -sasl-user's password (its first line)")
	fs.StringVar(&f.password, "sasl-password", "", "-sasl-user's password; visible to other users in the process list, see -sasl-password-file")
	fs.StringVar(&f.principal, "sasl-principal", "", "Kerberos (GSSAPI) principal `name` to log in as, with -sasl-keytab's key, else from the ticket cache (KRB5CCNAME, else /tmp/krb5cc_<uid>) kinit wrote (instead of a JAAS file)")
	fs.StringVar(&f.keytab, "sasl-keytab", "", "keytab `file` holding -sasl-principal's key")
	fs.StringVar(&f.krb5Conf, "krb5-conf", "", "the krb5.conf `file` of a Kerberos login; default: -D"+config.Krb5ConfProperty+" in CLIENT_JVMFLAGS or JVMFLAGS, else KRB5_CONFIG, else /etc/krb5.conf")
}

// mechanism returns the SASL mechanism the flags and the environment ask
// for, or nil when they ask for none, and what to call when done with
// it. A Kerberos login happens here, so that a login the KDC refuses is
// reported before connecting. Warnings (a JAAS file from the environment
// without the section, as zkCli.sh logs it and goes on without SASL) go
// to stderr.
func (f *saslFlags) mechanism(getenv func(string) string, stderr io.Writer) (func() client.SASLMechanism, func(), error) {
	none := func() {}
	login, err := f.login(getenv, stderr)
	switch {
	case err != nil:
		return nil, none, err
	case login == nil:
		return nil, none, nil
	case login.Kerberos == nil:
		user, password := login.Username, login.Password
		return func() client.SASLMechanism { return digestmd5.New(user, password) }, none, nil
	}
	cl, err := f.kerberosLogin(getenv, login.Kerberos)
	if err != nil {
		return nil, none, err
	}
	return func() client.SASLMechanism { return cl.Mechanism() }, cl.Close, nil
}

// login returns the login the flags and the environment give, nil for
// none.
func (f *saslFlags) login(getenv func(string) string, stderr io.Writer) (*config.ClientLogin, error) {
	switch {
	case f.user != "" && f.principal != "":
		return nil, fmt.Errorf("-sasl-user (DIGEST-MD5) and -sasl-principal (Kerberos) both give the SASL login: use one")
	case f.user != "" && f.jaas != "":
		return nil, fmt.Errorf("-sasl-user and -jaas both give the SASL login: use one")
	case f.principal != "" && f.jaas != "":
		return nil, fmt.Errorf("-sasl-principal and -jaas both give the SASL login: use one")
	}
	if f.keytab != "" && f.principal == "" {
		return nil, fmt.Errorf("-sasl-keytab goes with -sasl-principal, the principal whose key it holds")
	}
	if f.principal != "" {
		return &config.ClientLogin{Kerberos: &config.KerberosClientLogin{
			Principal: f.principal, UseKeyTab: f.keytab != "", Keytab: f.keytab, UseTicketCache: f.keytab == "",
		}}, nil
	}
	if f.user != "" {
		if (f.password == "") == (f.passwordFile == "") {
			return nil, fmt.Errorf("-sasl-user needs one of -sasl-password-file and -sasl-password")
		}
		password := f.password
		if f.passwordFile != "" {
			b, err := os.ReadFile(f.passwordFile)
			if err != nil {
				return nil, fmt.Errorf("-sasl-password-file: %w", err)
			}
			password, _, _ = strings.Cut(string(b), "\n")
			password = strings.TrimSuffix(password, "\r")
		}
		return &config.ClientLogin{Username: f.user, Password: password}, nil
	}
	if f.password != "" || f.passwordFile != "" {
		return nil, fmt.Errorf("-sasl-password and -sasl-password-file go with -sasl-user")
	}
	path, fromEnv := f.jaas, false
	if path == "" {
		if v, _ := config.JVMProperty(getenv, saslClientProperty, clientJVMFlags...); strings.EqualFold(v, "false") {
			return nil, nil
		}
		v, ok := config.JVMProperty(getenv, config.JAASProperty, clientJVMFlags...)
		if !ok {
			return nil, nil
		}
		path, fromEnv = config.JAASPath(v), true
	}
	section := f.section
	if section == "" {
		section, _ = config.JVMProperty(getenv, saslClientSectionProperty, clientJVMFlags...)
	}
	if section == "" {
		section = config.DefaultSASLClientSection
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("JAAS file: %w", err)
	}
	sections, err := config.ParseJAAS(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	login, ok, err := config.SASLClientLogin(sections, section)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !ok {
		if fromEnv && f.section == "" {
			fmt.Fprintf(stderr, "warning: %s has no JAAS section %s: connecting without SASL\n", path, section)
			return nil, nil
		}
		return nil, fmt.Errorf("%s has no JAAS section %s", path, section)
	}
	return &login, nil
}

// kerberosLogin logs in as Java's Krb5LoginModule does: from the ticket
// cache when the login takes one, else (or when the cache does not
// serve) with the keytab's key. The service principal is named from the
// Java client's properties in the environment.
func (f *saslFlags) kerberosLogin(getenv func(string) string, k *config.KerberosClientLogin) (*krb5sasl.Client, error) {
	cfg := krb5sasl.Config{Krb5Conf: f.krb5Conf, Principal: k.Principal}
	if cfg.Krb5Conf == "" {
		v, _ := config.JVMProperty(getenv, config.Krb5ConfProperty, clientJVMFlags...)
		cfg.Krb5Conf = strings.TrimPrefix(v, "file:")
	}
	cfg.ServiceName, _ = config.JVMProperty(getenv, saslServiceNameProperty, clientJVMFlags...)
	cfg.ServerPrincipal, _ = config.JVMProperty(getenv, serverPrincipalProperty, clientJVMFlags...)
	// Java's Boolean.parseBoolean: anything but "true" is false.
	if v, ok := config.JVMProperty(getenv, saslCanonicalizeProperty, clientJVMFlags...); ok && !strings.EqualFold(v, "true") {
		cfg.NoCanonicalize = true
	}
	var cacheErr error
	if k.UseTicketCache {
		cfg.CCache = k.TicketCache
		cl, err := krb5sasl.NewClient(cfg)
		if err == nil || !k.UseKeyTab {
			return cl, err
		}
		cacheErr = err
	}
	if k.Principal == "" {
		return nil, fmt.Errorf("%w; and the keytab needs a principal to log in", cacheErr)
	}
	cfg.CCache, cfg.Keytab = "", k.Keytab
	cl, err := krb5sasl.NewClient(cfg)
	if err != nil && cacheErr != nil {
		return nil, fmt.Errorf("%w; and from the keytab: %w", cacheErr, err)
	}
	return cl, err
}
