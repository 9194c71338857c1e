package x500

import (
	"math/big"
	"strings"
	"unicode"

	"github.com/collie-io/collie/proto"
)

// Valid reports whether new X500Principal(dn) accepts dn, which is how
// ZooKeeper's X509AuthenticationProvider decides that an x509 id in an ACL
// is valid. Java reads RFC 1779 and RFC 2253 names and more: ',' or ';'
// between RDNs, '+' between the attributes of one, a keyword it knows or
// an OID ("OID.1.2.3" or "1.2.3") before '=', and a value that is empty,
// "#" and the hex of a DER encoding, a quoted string or a string with
// backslash escapes. Valid follows Java's reader step by step, its quirks
// included: separators are found before values are read, and a string
// value ends at the first separator its reader meets, whatever follows.
//
// dn is valid UTF-8 (ACL ids are decoded as Java decodes them first). Every
// character Java's reader looks for is ASCII, so dn is scanned by bytes.
func Valid(dn string) bool {
	if dn == "" {
		return true
	}
	rdnStart, searchFrom, quotes := 0, 0, 0
	for {
		end := indexAny(dn, searchFrom)
		if end < 0 {
			break
		}
		quotes += countQuotes(dn, searchFrom, end)
		if quotes != 1 && !escaped(dn, end, searchFrom) {
			if !validRDN(dn[rdnStart:end]) {
				return false
			}
			rdnStart, quotes = end+1, 0
		}
		searchFrom = end + 1
	}
	return validRDN(dn[rdnStart:])
}

// indexAny returns the index of the first ',' or ';' at or after from, or
// -1.
func indexAny(s string, from int) int {
	i := strings.IndexAny(s[from:], ",;")
	if i < 0 {
		return -1
	}
	return from + i
}

// countQuotes counts the quotes in s[from:to] that no backslash precedes;
// a quote at from counts whatever precedes it, as in Java.
func countQuotes(s string, from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		if s[i] == '"' && (i == from || s[i-1] != '\\') {
			n++
		}
	}
	return n
}

// escaped reports whether the separator at end is escaped, as Java's
// X500Name decides it: one backslash before it escapes it; after two or
// more, it is escaped when the backslashes between from and it, all of
// them and not only the adjacent ones, are odd in number.
func escaped(s string, end, from int) bool {
	switch {
	case end == 1 && s[0] == '\\':
		return true
	case end > 1 && s[end-1] == '\\' && s[end-2] != '\\':
		return true
	case end > 1 && s[end-1] == '\\' && s[end-2] == '\\':
		n := 0
		for i := end - 1; i >= from; i-- {
			if s[i] == '\\' {
				n++
			}
		}
		return n%2 != 0
	}
	return false
}

// validRDN reads one RDN: attributes separated by '+' that no backslash
// precedes, outside quotes.
func validRDN(rdn string) bool {
	avaStart, searchFrom, quotes := 0, 0, 0
	for {
		i := strings.IndexByte(rdn[searchFrom:], '+')
		if i < 0 {
			break
		}
		plus := searchFrom + i
		quotes += countQuotes(rdn, searchFrom, plus)
		if plus > 0 && rdn[plus-1] != '\\' && quotes != 1 {
			if plus == avaStart || !validAVA(rdn[avaStart:plus]) {
				return false
			}
			avaStart, quotes = plus+1, 0
		}
		searchFrom = plus + 1
	}
	return avaStart < len(rdn) && validAVA(rdn[avaStart:])
}

// validAVA reads keyword=value.
func validAVA(ava string) bool {
	keyword, value, ok := strings.Cut(ava, "=")
	if !ok || !validKeyword(keyword) {
		return false
	}
	// Spaces and newlines before the value are skipped.
	value = strings.TrimLeft(value, " \n")
	switch {
	case value == "":
		return true
	case value[0] == '#':
		return validHexValue(value[1:])
	case value[0] == '"':
		return validQuoted(value[1:])
	}
	return validString(value)
}

