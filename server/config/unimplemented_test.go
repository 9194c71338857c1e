package config

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// notImplementedKeys parses dataDir=/d followed by text and returns the
// keys Parse refused for asking for what Collie does not implement.
func notImplementedKeys(t *testing.T, text string) []NotImplementedKey {
	t.Helper()
	_, err := Parse([]byte("dataDir=/d\n" + text))
	var ni *NotImplementedError
	if !errors.As(err, &ni) {
		t.Fatalf("Parse(%q) = %v, want a *NotImplementedError", text, err)
	}
	return ni.Keys
}

// Each key is tried as zoo.cfg's key and as its Java system property,
// "zookeeper.<key>": files carry both, since ZooKeeper's documentation
// names many keys by the property.
func bothSpellings(key string) []string {
	return []string{key, "zookeeper." + key}
}

// misspelledQuorumTLS is what a case of sslQuorum and its kin other than
// ZooKeeper's asks for.
const misspelledQuorumTLS = "TLS between servers under a spelling ZooKeeper does not read (sslQuorum, portUnification, sslQuorumReloadCertFiles)"

// misspelledAdminHTTPS is the same for the admin server's HTTPS switches.
const misspelledAdminHTTPS = "HTTPS on the admin port under a spelling ZooKeeper does not read (admin.forceHttps, admin.portUnification, admin.needClientAuth)"

func TestParseRefusesKeysAskingForUnimplementedSecurity(t *testing.T) {
	tests := []struct {
		key, value string
		feature    string
	}{
		{"client.secure", "true", "a TLS setting Collie does not implement"},
		{"ssl.crl", "true", "a TLS setting Collie does not implement"},
		{"ssl.ocsp", "true", "a TLS setting Collie does not implement"},
		{"ssl.context.supplier.class", "com.example.Supplier", "a TLS setting Collie does not implement"},
		{"ssl.sslProvider", "OPENSSL", "a TLS setting Collie does not implement"},
		{"ssl.clientCertIdType", "SAN", "an x509 identity other than the certificate's subject"},
		{"ssl.quorum.crl", "true", "a TLS setting Collie does not implement"},
		{"ssl.quorum.ocsp", "true", "a TLS setting Collie does not implement"},
		{"ssl.quorum.context.supplier.class", "com.example.Supplier", "a TLS setting Collie does not implement"},
		{"ssl.quorum.sslProvider", "OPENSSL", "a TLS setting Collie does not implement"},
		{"SSLQUORUM", "true", misspelledQuorumTLS},
		{"sslquorumreloadcertfiles", "true", misspelledQuorumTLS},
		{"PortUnification", "true", misspelledQuorumTLS},
		{"ADMIN.FORCEHTTPS", "true", misspelledAdminHTTPS},
		{"admin.portunification", "true", misspelledAdminHTTPS},
		{"admin.NeedClientAuth", "true", misspelledAdminHTTPS},
		{"authProvider.1", "org.apache.zookeeper.server.auth.EnsembleAuthenticationProvider", "an authentication provider Collie does not have"},
		{"authProvider.x509", "org.apache.zookeeper.server.auth.X509AuthenticationProvider2", "an authentication provider Collie does not have"},
		{"authProvider", "org.apache.zookeeper.server.auth.SASLAuthenticationProvider", "an authentication provider Collie does not have"},
		{"sasl.clientconfig", "Client", "a SASL setting Collie does not implement"},
		{"sasl.client", "true", "a SASL setting Collie does not implement"},
		{"letAnySaslUserDoX", "admin", "a SASL setting Collie does not implement"},
		{"kerberos.canonicalizeHostNames", "true", "Kerberos between servers"},
		{"ensembleAuthName", "prod", "ensemble authentication"},
		{"DigestAuthenticationProvider.enabled", "false", "digest authentication turned off"},
		{"DigestAuthenticationProvider.digestAlg", "SHA-256", "a digest algorithm other than SHA1"},
		{"audit.enable", "true", "audit logging"},
		{"audit.impl.class", "org.apache.zookeeper.audit.Slf4jAuditLogger", "audit logging"},
	}
	for _, tt := range tests {
		for _, key := range bothSpellings(tt.key) {
			keys := notImplementedKeys(t, key+"="+tt.value)
			want := NotImplementedKey{Key: key, Value: tt.value, Line: 2, Feature: tt.feature}
			if len(keys) != 1 || keys[0].Key != want.Key || keys[0].Value != want.Value || keys[0].Line != want.Line || keys[0].Feature != want.Feature {
				t.Errorf("%s=%s: refused as %+v, want %+v", key, tt.value, keys, want)
			}
		}
	}
}

