package tree

import (
	"slices"
	"testing"

	"github.com/collie-io/collie/proto"
)

func TestX509ACLs(t *testing.T) {
	const all = proto.PermAll
	x509 := func(id string) proto.ACL { return proto.ACL{Perms: all, ID: proto.ID{Scheme: SchemeX509, ID: id}} }
	client := []proto.ID{{Scheme: SchemeIP, ID: "127.0.0.1"}, {Scheme: SchemeX509, ID: "CN=client,O=Example"}}
	on := ACLRulesZK38 | ACLRulesX509

	checkACLCases(t, []checkACLCase{
		{"own subject", []proto.ACL{x509("CN=client,O=Example")}, client, on, true},
		{"another subject", []proto.ACL{x509("CN=other,O=Example")}, client, on, false},
		// Ids are compared as text, as ZooKeeper compares them: the same
		// name written otherwise is another id.
		{"the same name spaced", []proto.ACL{x509("CN=client, O=Example")}, client, on, false},
		{"without the provider nothing matches", []proto.ACL{x509("CN=client,O=Example")}, client, ACLRulesZK38, false},
		{"nor under the sasl provider", []proto.ACL{x509("CN=client,O=Example")}, client, ACLRulesZK38 | ACLRulesSASL, false},
		{"super passes", []proto.ACL{x509("CN=other")}, []proto.ID{{Scheme: SchemeSuper}, {Scheme: SchemeX509, ID: "CN=admin"}}, on, true},
	})

	authACL := []proto.ACL{{Perms: proto.PermRead, ID: proto.ID{Scheme: SchemeAuth}}}
	want := []proto.ACL{{Perms: proto.PermRead, ID: client[1]}}
	if got, ok := FixupACL(authACL, client, on); !ok || !slices.Equal(got, want) {
		t.Errorf("auth with an x509 identity: %v, %v; want %v", got, ok, want)
	}
	if _, ok := FixupACL(authACL, client, ACLRulesZK38); ok {
		t.Error("auth with only an x509 id and no provider is valid")
	}
	for id, valid := range map[string]bool{
		"CN=client,O=Example": true, "": true, "cn=a; o=b": true, `CN=a\,b`: true,
		"1.2.840.113549.1.9.1=#1611616c696365406578616d706c652e636f6d": true,
		"client": false, "CN=a,": false, "FOO=x": false, `CN=a"b`: false,
	} {
		if _, ok := FixupACL([]proto.ACL{x509(id)}, nil, on); ok != valid {
			t.Errorf("x509:%s valid = %v, want %v", id, ok, valid)
		}
		if _, ok := FixupACL([]proto.ACL{x509(id)}, nil, ACLRulesZK38); ok {
			t.Errorf("x509:%s valid without the provider", id)
		}
	}
}