// keywords are the attribute type keywords Java reads (its AVAKeyword
// table), upper case.
var keywords = map[string]bool{
	"CN": true, "C": true, "L": true, "S": true, "ST": true, "O": true, "OU": true,
	"T": true, "IP": true, "STREET": true, "DC": true, "DNQUALIFIER": true,
	"DNQ": true, "SURNAME": true, "GIVENNAME": true, "INITIALS": true,
	"GENERATION": true, "EMAIL": true, "EMAILADDRESS": true, "UID": true,
	"SERIALNUMBER": true,
}

// validKeyword reports whether Java takes k for an attribute type: after
// upper-casing (Locale.ENGLISH) and trimming, a keyword it knows, or an
// OID, "OID." before it or not, that starts with an ASCII digit.
func validKeyword(k string) bool {
	k = trimJava(javaUpper(k))
	if keywords[k] {
		return true
	}
	k = strings.TrimPrefix(k, "OID.")
	return k != "" && k[0] >= '0' && k[0] <= '9' && validOID(k)
}

// maxOIDSize is the most bytes Java encodes an OID's arcs in.
const maxOIDSize = 4096

// validOID reports whether Java's ObjectIdentifier reads s: at least two
// arcs split at '.', each read as Integer.parseInt reads it (a sign and
// digits of any script allowed) or, from ten characters, as BigInteger
// does; none negative, the first 0 to 2, the second at most 39 under 0
// and 1; at most maxOIDSize bytes encoded.
func validOID(s string) bool {
	arcs := strings.Split(s, ".")
	if len(arcs) < 2 {
		return false
	}
	size := 0
	var first int64
	for i, a := range arcs {
		n, ok := javaInteger(a)
		if !ok || n.Sign() < 0 {
			return false
		}
		switch i {
		case 0:
			if n.Cmp(big.NewInt(2)) > 0 {
				return false
			}
			first = n.Int64()
			continue
		case 1:
			if first != 2 && n.Cmp(big.NewInt(39)) > 0 {
				return false
			}
			n.Add(n, big.NewInt(40*first))
		}
		size += max(1, (n.BitLen()+6)/7)
		if size > maxOIDSize {
			return false
		}
	}
	return true
}

// javaInteger reads an OID arc as Java does: Integer.parseInt for up to
// nine characters (int range), new BigInteger otherwise; both take an
// optional sign and then decimal digits of any script. An arc of more
// significant digits than an OID of maxOIDSize bytes can hold is refused
// unread, so that a long id costs linear time.
func javaInteger(s string) (*big.Int, bool) {
	digits := s
	neg := false
	if digits != "" && (digits[0] == '+' || digits[0] == '-') {
		neg = digits[0] == '-'
		digits = digits[1:]
	}
	if digits == "" {
		return nil, false
	}
	ascii := make([]byte, 0, len(digits))
	for _, r := range digits {
		d := proto.JavaDigit(r)
		if d < 0 {
			return nil, false
		}
		if d == 0 && len(ascii) == 0 {
			continue
		}
		ascii = append(ascii, byte('0'+d))
	}
	if len(ascii) > maxArcDigits {
		return nil, false
	}
	n := new(big.Int)
	if len(ascii) > 0 {
		n.SetString(string(ascii), 10)
	}
	if neg {
		n.Neg(n)
	}
	return n, true
}

// maxArcDigits is more decimal digits than an arc encoded in maxOIDSize
// bytes (7 bits each) can have.
const maxArcDigits = maxOIDSize*7/3 + 1

