package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []property
	}{
		{"equals", "a=b", []property{{"a", "b", 1}}},
		{"colon", "a:b", []property{{"a", "b", 1}}},
		{"blank separates", "a b", []property{{"a", "b", 1}}},
		{"blanks around equals", "  a \t= \f b  ", []property{{"a", "b  ", 1}}},
		{"only first separator counts", "server.1=h:2888:3888", []property{{"server.1", "h:2888:3888", 1}}},
		{"second equals is value", "a==b", []property{{"a", "=b", 1}}},
		{"key only", "a", []property{{"a", "", 1}}},
		{"empty value", "a=", []property{{"a", "", 1}}},
		{"hash comment", "# a=b\n  #c=d\nx=y", []property{{"x", "y", 3}}},
		{"bang comment", "! a=b\nx=y", []property{{"x", "y", 2}}},
		{"hash inside value", "a=b#c", []property{{"a", "b#c", 1}}},
		{"blank lines", "\n\n  \t\na=b\n\n", []property{{"a", "b", 4}}},
		{"CRLF and CR", "a=1\r\nb=2\rc=3", []property{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}}},
		{"continuation", "a=one,\\\n    two\nb=3", []property{{"a", "one,two", 1}, {"b", "3", 3}}},
		{"continuation of key", "ke\\\n  y=v", []property{{"key", "v", 1}}},
		{"even backslashes end the line", "a=x\\\\\nb=y", []property{{"a", `x\`, 1}, {"b", "y", 2}}},
		{"continuation at end of text", "a=x\\", []property{{"a", "x", 1}}},
		{"comment does not continue", "# x\\\na=b", []property{{"a", "b", 2}}},
		{"escaped separator in key", `a\=b\ c=d`, []property{{"a=b c", "d", 1}}},
		{"escapes", `a=\t\n\r\f\q\\`, []property{{"a", "\t\n\r\f" + `q\`, 1}}},
		{"unicode escape", `a=\u0041\u00e9`, []property{{"a", "Aé", 1}}},
		{"surrogate pair escape", `a=\ud83d\ude00`, []property{{"a", "😀", 1}}},
		{"UTF-8 text", "dataDir=/var/données", []property{{"dataDir", "/var/données", 1}}},
		{"duplicates kept in order", "a=1\na=2", []property{{"a", "1", 1}, {"a", "2", 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProperties(tt.text)
			if err != nil {
				t.Fatalf("parseProperties(%q): %v", tt.text, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseProperties(%q)\n got %+v\nwant %+v", tt.text, got, tt.want)
			}
		})
	}
}

func TestParsePropertiesMalformedEscape(t *testing.T) {
	for _, text := range []string{`a=\u12`, `a=\uzzzz`, "x=1\n" + `a\u004=b`} {
		_, err := parseProperties(text)
		if err == nil || !strings.Contains(err.Error(), `malformed \uxxxx escape`) {
			t.Errorf("parseProperties(%q) = %v, want a malformed escape error", text, err)
		}
	}
	_, err := parseProperties("x=1\n\na=\\u12")
	if err == nil || !strings.HasPrefix(err.Error(), "line 3: ") {
		t.Errorf("error %v does not name line 3", err)
	}
}
