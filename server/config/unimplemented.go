package config

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// NotImplementedError reports zoo.cfg keys that ask for security or for a
// limit Collie does not implement yet. A server started without what they
// ask for would serve in plaintext, without authentication or without the
// limit, while its operator believes otherwise; so Parse refuses the file,
// naming every such key at once rather than one per attempt to start.
type NotImplementedError struct {
	Keys []NotImplementedKey // in file order
}

// NotImplementedKey is one key of a NotImplementedError.
type NotImplementedKey struct {
	Key   string // as written in the file
	Value string // may be a secret, such as a keystore password
	Line  int    // the line of the file on which the entry starts

	// Feature is what the key asks for, phrased to follow "asks for":
	// "TLS between servers".
	Feature string
	// Accepted says which values of the key would be accepted because
	// they turn the feature off ("false turns it off"); "" when every
	// value asks for the feature.
	Accepted string
}

func (e *NotImplementedError) Error() string {
	var b strings.Builder
	b.WriteString("Collie does not implement yet what these keys ask for, and will not start without it:")
	for _, k := range e.Keys {
		fmt.Fprintf(&b, "\n\tline %d: %s", k.Line, k.Key)
		// Only a key with an "off" value has a value worth showing, and
		// such values are switches, ports and class names; the others
		// include passwords, which must not reach a log.
		if k.Accepted != "" {
			b.WriteString("=" + printable(k.Value))
		}
		b.WriteString(" asks for " + k.Feature)
		if k.Accepted != "" {
			b.WriteString(" (" + k.Accepted + ")")
		}
	}
	b.WriteString("\nremove these keys to run without what they ask for, or keep running ZooKeeper until Collie implements it")
	return b.String()
}

