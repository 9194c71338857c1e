package x500

import (
	"encoding/hex"
	"errors"
	"testing"
)

// TestName checks Name against what Java 17's X500Principal.getName()
// printed for the subjects of certificates openssl made (openssl req
// -utf8 -multivalue-rdn -subj ...): RDNs last to first, keywords of RFC
// 2253 only (emailAddress, serialNumber, title and the like as OIDs with
// hex values), multi-valued RDNs in encoded order, escapes, non-ASCII text.
func TestName(t *testing.T) {
	for _, tc := range []struct {
		subj string // what openssl was given
		der  string // the certificate's subject
		want string // what Java printed
	}{
		{`/CN=client/OU=dev/O=Example/C=US`,
			"303e310f300d06035504030c06636c69656e74310c300a060355040b0c036465763110300e060355040a0c074578616d706c65310b3009060355040613025553",
			`C=US,O=Example,OU=dev,CN=client`},
		{`/C=US/O=Example/OU=dev/CN=client`,
			"303e310b30090603550406130255533110300e060355040a0c074578616d706c65310c300a060355040b0c03646576310f300d06035504030c06636c69656e74",
			`CN=client,OU=dev,O=Example,C=US`},
		{`/CN=client+UID=42/O=Example`,
			"30353121300d06035504030c06636c69656e743010060a0992268993f22c6401010c0234323110300e060355040a0c074578616d706c65",
			`O=Example,CN=client+UID=42`},
		{`/CN=Zoë Ñandú/O=Société Générale/L=Zürich`,
			"30483115301306035504030c0c5a6fc3ab20c391616e64c3ba311d301b060355040a0c14536f6369c3a974c3a92047c3a96ec3a972616c653110300e06035504070c075ac3bc72696368",
			`L=Zürich,O=Société Générale,CN=Zoë Ñandú`},
		{`/CN=日本語/O=例え`,
			"30253112301006035504030c09e697a5e69cace8aa9e310f300d060355040a0c06e4be8be38188",
			`O=例え,CN=日本語`},
		{`/emailAddress=alice@example.com/CN=alice`,
			"30323120301e06092a864886f70d0109011611616c696365406578616d706c652e636f6d310e300c06035504030c05616c696365",
			`CN=alice,1.2.840.113549.1.9.1=#1611616c696365406578616d706c652e636f6d`},
		{`/CN=svc/OU=one/OU=two/OU=three/O=Example`,
			"304c310c300a06035504030c03737663310c300a060355040b0c036f6e65310c300a060355040b0c0374776f310e300c060355040b0c0574687265653110300e060355040a0c074578616d706c65",
			`O=Example,OU=three,OU=two,OU=one,CN=svc`},
		{`/DC=com/DC=example/DC=corp/CN=host01`,
			"305531133011060a0992268993f22c6401191603636f6d31173015060a0992268993f22c64011916076578616d706c6531143012060a0992268993f22c6401191604636f7270310f300d06035504030c06686f73743031",
			`CN=host01,DC=corp,DC=example,DC=com`},
		{`/serialNumber=12345/CN=device/O=Maker`,
			"3031310e300c060355040513053132333435310f300d06035504030c06646576696365310e300c060355040a0c054d616b6572",
			`O=Maker,CN=device,2.5.4.5=#13053132333435`},
		{`/CN= leading and trailing /O=#hash;semi<lt>gt=eq\\back`,
			"3044311f301d06035504030c16206c656164696e6720616e6420747261696c696e67203121301f060355040a0c1823686173683b73656d693c6c743e67743d65715c6261636b",
			`O=\#hash\;semi\<lt\>gt\=eq\\back,CN=\ leading and trailing\ `},
		{`/title=Engineer/GN=Ann/SN=Lee/initials=AL/street=1 Main St/ST=CA/L=SF`,
			"306a3111300f060355040c0c08456e67696e656572310c300a060355042a0c03416e6e310c300a06035504040c034c6565310b3009060355042b0c02414c3112301006035504090c0931204d61696e205374310b300906035504080c024341310b300906035504070c025346",
			`L=SF,ST=CA,STREET=1 Main St,2.5.4.43=#0c02414c,2.5.4.4=#0c034c6565,2.5.4.42=#0c03416e6e,2.5.4.12=#0c08456e67696e656572`},
		{`/CN=Smith\, John/O=A\+B Corp/OU=R&D "Labs"`,
			"303e3114301206035504030c0b536d6974682c204a6f686e3111300f060355040a0c08412b4220436f727031133011060355040b0c0a52264420224c61627322",
			`OU=R&D \"Labs\",O=A\+B Corp,CN=Smith\, John`},
		{`/CN=a+OU=b+O=c/C=US`,
			"302d311e300806035504030c01613008060355040a0c01633008060355040b0c0162310b3009060355040613025553",
			`C=US,CN=a+O=c+OU=b`},
		{`/CN=tab(TAB)and\"quote`,
			"30183116301406035504030c0d74616209616e642271756f7465",
			"CN=tab\tand\\\"quote"},
		{"(none)", "3000", ""},
		{"(an empty RDN)", "300e3100310a300806035504030c0161", "CN=a,"},
		// Java 17 reads the bytes of every string type as UTF-8.
		{"(BMPString)", "300f310d300b06035504091e04003d000a", "STREET=\\00\\=\\00\n"},
		{"(IA5String, BMPString)", "3020310a3008060355040b16012c31123010060a0992268993f22c6401191e0200ff", "DC=\\00\ufffd,OU=\\,"},
	} {
		der, err := hex.DecodeString(tc.der)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Name(der)
		if err != nil || got != tc.want {
			t.Errorf("%s: Name = %q, %v; want %q", tc.subj, got, err, tc.want)
		}
	}
}

