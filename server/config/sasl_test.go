package config

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseSASLKeys(t *testing.T) {
	c := mustParse(t, `dataDir=/d
authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
authProvider.2=org.apache.zookeeper.server.auth.DigestAuthenticationProvider
java.security.auth.login.config==file:/etc/zookeeper/jaas.conf
zookeeper.sasl.serverconfig=ZkServer
superUser=admin
zookeeper.superUser.2=ops
SASLAuthenticationProvider.superPassword=s3cret
allowSaslFailedClients=true
enforce.auth.enabled=true
enforce.auth.schemes=sasl, digest
requireClientAuthScheme=sasl
`)
	if !c.SASLAuthProvider || c.JAASConfigFile != "/etc/zookeeper/jaas.conf" || c.SASLServerSection != "ZkServer" ||
		!slices.Equal(c.SASLSuperUsers, []string{"admin", "ops"}) || c.SASLSuperPassword != "s3cret" || !c.AllowSASLFailedClients ||
		!slices.Equal(c.EnforceAuthSchemes, []string{"sasl", "digest"}) {
		t.Errorf("parsed %+v", c)
	}
	// Accepted and ignored, as by ZooKeeper 3.8, which reads it nowhere.
	if !slices.Equal(c.Unknown, []string{"authProvider.2", "requireClientAuthScheme"}) {
		t.Errorf("Unknown = %q", c.Unknown)
	}
}

func TestParseRequiredAuthentication(t *testing.T) {
	tests := []struct {
		lines   string
		want    []string
		wantErr string
	}{
		{"enforce.auth.schemes=sasl", nil, ""}, // not enabled
		{"enforce.auth.enabled=false\nenforce.auth.schemes=sasl", nil, ""},
		{"enforce.auth.enabled=true\nenforce.auth.schemes=digest,ip", []string{"digest", "ip"}, ""},
		{"sessionRequireClientSASLAuth=true\nenforce.auth.enabled=true\nenforce.auth.schemes=digest", []string{"sasl"}, "scheme sasl is not available"},
		{"enforce.auth.enabled=true", nil, "enforce.auth.schemes must name"},
		{"enforce.auth.enabled=true\nenforce.auth.schemes=sasl", nil, "scheme sasl is not available"},
		{"enforce.auth.enabled=true\nenforce.auth.schemes=x509", nil, `scheme "x509" is not available`},
		{"enforce.auth.enabled=yes", nil, "is not true or false"},
	}
	for _, tt := range tests {
		c, err := Parse([]byte("dataDir=/d\nclientPort=2181\n" + tt.lines))
		if err == nil {
			err = c.Validate()
		}
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%q: error %v, want %q", tt.lines, err, tt.wantErr)
		}
		if err == nil && !slices.Equal(c.EnforceAuthSchemes, tt.want) {
			t.Errorf("%q: schemes %q, want %q", tt.lines, c.EnforceAuthSchemes, tt.want)
		}
	}
}

func TestParseJAAS(t *testing.T) {
	text := `/* ZooKeeper's server and its clients */
Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_super="adminsecret"
       user_bob='bob\"s \101 secret' // a comment
       user_empty=""
       user_word=word.with-dots_and$;
       org.apache.zookeeper.server.auth.DigestLoginModule OPTIONAL user_carol="c";
};
Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="x"; };
`
	sections, err := ParseJAAS([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(sections) != 2 || len(sections["Server"]) != 2 || sections["Server"][1].Flag != "optional" {
		t.Fatalf("sections = %+v", sections)
	}
	users, ok, err := SASLUsers(sections, "Server")
	want := map[string]string{"super": "adminsecret", "bob": `bob"s A secret`, "empty": "", "word": "word.with-dots_and$", "carol": "c"}
	if err != nil || !ok || !maps.Equal(users, want) {
		t.Errorf("users = %q, %v, %v; want %q", users, ok, err, want)
	}
	if _, ok, err := SASLUsers(sections, "Other"); ok || err != nil {
		t.Errorf("a missing section: %v, %v", ok, err)
	}
}

func TestParseJAASErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{`Server { m required a="b" }; `, `line 1: expected an option name, found "}"`},
		{`Server { m required a "b"; }; `, `line 1: expected "="`},
		{`Server { m required a=1; };`, "a number"},
		{`Server { m sometimes; };`, "invalid control flag"},
		{`Server { m required a="b"; };` + "\nServer { m required; };", "given twice"},
		{`Server { m required a="${user.home}"; };`, "not expanded"},
		{"Server {\n m required\n a=", "line 3: expected an option value, found the end of the file"},
		{`{ m required; };`, "expected a section name"},
	}
	for _, tt := range tests {
		if _, err := ParseJAAS([]byte(tt.text)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.text, err, tt.want)
		}
	}
	sections, err := ParseJAAS([]byte(`Server { com.example.LoginModule required; };`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := SASLUsers(sections, "Server"); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("another login module: %v", err)
	}
}

func TestLoadReadsJAASFile(t *testing.T) {
	dir := t.TempDir()
	jaas := filepath.Join(dir, "jaas.conf")
	writeFiles(t, dir, map[string]string{
		"jaas.conf":     `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob="bobsecret"; };`,
		"zoo.cfg":       "dataDir=" + dir + "\nclientPort=2181\nauthProvider.1=" + SASLAuthenticationProvider + "\njava.security.auth.login.config=" + jaas + "\n",
		"flags.cfg":     "dataDir=" + dir + "\nclientPort=2181\n",
		"nosection.cfg": "dataDir=" + dir + "\nclientPort=2181\njava.security.auth.login.config=" + jaas + "\nsasl.serverconfig=Other\n",
	})
	c, err := Load(filepath.Join(dir, "zoo.cfg"))
	if err != nil || !maps.Equal(c.SASLUsers, map[string]string{"bob": "bobsecret"}) {
		t.Fatalf("Load: %v, users %q", err, c.SASLUsers)
	}
	// As ZooKeeper, a file without the section means no SASL, not a
	// failure to start.
	if c, err := Load(filepath.Join(dir, "nosection.cfg")); err != nil || c.SASLUsers != nil || !strings.Contains(c.NoSASLSection(), "has no section Other") {
		t.Errorf("a JAAS file without the section: %v, users %q, %q", err, c.SASLUsers, c.NoSASLSection())
	}
	if c.NoSASLSection() != "" {
		t.Errorf("NoSASLSection with users: %q", c.NoSASLSection())
	}

	// ZooKeeper's scripts take the file from the JVM's flags.
	t.Setenv("SERVER_JVMFLAGS", "-Xmx1g -Djava.security.auth.login.config=/nonexistent")
	t.Setenv("JVMFLAGS", "-Djava.security.auth.login.config="+jaas+" -Dzookeeper.x=y")
	c, err = Load(filepath.Join(dir, "flags.cfg"))
	if err != nil || c.JAASConfigFile != jaas || c.SASLUsers["bob"] != "bobsecret" {
		t.Fatalf("Load with JVMFLAGS: %v, %q, users %q", err, c.JAASConfigFile, c.SASLUsers)
	}
	t.Setenv("JVMFLAGS", "")
	if _, err := Load(filepath.Join(dir, "flags.cfg")); err == nil || !strings.Contains(err.Error(), "/nonexistent") {
		t.Errorf("a JAAS file that does not exist: %v", err)
	}
}
