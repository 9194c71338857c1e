package sasl

import (
	"fmt"
	"slices"

	"github.com/collie-io/collie/internal/rfc2831"
)

// maxDirectives bounds the directives of one digest-response. A response
// is at most MaxResponse bytes, so this only stops a flood of empty
// elements from costing more than the bytes do.
const maxDirectives = 64

// parseDirectives reads a digest-response, a comma-separated list of
// key=value directives (RFC 2831 section 7.1), as Java's DIGEST-MD5
// provider reads it (rfc2831.Parse). Keys it does not know are ignored; a
// known key given twice is an error. known lists the keys in lower case;
// the result holds the value of each key found, by its lower-case key.
func parseDirectives(b []byte, known ...string) (map[string][]byte, error) {
	d, err := rfc2831.Parse(b, maxDirectives)
	if err != nil {
		return nil, fmt.Errorf("digest-response: %w", err)
	}
	values := make(map[string][]byte, len(known))
	for _, x := range d {
		if !slices.Contains(known, x.Key) {
			continue
		}
		if _, dup := values[x.Key]; dup {
			return nil, fmt.Errorf("digest-response: more than one %q", x.Key)
		}
		values[x.Key] = []byte(x.Value)
	}
	return values, nil
}
