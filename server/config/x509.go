package config

import "strings"

// X509AuthenticationProvider is the class that authProvider.N names to
// give the x509 scheme a provider.
const X509AuthenticationProvider = "org.apache.zookeeper.server.auth.X509AuthenticationProvider"

// x509Scheme is the scheme of TLS clients' certificate identities, the
// only value of ssl.authProvider Collie takes.
const x509Scheme = "x509"

// setX509 applies a key of x509 identities and reports whether it was one.
// Each key is also taken with ZooKeeper's "zookeeper." prefix, as it is a
// Java system property of that name.
func (p *parser) setX509(key, value string) bool {
	c := &p.c
	switch name := strings.TrimPrefix(key, "zookeeper."); {
	case strings.HasPrefix(name, "authProvider.") && value == X509AuthenticationProvider:
		// ZooKeeper registers a provider under the scheme its class
		// names, whatever the key's suffix: authProvider.1 and
		// authProvider.x509 alike.
		c.X509AuthProvider = true
	case name == "X509AuthenticationProvider.superUser":
		c.X509SuperUser = value
	case name == "ssl.authProvider":
		// ZooKeeper looks the provider of TLS identities up by this
		// scheme and casts it to its X509AuthenticationProvider, whose
		// scheme is x509; any other scheme needs a Java class of one's
		// own, which Collie cannot load.
		if value != x509Scheme {
			p.errs = append(p.errs, &ValueError{Key: key, Value: value,
				Problem: "is not x509: the scheme of TLS clients' identities can only be that of X509AuthenticationProvider, x509 (another needs a Java provider class of its own)"})
		}
	default:
		return false
	}
	return true
}

// X509Scheme reports whether the x509 scheme has a provider: whether x509
// ids are valid in ACLs and TLS clients that present a certificate get
// one. ZooKeeper registers X509AuthenticationProvider itself when it has a
// secure client port, or when authProvider.N names it. Collie does so too
// for a unified client port (client.portUnification), for which ZooKeeper
// 3.8.0 registers none unless authProvider.N names it, and then closes the
// connections whose client presents a certificate ("X509 Auth provider not
// found").
func (c Config) X509Scheme() bool { return c.X509AuthProvider || c.ServesTLS() }
