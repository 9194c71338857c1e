package config

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A JAASModule is one login module of a section of a JAAS login
// configuration file: its class, its control flag and its options.
type JAASModule struct {
	Class   string
	Flag    string            // required, requisite, sufficient or optional, in lower case
	Options map[string]string // a key given twice keeps its last value, as in Java
}

// ParseJAAS reads a JAAS login configuration file, the file Java's
// java.security.auth.login.config names, as Java's default
// implementation reads it:
//
//	Server {
//	    org.apache.zookeeper.server.auth.DigestLoginModule required
//	    user_bob="bobsecret";
//	};
//
// Sections are named, and hold login modules, each a class name, a
// control flag and key=value options up to a semicolon. Names and values
// are words (letters, digits, and . - _ $ *, not starting with a digit, a
// dot or a dash) or strings quoted with " or ', where a backslash escapes
// as in Java. Comments are /* ... */, and // or a lone / up to the end of
// the line. A section named twice is an error. Java expands ${property}
// in option values from its system properties, which Collie does not
// have: a value holding "${" is an error rather than taken as it is.
func ParseJAAS(data []byte) (map[string][]JAASModule, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("JAAS file: not UTF-8 text")
	}
	p := jaasParser{s: string(data), line: 1}
	sections := make(map[string][]JAASModule)
	if err := p.next(); err != nil {
		return nil, err
	}
	for p.kind != tokEOF {
		if p.kind != tokWord && p.kind != tokQuoted {
			return nil, p.errorf("expected a section name, found %s", p.describe())
		}
		name := p.text
		if err := p.next(); err != nil {
			return nil, err
		}
		if err := p.expect("{"); err != nil {
			return nil, err
		}
		var modules []JAASModule
		for !(p.kind == tokPunct && p.text == "}") {
			class, err := p.value("a login module class name")
			if err != nil {
				return nil, err
			}
			flag, err := p.value("a control flag")
			if err != nil {
				return nil, err
			}
			flag = strings.ToLower(flag)
			switch flag {
			case "required", "requisite", "sufficient", "optional":
			default:
				return nil, p.errorf("invalid control flag %q: required, requisite, sufficient or optional", flag)
			}
			m := JAASModule{Class: class, Flag: flag, Options: make(map[string]string)}
			for !(p.kind == tokPunct && p.text == ";") {
				key, err := p.value("an option name")
				if err != nil {
					return nil, err
				}
				if err := p.expect("="); err != nil {
					return nil, err
				}
				line := p.line
				v, err := p.value("an option value")
				if err != nil {
					return nil, err
				}
				if strings.Contains(v, "${") {
					return nil, fmt.Errorf("JAAS file: line %d: option %s: Java system properties (${...}) are not expanded; write the value itself", line, key)
				}
				m.Options[key] = v
			}
			if err := p.next(); err != nil {
				return nil, err
			}
			modules = append(modules, m)
		}
		if err := p.next(); err != nil {
			return nil, err
		}
		if err := p.expect(";"); err != nil {
			return nil, err
		}
		if _, dup := sections[name]; dup {
			return nil, p.errorf("section %s is given twice", name)
		}
		sections[name] = modules
	}
	return sections, nil
}

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokWord
	tokQuoted
	tokNumber
	tokPunct
)

// jaasParser is a tokenizer configured as Java's JAAS file reader
// configures java.io.StreamTokenizer.
type jaasParser struct {
	s    string
	i    int
	line int
	kind tokenKind
	text string
}

func (p *jaasParser) errorf(format string, args ...any) error {
	return fmt.Errorf("JAAS file: line %d: %s", p.line, fmt.Sprintf(format, args...))
}

func (p *jaasParser) describe() string {
	switch p.kind {
	case tokEOF:
		return "the end of the file"
	case tokNumber:
		return "a number (quote it)"
	}
	return strconv.Quote(p.text)
}

func (p *jaasParser) expect(punct string) error {
	if p.kind != tokPunct || p.text != punct {
		return p.errorf("expected %q, found %s", punct, p.describe())
	}
	return p.next()
}

// value takes a word or quoted string.
func (p *jaasParser) value(what string) (string, error) {
	if p.kind != tokWord && p.kind != tokQuoted {
		return "", p.errorf("expected %s, found %s", what, p.describe())
	}
	v := p.text
	return v, p.next()
}

func isWordStart(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0xa0 || r == '$' || r == '_' || r == '*'
}

func isWordPart(r rune) bool {
	return isWordStart(r) || r >= '0' && r <= '9' || r == '.' || r == '-'
}

// next reads the next token.
func (p *jaasParser) next() error {
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '\n':
			p.line++
			p.i++
		case c <= ' ':
			p.i++
		case c == '/' && strings.HasPrefix(p.s[p.i:], "/*"):
			end := strings.Index(p.s[p.i+2:], "*/")
			if end < 0 {
				p.line += strings.Count(p.s[p.i:], "\n")
				p.i = len(p.s)
				continue
			}
			p.line += strings.Count(p.s[p.i:p.i+2+end], "\n")
			p.i += end + 4
		case c == '/':
			// "//" and, as Java's tokenizer has '/' for its comment
			// character, a lone '/' too.
			for p.i < len(p.s) && p.s[p.i] != '\n' && p.s[p.i] != '\r' {
				p.i++
			}
		default:
			return p.token()
		}
	}
	p.kind, p.text = tokEOF, ""
	return nil
}

