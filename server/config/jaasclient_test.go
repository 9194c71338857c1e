package config

import (
	"strings"
	"testing"
)

func TestSASLClientLogin(t *testing.T) {
	sections, err := ParseJAAS([]byte(`
Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="bobsecret"; };
NoPassword { org.apache.zookeeper.server.auth.DigestLoginModule required username="empty"; };
NoUser { org.apache.zookeeper.server.auth.DigestLoginModule required password="x"; };
Kerberos { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };
Other { com.example.Module required; };
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		section, user, password, wantErr string
		ok                               bool
	}{
		{section: "Client", user: "bob", password: "bobsecret", ok: true},
		{section: "NoPassword", user: "empty", ok: true},
		{section: "Missing"},
		{section: "NoUser", ok: true, wantErr: "no username"},
		{section: "Kerberos", ok: true, wantErr: "Kerberos"},
		{section: "Other", ok: true, wantErr: "no org.apache.zookeeper.server.auth.DigestLoginModule"},
	} {
		user, password, ok, err := SASLClientLogin(sections, tt.section)
		if user != tt.user || password != tt.password || ok != tt.ok || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: %q %q %v %v; want %q %q %v error %q", tt.section, user, password, ok, err, tt.user, tt.password, tt.ok, tt.wantErr)
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
