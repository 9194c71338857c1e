package config

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseQuorumAuthKeys(t *testing.T) {
	c, err := Parse([]byte(`dataDir=/d
quorum.auth.enableSasl=true
quorum.auth.learnerRequireSasl=true
quorum.auth.serverRequireSasl=true
quorum.auth.learner.saslLoginContext=Learner
quorum.auth.server.saslLoginContext=Server2
quorum.auth.kerberos.servicePrincipal=zkquorum/_HOST
quorum.cnxn.threads.size=20
zookeeper.quorum.auth.enableSasl=true
`))
	if err != nil {
		t.Fatal(err)
	}
	want := QuorumAuth{EnableSASL: true, LearnerRequireSASL: true, ServerRequireSASL: true,
		LearnerLoginContext: "Learner", ServerLoginContext: "Server2", ServicePrincipal: "zkquorum/_HOST", CnxnThreadsSize: 20}
	if got := c.QuorumAuth; !quorumAuthEqual(got, want) {
		t.Errorf("QuorumAuth = %+v, want %+v", got, want)
	}
	// ZooKeeper reads these keys from zoo.cfg only; the system property
	// spelling asks for nothing there either.
	if !slices.Equal(c.Unknown, []string{"zookeeper.quorum.auth.enableSasl"}) {
		t.Errorf("Unknown = %q", c.Unknown)
	}
	for _, bad := range []string{"quorum.auth.enableSasl=yes", "quorum.cnxn.threads.size=many", "quorum.auth.server.saslLoginContext="} {
		if _, err := Parse([]byte("dataDir=/d\n" + bad)); err == nil {
			t.Errorf("Parse(%q) accepted it", bad)
		}
	}
}

func quorumAuthEqual(a, b QuorumAuth) bool {
	return a.EnableSASL == b.EnableSASL && a.LearnerRequireSASL == b.LearnerRequireSASL && a.ServerRequireSASL == b.ServerRequireSASL &&
		a.LearnerLoginContext == b.LearnerLoginContext && a.ServerLoginContext == b.ServerLoginContext &&
		a.ServicePrincipal == b.ServicePrincipal && a.CnxnThreadsSize == b.CnxnThreadsSize &&
		maps.Equal(a.Users, b.Users) && a.Username == b.Username && a.Password == b.Password
}

// The switches must be turned on in ZooKeeper's order, and it refuses to
// start otherwise, with these words.
func TestValidateQuorumAuthOrder(t *testing.T) {
	tests := []struct {
		keys string
		want []string
	}{
		{"quorum.auth.serverRequireSasl=true\nquorum.auth.learnerRequireSasl=true", []string{
			"quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.serverRequireSasl",
			"quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.learnerRequireSasl"}},
		{"quorum.auth.enableSasl=true\nquorum.auth.serverRequireSasl=true", []string{
			"quorum.auth.learnerRequireSasl is disabled, so cannot enable quorum.auth.serverRequireSasl"}},
		{"quorum.auth.enableSasl=true", []string{"quorum.auth.enableSasl is true, but no JAAS file is named"}},
	}
	for _, tt := range tests {
		c, err := Parse([]byte("dataDir=/d\nserver.1=a:1:2\nserver.2=b:1:2\n" + tt.keys))
		if err != nil {
			t.Fatal(err)
		}
		c.ServerID = 1
		err = c.Validate()
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %v, want %q", tt.keys, err, w)
			}
		}
	}
}

// quorumJAAS is a JAAS file as ZooKeeper's documentation writes it for
// SASL between servers.
const quorumJAAS = `QuorumServer {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_test="secret"
       user_other="othersecret";
};
QuorumLearner {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       username="test"
       password="secret";
};
`

