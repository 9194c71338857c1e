package digestmd5

import (
	"errors"
	"fmt"
	"strings"
)

// maxDirectives bounds the elements of one server token, so a flood of
// tiny elements costs no more than its bytes.
const maxDirectives = 32

// directive is one key=value element of a server token; key is in lower
// case.
type directive struct{ key, value string }

// directives are a server token's elements, in order. A digest-challenge
// may offer several realms, so keys may repeat; the caller decides which
// may.
type directives []directive

func (d directives) count(key string) int {
	n := 0
	for _, x := range d {
		if x.key == key {
			n++
		}
	}
	return n
}

// first returns the value of the first element named key.
func (d directives) first(key string) (string, bool) {
	for _, x := range d {
		if x.key == key {
			return x.value, true
		}
	}
	return "", false
}

// single returns the value of key when it is given exactly once.
func (d directives) single(key string) (string, bool) {
	if d.count(key) != 1 {
		return "", false
	}
	return d.first(key)
}

var errSyntax = errors.New("malformed server token")

// parseDirectives reads a server token, RFC 2831's #rule list of
// key=value elements: keys case-insensitive, values a token or a quoted
// string in which a backslash takes the next byte as it is, linear white
// space around elements and empty elements ignored.
func parseDirectives(b []byte) (directives, error) {
	var out directives
	s := scanner{b: b}
	for {
		s.skip(" \t\r\n,")
		if s.done() {
			return out, nil
		}
		if len(out) == maxDirectives {
			return nil, fmt.Errorf("%w: more than %d elements", errSyntax, maxDirectives)
		}
		key := strings.ToLower(s.until("= \t\r\n,"))
		if key == "" {
			return nil, fmt.Errorf("%w: an element without a name", errSyntax)
		}
		s.skip(" \t\r\n")
		if !s.take('=') {
			return nil, fmt.Errorf("%w: %q has no value", errSyntax, key)
		}
		s.skip(" \t\r\n")
		var value string
		if s.take('"') {
			v, ok := s.quoted()
			if !ok {
				return nil, fmt.Errorf("%w: the value of %q has no closing quote", errSyntax, key)
			}
			value = v
		} else {
			value = s.until(" \t\r\n,")
			if value == "" {
				return nil, fmt.Errorf("%w: %q has no value", errSyntax, key)
			}
		}
		s.skip(" \t\r\n")
		if !s.done() && !s.take(',') {
			return nil, fmt.Errorf("%w: ',' expected after %q", errSyntax, key)
		}
		out = append(out, directive{key, value})
	}
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
