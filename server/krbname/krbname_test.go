package krbname

import (
	"errors"
	"testing"
)

func TestIdentity(t *testing.T) {
	rules := func(text string) *Rules {
		r, err := ParseRules(text)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tt := range []struct {
		name      string
		m         Mapping
		principal string
		want      string // "" when the mapping fails
	}{
		{"a user of the default realm", Mapping{DefaultRealm: "R"}, "bob@R", "bob@R"},
		{"a host principal", Mapping{DefaultRealm: "R"}, "zkcli/h.example@R", "zkcli/h.example@R"},
		{"host removed", Mapping{DefaultRealm: "R", RemoveHost: true}, "zkcli/h.example@R", "zkcli@R"},
		{"realm removed", Mapping{DefaultRealm: "R", RemoveRealm: true}, "zkcli/h.example@R", "zkcli/h.example"},
		{"both removed", Mapping{DefaultRealm: "R", RemoveHost: true, RemoveRealm: true}, "zkcli/h.example@R", "zkcli"},
		{"a plain name is its own", Mapping{DefaultRealm: "R", RemoveRealm: true}, "bob", "bob"},
		{"another realm: DEFAULT does not apply", Mapping{DefaultRealm: "R"}, "bob@OTHER", ""},
		{"a rule for another realm", Mapping{DefaultRealm: "R", Rules: rules(`RULE:[1:$1@$0](.*@OTHER)s/@.*// DEFAULT`)}, "bob@OTHER", "bob@OTHER"},
		{"a rule renames", Mapping{DefaultRealm: "R", RemoveRealm: true, Rules: rules(`RULE:[2:$1;$2](zkcli;.*)s/.*/admin/`)}, "zkcli/h@R", "admin/h"},
		{"first substitution only", Mapping{Rules: rules(`RULE:[1:$1](.*)s/o/0/`)}, "bob@R", "b0b@R"},
		{"global substitution with a group", Mapping{Rules: rules(`RULE:[1:$1](.*)s/(o)/<$1>/g`)}, "bob@R", "b<o>b@R"},
		{"a rule giving a name with @ fails", Mapping{DefaultRealm: "R", Rules: rules(`RULE:[1:$1@$0] DEFAULT`)}, "bob@R", ""},
		{"the first rule that applies decides", Mapping{DefaultRealm: "R", Rules: rules(`RULE:[1:x$1] DEFAULT`)}, "bob@R", "xbob@R"},
		{"components must agree", Mapping{DefaultRealm: "R", Rules: rules(`RULE:[2:x$1] DEFAULT`)}, "bob@R", "bob@R"},
		{"no default realm", Mapping{}, "bob@R", ""},
		{"empty realm and default realm", Mapping{}, "bob@", "bob@"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.m.Identity(tt.principal)
			if tt.want == "" {
				if err == nil || !errors.Is(err, ErrNoMapping) {
					t.Fatalf("Identity(%q) = %q, %v; want ErrNoMapping", tt.principal, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Identity(%q) = %q, %v; want %q", tt.principal, got, err, tt.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"bob", "bob", true},
		{"a/b/c", "a/b/c", true}, // no realm: the whole is the primary
		{"a/b@R", "a/b@R", true},
		{"a/@R", "a/@R", true},
		{"a/b/c@R", "", false},
		{"a@R@S", "", false},
		{"a@R/x", "", false},
	} {
		n, err := Parse(tt.in)
		if (err == nil) != tt.ok || tt.ok && n.String() != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %q ok=%v", tt.in, n, err, tt.want, tt.ok)
		}
	}
}

func TestParseRulesRefuses(t *testing.T) {
	for _, text := range []string{
		"NONSENSE",
		"RULE:[:$1]",               // no number of components
		`RULE:[1:$1](a(?=b))`,      // look-ahead, which RE2 lacks
		`RULE:[1:$1]s/(a)/$2/`,     // no group 2
		`RULE:[1:$1]s/a/x\/`,       // the replacement ends in a backslash... as the syntax reads it
		"DEFAULT RULE:[1:$1] junk", // trailing garbage
	} {
		if _, err := ParseRules(text); err == nil {
			t.Errorf("ParseRules(%q) accepted", text)
		}
	}
	if _, err := ParseRules("  DEFAULT\n RULE:[1:$1@$0](.*@X)s/@.*//  "); err != nil {
		t.Errorf("valid rules refused: %v", err)
	}
}
