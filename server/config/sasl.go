package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SASLAuthenticationProvider is the class that authProvider.N names to
// give the sasl scheme a provider.
const SASLAuthenticationProvider = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"

// defaultSASLSection is the JAAS section ZooKeeper's server reads its
// users from unless sasl.serverconfig names another.
const defaultSASLSection = "Server"

// jaasKey is the Java system property that names the JAAS file.
const jaasKey = "java.security.auth.login.config"

// setSASL applies a key of SASL or of required authentication, and
// reports whether it was one. Each key is also taken with ZooKeeper's
// "zookeeper." prefix, as it is a Java system property of that name.
func (p *parser) setSASL(key, value string) bool {
	c := &p.c
	name := strings.TrimPrefix(key, "zookeeper.")
	var err error
	if p.setKerberos(key, name, value) {
		return true
	}
	switch {
	case key == jaasKey || name == jaasKey:
		c.JAASConfigFile = jaasPath(value)
		if c.JAASConfigFile == "" {
			err = &ValueError{Key: key, Value: value, Problem: "is not a file name"}
		}
	case name == "sasl.serverconfig":
		c.SASLServerSection, err = nonEmpty(key, value, "a JAAS section name")
	case strings.HasPrefix(name, "authProvider.") && value == SASLAuthenticationProvider:
		c.SASLAuthProvider = true
	case name == "superUser" || strings.HasPrefix(name, "superUser."):
		// ZooKeeper takes every system property zookeeper.superUser and
		// zookeeper.superUser.<anything> as the name of a super user.
		if value != "" && !slices.Contains(c.SASLSuperUsers, value) {
			c.SASLSuperUsers = append(c.SASLSuperUsers, value)
		}
	case name == "SASLAuthenticationProvider.superPassword":
		c.SASLSuperPassword = value
	case name == "allowSaslFailedClients":
		c.AllowSASLFailedClients, err = boolean(key, value)
	case name == "enforce.auth.enabled":
		p.enforceAuth, err = boolean(key, value)
	case name == "enforce.auth.schemes":
		// As ZooKeeper: split at commas, each scheme trimmed.
		p.enforceSchemes = nil
		for _, s := range splitJava(value, ",") {
			p.enforceSchemes = append(p.enforceSchemes, strings.TrimSpace(s))
		}
	case name == "sessionRequireClientSASLAuth":
		p.requireSASL, err = boolean(key, value)
	case name == "requireClientAuthScheme":
		// No ZooKeeper release reads it (3.8 turns it into a system
		// property nothing asks for), so it requires nothing there either:
		// enforce.auth.* does. It is ignored, with the usual warning.
		c.Unknown = append(c.Unknown, key)
	default:
		return false
	}
	if err != nil {
		p.errs = append(p.errs, err)
	}
	return true
}

// finishSASL decides, once every key is read, which schemes a session
// needs, as ZooKeeper's AuthenticationHelper: sessionRequireClientSASLAuth
// requires sasl whatever enforce.auth.* say; enforce.auth.enabled requires
// one of enforce.auth.schemes, which must then be given.
func (p *parser) finishSASL() {
	switch {
	case p.requireSASL:
		p.c.EnforceAuthSchemes = []string{"sasl"}
	case p.enforceAuth && len(p.enforceSchemes) == 0:
		p.errs = append(p.errs, errors.New("enforce.auth.enabled is true, so enforce.auth.schemes must name the schemes a session needs (sasl, digest or ip)"))
	case p.enforceAuth:
		p.c.EnforceAuthSchemes = p.enforceSchemes
	}
}

// validateSASL checks the SASL settings as ZooKeeper checks them at start.
// A JAAS file without the server's section is not an error, as in
// ZooKeeper, which then serves without SASL (Kazoo's test harness gives
// every server such a file); the caller warns (NoSASLSection).
func (c Config) validateSASL() []error {
	var errs []error
	for _, s := range c.EnforceAuthSchemes {
		switch {
		case s == "digest" || s == "ip":
		case s == x509Scheme && c.X509Scheme():
		case s == "sasl" && c.SASLAuthProvider:
		case s == "sasl":
			errs = append(errs, fmt.Errorf("enforce.auth.schemes: authentication scheme sasl is not available: add authProvider.1=%s", SASLAuthenticationProvider))
		default:
			errs = append(errs, fmt.Errorf("enforce.auth.schemes: authentication scheme %q is not available (sasl, digest, ip and x509 are, sasl and x509 when they have providers)", s))
		}
	}
	return errs
}

// NoSASLSection says why the server runs without SASL although a JAAS
// file is named, or returns "" when it does not.
func (c Config) NoSASLSection() string {
	if c.JAASConfigFile == "" || c.SASLUsers != nil {
		return ""
	}
	return fmt.Sprintf("%s has no section %s (sasl.serverconfig): no SASL users, clients cannot authenticate with SASL", c.JAASConfigFile, c.saslSection())
}

// jaasPath returns the file a java.security.auth.login.config value
// names: Java takes a leading "=" (which makes the file the only one read)
// and a file: URL too.
func jaasPath(v string) string {
	v = strings.TrimPrefix(v, "=")
	if rest, ok := strings.CutPrefix(v, "file://"); ok {
		return rest
	}
	return strings.TrimPrefix(v, "file:")
}

// jaasFromJVMFlags returns the JAAS file named by -Djava.security.auth.login.config
// in the SERVER_JVMFLAGS and JVMFLAGS environment variables, where
// zkServer.sh's users set it.
func jaasFromJVMFlags(getenv func(string) string) string {
	return jaasPath(serverJVMProperty(getenv, jaasKey))
}

// serverJVMProperty returns the value of the Java system property key
// given as -Dkey=value in the SERVER_JVMFLAGS and JVMFLAGS environment
// variables, as zkServer.sh puts them on java's command line.
func serverJVMProperty(getenv func(string) string, key string) string {
	value, _ := JVMProperty(getenv, key, "SERVER_JVMFLAGS", "JVMFLAGS")
	return value
}

// saslSection is the JAAS section of the server's users.
func (c Config) saslSection() string {
	if c.SASLServerSection == "" {
		return defaultSASLSection
	}
	return c.SASLServerSection
}
