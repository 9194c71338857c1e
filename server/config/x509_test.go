package config

import (
	"errors"
	"strings"
	"testing"
)

func TestParseX509Keys(t *testing.T) {
	tests := []struct {
		lines     string
		provider  bool
		superUser string
	}{
		{"", false, ""},
		{"authProvider.x509=" + X509AuthenticationProvider, true, ""},
		{"authProvider.1=" + X509AuthenticationProvider, true, ""},
		{"zookeeper.authProvider.7=" + X509AuthenticationProvider, true, ""},
		// ZooKeeper registers a provider under its class's scheme, so
		// naming another class under the key x509 gives x509 none.
		{"authProvider.x509=org.apache.zookeeper.server.auth.DigestAuthenticationProvider", false, ""},
		{"secureClientPort=2281", true, ""},
		{"client.portUnification=true", true, ""},
		{"X509AuthenticationProvider.superUser=CN=admin,O=Example", false, "CN=admin,O=Example"},
		// zoo.cfg is a Java properties file: a backslash is written twice.
		{"zookeeper.X509AuthenticationProvider.superUser=CN=ops\\\\, Inc", false, "CN=ops\\, Inc"},
		{"ssl.authProvider=x509", false, ""},
		{"zookeeper.ssl.authProvider=x509\nsecureClientPort=2281", true, ""},
	}
	for _, tt := range tests {
		c := mustParse(t, "dataDir=/d\nclientPort=2181\nssl.keyStore.location=/k.jks\n"+tt.lines+"\n")
		if c.X509Scheme() != tt.provider || c.X509SuperUser != tt.superUser {
			t.Errorf("%q: X509Scheme %v, X509SuperUser %q; want %v, %q", tt.lines, c.X509Scheme(), c.X509SuperUser, tt.provider, tt.superUser)
		}
	}
}

func TestParseX509Refusals(t *testing.T) {
	for _, value := range []string{"digest", "X509", "", "custom"} {
		_, err := Parse([]byte("dataDir=/d\nssl.authProvider=" + value + "\n"))
		var ve *ValueError
		if !errors.As(err, &ve) || ve.Key != "ssl.authProvider" || !strings.Contains(err.Error(), "is not x509") {
			t.Errorf("ssl.authProvider=%s: %v, want a ValueError", value, err)
		}
	}
	// A certificate identity other than the subject is in no ZooKeeper
	// release.
	keys := notImplementedKeys(t, "ssl.clientCertIdType=SAN")
	if len(keys) != 1 || keys[0].Feature != "an x509 identity other than the certificate's subject" {
		t.Errorf("ssl.clientCertIdType refused as %+v", keys)
	}
}

// enforce.auth.schemes may name x509 once the scheme has a provider.
func TestParseRequiredX509(t *testing.T) {
	for _, tt := range []struct {
		lines, wantErr string
	}{
		{"enforce.auth.enabled=true\nenforce.auth.schemes=x509", `scheme "x509" is not available`},
		{"enforce.auth.enabled=true\nenforce.auth.schemes=x509\nauthProvider.1=" + X509AuthenticationProvider, ""},
		{"enforce.auth.enabled=true\nenforce.auth.schemes=x509,digest\nsecureClientPort=2281\nssl.keyStore.location=/k.p12", ""},
	} {
		c, err := Parse([]byte("dataDir=/d\nclientPort=2181\n" + tt.lines))
		if err == nil {
			err = c.Validate()
		}
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%q: error %v, want %q", tt.lines, err, tt.wantErr)
		}
	}
}
