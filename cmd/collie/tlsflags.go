package main

import (
	"crypto/tls"
	"flag"
	"fmt"

	"github.com/collie-io/collie/server/tlsconfig"
)

// tlsFlags are the TLS flags of collie cli and collie bench: PEM files as
// Kazoo and Go programs name them (-tls-cert, -tls-key, -tls-ca), or the
// key and trust stores of ZooKeeper's Java client
// (zookeeper.ssl.keyStore.* and zookeeper.ssl.trustStore.*). Any of them
// turns TLS on, as -tls does alone.
type tlsFlags struct {
	on                     bool
	cert, key, ca          string
	keyStore, trustStore   tlsconfig.Store
	serverName             string
	noHostnameVerification bool
}

func (f *tlsFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "tls", false, "connect over TLS (the servers' secureClientPort); implied by every -tls-* flag")
	fs.StringVar(&f.cert, "tls-cert", "", "client certificate chain, PEM `file` (with -tls-key)")
	fs.StringVar(&f.key, "tls-key", "", "client private key, PEM `file` (with -tls-cert)")
	fs.StringVar(&f.ca, "tls-ca", "", "CA certificates to trust, PEM `file`; default: the system's")
	fs.StringVar(&f.keyStore.Location, "tls-keystore", "", "client key store `file` (JKS, PKCS12 or PEM, as zookeeper.ssl.keyStore.location)")
	fs.StringVar(&f.keyStore.Password, "tls-keystore-password", "", "its password; visible to other users in the process list, see -tls-keystore-password-file")
	fs.StringVar(&f.keyStore.PasswordPath, "tls-keystore-password-file", "", "`file` holding the key store's password")
	fs.StringVar(&f.keyStore.Type, "tls-keystore-type", "", "JKS, PKCS12 or PEM; default: from the file's extension")
	fs.StringVar(&f.trustStore.Location, "tls-truststore", "", "trust store `file` (JKS, PKCS12 or PEM, as zookeeper.ssl.trustStore.location)")
	fs.StringVar(&f.trustStore.Password, "tls-truststore-password", "", "its password")
	fs.StringVar(&f.trustStore.PasswordPath, "tls-truststore-password-file", "", "`file` holding the trust store's password")
	fs.StringVar(&f.trustStore.Type, "tls-truststore-type", "", "JKS, PKCS12 or PEM; default: from the file's extension")
	fs.StringVar(&f.serverName, "tls-server-name", "", "`name` the servers' certificates must be for; default: each server's host")
	fs.BoolVar(&f.noHostnameVerification, "tls-no-hostname-verification", false, "check the servers' certificates but not the names in them (zookeeper.ssl.hostnameVerification=false)")
}

// config returns the TLS configuration the flags ask for, or nil when they
// ask for none.
func (f *tlsFlags) config() (*tls.Config, error) {
	on := f.on || f.cert != "" || f.key != "" || f.ca != "" || f.keyStore.Location != "" || f.trustStore.Location != "" ||
		f.serverName != "" || f.noHostnameVerification
	if !on {
		return nil, nil
	}
	if (f.cert == "") != (f.key == "") {
		return nil, fmt.Errorf("-tls-cert and -tls-key go together")
	}
	if f.cert != "" && f.keyStore.Location != "" {
		return nil, fmt.Errorf("-tls-cert and -tls-keystore both give a client certificate: use one")
	}
	if f.ca != "" && f.trustStore.Location != "" {
		return nil, fmt.Errorf("-tls-ca and -tls-truststore both give the CAs to trust: use one")
	}
	s := tlsconfig.Settings{KeyStore: f.keyStore, TrustStore: f.trustStore}
	if f.ca != "" {
		s.TrustStore = tlsconfig.Store{Location: f.ca, Type: string(tlsconfig.PEM)}
	}
	c, err := s.ClientConfig()
	if err != nil {
		return nil, err
	}
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{pair}
	}
	// A client offers what any server may be configured for, TLS 1.2
	// and 1.3 with Go's suites, which include ZooKeeper's GCM ones; the
	// server's ssl.protocol and ssl.ciphersuites decide.
	c.MinVersion, c.MaxVersion, c.CipherSuites = tls.VersionTLS12, 0, nil
	c.ServerName = f.serverName
	if f.noHostnameVerification {
		tlsconfig.SkipHostnameVerification(c)
	}
	return c, nil
}