func (p *jaasParser) token() error {
	r, size := utf8.DecodeRuneInString(p.s[p.i:])
	switch {
	case isWordStart(r):
		start := p.i
		for p.i < len(p.s) {
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			if !isWordPart(r) {
				break
			}
			p.i += size
		}
		p.kind, p.text = tokWord, p.s[start:p.i]
	case r >= '0' && r <= '9' || r == '.' || r == '-':
		// Java reads a number here, which is neither a name nor a value.
		start := p.i
		for p.i < len(p.s) && (p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '.' || p.s[p.i] == '-') {
			p.i++
		}
		p.kind, p.text = tokNumber, p.s[start:p.i]
	case r == '"' || r == '\'':
		return p.quoted(byte(r))
	default:
		p.kind, p.text = tokPunct, p.s[p.i:p.i+size]
		p.i += size
	}
	return nil
}

// quoted reads a quoted string as java.io.StreamTokenizer does: it ends at
// the closing quote or, unclosed, at the end of the line; a backslash
// escapes a, b, f, n, r, t, v, up to three octal digits, or the character
// after it.
func (p *jaasParser) quoted(q byte) error {
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == q {
			p.i++
			break
		}
		if c == '\n' || c == '\r' {
			break
		}
		p.i++
		if c != '\\' || p.i == len(p.s) {
			b.WriteByte(c)
			continue
		}
		c = p.s[p.i]
		p.i++
		switch c {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		default:
			if c < '0' || c > '7' {
				b.WriteByte(c)
				continue
			}
			n := int(c - '0')
			limit := 2
			if c > '3' {
				limit = 1
			}
			for ; limit > 0 && p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '7'; limit-- {
				n = n*8 + int(p.s[p.i]-'0')
				p.i++
			}
			b.WriteRune(rune(n))
		}
	}
	p.kind, p.text = tokQuoted, b.String()
	return nil
}

// The login modules a ZooKeeper server's section may name.
const (
	digestLoginModule = "org.apache.zookeeper.server.auth.DigestLoginModule"
	krb5LoginModule   = "com.sun.security.auth.module.Krb5LoginModule"
)

// SASLUsers returns the DIGEST-MD5 users of a JAAS file's section, as
// ZooKeeper's SaslServerCallbackHandler collects them: every option
// user_<name> of every module of the section gives user <name> its
// password. ok is false when the file has no such section, in which case
// ZooKeeper runs without SASL. A module other than DigestLoginModule and
// Krb5LoginModule is an error.
func SASLUsers(sections map[string][]JAASModule, section string) (users map[string]string, ok bool, err error) {
	modules, ok := sections[section]
	if !ok {
		return nil, false, nil
	}
	users = make(map[string]string)
	for _, m := range modules {
		switch m.Class {
		case digestLoginModule, krb5LoginModule:
		default:
			return nil, true, fmt.Errorf("JAAS section %s: login module %s is not supported; Collie has %s and %s", section, m.Class, digestLoginModule, krb5LoginModule)
		}
		for k, v := range m.Options {
			if name, found := strings.CutPrefix(k, "user_"); found {
				users[name] = v
			}
		}
	}
	return users, true, nil
}

// loadSASL reads the JAAS file named by c.JAASConfigFile, if any, into
// c.SASLUsers and, when its section logs in with Kerberos,
// c.SASLKerberos, then the krb5.conf and the keytab; and, with
// quorum.auth.enableSasl, into c.QuorumAuth. A file without the client
// port's section leaves the client port without SASL, as in ZooKeeper
// (see NoSASLSection).
func (c *Config) loadSASL(getenv func(string) string) error {
	if c.JAASConfigFile == "" {
		return nil
	}
	data, err := os.ReadFile(c.JAASConfigFile)
	if err != nil {
		return fmt.Errorf("java.security.auth.login.config: %w", err)
	}
	sections, err := ParseJAAS(data)
	if err != nil {
		return fmt.Errorf("%s: %w", c.JAASConfigFile, err)
	}
	users, ok, err := SASLUsers(sections, c.saslSection())
	if err != nil {
		return fmt.Errorf("%s: %w", c.JAASConfigFile, err)
	}
	if ok {
		c.SASLUsers = users
		if err := c.loadKerberos(getenv, sections); err != nil {
			return err
		}
	}
	if !c.Standalone {
		if err := c.QuorumAuth.load(c.JAASConfigFile, sections); err != nil {
			return err
		}
	}
	return nil
}

// loadKerberos reads the Kerberos login of the client port's section, if
// it has one, into c.SASLKerberos, then the krb5.conf and the keytab.
func (c *Config) loadKerberos(getenv func(string) string, sections map[string][]JAASModule) error {
	// A section with a Krb5LoginModule gives ZooKeeper's login a
	// Kerberos principal, and then its server offers GSSAPI alone: the
	// DIGEST-MD5 users of the section authenticate no one.
	for _, m := range sections[c.saslSection()] {
		if m.Class == krb5LoginModule {
			var err error
			if c.SASLKerberos, err = krb5Login(c.saslSection(), m); err != nil {
				return fmt.Errorf("%s: %w", c.JAASConfigFile, err)
			}
			break
		}
	}
	if err := c.loadKrb5Conf(getenv, c.SASLKerberos != nil); err != nil {
		return err
	}
	if c.SASLKerberos != nil {
		if err := c.loadKeytab(); err != nil {
			return fmt.Errorf("%s: section %s: %w", c.JAASConfigFile, c.saslSection(), err)
		}
	}
	return nil
}
