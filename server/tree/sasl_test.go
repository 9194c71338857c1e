package tree

import (
	"slices"
	"testing"

	"github.com/collie-io/collie/proto"
)

func TestSASLACLs(t *testing.T) {
	const all = proto.PermAll
	sasl := func(id string) proto.ACL { return proto.ACL{Perms: all, ID: proto.ID{Scheme: SchemeSASL, ID: id}} }
	bob := []proto.ID{{Scheme: SchemeIP, ID: "127.0.0.1"}, {Scheme: SchemeSASL, ID: "bob"}}
	superSASL := []proto.ID{{Scheme: SchemeSASL, ID: "super"}}
	on := ACLRulesZK38 | ACLRulesSASL

	checkACLCases(t, []checkACLCase{
		{"own id", []proto.ACL{sasl("bob")}, bob, on, true},
		{"another id", []proto.ACL{sasl("alice")}, bob, on, false},
		{"sasl user super matches every sasl id", []proto.ACL{sasl("alice")}, superSASL, on, true},
		{"but not other schemes", []proto.ACL{{Perms: all, ID: proto.ID{Scheme: SchemeDigest, ID: "super:x"}}}, superSASL, on, false},
		{"without the provider nothing matches", []proto.ACL{sasl("bob")}, bob, ACLRulesZK38, false},
	})

	authACL := []proto.ACL{{Perms: all, ID: proto.ID{Scheme: SchemeAuth}}}
	if got, ok := FixupACL(authACL, bob, on); !ok || !slices.Equal(got, []proto.ACL{sasl("bob")}) {
		t.Errorf("auth with sasl: %v, %v", got, ok)
	}
	if _, ok := FixupACL(authACL, bob, ACLRulesZK38); ok {
		t.Error("auth with only a sasl id and no provider is valid")
	}
	for id, valid := range map[string]bool{"bob": true, "": true, "a/b": true, "a/b@R": true, "a@R": true, "a/b/c@R": false, "a@b@c": false, "a@R/x": false} {
		if _, ok := FixupACL([]proto.ACL{sasl(id)}, nil, on); ok != valid {
			t.Errorf("sasl:%s valid = %v, want %v", id, ok, valid)
		}
		if _, ok := FixupACL([]proto.ACL{sasl(id)}, nil, ACLRulesZK38); ok {
			t.Errorf("sasl:%s valid without the provider", id)
		}
	}
}

// checkACLCase is a read by a caller with ids of a node with acl.
type checkACLCase struct {
	name  string
	acl   []proto.ACL
	ids   []proto.ID
	rules ACLRules
	want  bool
}

func checkACLCases(t *testing.T, cases []checkACLCase) {
	t.Helper()
	for _, tt := range cases {
		if got := CheckACL(tt.acl, proto.PermRead, tt.ids, tt.rules); got != tt.want {
			t.Errorf("%s: CheckACL = %v, want %v", tt.name, got, tt.want)
		}
	}
}
