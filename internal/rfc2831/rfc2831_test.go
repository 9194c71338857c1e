package rfc2831

import (
	"slices"
	"strings"
	"testing"
)

// TestRFC2831Example computes the response and rspauth of the example in
// RFC 2831 section 4 (an IMAP login of chris with password secret).
func TestRFC2831Example(t *testing.T) {
	a1 := SessionKey("chris", "elwood.innosoft.com", "secret", "OA6MG9tEQGm2hh", "OA6MHXh6VqTrRk", nil)
	const uri = "imap/elwood.innosoft.com"
	if got, want := string(ResponseValue(a1, "AUTHENTICATE:"+uri, "OA6MG9tEQGm2hh", "OA6MHXh6VqTrRk")), "d388dad90d4bbd760a152321f2143af7"; got != want {
		t.Errorf("response = %s, want %s", got, want)
	}
	if got, want := string(ResponseValue(a1, ":"+uri, "OA6MG9tEQGm2hh", "OA6MHXh6VqTrRk")), "ea40f60335c427b5527b84dbabcdfffd"; got != want {
		t.Errorf("rspauth = %s, want %s", got, want)
	}
}

func TestText(t *testing.T) {
	for _, tt := range []struct {
		in     string
		want   string
		latin1 bool
	}{
		{"bob", "bob", true},
		{"bjørn", "bj\xf8rn", true},
		{"ユーザー", "ユーザー", false},
		{"", "", true},
	} {
		if got, latin1 := Text(tt.in); string(got) != tt.want || latin1 != tt.latin1 {
			t.Errorf("Text(%q) = %q, %v; want %q, %v", tt.in, got, latin1, tt.want, tt.latin1)
		}
	}
}

func TestParse(t *testing.T) {
	const max = 32
	for _, tt := range []struct {
		in      string
		want    Directives
		wantErr bool
	}{
		{`a=1,B="two"`, Directives{{"a", "1"}, {"b", "two"}}, false},
		{` a = "x\"y\\z" , , b=2 ,`, Directives{{"a", `x"y\z`}, {"b", "2"}}, false},
		{`realm="r1",realm="r2"`, Directives{{"realm", "r1"}, {"realm", "r2"}}, false},
		{`a=""`, Directives{{"a", ""}}, false},
		{`a=`, nil, true},
		{`a=,b=1`, Directives{{"a", ""}, {"b", "1"}}, false},
		{`a= ,b=1`, Directives{{"a", ""}, {"b", "1"}}, false},
		{`a="",b=`, nil, true},
		{`a="x"y`, nil, true},
		{`a="x"b=1`, nil, true},
		{`a="x" b=1`, Directives{{"a", "x"}, {"b", "1"}}, false},
		{"a=1\tb = 1", Directives{{"a", "1"}, {"b", "1"}}, false},
		{`a="x`, nil, true},
		{`a="x\`, nil, true},
		{`=1`, nil, true},
		{`a 1`, nil, true},
		{`a`, nil, true},
		{strings.Repeat(",", 1000) + "a=1", Directives{{"a", "1"}}, false},
		{strings.Repeat("c=1,", max), slices.Repeat(Directives{{"c", "1"}}, max), false},
		{strings.Repeat("c=1,", max+1), nil, true},
	} {
		got, err := Parse([]byte(tt.in), max)
		if (err != nil) != tt.wantErr || (err == nil && !slices.Equal(got, tt.want)) {
			t.Errorf("%q = %q, %v; want %q (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestQuote(t *testing.T) {
	if got, want := Quote(`a"b\c`), `"a\"b\\c"`; got != want {
		t.Errorf("Quote = %s, want %s", got, want)
	}
}

// FuzzParse parses arbitrary tokens; whatever parses must parse again to
// the same elements once written back with quoted values.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`realm="zk-sasl-md5",nonce="abc",charset=utf-8,algorithm=md5-sess`))
	f.Add([]byte(`username="bob",realm="zk-sasl-md5",nonce="n",cnonce="c",nc=00000001,qop=auth,digest-uri="zookeeper/zk-sasl-md5",response=0123`))
	f.Add([]byte(`rspauth=0123456789abcdef`))
	f.Add([]byte(` a = "x\"y" ,, b=2`))
	f.Add([]byte(`a="unterminated`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Parse(b, 64)
		if err != nil {
			return
		}
		var parts []string
		for _, x := range d {
			parts = append(parts, x.Key+"="+Quote(x.Value))
		}
		again, err := Parse([]byte(strings.Join(parts, ",")), 64)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", strings.Join(parts, ","), err)
		}
		if !slices.Equal(d, again) {
			t.Fatalf("re-parse differs: %q, %q", d, again)
		}
	})
}
