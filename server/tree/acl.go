package tree

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/x500"
)

// ACLRef names an ACL in a tree's table of distinct ACLs. Nodes hold a
// reference rather than the ACL: four bytes instead of a slice header, and
// most trees use a handful of distinct ACLs.
type ACLRef uint32

// aclCache is the table of distinct ACLs, counted by the nodes that use
// them, as ZooKeeper's ReferenceCountedACLCache: an ACL no node uses any
// more is dropped, so clients that come and go with ACLs of their own do
// not grow it for ever.
//
// An ACL whose count drops to zero is only dropped by sweep, which the
// state machine calls after each entry and which does nothing while a
// snapshot's cut is open: within an entry, an undo, or a cut, every
// reference already handed out keeps naming the same ACL.
type aclCache struct {
	entries []aclEntry
	byKey   map[string]ACLRef
	free    []ACLRef
	// unused are the ACLs whose count has dropped to zero since the last
	// sweep (some may have been taken up again since).
	unused []ACLRef
}

type aclEntry struct {
	acl  []proto.ACL
	key  string
	refs int
	live bool // in byKey; false for a free slot
}

func newACLCache() aclCache { return aclCache{byKey: make(map[string]ACLRef)} }

func aclKey(acl []proto.ACL) string {
	var b strings.Builder
	for _, a := range acl {
		b.WriteString(strconv.Itoa(int(a.Perms)))
		b.WriteByte(0)
		b.WriteString(a.ID.Scheme)
		b.WriteByte(0)
		b.WriteString(a.ID.ID)
		b.WriteByte(0)
	}
	return b.String()
}

// intern returns the reference of acl, adding it to the table if needed,
// without counting a use.
func (c *aclCache) intern(acl []proto.ACL) ACLRef {
	key := aclKey(acl)
	if ref, ok := c.byKey[key]; ok {
		return ref
	}
	e := aclEntry{acl: append([]proto.ACL(nil), acl...), key: key, live: true}
	var ref ACLRef
	if n := len(c.free); n > 0 {
		ref = c.free[n-1]
		c.free = c.free[:n-1]
		c.entries[ref] = e
	} else {
		ref = ACLRef(len(c.entries))
		c.entries = append(c.entries, e)
	}
	c.byKey[key] = ref
	// Counted as unused until a node takes it, so that an ACL interned
	// and never used is swept too.
	c.unused = append(c.unused, ref)
	return ref
}

func (c *aclCache) get(ref ACLRef) []proto.ACL { return c.entries[ref].acl }

func (c *aclCache) acquire(ref ACLRef) { c.entries[ref].refs++ }

func (c *aclCache) release(ref ACLRef) {
	e := &c.entries[ref]
	e.refs--
	if e.refs < 0 {
		panic(fmt.Sprintf("tree: ACL %d released more often than taken", ref))
	}
	if e.refs == 0 {
		c.unused = append(c.unused, ref)
	}
}

// sweep drops the ACLs no node uses.
func (c *aclCache) sweep() {
	for _, ref := range c.unused {
		e := &c.entries[ref]
		if e.refs == 0 && e.live {
			delete(c.byKey, e.key)
			*e = aclEntry{}
			c.free = append(c.free, ref)
		}
	}
	c.unused = c.unused[:0]
}

// len returns the number of distinct ACLs in use or not yet swept.
func (c *aclCache) len() int { return len(c.byKey) }

// Identity schemes known to the server.
const (
	SchemeWorld  = "world"
	SchemeAuth   = "auth"
	SchemeDigest = "digest"
	SchemeIP     = "ip"
	SchemeSuper  = "super"
	SchemeSASL   = "sasl"
	SchemeX509   = "x509"
)

// ACLRules are the rules FixupACL and CheckACL decide by, where Collie's
// have changed. A write decides by the rules of the log entry that carries
// it (see package fsm's entry versions), so it applies the same way on
// every replica however late it is replayed; reads and watch deliveries,
// which no replica repeats, decide by the newest.
type ACLRules uint8

