// Package x500 writes and reads X.500 distinguished names exactly as Java's
// javax.security.auth.x500.X500Principal does, because ZooKeeper's x509
// identities are made by it: a TLS client's identity is the subject of its
// certificate as X500Principal.getName() writes it (RFC 2253 with Java's
// choices of keywords, escapes and hex forms), and an x509 id in an ACL is
// valid when new X500Principal(id) accepts it. Name does the first, Valid
// the second. Both were checked against Java 17 (see java_test.go).
package x500

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/collie-io/collie/proto"
)

// ErrMalformed is returned by Name for bytes that are not a DER-encoded
// Name (a SEQUENCE of SETs of attribute type and value SEQUENCEs).
var ErrMalformed = errors.New("x500: malformed name")

// rfc2253Keywords are the attribute types getName() writes by keyword; it
// writes every other type as its dotted OID, with the value in hex. Java
// knows more keywords (EMAILADDRESS, SERIALNUMBER, T, ...) but only reads
// them: RFC 2253 does not define them.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// DER tags (the whole first byte) of the values Java writes as text; any
// other value, a NumericString or a constructed string among them, is
// written as '#' and the hex of its encoding.
const (
	tagUTF8String      = 0x0c
	tagPrintableString = 0x13
	tagT61String       = 0x14
	tagIA5String       = 0x16
	tagGeneralString   = 0x1b
	tagBMPString       = 0x1e
)

// Name returns the DER-encoded name der (a certificate's RawSubject) as
// X500Principal.getName() writes it: the RDNs last to first, joined by
// ','; the attributes of a multi-valued RDN in their encoded order, joined
// by '+'; each as keyword=value.
func Name(der []byte) (string, error) {
	var rdns []asn1.RawValue
	rest, err := asn1.Unmarshal(der, &rdns)
	if err != nil || len(rest) != 0 {
		return "", fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	parts := make([]string, len(rdns))
	for i, rdn := range rdns {
		if rdn.Class != asn1.ClassUniversal || rdn.Tag != asn1.TagSet || !rdn.IsCompound {
			return "", fmt.Errorf("%w: an RDN is not a SET", ErrMalformed)
		}
		var avas []string
		for b := rdn.Bytes; len(b) > 0; {
			var atv struct {
				Type  asn1.ObjectIdentifier
				Value asn1.RawValue
			}
			if b, err = asn1.Unmarshal(b, &atv); err != nil {
				return "", fmt.Errorf("%w: %v", ErrMalformed, err)
			}
			avas = append(avas, attribute(atv.Type.String(), atv.Value.FullBytes))
		}
		// An empty RDN, which Go's certificate parser accepts too, is
		// written as nothing, as Java writes it.
		parts[len(rdns)-1-i] = strings.Join(avas, "+")
	}
	return strings.Join(parts, ","), nil
}

// attribute writes one attribute type and value, the value given as its
// whole DER encoding.
func attribute(oid string, value []byte) string {
	keyword, ok := rfc2253Keywords[oid]
	if !ok {
		keyword = oid
	}
	text, isText := decode(value)
	if !ok || !isText {
		return keyword + "=#" + hex.EncodeToString(value)
	}
	return keyword + "=" + escape(text)
}

// decode returns the text of a string value as Java 17 decodes it for
// getName(): the content bytes as UTF-8, whatever the string type,
// malformed sequences replaced by U+FFFD. (Java 21 decodes each type by
// its own charset; the two differ only for bytes outside ASCII in the
// types other than UTF8String.) ok is false for the types Java writes in
// hex.
func decode(value []byte) (s string, ok bool) {
	switch value[0] {
	case tagUTF8String, tagPrintableString, tagT61String, tagIA5String, tagGeneralString, tagBMPString:
	default:
		return "", false
	}
	var content asn1.RawValue
	if _, err := asn1.Unmarshal(value, &content); err != nil {
		return "", false
	}
	return proto.JavaString(string(content.Bytes)), true
}

// escapees are the characters getName() puts a backslash before: RFC
// 2253's, and '=' and '#' anywhere in the value.
const escapees = ",=+<>#;\"\\"

// escape writes a value's text as getName() does: a backslash before each
// escapee, NUL as \00, every other character as it is; then a backslash
// before each space or carriage return at the start or the end.
func escape(text string) string {
	var out []rune
	for _, c := range text {
		switch {
		case strings.ContainsRune(escapees, c):
			out = append(out, '\\', c)
		case c == 0:
			out = append(out, '\\', '0', '0')
		default:
			out = append(out, c)
		}
	}
	blank := func(c rune) bool { return c == ' ' || c == '\r' }
	lead := 0
	for lead < len(out) && blank(out[lead]) {
		lead++
	}
	trail := len(out) - 1
	for trail >= 0 && blank(out[trail]) {
		trail--
	}
	var b strings.Builder
	for i, c := range out {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