func TestLoadQuorumAuth(t *testing.T) {
	dir := t.TempDir()
	ensemble := "dataDir=" + dir + "\nclientPort=2181\nserver.1=127.0.0.1:2888:3888\nserver.2=127.0.0.2:2888:3888\n" +
		"java.security.auth.login.config=" + filepath.Join(dir, "jaas.conf") + "\n"
	steps := "quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\nquorum.auth.serverRequireSasl=true\n"
	writeFiles(t, dir, map[string]string{
		"myid":          "1",
		"jaas.conf":     quorumJAAS,
		"renamed.conf":  strings.NewReplacer("QuorumServer", "QS", "QuorumLearner", "QL").Replace(quorumJAAS),
		"nouser.conf":   "QuorumServer { org.apache.zookeeper.server.auth.DigestLoginModule required user_test=\"secret\"; };\nQuorumLearner { org.apache.zookeeper.server.auth.DigestLoginModule required; };",
		"kerberos.conf": strings.ReplaceAll(quorumJAAS, "org.apache.zookeeper.server.auth.DigestLoginModule", "com.sun.security.auth.module.Krb5LoginModule"),
		"client.conf":   `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob="bobsecret"; };`,

		"zoo.cfg":      ensemble + steps,
		"step0.cfg":    ensemble,
		"step1.cfg":    ensemble + "quorum.auth.enableSasl=true\n",
		"renamed.cfg":  strings.ReplaceAll(ensemble, "jaas.conf", "renamed.conf") + steps + "quorum.auth.learner.saslLoginContext=QL\nquorum.auth.server.saslLoginContext=QS\n",
		"wrongctx.cfg": ensemble + steps + "quorum.auth.server.saslLoginContext=QS\n",
		"nouser.cfg":   strings.ReplaceAll(ensemble, "jaas.conf", "nouser.conf") + steps,
		"nouser1.cfg":  strings.ReplaceAll(ensemble, "jaas.conf", "nouser.conf") + "quorum.auth.enableSasl=true\n",
		"kerberos.cfg": strings.ReplaceAll(ensemble, "jaas.conf", "kerberos.conf") + steps + "quorum.auth.kerberos.servicePrincipal=zkquorum/_HOST\n",
		"client.cfg":   strings.ReplaceAll(ensemble, "jaas.conf", "client.conf") + steps,
	})
	load := func(name string) (Config, error) { return Load(filepath.Join(dir, name)) }

	c, err := load("zoo.cfg")
	if err != nil {
		t.Fatal(err)
	}
	want := QuorumAuth{EnableSASL: true, LearnerRequireSASL: true, ServerRequireSASL: true,
		Users: map[string]string{"test": "secret", "other": "othersecret"}, Username: "test", Password: "secret"}
	if !quorumAuthEqual(c.QuorumAuth, want) {
		t.Errorf("QuorumAuth = %+v, want %+v", c.QuorumAuth, want)
	}
	// A JAAS file of the quorum sections alone leaves the client port
	// without SASL, as in ZooKeeper, at every step, the first included.
	if c.SASLUsers != nil {
		t.Errorf("client SASL users %q from a file without a Server section", c.SASLUsers)
	}
	for _, name := range []string{"step0.cfg", "step1.cfg", "renamed.cfg", "nouser1.cfg"} {
		if _, err := load(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if c, err := load("renamed.cfg"); err != nil || c.QuorumAuth.Username != "test" || c.QuorumAuth.Users["other"] != "othersecret" {
		t.Errorf("sections named by saslLoginContext: %v, %+v", err, c.QuorumAuth)
	}

	for name, want := range map[string]string{
		"wrongctx.cfg": "no section QS (quorum.auth.server.saslLoginContext)",
		"nouser.cfg":   "section QuorumLearner (quorum.auth.learner.saslLoginContext) has no username and password",
		"kerberos.cfg": "Kerberos (GSSAPI) between servers is not implemented yet",
		"client.cfg":   "no section QuorumServer",
	} {
		_, err := load(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error shows a password: %v", name, err)
		}
	}
	if _, err := load("kerberos.cfg"); err == nil || !strings.Contains(err.Error(), "quorum.auth.kerberos.servicePrincipal=zkquorum/_HOST") {
		t.Errorf("the Kerberos refusal does not name the principal: %v", err)
	}
}