const (
	// ACLRulesZK38 are ZooKeeper 3.8's rules, those of log entries of
	// version 2 on.
	ACLRulesZK38 ACLRules = iota
	// ACLRulesV1 are the rules log entries of version 1 apply under. They
	// differ in FixupACL: schemes and ids are taken as sent, not decoded
	// as Java decodes UTF-8; "auth" expands to the digest and super
	// identities, in the order the caller's connection added them; a
	// digest id is valid with exactly one colon; an ip id is an IPv4 or
	// IPv6 address or prefix as net/netip parses them. And in CheckACL: ip
	// ids match as net/netip compares addresses and prefixes.
	ACLRulesV1

	// ACLRulesSASL, added to ACLRulesZK38, says that the sasl scheme has
	// a provider (authProvider.N=...SASLAuthenticationProvider), as it
	// has in ZooKeeper only when so configured: sasl ids are then valid
	// in ACLs, match, and are among the identities "auth" expands to.
	// Without it a sasl id in an ACL is InvalidACL and matches nothing.
	ACLRulesSASL ACLRules = 1 << 7

	// ACLRulesX509, added to ACLRulesZK38, says that the x509 scheme has a
	// provider (X509AuthenticationProvider: a secure client port, or
	// authProvider.N naming it): x509 ids are then valid in ACLs when
	// Java's X500Principal reads them (x500.Valid), match an x509 id equal
	// to them, and are among the identities "auth" expands to. Without
	// it an x509 id in an ACL is InvalidACL and matches nothing.
	ACLRulesX509 ACLRules = 1 << 6
)

// base returns the rules without the provider bits.
func (r ACLRules) base() ACLRules { return r &^ (ACLRulesSASL | ACLRulesX509) }

// sasl reports whether the sasl scheme has a provider under r.
func (r ACLRules) sasl() bool { return r&ACLRulesSASL != 0 }

// x509 reports whether the x509 scheme has a provider under r.
func (r ACLRules) x509() bool { return r&ACLRulesX509 != 0 }

// CheckACL reports whether a client with the given identities may do an
// operation needing perm on a node with acl, by ZooKeeper's rules: an empty
// ACL allows everything, a super identity allows everything, world:anyone
// matches everyone, digest ids match exactly and ip ids match an address or
// a CIDR range (ipMatches, or ipMatchesV1 under ACLRulesV1). Under
// ACLRulesSASL a sasl id matches a sasl ACL id equal to it, and the sasl id
// "super" matches every sasl ACL id, as SASLAuthenticationProvider.matches.
// Under ACLRulesX509 an x509 id matches an x509 ACL id equal to it.
// (X509AuthenticationProvider.matches also lets the superUser subject
// match every x509 ACL id; the connection that has that subject has the
// super identity too, added by the same server, which passes every ACL.)
func CheckACL(acl []proto.ACL, perm int32, ids []proto.ID, rules ACLRules) bool {
	if len(acl) == 0 {
		return true
	}
	for _, id := range ids {
		if id.Scheme == SchemeSuper {
			return true
		}
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		if a.ID.Scheme == SchemeWorld && a.ID.ID == "anyone" {
			return true
		}
		for _, id := range ids {
			if id.Scheme != a.ID.Scheme {
				continue
			}
			switch id.Scheme {
			case SchemeDigest:
				if id.ID == a.ID.ID {
					return true
				}
			case SchemeSASL:
				if rules.sasl() && (id.ID == "super" || id.ID == a.ID.ID) {
					return true
				}
			case SchemeX509:
				if rules.x509() && id.ID == a.ID.ID {
					return true
				}
			case SchemeIP:
				match := ipMatches
				if rules.base() == ACLRulesV1 {
					match = ipMatchesV1
				}
				if match(id.ID, a.ID.ID) {
					return true
				}
			}
		}
	}
	return false
}

