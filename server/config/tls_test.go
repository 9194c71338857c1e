package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/collie-io/collie/server/tlsconfig"
)

func TestParseClientTLS(t *testing.T) {
	for _, prefix := range []string{"", "zookeeper."} {
		c := mustParse(t, `dataDir=/d
clientPort=2181
secureClientPort=2281
secureClientPortAddress=[::1]
`+prefix+`client.portUnification=true
`+prefix+`client.certReload=true
`+prefix+`serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
`+prefix+`ssl.keyStore.location=/etc/zk/keystore.jks
`+prefix+`ssl.keyStore.password=ks-secret
`+prefix+`ssl.keyStore.type=jks
`+prefix+`ssl.trustStore.location=/etc/zk/truststore.p12
`+prefix+`ssl.trustStore.passwordPath=/etc/zk/ts-password
`+prefix+`ssl.clientAuth=want
`+prefix+`ssl.protocol=TLSv1.3
`+prefix+`ssl.enabledProtocols=TLSv1.2,TLSv1.3
`+prefix+`ssl.ciphersuites=TLS_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
`+prefix+`ssl.hostnameVerification=false
`+prefix+`ssl.handshakeDetectionTimeoutMillis=5000
`)
		if len(c.Unknown) != 0 {
			t.Errorf("%sUnknown = %q", prefix, c.Unknown)
		}
		want := tlsconfig.Settings{
			KeyStore:         tlsconfig.Store{Location: "/etc/zk/keystore.jks", Password: "ks-secret", Type: "jks"},
			TrustStore:       tlsconfig.Store{Location: "/etc/zk/truststore.p12", PasswordPath: "/etc/zk/ts-password"},
			ClientAuth:       tlsconfig.WantClientAuth,
			Protocol:         "TLSv1.3",
			EnabledProtocols: "TLSv1.2,TLSv1.3",
			CipherSuites:     "TLS_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
		}
		if c.SSL != want {
			t.Errorf("%sSSL = %+v\nwant %+v", prefix, c.SSL, want)
		}
		if c.SecureClientPort != 2281 || c.SecureClientPortAddress != "::1" || !c.ClientPortUnification || !c.ClientCertReload || !c.ServesTLS() {
			t.Errorf("%ssecure port %d on %q, unification %v", prefix, c.SecureClientPort, c.SecureClientPortAddress, c.ClientPortUnification)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%sValidate: %v", prefix, err)
		}
	}
}

func TestValidateClientTLS(t *testing.T) {
	tests := []struct {
		text, wantErr string
	}{
		// A server may serve TLS clients alone, and need not say how.
		{"secureClientPort=2281\nssl.keyStore.location=/k.pem", ""},
		{"secureClientPort=0\nclientPort=2181", ""},
		{"clientPort=2181\nclient.portUnification=true\nssl.keyStore.location=/k.pem", ""},
		// client.portUnification concerns clientPort only.
		{"clientPort=2181\nclient.portUnification=true", "ssl.keyStore.location is not set"},
		{"secureClientPort=2281", "ssl.keyStore.location is not set"},
		{"clientPort=2181\nsecureClientPort=2181\nssl.keyStore.location=/k.pem", "must differ"},
		{"secureClientPort=2281\nssl.keyStore.location=/k.pem\nssl.protocol=SSLv3", "ssl.protocol"},
		{"secureClientPort=2281\nssl.keyStore.location=/k.pem\nssl.protocol=TLSv1.3", "names none of its suites"},
	}
	for _, tt := range tests {
		c, err := Parse([]byte("dataDir=/d\n" + tt.text))
		if err == nil {
			err = c.Validate()
		}
		if got := errString(err); (tt.wantErr == "") != (got == "") || !strings.Contains(got, tt.wantErr) {
			t.Errorf("%q: error %q, want one containing %q", tt.text, got, tt.wantErr)
		}
	}
}

func TestParseClientTLSValueErrors(t *testing.T) {
	for _, line := range []string{
		"secureClientPort=-1", // ZooKeeper fails on it too: a port out of range
		"secureClientPort=port",
		"secureClientPortAddress=",
		"secureClientPortAddress=::1", // without secureClientPort
		"client.portUnification=yes",
		"client.certReload=1",
		"ssl.clientAuth=required",
		"ssl.keyStore.type=BKS",
		"ssl.trustStore.type=PKCS#12",
		"ssl.hostnameVerification=no",
	} {
		if _, err := Parse([]byte("dataDir=/d\nclientPort=2181\n" + line)); err == nil {
			t.Errorf("Parse(%q) succeeded", line)
		} else if strings.Contains(err.Error(), "does not implement") {
			t.Errorf("Parse(%q) = %v, want a value error", line, err)
		}
	}
}

func TestConfLinesSecureClientPort(t *testing.T) {
	c := mustParse(t, "dataDir=/d\nsecureClientPort=2281\nssl.keyStore.location=/k.pem\n")
	lines := c.ConfLines(Runtime{SecureClientPort: 40001})
	if !slices.Equal(lines[:2], []string{"clientPort=-1", "secureClientPort=40001"}) {
		t.Errorf("conf starts %q, want no client port and the bound secure one", lines[:2])
	}
}