// javaUpper upper-cases s as Java's toUpperCase(Locale.ENGLISH): rune by
// rune, with the full mappings that turn one character into several
// (SpecialCasing.txt) where they give letters of the keywords.
func javaUpper(s string) string {
	var b strings.Builder
	for _, r := range s {
		if full, ok := fullUpper[r]; ok {
			b.WriteString(full)
			continue
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// fullUpper are the one-to-many upper-case mappings whose result is ASCII.
var fullUpper = map[rune]string{
	'ß': "SS", 'ﬀ': "FF", 'ﬁ': "FI", 'ﬂ': "FL", 'ﬃ': "FFI", 'ﬄ': "FFL", 'ﬅ': "ST", 'ﬆ': "ST",
}

// trimJava removes what Java's String.trim removes: every character up to
// and including the space, at both ends.
func trimJava(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// isHexDigit is what Java's reader takes for a hex digit: ASCII only.
func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexValue(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// isTerminator reports whether c ends a value that is not quoted.
func isTerminator(c byte) bool { return c == '+' || c == ',' || c == ';' }

// validHexValue reads the hex after '#': an even number, at least two, of
// hex digits up to the end or a separator, that encode one whole DER
// value.
func validHexValue(s string) bool {
	var b []byte
	i := 0
	for ; i < len(s) && !isTerminator(s[i]); i++ {
		if !isHexDigit(s[i]) {
			return false
		}
	}
	digits := s[:i]
	if len(digits) == 0 || len(digits)%2 == 1 {
		return false
	}
	for j := 0; j < len(digits); j += 2 {
		b = append(b, hexValue(digits[j])<<4|hexValue(digits[j+1]))
	}
	return validDER(b)
}

// validQuoted reads a quoted value after its opening quote: backslash
// escapes of RFC 1779's special characters or of two hex digits, then
// the closing quote, then only spaces and newlines.
func validQuoted(s string) bool {
	i := 0
	for {
		if i >= len(s) {
			return false
		}
		switch s[i] {
		case '"':
			return strings.Trim(s[i+1:], " \n") == ""
		case '\\':
			next, ok := readEscape(s, i, ",=\n+<>#;\\\"")
			if !ok {
				return false
			}
			i = next
		default:
			i++
		}
	}
}

// validString reads a value that is neither quoted nor hex: it ends at the
// first separator (the rest of the attribute is not read); before it, a
// backslash escapes two hex digits or one of ",=\n+<>#;\\\" " and nothing
// else, and ",+<>;\"" must be escaped.
func validString(s string) bool {
	for i := 0; ; {
		switch c := s[i]; {
		case c == '\\':
			next, ok := readEscape(s, i, ",=\n+<>#;\\\" ")
			if !ok {
				return false
			}
			i = next
		case strings.ContainsRune(",+<>;\"", rune(c)):
			return false
		default:
			i++
		}
		if i >= len(s) || isTerminator(s[i]) {
			return true
		}
	}
}

// readEscape reads the escape at s[i], a backslash: two hex digits, or
// one of specials. It returns the index after it.
func readEscape(s string, i int, specials string) (next int, ok bool) {
	i++
	switch {
	case i >= len(s):
		return 0, false
	case isHexDigit(s[i]):
		if i+1 >= len(s) || !isHexDigit(s[i+1]) {
			return 0, false
		}
		return i + 2, true
	case strings.IndexByte(specials, s[i]) >= 0:
		return i + 1, true
	}
	return 0, false
}

// validDER reports whether b is one whole DER value as Java's DerValue
// reads one: a tag of one byte, a length in short or long form (at most
// four bytes), exactly as many bytes of content; an indefinite length
// only for a constructed value (of any value within it), whose content is
// then values up to an end-of-contents marker.
func validDER(b []byte) bool {
	n, ok := derElement(b, 0)
	return ok && n == len(b)
}

// derElement reads the value at the start of b and returns its length;
// depth bounds the nesting of indefinite lengths.
func derElement(b []byte, depth int) (int, bool) {
	if len(b) < 2 || b[0]&0x1f == 0x1f || depth > 64 {
		return 0, false
	}
	constructed := b[0]&0x20 != 0
	l := b[1]
	switch {
	case l == 0x80:
		// Java checks that the value itself is constructed; its
		// converter of indefinite lengths takes any value within.
		if !constructed && depth == 0 {
			return 0, false
		}
		pos := 2
		for {
			if pos+1 < len(b) && b[pos] == 0 && b[pos+1] == 0 {
				return pos + 2, true
			}
			n, ok := derElement(b[pos:], depth+1)
			if !ok {
				return 0, false
			}
			pos += n
		}
	case l < 0x80:
		if 2+int(l) > len(b) {
			return 0, false
		}
		return 2 + int(l), true
	}
	k := int(l & 0x7f)
	if k > 4 || 2+k > len(b) {
		return 0, false
	}
	length := 0
	for _, c := range b[2 : 2+k] {
		length = length<<8 | int(c)
	}
	if length < 0 || length > len(b)-2-k {
		return 0, false
	}
	return 2 + k + length, true
}