// FixupACL validates the ACL of a create or setACL and expands "auth" ids
// into the caller's authenticated identities, as ZooKeeper's fixupACL does.
// ids are the caller's identities in the order its connection added them.
// It returns ok=false (ZooKeeper's InvalidACL) for an empty ACL, an unknown
// scheme, a malformed id, or an "auth" id from a caller with no
// authenticated identity.
//
// Schemes and ids are first taken as ZooKeeper reads them off the wire,
// invalid UTF-8 replaced (proto.JavaString); equal entries are then
// dropped, but not the entries "auth" expands to, which may repeat others.
// ACLRulesV1 differ, as it says.
func FixupACL(acl []proto.ACL, ids []proto.ID, rules ACLRules) ([]proto.ACL, bool) {
	v1 := rules.base() == ACLRulesV1
	uniq := make([]proto.ACL, 0, len(acl))
	for _, a := range acl {
		if !v1 {
			a.ID = proto.ID{Scheme: proto.JavaString(a.ID.Scheme), ID: proto.JavaString(a.ID.ID)}
		}
		if !containsACL(uniq, a) {
			uniq = append(uniq, a)
		}
	}
	if len(uniq) == 0 {
		return nil, false
	}
	out := make([]proto.ACL, 0, len(uniq))
	var ordered []proto.ID
	for _, a := range uniq {
		switch {
		case a.ID.Scheme == SchemeWorld && a.ID.ID == "anyone":
			out = append(out, a)
		case a.ID.Scheme == SchemeAuth:
			if ordered == nil {
				ordered = ids
				if !v1 {
					ordered = ConnOrder(ids)
				}
			}
			found := false
			for _, id := range ordered {
				// Only identities of a provider that authenticates count:
				// digest, and sasl and x509 when they have providers. Not
				// ip, and not super, which has no provider (ACLRulesV1
				// counted it).
				if id.Scheme == SchemeDigest || id.Scheme == SchemeSASL && rules.sasl() ||
					id.Scheme == SchemeX509 && rules.x509() || v1 && id.Scheme == SchemeSuper {
					found = true
					out = append(out, proto.ACL{Perms: a.Perms, ID: id})
				}
			}
			if !found {
				return nil, false
			}
		case a.ID.Scheme == SchemeDigest:
			ok := validDigest(a.ID.ID)
			if v1 {
				ok = strings.Count(a.ID.ID, ":") == 1
			}
			if !ok {
				return nil, false
			}
			out = append(out, a)
		case a.ID.Scheme == SchemeSASL && rules.sasl():
			if !ValidSASLID(a.ID.ID) {
				return nil, false
			}
			out = append(out, a)
		case a.ID.Scheme == SchemeX509 && rules.x509():
			if !x500.Valid(a.ID.ID) {
				return nil, false
			}
			out = append(out, a)
		case a.ID.Scheme == SchemeIP:
			_, _, ok := parseIPACL(a.ID.ID)
			if v1 {
				ok = validIPV1(a.ID.ID)
			}
			if !ok {
				return nil, false
			}
			out = append(out, a)
		default:
			return nil, false
		}
	}
	return out, true
}

func containsACL(acls []proto.ACL, a proto.ACL) bool {
	for _, b := range acls {
		if a == b {
			return true
		}
	}
	return false
}

// validDigest reports whether id is a digest id to ZooKeeper: Java's
// id.split(":") gives two parts, which drops empty parts at the end, so
// "u:h:" is one and "u:" is not.
func validDigest(id string) bool {
	parts := strings.Split(id, ":")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return len(parts) == 2
}

// ValidSASLID reports whether id is a sasl id to ZooKeeper, which takes
// any id it can read as a Kerberos name: one without "@", or
// primary[/instance]@realm with no further "/" or "@".
func ValidSASLID(id string) bool {
	at := strings.IndexByte(id, '@')
	if at < 0 {
		return true
	}
	primary, realm := id[:at], id[at+1:]
	if strings.ContainsAny(realm, "/@") {
		return false
	}
	_, instance, _ := strings.Cut(primary, "/")
	return !strings.Contains(instance, "/")
}

// parseIPACL parses an ip id as ZooKeeper 3.8's IPAuthenticationProvider:
// IPv4 only, four dot-separated numbers 0 to 255, then optionally a slash
// and a prefix length 0 to 32, every number as Java's Integer.parseInt
// reads it (a sign and leading zeros allowed).
func parseIPACL(s string) (addr uint32, bits int, ok bool) {
	a, prefix, hasPrefix := strings.Cut(s, "/")
	addr, ok = parseIPv4(a)
	if !ok {
		return 0, 0, false
	}
	bits = 32
	if hasPrefix {
		n, ok := javaParseInt(prefix)
		if !ok || n < 0 || n > 32 {
			return 0, 0, false
		}
		bits = int(n)
	}
	return addr, bits, true
}

