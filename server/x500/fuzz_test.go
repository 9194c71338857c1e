package x500

import (
	"encoding/hex"
	"testing"
	"unicode/utf8"
)

// FuzzName feeds Name arbitrary bytes: a certificate's subject comes from
// the network. What it writes for a name must be UTF-8, since it becomes
// an ACL id.
func FuzzName(f *testing.F) {
	for _, s := range []string{
		"303e310f300d06035504030c06636c69656e74310c300a060355040b0c036465763110300e060355040a0c074578616d706c65310b3009060355040613025553",
		"3020310a3008060355040b16012c31123010060a0992268993f22c6401191e0200ff", "3000", "30",
	} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, der []byte) {
		name, err := Name(der)
		if err == nil && !utf8.ValidString(name) {
			t.Errorf("Name(%x) = %q, not UTF-8", der, name)
		}
	})
}

// FuzzValid feeds Valid arbitrary ACL ids.
func FuzzValid(f *testing.F) {
	for _, s := range []string{"CN=a,O=b", `CN="a\,b"+OU=#0c0161`, "OID.1.2.3=x;C=US", `CN=a\\\,b`, "CN=#30800000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dn string) {
		if !utf8.ValidString(dn) {
			t.Skip("ACL ids are decoded as Java decodes UTF-8 first")
		}
		Valid(dn)
	})
}
