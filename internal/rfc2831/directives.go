// Package rfc2831 is what the two sides of SASL DIGEST-MD5 (RFC 2831)
// share: the key=value directive lists its tokens are made of, read and
// written; the random nonces; and the session key and response-value
// from which the client's response and the server's rspauth are both
// computed. The sides themselves, and what each accepts from the other,
// are server/sasl's (the server) and client/digestmd5's (the client).
package rfc2831

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax is what a token that is not a directive list fails with.
var ErrSyntax = errors.New("malformed directive list")

// A Directive is one key=value element of a token; Key is in lower case,
// Value unquoted.
type Directive struct{ Key, Value string }

// Directives are a token's elements, in order. Keys may repeat (a
// digest-challenge may offer several realms): the side that reads them
// decides which may.
type Directives []Directive

// Count returns how many elements are named key.
func (d Directives) Count(key string) int {
	n := 0
	for _, x := range d {
		if x.Key == key {
			n++
		}
	}
	return n
}

// First returns the value of the first element named key.
func (d Directives) First(key string) (string, bool) {
	for _, x := range d {
		if x.Key == key {
			return x.Value, true
		}
	}
	return "", false
}

// Single returns the value of key when it is given exactly once.
func (d Directives) Single(key string) (string, bool) {
	if d.Count(key) != 1 {
		return "", false
	}
	return d.First(key)
}

// Parse reads a token, RFC 2831's #rule list of key=value elements, as
// Java's provider reads it: keys without regard to case; values a token
// or a quoted string in which a backslash takes the next byte as it is;
// elements separated by commas or linear white space (ZooKeeper takes
// nc=00000001 cnonce="..."), empty ones ignored; a token value may be
// empty when a separator follows it (ZooKeeper takes foo=,), not at the
// end. More than max elements fail it, so that a flood of tiny ones costs
// no more than its bytes.
func Parse(b []byte, max int) (Directives, error) {
	const lws, separators = " \t\r\n", " \t\r\n,"
	var out Directives
	s := scanner{b: b}
	for {
		s.skip(separators)
		if s.done() {
			return out, nil
		}
		if len(out) == max {
			return nil, fmt.Errorf("%w: more than %d elements", ErrSyntax, max)
		}
		key := strings.ToLower(s.until("=" + separators))
		if key == "" {
			return nil, fmt.Errorf("%w: an element without a name", ErrSyntax)
		}
		s.skip(lws)
		if !s.take('=') {
			return nil, fmt.Errorf("%w: '=' expected after %q", ErrSyntax, key)
		}
		s.skip(lws)
		if s.done() {
			return nil, fmt.Errorf("%w: %q has no value", ErrSyntax, key)
		}
		var value string
		if s.take('"') {
			v, ok := s.quoted()
			if !ok {
				return nil, fmt.Errorf("%w: the value of %q has no closing quote", ErrSyntax, key)
			}
			if !s.done() && !s.at(separators) {
				return nil, fmt.Errorf("%w: a separator expected after the value of %q", ErrSyntax, key)
			}
			value = v
		} else {
			value = s.until(separators)
		}
		out = append(out, Directive{key, value})
	}
}

// Quote writes s as a quoted-string.
func Quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// scanner walks a token.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) done() bool { return s.i == len(s.b) }

// skip passes the bytes in set.
func (s *scanner) skip(set string) {
	for s.i < len(s.b) && strings.IndexByte(set, s.b[s.i]) >= 0 {
		s.i++
	}
}

// until returns the bytes up to one in stop, or to the end.
func (s *scanner) until(stop string) string {
	start := s.i
	for s.i < len(s.b) && strings.IndexByte(stop, s.b[s.i]) < 0 {
		s.i++
	}
	return string(s.b[start:s.i])
}

// at reports whether the next byte is in set.
func (s *scanner) at(set string) bool {
	return s.i < len(s.b) && strings.IndexByte(set, s.b[s.i]) >= 0
}

// take passes c if it comes next.
func (s *scanner) take(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// quoted returns the rest of a quoted string whose opening quote was
// taken, unescaped, and passes its closing quote.
func (s *scanner) quoted() (string, bool) {
	var v strings.Builder
	for s.i < len(s.b) {
		c := s.b[s.i]
		s.i++
		switch {
		case c == '"':
			return v.String(), true
		case c == '\\' && s.i < len(s.b):
			v.WriteByte(s.b[s.i])
			s.i++
		default:
			v.WriteByte(c)
		}
	}
	return "", false
}
