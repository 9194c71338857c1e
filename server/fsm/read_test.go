package fsm

import "testing"

// TestMaskDigest checks the masking of digest ids against what ZooKeeper
// 3.8's getACL returned for the same ids (see zkcompat's
// TestAuthAgainstZooKeeper).
func TestMaskDigest(t *testing.T) {
	for id, want := range map[string]string{
		"u:D/InIHSb7yEEbrWz8b9l71RjZJU=": "u:x",
		"u:a\nb":                         "u:x\nb",
		"u:\nb":                          "u:x\nb",
		"u:a\rb":                         "u:x\rb",
		"u:a\r\nb":                       "u:x\r\nb",
		"u:a\u0085b":                     "u:x\u0085b",
		"u:a\u2028b":                     "u:x\u2028b",
		"u:a\tb":                         "u:x",
	} {
		if got := maskDigest(id); got != want {
			t.Errorf("maskDigest(%q) = %q, want %q", id, got, want)
		}
	}
}
