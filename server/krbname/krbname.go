// Package krbname turns the Kerberos principal a SASL client
// authenticated as into its ZooKeeper identity, as ZooKeeper 3.8's
// KerberosName and SaslServerCallbackHandler do:
//
//  1. the principal is split into primary, instance and realm
//     ("zkcli/host.example.com@EXAMPLE.COM");
//  2. the auth_to_local rules (security.auth_to_local, Hadoop's syntax)
//     map it to a short name; the DEFAULT rule maps a principal of the
//     default realm to its primary;
//  3. the instance is appended ("/host") unless
//     kerberos.removeHostFromPrincipal is true, and the realm ("@REALM")
//     unless kerberos.removeRealmFromPrincipal is true.
//
// The package does no I/O; the default realm comes from the caller, who
// read the krb5.conf.
package krbname

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrNoMapping is what Identity wraps when the rules give a principal no
// short name: no rule applies, or one gives a name with "/" or "@".
var ErrNoMapping = errors.New("krbname: no auth_to_local rule maps the principal")

// A Name is a principal name split as ZooKeeper splits it:
// primary[/instance]@realm, or a name without "@", which is all primary.
type Name struct {
	Primary  string
	Instance string
	Realm    string
	// HasInstance and HasRealm tell an empty instance or realm ("a/@R")
	// from none.
	HasInstance, HasRealm bool
}

// Parse splits s. A name with "@" must read primary[/instance]@realm with
// no other "/" or "@"; a name without is taken whole as the primary.
func Parse(s string) (Name, error) {
	at := strings.IndexByte(s, '@')
	if at < 0 {
		return Name{Primary: s}, nil
	}
	primary, realm := s[:at], s[at+1:]
	n := Name{Primary: primary, Realm: realm, HasRealm: true}
	if p, inst, ok := strings.Cut(primary, "/"); ok {
		n.Primary, n.Instance, n.HasInstance = p, inst, true
	}
	if strings.ContainsAny(n.Realm, "/@") || strings.Contains(n.Instance, "/") {
		return Name{}, fmt.Errorf("krbname: malformed Kerberos name %q", s)
	}
	return n, nil
}

func (n Name) String() string {
	s := n.Primary
	if n.HasInstance {
		s += "/" + n.Instance
	}
	if n.HasRealm {
		s += "@" + n.Realm
	}
	return s
}

// Mapping is ZooKeeper's way from a principal to an identity.
type Mapping struct {
	Rules        *Rules // nil is DEFAULT alone
	DefaultRealm string // the default_realm of the krb5.conf; "" when there is none
	RemoveHost   bool   // kerberos.removeHostFromPrincipal
	RemoveRealm  bool   // kerberos.removeRealmFromPrincipal
}

// Identity returns the sasl identity of principal.
func (m Mapping) Identity(principal string) (string, error) {
	n, err := Parse(principal)
	if err != nil {
		return "", err
	}
	short, err := m.Rules.shortName(n, m.DefaultRealm)
	if err != nil {
		return "", err
	}
	if !m.RemoveHost && n.HasInstance {
		short += "/" + n.Instance
	}
	if !m.RemoveRealm && n.HasRealm {
		short += "@" + n.Realm
	}
	return short, nil
}

// Rules are parsed auth_to_local rules.
type Rules struct {
	rules []rule
}

// rule is DEFAULT or RULE:[n:format](match)s/from/to/[g].
type rule struct {
	isDefault  bool
	components int
	format     string
	match      *regexp.Regexp // nil: every name
	from       *regexp.Regexp // nil: no substitution
	to         string         // a regexp.Expand template
	global     bool
	text       string
}

// ruleSyntax is Hadoop's pattern for one rule, which ZooKeeper applies
// from the start of what is left of the text.
var ruleSyntax = regexp.MustCompile(`^\s*((DEFAULT)|(RULE:\[(\d*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?))`)

// ParseRules parses the value of security.auth_to_local: rules one after
// another, separated by white space. The patterns are Java regular
// expressions; those that Go's RE2 cannot run (back-references,
// look-around) are refused rather than read another way.
func ParseRules(text string) (*Rules, error) {
	var r Rules
	rest := strings.TrimSpace(text)
	for rest != "" {
		m := ruleSyntax.FindStringSubmatchIndex(rest)
		if m == nil {
			return nil, fmt.Errorf("krbname: invalid auth_to_local rule: %s", rest)
		}
		group := func(i int) (string, bool) {
			if m[2*i] < 0 {
				return "", false
			}
			return rest[m[2*i]:m[2*i+1]], true
		}
		text, _ := group(1)
		if _, ok := group(2); ok {
			r.rules = append(r.rules, rule{isDefault: true, text: text})
			rest = rest[m[1]:]
			continue
		}
		n, _ := group(4)
		components, err := strconv.Atoi(n)
		if err != nil {
			return nil, fmt.Errorf("krbname: auth_to_local rule %s: no number of components", text)
		}
		ru := rule{components: components, text: text}
		ru.format, _ = group(5)
		if match, ok := group(7); ok {
			if ru.match, err = compileJava("^(?:" + match + ")$"); err != nil {
				return nil, fmt.Errorf("krbname: auth_to_local rule %s: %w", text, err)
			}
		}
		if from, ok := group(9); ok {
			if ru.from, err = compileJava(from); err != nil {
				return nil, fmt.Errorf("krbname: auth_to_local rule %s: %w", text, err)
			}
			to, _ := group(10)
			if ru.to, err = javaReplacement(to, ru.from.NumSubexp()); err != nil {
				return nil, fmt.Errorf("krbname: auth_to_local rule %s: %w", text, err)
			}
			_, ru.global = group(11)
		}
		r.rules = append(r.rules, ru)
		rest = rest[m[1]:]
	}
	return &r, nil
}

