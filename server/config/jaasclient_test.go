package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestSASLClientLogin(t *testing.T) {
	sections, err := ParseJAAS([]byte(`
Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="bobsecret"; };
NoPassword { org.apache.zookeeper.server.auth.DigestLoginModule required username="empty"; };
NoUser { org.apache.zookeeper.server.auth.DigestLoginModule required password="x"; };
Keytab { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=TRUE keyTab="FILE:/k/bob.keytab" storeKey=true principal="bob@R"; };
Cache { com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true ticketCache="/tmp/cc"; };
Both { com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true useKeyTab=true keyTab="/k/bob.keytab"; };
Password { com.sun.security.auth.module.Krb5LoginModule required principal="bob"; };
NoKeytab { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true principal="bob"; };
NoPrincipal { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k/bob.keytab"; };
Other { com.example.Module required; };
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		section string
		want    ClientLogin
		ok      bool
		wantErr string
	}{
		{section: "Client", want: ClientLogin{Username: "bob", Password: "bobsecret"}, ok: true},
		{section: "NoPassword", want: ClientLogin{Username: "empty"}, ok: true},
		{section: "Missing"},
		{section: "NoUser", ok: true, wantErr: "no username"},
		{section: "Keytab", ok: true, want: ClientLogin{Kerberos: &KerberosClientLogin{Principal: "bob@R", UseKeyTab: true, Keytab: "/k/bob.keytab"}}},
		{section: "Cache", ok: true, want: ClientLogin{Kerberos: &KerberosClientLogin{UseTicketCache: true, TicketCache: "/tmp/cc"}}},
		{section: "Both", ok: true, want: ClientLogin{Kerberos: &KerberosClientLogin{UseTicketCache: true, UseKeyTab: true, Keytab: "/k/bob.keytab"}}},
		{section: "Password", ok: true, wantErr: "a login with a password is not possible"},
		{section: "NoKeytab", ok: true, wantErr: `needs keyTab="file"`},
		{section: "NoPrincipal", ok: true, wantErr: `needs principal="name"`},
		{section: "Other", ok: true, wantErr: "neither org.apache.zookeeper.server.auth.DigestLoginModule nor com.sun.security.auth.module.Krb5LoginModule"},
	} {
		login, ok, err := SASLClientLogin(sections, tt.section)
		if !reflect.DeepEqual(login, tt.want) || ok != tt.ok || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: %+v %v %v; want %+v %v error %q", tt.section, login, ok, err, tt.want, tt.ok, tt.wantErr)
		}
	}
}

func TestJVMProperty(t *testing.T) {
	env := map[string]string{
		"CLIENT_JVMFLAGS": "-Xmx1g -Da=1 -Db=2",
		"JVMFLAGS":        "-Da=3 -Dab=4",
	}
	getenv := func(k string) string { return env[k] }
	for _, tt := range []struct {
		name, want string
		ok         bool
	}{{"a", "3", true}, {"b", "2", true}, {"ab", "4", true}, {"c", "", false}} {
		if got, ok := JVMProperty(getenv, tt.name, "CLIENT_JVMFLAGS", "JVMFLAGS"); got != tt.want || ok != tt.ok {
			t.Errorf("%s = %q %v, want %q %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}
