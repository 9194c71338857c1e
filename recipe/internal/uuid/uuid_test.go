package uuid

import (
	"regexp"
	"testing"
)

// A UUID is version 4, variant 1, in Java's text form, and new each time.
func TestNew(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		id := New()
		if !form.MatchString(id) {
			t.Fatalf("%q is not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("%q made twice", id)
		}
		seen[id] = true
	}
}