func TestParseRefusesKeysAskingForUnimplementedLimits(t *testing.T) {
	tests := []struct {
		key, value string
		feature    string
	}{
		{"maxCnxns", "1000", "a limit on the connections to the server"},
		{"connection_throttle_tokens", "100", "connection throttling"},
		{"connection_throttle_tokens", "-1", "connection throttling"}, // throttles every connection
		{"connectionMaxTokens", "100", "connection throttling"},
		{"request_throttle_max_requests", "500", "request throttling"},
		{"requestThrottleLimit", "500", "request throttling"},
		{"throttled_op_wait_time", "1000", "request throttling"},
		{"throttledOpWaitTime", "1000", "request throttling"},
		{"largeRequestThreshold", "1048576", "a limit on large requests in flight"},
	}
	for _, tt := range tests {
		for _, key := range bothSpellings(tt.key) {
			keys := notImplementedKeys(t, key+"="+tt.value)
			if len(keys) != 1 || keys[0].Key != key || keys[0].Feature != tt.feature || keys[0].Accepted == "" {
				t.Errorf("%s=%s: refused as %+v, want feature %q and the value that turns it off", key, tt.value, keys, tt.feature)
			}
		}
	}
}

// Operators leave switches set to off in their files; such a line asks for
// nothing, so it is only a warning, like any other key Collie ignores.
func TestParseAcceptsSwitchesThatAreOff(t *testing.T) {
	lines := []string{
		"client.secure=false",
		"ssl.crl=false",
		"ssl.ocsp=false",
		"ssl.quorum.crl=false",
		"ssl.quorum.ocsp=false",
		"SSLQUORUM=false",
		"sslquorum=FALSE",
		"sslQuorumreloadCertFiles=false",
		"PORTUNIFICATION=false",
		"ADMIN.FORCEHTTPS=false",
		"admin.portunification=false",
		"admin.NeedClientAuth=false",
		"authProvider.1=org.apache.zookeeper.server.auth.DigestAuthenticationProvider",
		"authProvider.2=org.apache.zookeeper.server.auth.IPAuthenticationProvider",
		"sasl.client=false",
		"DigestAuthenticationProvider.enabled=true",
		"DigestAuthenticationProvider.digestAlg=SHA1",
		"DigestAuthenticationProvider.digestAlg=SHA-1",
		"audit.enable=false",
		"ENFORCEQUOTA=false",
		"maxCnxns=0",
		"maxCnxns=-1",
		"connection_throttle_tokens=0",
		"connectionMaxTokens=0",
		"request_throttle_max_requests=0",
		"requestThrottleLimit=0",
		"throttled_op_wait_time=0",
		"throttledOpWaitTime=0",
		"largeRequestThreshold=-1",
		"largeRequestThreshold=0",
	}
	for _, line := range lines {
		for _, line := range bothSpellings(line) {
			c, err := Parse([]byte("dataDir=/d\n" + line))
			key, _, _ := strings.Cut(line, "=")
			if err != nil || !slices.Equal(c.Unknown, []string{key}) {
				t.Errorf("Parse(%q) = Unknown %q, %v; want the key as unknown and no error", line, c.Unknown, err)
			}
		}
	}
}

// A switch refused unless it is off is refused for any other value, even
// one ZooKeeper would read as off (it takes any word but "true" as false
// for some): Collie cannot tell what was meant.
func TestParseRefusesSwitchesThatAreNotPlainlyOff(t *testing.T) {
	lines := []string{
		"SSLQuorum=yes",
		"SSLQuorum=",
		"ssl.crl=yes",
		"maxCnxns=unlimited",
		"DigestAuthenticationProvider.enabled=yes",
		"authProvider.1=org.example.DigestAuthenticationProvider",
	}
	for _, line := range lines {
		if keys := notImplementedKeys(t, line); len(keys) != 1 {
			t.Errorf("Parse(%q) refused %+v, want the one key", line, keys)
		}
	}
}

// Keys that promise neither security nor a limit stay warnings, among them
// some that sound as if they might.
func TestParseWarnsAboutKeysThatPromiseNothing(t *testing.T) {
	lines := []string{
		"clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
		"globalOutstandingLimit=1000",
		"zookeeper.globalOutstandingLimit=5000",
		"skipACL=yes",
		"forceSync=no",
		"reconfigEnabled=true",
		"fips-mode=true",
		"netty.server.outstandingHandshake.limit=250",
		"netty.server.earlyDropSecureConnectionHandshakes=true",
		"largeRequestMaxBytes=104857600",
		"request_throttle_stall_time=100",
		"requestThrottleDropStale=true",
		"requestStaleLatencyCheck=true",
		"connection_throttle_fill_time=1",
		"connection_throttle_weight_enabled=true",
		"jute.maxbuffer.extrasize=1024",
		"snapSizeLimitInKb=4194304",
		"txnLogSizeLimitInKb=-1",
		"maxResponseCacheSize=400",
		"admin.idleTimeout=30000",
		"quorumListenOnAllIPs=true",
		"peerType=observer",
		"syncEnabled=true",
		"localSessionsUpgradingEnabled=true",
		"emulate353TTLNodes=true",
		"snapshot.compression.method=gz",
		"sslQuorumX=true",
	}
	for _, line := range lines {
		c, err := Parse([]byte("dataDir=/d\n" + line))
		key, _, _ := strings.Cut(line, "=")
		if err != nil || !slices.Equal(c.Unknown, []string{key}) {
			t.Errorf("Parse(%q) = Unknown %q, %v; want the key as unknown and no error", line, c.Unknown, err)
		}
	}
}

