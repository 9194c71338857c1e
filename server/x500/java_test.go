package x500

import (
	"bufio"
	"bytes"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/collie-io/collie/internal/zkref"
)

// probeSource is a Java program that reads lines "D <hex>" (a DER name)
// and "S <hex>" (a UTF-8 string) and answers each with "OK <hex of the
// UTF-8 of getName()>" or "ERR" when X500Principal refuses the input.
const probeSource = `
import javax.security.auth.x500.X500Principal;
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

public class Probe {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
        HexFormat hex = HexFormat.of();
        for (String line; (line = in.readLine()) != null; ) {
            byte[] b = hex.parseHex(line.substring(2));
            try {
                X500Principal p = line.startsWith("D")
                    ? new X500Principal(b)
                    : new X500Principal(new String(b, StandardCharsets.UTF_8));
                out.println("OK " + hex.formatHex(p.getName().getBytes(StandardCharsets.UTF_8)));
            } catch (IllegalArgumentException e) {
                out.println("ERR");
            }
        }
        out.flush();
    }
}
`

// javaAnswer is what Java said of one input: ok false when it refused it.
type javaAnswer struct {
	ok   bool
	name string
}

// askJava compiles the probe and runs it over the inputs (each "D " or
// "S " and hex), returning its answers in order.
func askJava(t *testing.T, inputs []string) []javaAnswer {
	t.Helper()
	javac, err := exec.LookPath("javac")
	if err != nil {
		zkref.Require(t, fmt.Errorf("javac not found (Debian package default-jdk-headless): %w", err))
	}
	java, err := zkref.Java()
	zkref.Require(t, err)
	dir := t.TempDir()
	src := filepath.Join(dir, "Probe.java")
	if err := os.WriteFile(src, []byte(probeSource), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), javac, "-d", dir, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(t.Context(), java, "-cp", dir, "Probe")
	cmd.Stdin = strings.NewReader(strings.Join(inputs, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("java Probe: %v\n%s", err, stderr.String())
	}
	var answers []javaAnswer
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "ERR" {
			answers = append(answers, javaAnswer{})
			continue
		}
		b, err := hex.DecodeString(strings.TrimPrefix(line, "OK "))
		if err != nil {
			t.Fatalf("java Probe answered %q", line)
		}
		answers = append(answers, javaAnswer{ok: true, name: string(b)})
	}
	if len(answers) != len(inputs) {
		t.Fatalf("java Probe answered %d of %d inputs", len(answers), len(inputs))
	}
	return answers
}

// TestNameAgainstJava formats random names, of every string type and of
// the characters getName() treats specially, with Name and with Java's
// X500Principal.getName(), and requires the same text; and reads random
// strings, and each name Java wrote, with Valid and with new
// X500Principal(String), and requires the same verdict.
func TestNameAgainstJava(t *testing.T) {
	r := rand.New(rand.NewPCG(1, uint64(os.Getpid())))
	var ders [][]byte
	for range 1500 {
		ders = append(ders, randomName(r))
	}
	var strs []string
	for range 3000 {
		strs = append(strs, randomDN(r))
	}
	for range 2000 {
		strs = append(strs, "CN=#"+hex.EncodeToString(randomBER(r)))
	}
	strs = append(strs, validityCases...)
	// What getName() writes is what ACLs are written from: every name
	// Name writes is asked of Java too.
	for _, d := range ders {
		if name, err := Name(d); err == nil {
			strs = append(strs, name)
		}
	}
	var inputs []string
	for _, d := range ders {
		inputs = append(inputs, "D "+hex.EncodeToString(d))
	}
	for _, s := range strs {
		inputs = append(inputs, "S "+hex.EncodeToString([]byte(s)))
	}
	answers := askJava(t, inputs)

	formatted := 0
	for i, d := range ders {
		want := answers[i]
		got, err := Name(d)
		if !want.ok {
			continue // Java refuses the encoding; a TLS handshake would have failed
		}
		formatted++
		if err != nil {
			t.Errorf("Name(%x): %v; Java: %q", d, err, want.name)
			continue
		}
		if got != want.name {
			t.Errorf("Name(%x) = %q, Java: %q", d, got, want.name)
		}
	}
	if formatted < len(ders)/2 {
		t.Errorf("Java formatted only %d of %d random names", formatted, len(ders))
	}
	valid := 0
	for i, s := range strs {
		want := answers[len(ders)+i].ok
		if want {
			valid++
		}
		if got := Valid(s); got != want {
			t.Errorf("Valid(%q) = %v, Java: %v", s, got, want)
		}
	}
	if valid < len(strs)/10 || valid > len(strs)*9/10 {
		t.Errorf("Java took %d of %d random strings for names: the generator tests too little", valid, len(strs))
	}
}

