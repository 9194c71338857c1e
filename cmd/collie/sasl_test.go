package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/server/config"
)

const cliJAAS = `Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_bob="bobsecret";
};
Client {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       username="bob"
       password="bobsecret";
};
Carol {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       username="carol"
       password="carolsecret";
};
BadClient {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       username="bob"
       password="wrong";
};
KrbNoFile {
       com.sun.security.auth.module.Krb5LoginModule required
       useKeyTab=true
       keyTab="nonexistent.keytab"
       principal="bob";
};
KrbPassword {
       com.sun.security.auth.module.Krb5LoginModule required
       principal="bob";
};
`

// collie cli authenticates as zkCli.sh users ask it to: a JAAS file in
// CLIENT_JVMFLAGS or JVMFLAGS, its section named by
// -Dzookeeper.sasl.clientconfig; or with its own flags. collie bench
// takes the same flags.
func TestCLIAndBenchWithSASL(t *testing.T) {
	srv := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
		c.SASLUsers = map[string]string{"bob": "bobsecret", "carol": "carolsecret"}
		c.SASLAuthProvider = true
	}))
	dir := t.TempDir()
	jaas := filepath.Join(dir, "jaas.conf")
	serverOnly := filepath.Join(dir, "server.conf")
	passwordFile := filepath.Join(dir, "password")
	krb5Conf := filepath.Join(dir, "krb5.conf")
	for name, text := range map[string]string{jaas: cliJAAS, krb5Conf: "[libdefaults]\n default_realm = COLLIE.TEST\n", serverOnly: "Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob=\"x\"; };", passwordFile: "carolsecret\n"} {
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	noInput, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer noInput.Close()

	for _, tt := range []struct {
		name           string
		clientJVMFlags string
		jvmFlags       string
		args           []string
		status         int
		stdout, stderr string // what they must hold
		notStdout      string
	}{
		{name: "CLIENT_JVMFLAGS", clientJVMFlags: "-Xmx64m -Djava.security.auth.login.config=" + jaas, stdout: "sasl: bob\n"},
		{name: "JVMFLAGS", jvmFlags: "-Djava.security.auth.login.config=file:" + jaas, stdout: "sasl: bob\n"},
		{name: "JVMFLAGS after CLIENT_JVMFLAGS", clientJVMFlags: "-Djava.security.auth.login.config=/nonexistent", jvmFlags: "-Djava.security.auth.login.config=" + jaas, stdout: "sasl: bob\n"},
		{name: "section from the environment", clientJVMFlags: "-Djava.security.auth.login.config=" + jaas + " -Dzookeeper.sasl.clientconfig=Carol", stdout: "sasl: carol\n"},
		{name: "section flag", clientJVMFlags: "-Djava.security.auth.login.config=" + jaas, args: []string{"-sasl-config", "Carol"}, stdout: "sasl: carol\n"},
		{name: "jaas flag", args: []string{"-jaas", jaas}, stdout: "sasl: bob\n"},
		{name: "user and password file", args: []string{"-sasl-user", "carol", "-sasl-password-file", passwordFile}, stdout: "sasl: carol\n"},
		{name: "SASL switched off", clientJVMFlags: "-Djava.security.auth.login.config=" + jaas + " -Dzookeeper.sasl.client=false", stdout: "ip: 127.0.0.1\n", notStdout: "sasl"},
		{name: "a file from the environment without the section", clientJVMFlags: "-Djava.security.auth.login.config=" + serverOnly, stdout: "ip: 127.0.0.1\n", notStdout: "sasl", stderr: "no JAAS section Client"},
		{name: "refused", args: []string{"-jaas", jaas, "-sasl-config", "BadClient"}, status: 1, stderr: "the server refused the credentials: zk: authentication failed"},
		{name: "jaas flag without the section", args: []string{"-jaas", serverOnly}, status: 2, stderr: "no JAAS section Client"},
		{name: "user without password", args: []string{"-sasl-user", "bob"}, status: 2, stderr: "-sasl-password-file"},
		{name: "user and jaas", args: []string{"-sasl-user", "bob", "-sasl-password", "x", "-jaas", jaas}, status: 2, stderr: "use one"},
		// Kerberos logins that fail before any KDC is asked.
		{name: "a Kerberos section's keytab missing", args: []string{"-jaas", jaas, "-sasl-config", "KrbNoFile", "-krb5-conf", krb5Conf}, status: 2, stderr: "keytab nonexistent.keytab"},
		{name: "a Kerberos section's krb5.conf from the environment", clientJVMFlags: "-Djava.security.auth.login.config=" + jaas + " -Dzookeeper.sasl.clientconfig=KrbNoFile -Djava.security.krb5.conf=" + filepath.Join(dir, "none.conf"), status: 2, stderr: "none.conf"},
		{name: "a Kerberos section with a password login", args: []string{"-jaas", jaas, "-sasl-config", "KrbPassword"}, status: 2, stderr: "a login with a password is not possible"},
		{name: "keytab flag without principal", args: []string{"-sasl-keytab", "x.keytab"}, status: 2, stderr: "-sasl-keytab goes with -sasl-principal"},
		{name: "principal and jaas", args: []string{"-sasl-principal", "bob", "-jaas", jaas}, status: 2, stderr: "use one"},
		{name: "principal and user", args: []string{"-sasl-principal", "bob", "-sasl-user", "bob", "-sasl-password", "x"}, status: 2, stderr: "use one"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CLIENT_JVMFLAGS", tt.clientJVMFlags)
			t.Setenv("JVMFLAGS", tt.jvmFlags)
			var stdout, stderr bytes.Buffer
			args := append([]string{"-server", srv.Addr(), "-timeout", "5000"}, tt.args...)
			status := runCLI(append(args, "whoami"), noInput, &stdout, &stderr)
			if status != tt.status || !strings.Contains(stdout.String(), tt.stdout) || !strings.Contains(stderr.String(), tt.stderr) ||
				(tt.notStdout != "" && strings.Contains(stdout.String(), tt.notStdout)) {
				t.Fatalf("status %d, stdout %q, stderr %q; want status %d, stdout with %q, stderr with %q",
					status, stdout.String(), stderr.String(), tt.status, tt.stdout, tt.stderr)
			}
			for _, secret := range []string{"bobsecret", "carolsecret", "wrong"} {
				if strings.Contains(stdout.String()+stderr.String(), secret) {
					t.Errorf("the output shows a password: %q %q", stdout.String(), stderr.String())
				}
			}
		})
	}

	t.Setenv("CLIENT_JVMFLAGS", "")
	t.Setenv("JVMFLAGS", "")
	var stdout, stderr bytes.Buffer
	status := runBench([]string{"-server", srv.Addr(), "-jaas", jaas, "-workload", "set", "-clients", "2", "-duration", "200ms", "-warmup", "0", "-quiet"}, &stdout, &stderr)
	if status != 0 || !strings.Contains(stdout.String(), "2 clients") {
		t.Errorf("bench with SASL: status %d, stdout:\n%s\nstderr:\n%s", status, stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	status = runBench([]string{"-server", srv.Addr(), "-jaas", jaas, "-sasl-config", "BadClient", "-workload", "set", "-clients", "1", "-duration", "200ms", "-warmup", "0", "-quiet"}, &stdout, &stderr)
	if status == 0 || !strings.Contains(stderr.String(), "authentication failed") {
		t.Errorf("bench with a refused login: status %d, stderr:\n%s", status, stderr.String())
	}
}
