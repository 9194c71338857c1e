package proto

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// JavaString returns the bytes of b as ZooKeeper sees them after decoding
// them into a Java String as UTF-8 (new String(b, UTF_8), which is also how
// jute reads every string), encoded back in UTF-8. Valid UTF-8 comes back
// unchanged; each malformed sequence becomes one U+FFFD, counted the way
// the JDK counts them, which is not one per byte: a truncated three-byte
// sequence, for instance, is a single replacement.
func JavaString(b string) string {
	if utf8.ValidString(b) {
		return b
	}
	var s strings.Builder
	s.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			s.WriteByte(c)
			i++
			continue
		}
		need, lo, hi := utf8Lead(c)
		if need == 0 || (i+1 < len(b) && (b[i+1] < lo || b[i+1] > hi)) {
			// A byte that starts nothing, or a second byte that cannot
			// follow it: the first byte alone is malformed.
			s.WriteRune(utf8.RuneError)
			i++
			continue
		}
		// Otherwise the sequence runs over the continuation bytes that
		// follow, as far as it needs; shorter, it is one malformed
		// sequence, and so is a complete one that encodes a surrogate.
		end, k := i+1+need, i+1
		for k < end && k < len(b) && b[k]&0xc0 == 0x80 {
			k++
		}
		if k == end && !(c == 0xed && b[i+1] >= 0xa0) {
			s.WriteString(b[i:k])
		} else {
			s.WriteRune(utf8.RuneError)
		}
		i = k
	}
	return s.String()
}

// utf8Lead returns how many continuation bytes the lead byte c wants and
// the range its first continuation byte must be in, by the table of
// well-formed UTF-8 (which rules out overlong forms and code points above
// U+10FFFF); need is 0 for a byte that leads nothing.
func utf8Lead(c byte) (need int, lo, hi byte) {
	switch {
	case c >= 0xc2 && c <= 0xdf:
		return 1, 0x80, 0xbf
	case c == 0xe0:
		return 2, 0xa0, 0xbf
	case c >= 0xe1 && c <= 0xef:
		return 2, 0x80, 0xbf
	case c == 0xf0:
		return 3, 0x90, 0xbf
	case c >= 0xf1 && c <= 0xf3:
		return 3, 0x80, 0xbf
	case c == 0xf4:
		return 3, 0x80, 0x8f
	}
	return 0, 0, 0
}

// JavaDigit returns the value of r as a decimal digit to Java's
// Character.digit(ch, 10): a digit of any script (Unicode category Nd) of
// the basic plane, or -1. Java reads a string by UTF-16 units, so a digit
// beyond the basic plane is two surrogates to it, and no digit.
func JavaDigit(r rune) int {
	if r >= '0' && r <= '9' {
		return int(r - '0')
	}
	if r < 0x80 || r > 0xffff {
		return -1
	}
	// Every run of decimal digits in Unicode is whole tens, zero first.
	for _, rg := range unicode.Nd.R16 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) && rg.Stride == 1 {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	return -1
}

// JavaParseLong parses s as Java's Long.parseLong(s): an optional sign,
// then at least one decimal digit of any script of the basic plane
// (JavaDigit), within the range of a long.
func JavaParseLong(s string) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var n uint64
	limit := uint64(1<<63 - 1)
	if neg {
		limit++
	}
	for _, r := range s {
		d := JavaDigit(r)
		if d < 0 || n > (limit-uint64(d))/10 {
			return 0, false
		}
		n = n*10 + uint64(d)
	}
	if neg {
		return int64(-n), true
	}
	return int64(n), true
}
