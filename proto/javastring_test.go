package proto

import (
	"testing"
	"unicode/utf8"
)

// TestJavaString checks the decoding against what Java 17's new String(b,
// UTF_8).getBytes(UTF_8) returned for the same bytes.
func TestJavaString(t *testing.T) {
	const r = "\uFFFD"
	cases := []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"\xe2\x82\xac", "\xe2\x82\xac"},
		{"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},
		{"\xed\x9f\xbf", "\xed\x9f\xbf"},
		{"\xff", r},
		{"\xc3", r},
		{"\xe2\x82", r},        // truncated at the end: one for both
		{"\xe2\x82A", r + "A"}, // one for the two bytes read
		{"\xe2\x82(", r + "("},
		{"\xed\xa0\x80", r},         // a surrogate
		{"\xc0\xaf", r + r},         // overlong: one per byte
		{"\xe0\x80\x80", r + r + r}, // overlong three-byte form
		{"\xf0\x90\x80", r},
		{"\xf0\x90\x80A", r + "A"},
		{"\xf0\x90A", r + "A"},
		{"\xf4\x90\x80\x80", r + r + r + r}, // above U+10FFFF
	}
	for _, c := range cases {
		if got := JavaString(c.in); got != c.want {
			t.Errorf("JavaString(%x) = %x, want %x", c.in, got, c.want)
		}
	}
}

func FuzzJavaString(f *testing.F) {
	for _, s := range []string{"", "a", "\xff", "\xe2\x82", "\xf0\x90\x80A", "\xed\xa0\x80"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := JavaString(string(b))
		if !utf8.ValidString(s) {
			t.Fatalf("JavaString(%x) = %x, not UTF-8", b, s)
		}
		if utf8.Valid(b) && s != string(b) {
			t.Fatalf("JavaString changed valid UTF-8 %x into %x", b, s)
		}
		if again := JavaString(s); again != s {
			t.Fatalf("JavaString is not stable on %x: %x then %x", b, s, again)
		}
	})
}

func TestJavaParseLong(t *testing.T) {
	ok := map[string]int64{"0": 0, "+7": 7, "-12": -12, "\u0663\u0660": 30, "9223372036854775807": 9223372036854775807, "-9223372036854775808": -9223372036854775808}
	for s, want := range ok {
		if got, valid := JavaParseLong(s); !valid || got != want {
			t.Errorf("JavaParseLong(%q) = %d, %v; want %d", s, got, valid, want)
		}
	}
	for _, s := range []string{"", "-", "+", "1.0", " 1", "9223372036854775808", "-9223372036854775809", "0x10", "\U0001D7D9"} {
		if got, valid := JavaParseLong(s); valid {
			t.Errorf("JavaParseLong(%q) = %d, want no number", s, got)
		}
	}
}