// The admin server's initial_configuration shows the file Load read; its
// secrets are masked there (ZooKeeper shows them).
func TestLoadMasksSecretsOfInitialConfiguration(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"zoo.cfg": "# TLS\ndataDir=" + dir + "\nclientPort=2181\n" +
		"secureClientPort=2281\nssl.keyStore.location=/k.p12\nssl.keyStore.password=key-secret\n" +
		"zookeeper.ssl.trustStore.password = trust\\\n  -secret\nssl.trustStore.passwordPath=/etc/zk/pw\n" +
		"ssl.quorum.keyStore.password=quorum-secret\n" +
		"DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=\n"})
	c, err := Load(dir + "/zoo.cfg")
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"key-secret", "quorum-secret", "= trust", "-secret", "D/InIHSb7yEEbrWz8b9l71RjZJU="} {
		if strings.Contains(c.Initial, secret) {
			t.Errorf("initial configuration shows %q:\n%s", secret, c.Initial)
		}
	}
	for _, kept := range []string{"# TLS\n", "ssl.keyStore.location=/k.p12\n", "ssl.keyStore.password=********\n",
		"zookeeper.ssl.trustStore.password=********\n", "ssl.trustStore.passwordPath=/etc/zk/pw\n", "ssl.quorum.keyStore.password=********\n"} {
		if !strings.Contains(c.Initial, kept) {
			t.Errorf("initial configuration lacks %q:\n%s", kept, c.Initial)
		}
	}
	if c.SSL.TrustStore.Password != "trust-secret" || c.SSL.KeyStore.Password != "key-secret" {
		t.Errorf("passwords read %+v", c.SSL)
	}
}

func TestParseQuorumTLS(t *testing.T) {
	for _, prefix := range []string{"", "zookeeper."} {
		c := mustParse(t, `dataDir=/d
clientPort=2181
server.1=10.0.0.1:2888:3888
server.2=10.0.0.2:2888:3888
`+prefix+`sslQuorum=true
`+prefix+`portUnification=true
`+prefix+`sslQuorumReloadCertFiles=true
`+prefix+`ssl.quorum.keyStore.location=/etc/zk/quorum.jks
`+prefix+`ssl.quorum.keyStore.password=q-secret
`+prefix+`ssl.quorum.keyStore.type=JKS
`+prefix+`ssl.quorum.trustStore.location=/etc/zk/quorum-trust.pem
`+prefix+`ssl.quorum.trustStore.passwordPath=/etc/zk/qpw
`+prefix+`ssl.quorum.trustStore.type=PEM
`+prefix+`ssl.quorum.clientAuth=none
`+prefix+`ssl.quorum.protocol=TLSv1.3
`+prefix+`ssl.quorum.enabledProtocols=TLSv1.3
`+prefix+`ssl.quorum.ciphersuites=TLS_AES_256_GCM_SHA384
`+prefix+`ssl.quorum.hostnameVerification=false
`+prefix+`ssl.quorum.allowReverseDnsLookup=false
`+prefix+`ssl.quorum.handshakeDetectionTimeoutMillis=3000
`+prefix+`ssl.keyStore.location=/etc/zk/client.jks
`)
		if len(c.Unknown) != 0 {
			t.Errorf("%sUnknown = %q", prefix, c.Unknown)
		}
		want := tlsconfig.Settings{
			KeyStore:                 tlsconfig.Store{Location: "/etc/zk/quorum.jks", Password: "q-secret", Type: "JKS"},
			TrustStore:               tlsconfig.Store{Location: "/etc/zk/quorum-trust.pem", PasswordPath: "/etc/zk/qpw", Type: "PEM"},
			ClientAuth:               tlsconfig.NoClientAuth,
			Protocol:                 "TLSv1.3",
			EnabledProtocols:         "TLSv1.3",
			CipherSuites:             "TLS_AES_256_GCM_SHA384",
			SkipHostnameVerification: true,
		}
		if c.QuorumSSL != want {
			t.Errorf("%sQuorumSSL = %+v\nwant %+v", prefix, c.QuorumSSL, want)
		}
		// The client port's keys stay its own.
		if c.SSL != (tlsconfig.Settings{KeyStore: tlsconfig.Store{Location: "/etc/zk/client.jks"}}) {
			t.Errorf("%sSSL = %+v", prefix, c.SSL)
		}
		if !c.SSLQuorum || !c.PortUnification || !c.SSLQuorumReloadCertFiles || c.QuorumReverseDNS || !c.QuorumTLS() {
			t.Errorf("%sswitches: sslQuorum %v, portUnification %v, reload %v, reverse DNS %v", prefix, c.SSLQuorum, c.PortUnification, c.SSLQuorumReloadCertFiles, c.QuorumReverseDNS)
		}
		c, err := c.ForServer(1)
		if err == nil {
			err = c.Validate()
		}
		if err != nil {
			t.Errorf("%sValidate: %v", prefix, err)
		}
	}
}