// validityCases are strings whose verdict turns on one rule of Java's
// reader.
var validityCases = []string{
	"", " ", "CN=", "CN", "=a", "CN=a,", ",CN=a", "CN=a;O=b", "CN=a+", "+CN=a", "CN=a++O=b",
	"cn=a", " cn = a ", "OID.2.5.4.3=a", "oid.2.5.4.3=a", "2.5.4.3=a", "2.5.4=a", "2=a", "3.1=a",
	"1.40=a", "1.39=a", "2.999=a", "0.0.-1=a", "+1.2=a", "1.+2=a", "1.2.=a", "1..2=a", "OID.=a",
	"1.2.99999999999999999999999999=a", "१.२=a", "x.1=a", "EMAILADDRESS=a@b", "emailaddreß=a",
	"ﬅ=a", "STREET=x", "IP=1.2.3.4", "DNQ=x", "SERIALNUMBER=1", "T=x", "UID=x", "DC=x", "S=x", "FOO=x",
	`CN=a\,b`, `CN=a\\,b`, `CN=a\\\,b`, `CN=\,`, `\,CN=a`, `CN=a\;b`, `CN=a\+b`, `CN=a\\+O=b`,
	`CN=a\ b`, `CN=a\"b`, `CN=a"b`, `CN=a<b`, `CN=a>b`, `CN=a=b`, `CN=a#b`, `CN=#`, `CN=#0`,
	`CN=#04`, `CN=#0400`, `CN=#040100`, `CN=#0c03616263`, `CN=#0c0361626364`, `CN=#zz`, `CN=#0c03616263+O=b`,
	`CN=#1f0100`, `CN=#3080`, `CN=#30800000`, `CN=#308004000000`, `CN=#0480`, `CN=#048100`, `CN=#04820001ff`,
	`CN=#0485000000000100`, `CN=#31800c01f1138000000000`, `CN=#13800000`, `CN="a,b"`, `CN="a"`, `CN="a" `, `CN="a" b`, `CN="a`, `CN="a\,b"`, `CN="a\ b"`,
	`CN="a\41"`, `CN="a\4"`, `CN="\"`, `CN=""`, `CN="a+b",O=c`, `CN=\41\42`, `CN=\4`, `CN=\4g`, `CN=a\`,
	`CN=\c3\a9`, `CN=\ff`, "CN=a\nb", "CN=\na", "CN=a\n", `CN=a\` + "\n", `CN=é`, `CN=日本`, `CN=a;b=c`,
	`CN=a\,,O=b`, `CN="a,b,c",O=d`, `CN="a\",b"`, `O=a"b,c"`, `CN=a , O=b`, `CN=a;;O=b`,
}

// randomDN draws a name of RDNs of keyword=value pieces, often with a
// piece inserted somewhere, so that many are valid and many are not.
func randomDN(r *rand.Rand) string {
	keys := []string{"CN", "cn", " O ", "OU", "C", "DC", "UID", "EMAILADDRESS", "SERIALNUMBER", "OID.2.5.4.3",
		"2.5.4.3", "1.2.840.113549.1.9.1", "T", "X", "ﬅ", "2.5.4.99999999999", ""}
	values := []string{"a", "b c", "é", "日", " ", "\n", `\,`, `\+`, `\;`, `\\`, `\"`, `\ `, `\41`,
		`\c3\a9`, "#0c03616263", "#1603616263", "#04", "#", "\"x,y\"", "\"\"", "=", "<", "\r", "\\\r", "\\#"}
	seps := []string{",", ", ", ";", " , "}
	var b strings.Builder
	for i := range 1 + r.IntN(3) {
		if i > 0 {
			b.WriteString(seps[r.IntN(len(seps))])
		}
		for j := range 1 + r.IntN(2)*r.IntN(2) {
			if j > 0 {
				b.WriteString("+")
			}
			b.WriteString(keys[r.IntN(len(keys))] + "=")
			for range r.IntN(4) {
				b.WriteString(values[r.IntN(len(values))])
			}
		}
	}
	s := b.String()
	if r.IntN(3) == 0 {
		pieces := []string{",", ";", "+", "=", "\"", "\\", " ", "#", "\n"}
		at := r.IntN(len(s) + 1)
		s = s[:at] + pieces[r.IntN(len(pieces))] + s[at:]
	}
	return s
}

