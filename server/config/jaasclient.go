package config

import (
	"fmt"
	"strings"
)

// DefaultSASLClientSection is the JAAS section ZooKeeper's Java client
// takes its login from unless zookeeper.sasl.clientconfig names another.
const DefaultSASLClientSection = "Client"

// ClientLogin is the login of a JAAS client section: a DIGEST-MD5 user
// and password, or, when Kerberos is set, a Kerberos (GSSAPI) login.
type ClientLogin struct {
	Username, Password string
	Kerberos           *KerberosClientLogin
}

// KerberosClientLogin is a client section's Krb5LoginModule, its options
// read as Java's Krb5LoginModule reads them: the ticket cache first when
// UseTicketCache, then the keytab when UseKeyTab.
type KerberosClientLogin struct {
	// Principal is the principal option, primary[/instance][@REALM];
	// "" with a ticket cache takes the cache's. With a ticket cache and
	// a Principal, a cache of another principal is not used.
	Principal string
	// UseKeyTab logs in with Keytab's key of Principal.
	UseKeyTab bool
	Keytab    string
	// UseTicketCache takes the ticket-granting ticket of a kinit:
	// TicketCache ("" for the default: KRB5CCNAME, else
	// /tmp/krb5cc_<uid>).
	UseTicketCache bool
	TicketCache    string
}

// SASLClientLogin returns the login of a JAAS file's client section, as
// ZooKeeper's Java client takes it: the username and password options of
// its DigestLoginModule,
//
//	Client {
//	    org.apache.zookeeper.server.auth.DigestLoginModule required
//	    username="bob"
//	    password="bobsecret";
//	};
//
// or the Kerberos login of a Krb5LoginModule, from a keytab or a ticket
// cache,
//
//	Client {
//	    com.sun.security.auth.module.Krb5LoginModule required
//	    useKeyTab=true
//	    keyTab="/etc/security/bob.keytab"
//	    principal="bob@EXAMPLE.COM";
//	};
//
// ok is false when the file has no such section. A section with neither
// module, a DigestLoginModule that names no user, or a Krb5LoginModule
// that can only log in with a password (which ZooKeeper's client cannot
// ask for) is an error.
func SASLClientLogin(sections map[string][]JAASModule, section string) (login ClientLogin, ok bool, err error) {
	modules, ok := sections[section]
	if !ok {
		return ClientLogin{}, false, nil
	}
	for _, m := range modules {
		switch m.Class {
		case digestLoginModule:
			user, hasUser := m.Options["username"]
			if !hasUser {
				return ClientLogin{}, true, fmt.Errorf("JAAS section %s: %s has no username option", section, m.Class)
			}
			return ClientLogin{Username: user, Password: m.Options["password"]}, true, nil
		case krb5LoginModule:
			k, err := krb5ClientLogin(m)
			if err != nil {
				return ClientLogin{}, true, fmt.Errorf("JAAS section %s: %s: %w", section, m.Class, err)
			}
			return ClientLogin{Kerberos: k}, true, nil
		}
	}
	return ClientLogin{}, true, fmt.Errorf("JAAS section %s: neither %s nor %s", section, digestLoginModule, krb5LoginModule)
}

// krb5ClientLogin reads a client's Krb5LoginModule options; Java takes
// its boolean options as true when they say "true" in any case.
func krb5ClientLogin(m JAASModule) (*KerberosClientLogin, error) {
	isTrue := func(name string) bool { return strings.EqualFold(m.Options[name], "true") }
	k := &KerberosClientLogin{
		Principal:      m.Options["principal"],
		UseKeyTab:      isTrue("useKeyTab"),
		Keytab:         trimFilePrefix(m.Options["keyTab"]),
		UseTicketCache: isTrue("useTicketCache"),
		TicketCache:    m.Options["ticketCache"],
	}
	switch {
	case !k.UseKeyTab && !k.UseTicketCache:
		return nil, fmt.Errorf(`neither useKeyTab=true nor useTicketCache=true: a login with a password is not possible, as with ZooKeeper's client; log in with a keytab, or with kinit and useTicketCache=true`)
	case k.UseKeyTab && k.Keytab == "":
		return nil, fmt.Errorf(`useKeyTab=true needs keyTab="file"`)
	case k.UseKeyTab && k.Principal == "" && !k.UseTicketCache:
		return nil, fmt.Errorf(`useKeyTab=true needs principal="name": the keytab's key of that principal logs in`)
	}
	return k, nil
}

// trimFilePrefix drops the "FILE:" (any case) Java takes before a file name.
func trimFilePrefix(name string) string {
	if len(name) >= 5 && strings.EqualFold(name[:5], "file:") {
		return name[5:]
	}
	return name
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

// Krb5ConfProperty is the Java system property that names the krb5.conf.
const Krb5ConfProperty = krb5ConfKey