func TestNameMalformed(t *testing.T) {
	for _, der := range []string{"", "30", "3100", "3002", "3003310130", "300031", "0400"} {
		b, _ := hex.DecodeString(der)
		if got, err := Name(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("Name(%s) = %q, %v; want ErrMalformed", der, got, err)
		}
	}
}

// TestValid checks Valid against the verdicts of Java 17's new
// X500Principal(String).
func TestValid(t *testing.T) {
	for _, tc := range []struct {
		dn   string
		want bool
	}{
		{"", true},
		{"CN=", true},
		{"CN", false},
		{"CN=a,", false},
		{"CN=a;O=b", true},
		{"+CN=a", false},
		{" cn = a ", true},
		{"OID.2.5.4.3=a", true},
		{"2.5.4=a", true},
		{"3.1=a", false},
		{"1.40=a", false},
		{"2.999=a", true},
		{"0.0.-1=a", false},
		{"1..2=a", false},
		{"१.२=a", false},
		{"emailaddreß=a", true},
		{"ﬅ=a", true},
		{"IP=1.2.3.4", true},
		{"FOO=x", false},
		{"CN=a\\,b", true},
		{"CN=a\\\\,b", false},
		{"CN=a\\\\\\,b", true},
		{"CN=a\\\\+O=b", true},
		{"CN=a\"b", false},
		{"CN=a<b", false},
		{"CN=a=b", true},
		{"CN=#", false},
		{"CN=#04", false},
		{"CN=#0400", true},
		{"CN=#0c03616263", true},
		{"CN=#0c0361626364", false},
		{"CN=#3080", false},
		{"CN=#30800000", true},
		{"CN=#0480", false},
		// Only the value itself must be constructed for an indefinite
		// length; Java's converter takes any value within.
		{"CN=#31800c01f1138000000000", true},
		{"CN=\"a,b\"", true},
		{"CN=\"a\" b", false},
		{"CN=\"a\\ b\"", false},
		{"CN=\\4g", false},
		{"CN=a\\", false},
		{"CN=\\c3\\a9", true},
		{"CN=a\\,,O=b", true},
		{"O=a\"b,c\"", false},
	} {
		if got := Valid(tc.dn); got != tc.want {
			t.Errorf("Valid(%q) = %v, Java: %v", tc.dn, got, tc.want)
		}
	}
}