// randomBER draws a BER value for a hex attribute value: nested values,
// definite lengths in short and long (also longer than needed) form,
// indefinite ones, often with a byte changed, cut off or added.
func randomBER(r *rand.Rand) []byte {
	b := randomBERValue(r, 0)
	switch r.IntN(5) {
	case 0:
		b[r.IntN(len(b))] ^= byte(1 << r.IntN(8))
	case 1:
		b = b[:r.IntN(len(b))+1]
	case 2:
		b = append(b, 0)
	}
	return b
}

func randomBERValue(r *rand.Rand, depth int) []byte {
	tags := []byte{0x04, 0x0c, 0x13, 0x30, 0x31, 0x24, 0xa0, 0x2c, 0x05}
	tag := tags[r.IntN(len(tags))]
	constructed := tag&0x20 != 0
	var content []byte
	if constructed && depth < 3 {
		for range r.IntN(3) {
			content = append(content, randomBERValue(r, depth+1)...)
		}
	} else {
		for range r.IntN(4) {
			content = append(content, byte(r.IntN(256)))
		}
	}
	out := []byte{tag}
	switch {
	case constructed && r.IntN(3) == 0:
		return append(append(append(out, 0x80), content...), 0, 0)
	case r.IntN(4) == 0:
		out = append(out, 0x81, byte(len(content)))
	case r.IntN(4) == 0:
		out = append(out, 0x82, 0, byte(len(content)))
	default:
		out = append(out, byte(len(content)))
	}
	return append(out, content...)
}

// randomName encodes a random Name: RDNs of one to three attributes of
// types getName() writes by keyword and not, with values of every string
// type, of characters it escapes, and of non-string types.
func randomName(r *rand.Rand) []byte {
	oids := []asn1.ObjectIdentifier{
		{2, 5, 4, 3}, {2, 5, 4, 6}, {2, 5, 4, 7}, {2, 5, 4, 8}, {2, 5, 4, 10}, {2, 5, 4, 11}, {2, 5, 4, 9},
		{0, 9, 2342, 19200300, 100, 1, 25}, {0, 9, 2342, 19200300, 100, 1, 1}, {1, 2, 840, 113549, 1, 9, 1},
		{2, 5, 4, 5}, {2, 5, 4, 12}, {2, 5, 4, 46}, {1, 3, 6, 1, 4, 1, 99999, 7},
	}
	var rdns []asn1.RawValue
	for range r.IntN(5) {
		var set []byte
		// Mostly one attribute, some several, a few none (an empty RDN).
		for range []int{1, 1, 1, 2, 3, 0}[r.IntN(6)] {
			oid, _ := asn1.Marshal(oids[r.IntN(len(oids))])
			set = append(set, mustMarshal(asn1.RawValue{Tag: asn1.TagSequence, IsCompound: true,
				Bytes: append(oid, randomValue(r)...)})...)
		}
		rdns = append(rdns, asn1.RawValue{Tag: asn1.TagSet, IsCompound: true, Bytes: set})
	}
	var seq []byte
	for _, rdn := range rdns {
		seq = append(seq, mustMarshal(rdn)...)
	}
	return mustMarshal(asn1.RawValue{Tag: asn1.TagSequence, IsCompound: true, Bytes: seq})
}

func randomValue(r *rand.Rand) []byte {
	chars := []rune{'a', 'Z', '0', ' ', ' ', ',', '=', '+', '<', '>', '#', ';', '"', '\\', '\r', '\n', 0, '!', '@', 'é', 'ÿ', '日', '😀', '\t', '*', '&'}
	var text []rune
	for range r.IntN(7) {
		text = append(text, chars[r.IntN(len(chars))])
	}
	tags := []int{asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagT61String, asn1.TagBMPString, asn1.TagNumericString, 27, 26, asn1.TagOctetString}
	tag := tags[r.IntN(len(tags))]
	var content []byte
	switch tag {
	case asn1.TagUTF8String:
		content = []byte(string(text))
	case asn1.TagBMPString:
		for _, u := range utf16.Encode(text) {
			content = append(content, byte(u>>8), byte(u))
		}
	default:
		for _, c := range text {
			content = append(content, byte(c))
		}
	}
	return mustMarshal(asn1.RawValue{Tag: tag, Bytes: content})
}

func mustMarshal(v any) []byte {
	b, err := asn1.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