func TestValidateQuorumTLS(t *testing.T) {
	const ensemble = "clientPort=2181\nserver.1=10.0.0.1:2888:3888\nserver.2=10.0.0.2:2888:3888\n"
	tests := []struct {
		text, wantErr string
	}{
		{ensemble + "sslQuorum=true\nssl.quorum.keyStore.location=/q.pem", ""},
		{ensemble + "sslQuorum=false\nportUnification=false", ""},
		// The first step of the rolling switch accepts TLS peers already.
		{ensemble + "portUnification=true", "ssl.quorum.keyStore.location is not set"},
		{ensemble + "sslQuorum=true\nssl.keyStore.location=/k.pem", "ssl.quorum.keyStore.location is not set"},
		{ensemble + "sslQuorum=true\nssl.quorum.keyStore.location=/q.pem\nssl.quorum.protocol=SSLv3", "ssl.quorum.*: ssl.protocol"},
		// A standalone server has no peers, as in ZooKeeper.
		{"clientPort=2181\nsslQuorum=true", ""},
	}
	for _, tt := range tests {
		c, err := Parse([]byte("dataDir=/d\n" + tt.text))
		if err == nil && !c.Standalone {
			c, err = c.ForServer(1)
		}
		if err == nil {
			err = c.Validate()
		}
		if got := errString(err); (tt.wantErr == "") != (got == "") || !strings.Contains(got, tt.wantErr) {
			t.Errorf("%q: error %q, want one containing %q", tt.text, got, tt.wantErr)
		}
	}
	for _, line := range []string{"sslQuorum=yes", "portUnification=1", "sslQuorumReloadCertFiles=on",
		"ssl.quorum.clientAuth=required", "ssl.quorum.keyStore.type=BKS", "ssl.quorum.hostnameVerification=no",
		"ssl.quorum.allowReverseDnsLookup=no", "ssl.quorum.handshakeDetectionTimeoutMillis=soon"} {
		if _, err := Parse([]byte("dataDir=/d\n" + ensemble + line)); err == nil {
			t.Errorf("Parse(%q) succeeded", line)
		} else if strings.Contains(err.Error(), "does not implement") {
			t.Errorf("Parse(%q) = %v, want a value error", line, err)
		}
	}
}

func TestParseAndValidateAdminHTTPS(t *testing.T) {
	const stores = "ssl.quorum.keyStore.location=/q.pem\nssl.quorum.trustStore.location=/ca.pem\n"
	tests := []struct {
		text    string
		want    [3]bool // forceHttps, portUnification, needClientAuth
		wantErr string
	}{
		{"admin.forceHttps=true\n" + stores, [3]bool{true, false, false}, ""},
		{"zookeeper.admin.forceHttps=true\nzookeeper.admin.needClientAuth=true\n" + stores, [3]bool{true, false, true}, ""},
		{"admin.portUnification=true\nadmin.needClientAuth=true\n" + stores, [3]bool{false, true, true}, ""},
		// The stores are ZooKeeper's quorum stores, whether or not the
		// servers use TLS between them, and both are read.
		{"admin.forceHttps=true\nssl.keyStore.location=/k.pem\nssl.trustStore.location=/ca.pem", [3]bool{true, false, false}, "ssl.quorum.keyStore.location is not set"},
		{"admin.portUnification=true\nssl.quorum.keyStore.location=/q.pem", [3]bool{false, true, false}, "ssl.quorum.trustStore.location is not set"},
		{"admin.needClientAuth=true\n" + stores, [3]bool{false, false, true}, "admin.needClientAuth=true asks for client certificates, but the admin server serves plain HTTP"},
		// Without an admin server the keys ask for nothing.
		{"admin.enableServer=false\nadmin.forceHttps=true\nadmin.needClientAuth=true", [3]bool{true, false, true}, ""},
	}
	for _, tt := range tests {
		c, err := Parse([]byte("dataDir=/d\nclientPort=2181\n" + tt.text))
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.text, err)
			continue
		}
		if got := [3]bool{c.AdminForceHTTPS, c.AdminPortUnification, c.AdminNeedClientAuth}; got != tt.want {
			t.Errorf("%q: forceHttps, portUnification, needClientAuth = %v, want %v", tt.text, got, tt.want)
		}
		if got := errString(c.Validate()); (tt.wantErr == "") != (got == "") || !strings.Contains(got, tt.wantErr) {
			t.Errorf("%q: Validate error %q, want one containing %q", tt.text, got, tt.wantErr)
		}
	}
	for _, line := range []string{"admin.forceHttps=yes", "admin.portUnification=1", "admin.needClientAuth=on"} {
		if _, err := Parse([]byte("dataDir=/d\nclientPort=2181\n" + line)); err == nil {
			t.Errorf("Parse(%q) succeeded", line)
		} else if strings.Contains(err.Error(), "does not implement") {
			t.Errorf("Parse(%q) = %v, want a value error", line, err)
		}
	}
}