func parseIPv4(s string) (uint32, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return 0, false
	}
	var addr uint32
	for _, p := range parts {
		n, ok := javaParseInt(p)
		if !ok || n < 0 || n > 255 {
			return 0, false
		}
		addr = addr<<8 | uint32(n)
	}
	return addr, true
}

// javaParseInt parses s as Java's Integer.parseInt(s, 10): an optional
// sign, then at least one decimal digit, of any script of the basic
// multilingual plane (Character.digit), within the range of an int.
func javaParseInt(s string) (int32, bool) {
	if s == "" {
		return 0, false
	}
	neg := s[0] == '-'
	if neg || s[0] == '+' {
		s = s[1:]
		if s == "" {
			return 0, false
		}
	}
	limit := int64(math.MaxInt32)
	if neg {
		limit++
	}
	var n int64
	for _, r := range s {
		d := proto.JavaDigit(r)
		if d < 0 {
			return 0, false
		}
		if n = n*10 + int64(d); n > limit {
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	return int32(n), true
}

// ipMatches reports whether a client whose ip identity is client matches
// the ip id of an ACL, as IPAuthenticationProvider.matches: both are
// masked to the id's prefix length and compared; an address that is not
// IPv4 matches nothing.
func ipMatches(client, acl string) bool {
	a, bits, ok := parseIPACL(acl)
	if !ok {
		return false
	}
	c, ok := parseIPv4(client)
	if !ok {
		return false
	}
	mask := ^uint32(0) << (32 - bits) // 0 for bits 0
	return a&mask == c&mask
}

// validIPV1 reports whether s is an ip id under ACLRulesV1: an IPv4 or
// IPv6 address, or a prefix of one, as net/netip parses them.
func validIPV1(s string) bool {
	if strings.Contains(s, "/") {
		_, err := netip.ParsePrefix(s)
		return err == nil
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}

// ipMatchesV1 is ipMatches under ACLRulesV1: the addresses, IPv4 or IPv6,
// are compared, or the client's is looked for in the id's prefix, as
// net/netip does, an IPv4-mapped client address taken as IPv4.
func ipMatchesV1(client, acl string) bool {
	addr, err := netip.ParseAddr(client)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	if strings.Contains(acl, "/") {
		p, err := netip.ParsePrefix(acl)
		return err == nil && p.Contains(addr)
	}
	a, err := netip.ParseAddr(acl)
	return err == nil && a.Unmap() == addr
}

// DigestID returns the identity that digest auth with auth gives, as
// ZooKeeper's DigestAuthenticationProvider makes it from any input: the
// input decoded as Java decodes UTF-8, then its part before the first
// colon (all of it when there is none), a colon, and the base64 SHA-1 of
// the whole decoded input.
func DigestID(auth string) string {
	auth = proto.JavaString(auth)
	user, _, _ := strings.Cut(auth, ":")
	sum := sha1.Sum([]byte(auth))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// AuthIdentities returns the identities an auth packet of the digest or
// ip scheme adds to a connection from remoteIP, as ZooKeeper's providers
// make them: every digest input is an identity, even one without a colon,
// and the super user's (superDigest, the digest identity
// DigestAuthenticationProvider.superDigest names) comes first with
// super:. ok is false for any other scheme.
func AuthIdentities(scheme string, auth []byte, remoteIP, superDigest string) (ids []proto.ID, ok bool) {
	switch scheme {
	case SchemeDigest:
		id := proto.ID{Scheme: SchemeDigest, ID: DigestID(string(auth))}
		if superDigest != "" && id.ID == superDigest {
			return []proto.ID{{Scheme: SchemeSuper, ID: ""}, id}, true
		}
		return []proto.ID{id}, true
	case SchemeIP:
		return []proto.ID{{Scheme: SchemeIP, ID: remoteIP}}, true
	}
	return nil, false
}