func TestParseReportsEveryNotImplementedKeyAtOnce(t *testing.T) {
	text := `dataDir=/d
SSLQuorum=true
tickTime=fast
ssl.quorum.context.supplier.class=com.example.Supplier
ssl.quorum.keyStore.password=hunter2
ssl.crl=false
authProvider.1=org.apache.zookeeper.server.auth.KeyAuthenticationProvider
globalOutstandingLimit=1000
zookeeper.maxCnxns=10
`
	_, err := Parse([]byte(text))
	want := `tickTime: "fast" is not a positive number of milliseconds
Collie does not implement yet what these keys ask for, and will not start without it:
	line 2: SSLQuorum=true asks for ` + misspelledQuorumTLS + ` (false turns it off)
	line 4: ssl.quorum.context.supplier.class asks for a TLS setting Collie does not implement
	line 7: authProvider.1=org.apache.zookeeper.server.auth.KeyAuthenticationProvider asks for an authentication provider Collie does not have (DigestAuthenticationProvider, IPAuthenticationProvider, SASLAuthenticationProvider and X509AuthenticationProvider are accepted)
	line 9: zookeeper.maxCnxns=10 asks for a limit on the connections to the server (0 turns it off)
remove these keys to run without what they ask for, or keep running ZooKeeper until Collie implements it`
	if errString(err) != want {
		t.Errorf("Parse error\n got %v\nwant %s", err, want)
	}
	// The value of a key without an "off" value may be a password.
	if strings.Contains(errString(err), "hunter2") {
		t.Error("the error shows a password")
	}
	var ve *ValueError
	if !errors.As(err, &ve) || ve.Key != "tickTime" {
		t.Errorf("Parse error does not hold the tickTime *ValueError: %v", err)
	}
}

// A key given twice takes its last value, for these keys as for others.
func TestParseNotImplementedLastValueWins(t *testing.T) {
	if c, err := Parse([]byte("dataDir=/d\nmaxCnxns=10\nmaxCnxns=0\n")); err != nil || !slices.Equal(c.Unknown, []string{"maxCnxns"}) {
		t.Errorf("maxCnxns on, then off: Unknown %q, %v", c.Unknown, err)
	}
	keys := notImplementedKeys(t, "maxCnxns=0\nmaxCnxns=10\n")
	if len(keys) != 1 || keys[0].Line != 3 || keys[0].Value != "10" {
		t.Errorf("maxCnxns off, then on: refused %+v, want line 3", keys)
	}
}

// ZooKeeper's keys are case-sensitive, so it would ignore SSLQUORUM; the
// operator who wrote it still wanted TLS.
func TestParseNotImplementedIgnoresCase(t *testing.T) {
	for _, line := range []string{"SSLQUORUM=true", "ZooKeeper.SSL.keyStore.location=/k", "Zookeeper.EnforceQuota=TRUE", "AUTHPROVIDER.1=x"} {
		if keys := notImplementedKeys(t, line); len(keys) != 1 {
			t.Errorf("Parse(%q) refused %+v, want the one key", line, keys)
		}
	}
	if _, err := Parse([]byte("dataDir=/d\nSSLQUORUM=False")); err != nil {
		t.Errorf("SSLQUORUM=False: %v", err)
	}
}

func TestLoadNamesFileAndLineOfNotImplementedKey(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	writeFiles(t, dir, map[string]string{"zoo.cfg": "# limits\ndataDir=" + dir + "\nclientPort=2181\nmaxCnxns=10\n"})
	_, err := Load(cfg)
	want := "config: " + cfg + ": Collie does not implement yet what these keys ask for, and will not start without it:\n" +
		"\tline 4: maxCnxns=10 asks for a limit on the connections to the server (0 turns it off)\n"
	var ni *NotImplementedError
	if !errors.As(err, &ni) || !strings.HasPrefix(errString(err), want) {
		t.Errorf("Load error\n got %v\nwant %s...", err, want)
	}
}

// Every refusal is keyed by zoo.cfg's spelling, which the lookup extends
// to the "zookeeper." one, and belongs to a named feature.
func TestUnimplementedTable(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range unimplemented {
		if f.name == "" || len(f.keys) == 0 {
			t.Errorf("feature %q has no name or no keys", f.name)
		}
		for _, r := range f.keys {
			lower := strings.ToLower(r.key)
			if strings.HasPrefix(lower, "zookeeper.") {
				t.Errorf("%s: give the key without zookeeper.", r.key)
			}
			if seen[lower] {
				t.Errorf("%s: listed twice", r.key)
			}
			seen[lower] = true
			if r.off != nil && r.off.text == "" {
				t.Errorf("%s: the off values are not described", r.key)
			}
		}
	}
}
