package config

import (
	"fmt"
	"strings"
)

// DefaultSASLClientSection is the JAAS section ZooKeeper's Java client
// takes its login from unless zookeeper.sasl.clientconfig names another.
const DefaultSASLClientSection = "Client"

// SASLClientLogin returns the DIGEST-MD5 login of a JAAS file's client
// section, as ZooKeeper's Java client takes it: the username and password
// options of its DigestLoginModule.
//
//	Client {
//	    org.apache.zookeeper.server.auth.DigestLoginModule required
//	    username="bob"
//	    password="bobsecret";
//	};
//
// ok is false when the file has no such section. A section without a
// DigestLoginModule that names a user, or with Krb5LoginModule (Kerberos),
// is an error.
func SASLClientLogin(sections map[string][]JAASModule, section string) (username, password string, ok bool, err error) {
	modules, ok := sections[section]
	if !ok {
		return "", "", false, nil
	}
	for _, m := range modules {
		switch m.Class {
		case digestLoginModule:
			user, hasUser := m.Options["username"]
			if !hasUser {
				return "", "", true, fmt.Errorf("JAAS section %s: %s has no username option", section, m.Class)
			}
			return user, m.Options["password"], true, nil
		case krb5LoginModule:
			return "", "", true, fmt.Errorf("JAAS section %s: %s asks for Kerberos (GSSAPI), which this client does not do", section, m.Class)
		}
	}
	return "", "", true, fmt.Errorf("JAAS section %s: no %s", section, digestLoginModule)
}

// JVMProperty returns the value of the Java system property name as
// -Dname=value options in the environment variables vars give it, which
// ZooKeeper's scripts put on java's command line in that order: the last
// one given wins, as in Java.
func JVMProperty(getenv func(string) string, name string, vars ...string) (value string, ok bool) {
	for _, v := range vars {
		for _, f := range strings.Fields(getenv(v)) {
			if val, found := strings.CutPrefix(f, "-D"+name+"="); found {
				value, ok = val, true
			}
		}
	}
	return value, ok
}

// JAASPath returns the file a java.security.auth.login.config value
// names: Java takes a leading "=" (which makes the file the only one
// read) and a file: URL too.
func JAASPath(v string) string { return jaasPath(v) }

// JAASProperty is the Java system property that names the JAAS file.
const JAASProperty = jaasKey
