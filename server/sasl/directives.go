package sasl

import (
	"errors"
	"fmt"
	"strings"
)

// maxDirectives bounds the directives of one digest-response. A response
// is at most MaxResponse bytes, so this only stops a flood of empty
// elements from costing more than the bytes do.
const maxDirectives = 64

var errSyntax = errors.New("malformed digest-response")

// parseDirectives reads a digest-response, a comma-separated list of
// key=value directives (RFC 2831 section 7.1), as Java's DIGEST-MD5
// provider reads it: keys without regard to case, values quoted or not,
// a backslash in a quoted value taking the next byte as it is, linear
// white space around elements skipped, empty elements ignored. Keys it
// does not know are ignored; a known key given twice is an error. known
// lists the keys in lower case; the result holds the value of each key
// found, by its lower-case key.
func parseDirectives(b []byte, known ...string) (map[string][]byte, error) {
	values := make(map[string][]byte, len(known))
	i := skipLWS(b, 0)
	for n := 0; i < len(b); n++ {
		if b[i] == ',' {
			i = skipLWS(b, i+1)
			n--
			continue
		}
		if n == maxDirectives {
			return nil, fmt.Errorf("%w: more than %d directives", errSyntax, maxDirectives)
		}
		start := i
		for i < len(b) && b[i] != '=' && b[i] != ',' && !isLWS(b[i]) {
			i++
		}
		key := strings.ToLower(string(b[start:i]))
		if key == "" {
			return nil, fmt.Errorf("%w: empty directive key", errSyntax)
		}
		i = skipLWS(b, i)
		if i == len(b) || b[i] != '=' {
			return nil, fmt.Errorf("%w: '=' expected after %q", errSyntax, key)
		}
		i = skipLWS(b, i+1)
		if i == len(b) {
			return nil, fmt.Errorf("%w: %q has no value", errSyntax, key)
		}
		var value []byte
		if b[i] == '"' {
			i++
			closed := false
			for i < len(b) {
				c := b[i]
				i++
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' {
					if i == len(b) {
						break
					}
					c = b[i]
					i++
				}
				value = append(value, c)
			}
			if !closed {
				return nil, fmt.Errorf("%w: unmatched quote in %q", errSyntax, key)
			}
			if i < len(b) && b[i] != ',' && !isLWS(b[i]) {
				return nil, fmt.Errorf("%w: ',' expected after the quoted value of %q", errSyntax, key)
			}
		} else {
			start := i
			for i < len(b) && b[i] != ',' && !isLWS(b[i]) {
				i++
			}
			value = append([]byte{}, b[start:i]...)
		}
		if value == nil {
			value = []byte{}
		}
		i = skipLWS(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipLWS(b, i+1)
		}
		if !contains(known, key) {
			continue
		}
		if _, dup := values[key]; dup {
			return nil, fmt.Errorf("%w: more than one %q", errSyntax, key)
		}
		values[key] = value
	}
	return values, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// isLWS reports whether c is linear white space: CR, LF, space or tab.
func isLWS(c byte) bool { return c == '\r' || c == '\n' || c == ' ' || c == '\t' }

func skipLWS(b []byte, i int) int {
	for i < len(b) && isLWS(b[i]) {
		i++
	}
	return i
}

// quote writes s as the quoted-string of a directive value.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}