func compileJava(pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("pattern %q is not one Collie can run (Go's RE2 syntax, a subset of Java's): %w", pattern, err)
	}
	return re, nil
}

// javaReplacement turns the replacement of Java's Matcher.replaceAll into
// a template for regexp.Expand: $n refers to a group (more digits are
// taken while they name a group), a backslash escapes the character after
// it, anything else is literal.
func javaReplacement(to string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(to); i++ {
		switch c := to[i]; c {
		case '\\':
			i++
			if i == len(to) {
				return "", fmt.Errorf("replacement %q ends with a backslash", to)
			}
			if to[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(to[i])
			}
		case '$':
			i++
			if i == len(to) || to[i] < '0' || to[i] > '9' {
				return "", fmt.Errorf("replacement %q: $ not followed by a group number", to)
			}
			n := int(to[i] - '0')
			for i+1 < len(to) && to[i+1] >= '0' && to[i+1] <= '9' && n*10+int(to[i+1]-'0') <= groups {
				i++
				n = n*10 + int(to[i]-'0')
			}
			if n > groups {
				return "", fmt.Errorf("replacement %q: no group %d", to, n)
			}
			fmt.Fprintf(&b, "${%d}", n)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// shortName applies the rules to n as KerberosName.getShortName: a name
// without instance and realm is its own short name; otherwise the first
// rule that applies decides, and one that gives a name with "/" or "@"
// is an error, as is no rule applying.
func (r *Rules) shortName(n Name, defaultRealm string) (string, error) {
	if !n.HasInstance && !n.HasRealm {
		return n.Primary, nil
	}
	params := []string{n.Realm, n.Primary}
	if n.HasInstance {
		params = append(params, n.Instance)
	}
	rules := []rule{{isDefault: true, text: "DEFAULT"}}
	if r != nil {
		rules = r.rules
	}
	for _, ru := range rules {
		out, ok, err := ru.apply(params, defaultRealm)
		if err != nil {
			return "", fmt.Errorf("%w %s: %v", ErrNoMapping, n, err)
		}
		if !ok {
			continue
		}
		if strings.ContainsAny(out, "/@") {
			return "", fmt.Errorf("%w %s: rule %s gives %q, which is not a simple name", ErrNoMapping, n, ru.text, out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w %s", ErrNoMapping, n)
}

// apply is Hadoop's Rule.apply: params are the realm, then the
// components of the name.
func (ru rule) apply(params []string, defaultRealm string) (string, bool, error) {
	if ru.isDefault {
		return params[1], params[0] == defaultRealm, nil
	}
	if len(params)-1 != ru.components {
		return "", false, nil
	}
	base, err := replaceParameters(ru.format, params)
	if err != nil {
		return "", false, fmt.Errorf("rule %s: %w", ru.text, err)
	}
	if ru.match != nil && !ru.match.MatchString(base) {
		return "", false, nil
	}
	if ru.from == nil {
		return base, true, nil
	}
	if ru.global {
		return ru.from.ReplaceAllString(base, ru.to), true, nil
	}
	m := ru.from.FindStringSubmatchIndex(base)
	if m == nil {
		return base, true, nil
	}
	out := ru.from.ExpandString(nil, ru.to, base, m)
	return base[:m[0]] + string(out) + base[m[1]:], true, nil
}

// replaceParameters fills the format's $0 (the realm), $1, $2 (the
// components) from params.
func replaceParameters(format string, params []string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); {
		dollar := strings.IndexByte(format[i:], '$')
		if dollar < 0 {
			b.WriteString(format[i:])
			break
		}
		b.WriteString(format[i : i+dollar])
		i += dollar + 1
		j := i
		for j < len(format) && format[j] >= '0' && format[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(format[i:j])
		if err != nil || n >= len(params) {
			return "", fmt.Errorf("bad parameter $%s in format %q: $0 to $%d are given", format[i:j], format, len(params)-1)
		}
		b.WriteString(params[n])
		i = j
	}
	return b.String(), nil
}