func printable(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// A refusal is a zoo.cfg key, or a family of keys, that asks for a feature
// Collie does not implement yet.
type refusal struct {
	// key is the name ZooKeeper documents, without the "zookeeper." of its
	// Java system property. A trailing ".*" stands for the name alone and
	// for the name followed by a dot and anything.
	key string
	// off accepts the values that turn the feature off; nil when there
	// are none, so that the key is refused whatever its value.
	off *offValues
}

// offValues are the values of a key that leave a feature off.
type offValues struct {
	accept func(value string) bool
	text   string // for the message: "false turns it off"
}

// An unimplementedFeature groups the keys of one feature. Each group goes
// once Collie implements its feature and parses its keys (a key that
// parser.set knows never reaches the refusal check).
type unimplementedFeature struct {
	name string // what the keys ask for, phrased to follow "asks for"
	keys []refusal
}

var (
	offFalse      = &offValues{func(v string) bool { return strings.EqualFold(v, "false") }, "false turns it off"}
	offZero       = &offValues{func(v string) bool { n, ok := integer(v); return ok && n == 0 }, "0 turns it off"}
	offAtMostZero = &offValues{func(v string) bool { n, ok := integer(v); return ok && n <= 0 }, "0 turns it off"}
)

func integer(v string) (int64, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// unimplemented lists, by feature, the keys of ZooKeeper 3.8 (and one of 3.9)
// that ask for security or for a limit Collie does not implement yet.
//
// Security keys are refused whatever their value, unless the key is a
// switch and its value turns the feature off (sslQuorum=false,
// secureClientPort=0): operators leave such lines in files, and they ask
// for nothing. A key that only configures a mechanism (a keystore, a
// principal, a login context) has no such value. ZooKeeper turns TLS and
// SASL on from several places, some of them outside zoo.cfg (JVM options,
// the JAAS file), so Collie cannot tell a configured mechanism from a
// leftover one: it refuses both.
//
// Limit keys are refused unless their value turns the limit off. Keys that
// only tune a limit (a throttle's fill rate, stall time or weights,
// largeRequestMaxBytes) stay warnings: without the key that turns the limit
// on, refused here, ZooKeeper ignores them too.
//
// ZooKeeper turns a zoo.cfg key it does not know into the Java system
// property "zookeeper.<key>", and its documentation names many keys by that
// property, so both spellings occur in files; both are refused. Names are
// compared without regard to case: a key that ZooKeeper would ignore for
// its case still says what the operator wanted.
//
// Deliberately not refused, although they sound related:
//   - globalOutstandingLimit: flow control ZooKeeper applies whether or
//     not the key is set (1000 by default), so the key asks for nothing a
//     file without it does not; Collie bounds each connection's requests
//     in flight instead.
//   - skipACL, forceSync=no, IPAuthenticationProvider.usexforwardedfor:
//     they weaken ZooKeeper; Collie keeps checking ACLs, syncing its log
//     and using the peer's address, which is the safe side.
//   - fips-mode, netty.server.outstandingHandshake.limit and
//     netty.server.earlyDropSecureConnectionHandshakes: they restrict TLS
//     and SASL work Collie never does, so nothing they promise is broken.
//   - reconfigEnabled, multiAddress.*: features, not protections; Collie
//     has no reconfig and refuses multi-address server lines itself.
var unimplemented = []unimplementedFeature{
	{
		// Collie serves TLS on the client port and between servers (see
		// parser.setTLS). These keys check revocation or replace the way
		// ZooKeeper builds its TLS context; client.secure is a client's
		// switch, sometimes copied into zoo.cfg. Other ssl.* and
		// ssl.quorum.* keys are ones Collie does not know, which may ask
		// for more.
		name: "a TLS setting Collie does not implement",
		keys: []refusal{
			{"client.secure", offFalse},
			{"ssl.crl", offFalse},
			{"ssl.ocsp", offFalse},
			{"ssl.context.supplier.class", nil},
			{"ssl.quorum.crl", offFalse},
			{"ssl.quorum.ocsp", offFalse},
			{"ssl.quorum.context.supplier.class", nil},
			{"ssl.*", nil},
		},
	},
	{
		// Collie implements these switches under ZooKeeper's spelling
		// (parser.setTLS), which is all that reaches the parser; any
		// other case of them, which ZooKeeper would ignore, still says
		// that TLS between servers was wanted.
		name: "TLS between servers under a spelling ZooKeeper does not read (sslQuorum, portUnification, sslQuorumReloadCertFiles)",
		keys: []refusal{
			{"sslQuorum", offFalse},
			{"sslQuorumReloadCertFiles", offFalse},
			{"portUnification", offFalse},
		},
	},
	{
		// As above, for the switches of HTTPS on the admin port (parser.set).
		name: "HTTPS on the admin port under a spelling ZooKeeper does not read (admin.forceHttps, admin.portUnification, admin.needClientAuth)",
		keys: []refusal{
			{"admin.forceHttps", offFalse},
			{"admin.portUnification", offFalse},
			{"admin.needClientAuth", offFalse},
		},
	},
	{
		// Collie's providers are digest and ip, built in as in ZooKeeper,
		// sasl and x509 (setSASL and setX509 take authProvider.N naming
		// them); naming the classes of the first two asks for nothing more.
		name: "an authentication provider Collie does not have",
		keys: []refusal{
			{"authProvider.*", &offValues{
				func(v string) bool {
					return strings.EqualFold(v, "org.apache.zookeeper.server.auth.DigestAuthenticationProvider") ||
						strings.EqualFold(v, "org.apache.zookeeper.server.auth.IPAuthenticationProvider")
				},
				"DigestAuthenticationProvider, IPAuthenticationProvider, SASLAuthenticationProvider and X509AuthenticationProvider are accepted",
			}},
		},
	},
	{
		// SASL for clients is implemented (sasl.go); these keys configure
		// parts of it Collie does not have: the client side's settings
		// (sasl.client.username, sasl.clientconfig, ...) copied into
		// zoo.cfg, and a user whom every sasl ACL lets in.
		name: "a SASL setting Collie does not implement",
		keys: []refusal{
			{"sasl.*", nil},
			{"sasl.client", offFalse}, // a client's switch, sometimes copied into zoo.cfg
			{"letAnySaslUserDoX", nil},
		},
	},
	{
		// How servers name each other's Kerberos principals: Kerberos
		// between servers is not implemented (a quorum section logging in
		// with Krb5LoginModule stops the start). The client port's
		// Kerberos keys are parsed (kerberos.go).
		name: "Kerberos between servers",
		keys: []refusal{
			{"kerberos.canonicalizeHostNames", offFalse},
		},
	},
	{
		// ZooKeeper's x509 identity is the certificate's subject. This key
		// asks for another (a subject alternative name), which no Apache
		// ZooKeeper release has (3.8, 3.9); some vendors' builds do.
		name: "an x509 identity other than the certificate's subject",
		keys: []refusal{
			{"ssl.clientCertIdType", nil},
		},
	},
	{
		// EnsembleAuthenticationProvider refuses clients that name
		// another ensemble.
		name: "ensemble authentication",
		keys: []refusal{
			{"ensembleAuthName", nil},
		},
	},
	{
		// Turning digest off keeps passwords (superDigest's among them)
		// from being accepted at all; Collie would accept them.
		name: "digest authentication turned off",
		keys: []refusal{
			{"DigestAuthenticationProvider.enabled", &offValues{
				func(v string) bool { return strings.EqualFold(v, "true") }, "true is accepted",
			}},
		},
	},
	{
		name: "a digest algorithm other than SHA1",
		keys: []refusal{
			{"DigestAuthenticationProvider.digestAlg", &offValues{
				func(v string) bool {
					return strings.EqualFold(v, "SHA1") || strings.EqualFold(v, "SHA-1") || strings.EqualFold(v, "SHA")
				},
				"SHA1 is accepted",
			}},
		},
	},
	{
		name: "audit logging",
		keys: []refusal{
			{"audit.enable", offFalse},
			{"audit.impl.class", nil},
		},
	},
	{
		// Collie enforces quotas under ZooKeeper's spelling (parser.set);
		// any other case of the key still says that enforcement was wanted.
		name: "quota enforcement under a spelling ZooKeeper does not read (enforceQuota)",
		keys: []refusal{
			{"enforceQuota", offFalse},
		},
	},
	{
		name: "a limit on the connections to the server",
		keys: []refusal{
			{"maxCnxns", offAtMostZero}, // ZooKeeper takes a negative value as 0
		},
	},
	{
		// BlueThrottle reads connection_throttle_tokens; the admin guide
		// calls the key connectionMaxTokens. A negative count throttles
		// every connection, so only 0 is off.
		name: "connection throttling",
		keys: []refusal{
			{"connection_throttle_tokens", offZero},
			{"connectionMaxTokens", offZero},
		},
	},
	{
		// As above, the admin guide's names and the properties read differ.
		name: "request throttling",
		keys: []refusal{
			{"request_throttle_max_requests", offAtMostZero},
			{"requestThrottleLimit", offAtMostZero},
			{"throttled_op_wait_time", offAtMostZero},
			{"throttledOpWaitTime", offAtMostZero},
		},
	},
	{
		// largeRequestMaxBytes bounds the bytes of requests above this
		// threshold. ZooKeeper takes 0 and values below -1 as -1: off.
		name: "a limit on large requests in flight",
		keys: []refusal{
			{"largeRequestThreshold", &offValues{offAtMostZero.accept, "-1 turns it off"}},
		},
	},
}

// notImplemented returns what key asks for when Collie does not implement
// it yet and value does not turn it off; ok is false otherwise.
func notImplemented(key, value string) (k NotImplementedKey, ok bool) {
	name := key
	if len(name) > len("zookeeper.") && strings.EqualFold(name[:len("zookeeper.")], "zookeeper.") {
		name = name[len("zookeeper."):]
	}
	// The most specific pattern decides, so that sasl.client=false is
	// accepted although sasl.* is refused.
	var found *refusal
	var feature string
	for i := range unimplemented {
		f := &unimplemented[i]
		for j := range f.keys {
			r := &f.keys[j]
			if matches(r.key, name) && (found == nil || len(r.key) > len(found.key)) {
				found, feature = r, f.name
			}
		}
	}
	if found == nil || found.off != nil && found.off.accept(value) {
		return NotImplementedKey{}, false
	}
	k = NotImplementedKey{Key: key, Value: value, Feature: feature}
	if found.off != nil {
		k.Accepted = found.off.text
	}
	return k, true
}

func matches(pattern, name string) bool {
	base, family := strings.CutSuffix(pattern, ".*")
	if !family {
		return strings.EqualFold(pattern, name)
	}
	if len(name) == len(base) {
		return strings.EqualFold(base, name)
	}
	return len(name) >= len(base)+1 && strings.EqualFold(name[:len(base)+1], base+".")
}
