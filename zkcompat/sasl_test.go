//go:build linux

package zkcompat

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
)

// saslJAAS is the JAAS file of the SASL tests: the server's users (super,
// bob, carol, alice, and empty with an empty password), the Java client's
// Client section (bob) and BadClient (bob with a wrong password).
const saslJAAS = "testdata/sasl/jaas.conf"

// saslZooCfg are the zoo.cfg lines both servers of the SASL tests run
// with, after the JAAS file's.
var saslZooCfg = [][2]string{
	{"authProvider.1", config.SASLAuthenticationProvider},
	{"superUser", "alice"},
}

// startSASLServers starts ZooKeeper 3.8 and Collie with SASL from the
// same JAAS file and zoo.cfg lines, and extra lines after those.
func startSASLServers(t *testing.T, extra ...[2]string) (zookeeper, collie interopServer) {
	t.Helper()
	jaas, err := filepath.Abs(saslJAAS)
	if err != nil {
		t.Fatal(err)
	}
	return startSASLServersFrom(t, jaas, "", slices.Concat(saslZooCfg, extra))
}

// startSASLServersFrom starts ZooKeeper 3.8 and Collie with the JAAS file
// jaas, the krb5.conf krb5Conf (none when ""), and the zoo.cfg lines.
// ZooKeeper takes both files from Java's system properties, Collie from
// zoo.cfg keys of the same names.
func startSASLServersFrom(t *testing.T, jaas, krb5Conf string, lines [][2]string) (zookeeper, collie interopServer) {
	t.Helper()
	jvm := []string{"-Djava.security.auth.login.config=" + jaas}
	files := "java.security.auth.login.config=" + jaas + "\n"
	if krb5Conf != "" {
		jvm = append(jvm, "-Djava.security.krb5.conf="+krb5Conf)
		files += "java.security.krb5.conf=" + krb5Conf + "\n"
	}
	opts := []zkref.Option{zkref.WithJVMArgs(jvm...)}
	for _, kv := range lines {
		opts = append(opts, zkref.WithConfig(kv[0], kv[1]))
	}
	ref := zkref.Start(t, opts...)

	// Collie reads the same lines, and the files named among them, as a
	// zoo.cfg.
	dir := t.TempDir()
	text := "dataDir=" + dir + "\nclientPort=2181\n" + files
	for _, kv := range lines {
		text += kv[0] + "=" + kv[1] + "\n"
	}
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	col := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
		c.MaxSessionTimeout = 40 * time.Second
		c.JAASConfigFile = loaded.JAASConfigFile
		c.SASLUsers = loaded.SASLUsers
		c.SASLKerberos = loaded.SASLKerberos
		c.Krb5 = loaded.Krb5
		c.SASLAuthProvider = loaded.SASLAuthProvider
		c.SASLSuperUsers = loaded.SASLSuperUsers
		c.SASLSuperPassword = loaded.SASLSuperPassword
		c.AllowSASLFailedClients = loaded.AllowSASLFailedClients
		c.EnforceAuthSchemes = loaded.EnforceAuthSchemes
	}))
	return interopServer{"ZooKeeper", ref.Addr()}, interopServer{"Collie", col.Addr()}
}

// runKazooTranscript runs a Kazoo script against addr and returns what it
// printed; it fails t unless the script ends with DONE.
func runKazooTranscript(t *testing.T, python, script, addr string) []string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", "kazoo", script))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*kazooScriptTimeout)
	defer cancel()
	p := startInteropProcess(ctx, t, false, []string{"PYTHONDONTWRITEBYTECODE=1"}, python, path, addr)
	exit, err := p.wait()
	lines := p.out.Lines()
	if exit != 0 || err != nil || len(lines) == 0 || lines[len(lines)-1] != "DONE" {
		t.Fatalf("%s against %s: exit code %d (%v)\noutput:\n%s", script, addr, exit, err, p.out)
	}
	return lines
}

// outcomes keeps the lines of a transcript that report an outcome, which
// start with "> ", dropping the client's own log lines.
func outcomes(lines []string) []string {
	var out []string
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, "> "); ok {
			out = append(out, rest)
		}
	}
	return out
}

// TestSASLKazoo runs Kazoo with DIGEST-MD5 against ZooKeeper 3.8 and
// Collie started from the same JAAS file and zoo.cfg lines: the same
// users authenticate, the same sasl ACLs let the same users in, the same
// credentials are refused, with the same errors.
func TestSASLKazoo(t *testing.T) {
	python, err := zkref.Python()
	zkref.Require(t, err)
	zookeeper, collie := startSASLServers(t)
	want := outcomes(runKazooTranscript(t, python, "sasl.py", zookeeper.addr))
	rawCollie := runKazooTranscript(t, python, "sasl.py", collie.addr)
	got := outcomes(rawCollie)
	if !slices.Equal(got, want) {
		t.Errorf("Collie's outcomes differ from ZooKeeper's\nCollie:\n%s\nZooKeeper:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, line := range []string{
		"bob reads it: ok b'b'",
		"carol reads it: NoAuthError",
		"alice, a superUser, writes it: ok 'version 1'",
		"the sasl user super reads it: ok b'a'",
		"bob again, with a wrong password: start: ok, then LOST",
	} {
		if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, line) }) {
			t.Errorf("Collie's outcomes lack %q", line)
		}
	}
	t.Logf("outcomes on both servers:\n%s", strings.Join(want, "\n"))
	if t.Failed() {
		t.Logf("Collie transcript:\n%s", strings.Join(rawCollie, "\n"))
	}
}

// runZkCliSASL runs zkCli.sh with args against addr as a SASL client of
// the JAAS file's section named section, and returns its exit code and
// what it printed, without the greeting and logging.
func runZkCliSASL(t *testing.T, addr, section string, args ...string) (int, []string) {
	t.Helper()
	jaas, err := filepath.Abs(saslJAAS)
	if err != nil {
		t.Fatal(err)
	}
	return runZkCliWithFlags(t, addr, "-Djava.security.auth.login.config="+jaas+" -Dzookeeper.sasl.clientconfig="+section, args...)
}

// runZkCliWithFlags runs zkCli.sh with args against addr, with the Java
// system properties jvmFlags, and returns its exit code and what it
// printed, without the greeting and logging.
func runZkCliWithFlags(t *testing.T, addr, jvmFlags string, args ...string) (int, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), zkCliTimeout)
	defer cancel()
	env := []string{
		"CLIENT_JVMFLAGS=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData -Xshare:auto " + jvmFlags,
		"TZ=UTC",
	}
	p := startInteropProcess(ctx, t, false, env, zkCliPath, append([]string{"-server", addr}, args...)...)
	exit, err := p.wait()
	if err != nil {
		t.Fatalf("zkCli.sh %s against %s: %v\noutput:\n%s", strings.Join(args, " "), addr, err, p.out)
	}
	var out []string
	for _, line := range p.out.Lines() {
		if !isZkCliNoise(line) && !strings.HasPrefix(line, "Connecting to ") && !strings.Contains(line, " - ") {
			out = append(out, line)
		}
	}
	return exit, out
}

// TestSASLJavaClient authenticates ZooKeeper's Java client, through
// zkCli.sh with a JAAS Client section in CLIENT_JVMFLAGS, against
// ZooKeeper 3.8 and Collie from the same JAAS file and zoo.cfg lines:
// whoami shows the sasl identity, and a wrong password is refused alike.
func TestSASLJavaClient(t *testing.T) {
	requireClientTool(t, zkCliPath, "zookeeper")
	zookeeper, collie := startSASLServers(t)
	for _, tt := range []struct {
		section string
		args    []string
		want    string // a line both must print
		// exact asks for the same output; after AuthFailed, what the
		// shell prints of a command racing the closed connection varies.
		exact bool
	}{
		{"Client", []string{"whoami"}, "sasl: bob", true},
		{"BadClient", []string{"whoami"}, "WatchedEvent state:AuthFailed type:None path:null", false},
	} {
		t.Run(tt.section, func(t *testing.T) {
			zkExit, zkOut := runZkCliSASL(t, zookeeper.addr, tt.section, tt.args...)
			colExit, colOut := runZkCliSASL(t, collie.addr, tt.section, tt.args...)
			if !slices.Contains(zkOut, tt.want) {
				t.Errorf("ZooKeeper: no line %q in\n%s", tt.want, strings.Join(zkOut, "\n"))
			}
			if tt.exact && (zkExit != colExit || !slices.Equal(zkOut, colOut)) {
				t.Errorf("zkCli.sh %s differs\nZooKeeper (exit %d):\n%s\nCollie (exit %d):\n%s",
					strings.Join(tt.args, " "), zkExit, strings.Join(zkOut, "\n"), colExit, strings.Join(colOut, "\n"))
			}
			if !slices.Contains(colOut, tt.want) {
				t.Errorf("Collie: no line %q in\n%s", tt.want, strings.Join(colOut, "\n"))
			}
			t.Logf("ZooKeeper (exit %d):\n%s", zkExit, strings.Join(zkOut, "\n"))
		})
	}
}

// saslStep is one sasl packet of a hand-made exchange: a fixed token, or
// the digest-response to the last challenge with a password.
type saslStep struct {
	token    []byte
	password string // with token nil: respond to the challenge as bob
	again    bool   // with token nil: send the previous response again
	// edit, with password, changes the response's form: its separators.
	edit func([]byte) []byte
}

// saslTranscript runs steps on a new session of addr and returns what the
// server answered each, then whether it closed the connection.
func saslTranscript(t *testing.T, addr string, steps []saslStep) []string {
	t.Helper()
	c, err := zkwire.Dial(addr, 10000)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []string
	var challenge, last []byte
	for _, s := range steps {
		token := s.token
		switch {
		case s.again:
			token = last
		case token == nil:
			token = digestResponse(challenge, "bob", s.password)
			if s.edit != nil {
				token = s.edit(token)
			}
		}
		last = token
		hdr, body, err := c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: token})
		if err != nil {
			if cause := errors.Unwrap(err); cause != nil {
				err = cause
			}
			out = append(out, "closed: "+err.Error())
			return out
		}
		var resp proto.SetSASLResponse
		if err := proto.Unmarshal(body, &resp); err != nil {
			out = append(out, fmt.Sprintf("err %d, body %d bytes", hdr.Err, len(body)))
			continue
		}
		challenge = resp.Token
		kind := "a nil token"
		switch {
		case bytes.HasPrefix(resp.Token, []byte("rspauth=")):
			kind = "rspauth"
		case bytes.Contains(resp.Token, []byte(`realm="zk-sasl-md5",nonce="`)):
			kind = "the challenge"
		case resp.Token != nil:
			kind = fmt.Sprintf("%q", resp.Token)
		}
		out = append(out, fmt.Sprintf("err %d, zxid %d, %s", hdr.Err, hdr.Zxid, kind))
	}
	hdr, _, err := c.CallXid(proto.XidPing, proto.OpPing, nil)
	if err != nil {
		out = append(out, "then closed")
	} else {
		out = append(out, fmt.Sprintf("then a ping: err %d", hdr.Err))
	}
	return out
}

// digestResponse answers a DIGEST-MD5 challenge as a client would.
func digestResponse(challenge []byte, user, password string) []byte {
	_, rest, _ := bytes.Cut(challenge, []byte(`nonce="`))
	nonce, _, _ := bytes.Cut(rest, []byte(`"`))
	h := func(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	inner := md5.Sum([]byte(user + ":zk-sasl-md5:" + password))
	a1 := h(string(inner[:]) + ":" + string(nonce) + ":cnonce")
	resp := h(a1 + ":" + string(nonce) + ":00000001:cnonce:auth:" + h("AUTHENTICATE:zookeeper/zk-sasl-md5"))
	return fmt.Appendf(nil, `charset=utf-8,username="%s",realm="zk-sasl-md5",nonce="%s",nc=00000001,cnonce="cnonce",digest-uri="zookeeper/zk-sasl-md5",maxbuf=65536,response=%s,qop=auth`,
		user, nonce, resp)
}

// TestSASLProtocol sends hand-made SASL packets, hostile ones among them,
// to ZooKeeper 3.8 and Collie and compares every answer: a right and a
// wrong password, a response replayed after success, an oversized and a
// garbage token, a token before the challenge, responses whose elements
// are apart by white space only or with empty values, and, with
// enforce.auth.enabled=true and enforce.auth.schemes=sasl, requests
// before authentication.
func TestSASLProtocol(t *testing.T) {
	zookeeper, collie := startSASLServers(t)
	scenarios := []struct {
		name  string
		steps []saslStep
	}{
		{"right password", []saslStep{{token: []byte{}}, {password: "bobsecret"}}},
		{"wrong password", []saslStep{{token: []byte{}}, {password: "wrong"}}},
		{"response replayed after success", []saslStep{{token: []byte{}}, {password: "bobsecret"}, {again: true}}},
		{"oversized token", []saslStep{{token: bytes.Repeat([]byte("a"), 5000)}}},
		{"garbage response", []saslStep{{token: []byte{}}, {token: []byte("\x00\xff garbage ,,=\"")}}},
		{"a response before the challenge", []saslStep{{token: []byte(`username="bob"`)}, {password: "bobsecret"}}},
		{"elements apart by white space only", []saslStep{{token: []byte{}}, {password: "bobsecret", edit: func(b []byte) []byte {
			b = bytes.Replace(b, []byte("nc=00000001,"), []byte("nc=00000001 "), 1)
			return bytes.Replace(b, []byte(`"zookeeper/zk-sasl-md5",`), []byte(`"zookeeper/zk-sasl-md5"`+"\t"), 1)
		}}}},
		{"an empty unquoted value", []saslStep{{token: []byte{}}, {password: "bobsecret", edit: func(b []byte) []byte {
			return append([]byte("foo=,"), b...)
		}}}},
		{"an empty unquoted value at the end", []saslStep{{token: []byte{}}, {password: "bobsecret", edit: func(b []byte) []byte {
			return append(b, ",foo="...)
		}}}},
		{"a quoted value without a separator", []saslStep{{token: []byte{}}, {password: "bobsecret", edit: func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"zookeeper/zk-sasl-md5",`), []byte(`"zookeeper/zk-sasl-md5"foo=1,`), 1)
		}}}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			want := saslTranscript(t, zookeeper.addr, sc.steps)
			got := saslTranscript(t, collie.addr, sc.steps)
			if !slices.Equal(got, want) {
				t.Errorf("Collie:\n%s\nZooKeeper:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			t.Logf("both:\n%s", strings.Join(want, "\n"))
		})
	}

	t.Run("enforce.auth", func(t *testing.T) {
		zookeeper, collie := startSASLServers(t, [2]string{"enforce.auth.enabled", "true"}, [2]string{"enforce.auth.schemes", "sasl"})
		for _, sc := range []struct {
			name string
			run  func(c *zkwire.Conn) string
		}{
			{"ping first", func(c *zkwire.Conn) string {
				hdr, _, err := c.CallXid(proto.XidPing, proto.OpPing, nil)
				n, _ := c.ExpectClosed()
				return fmt.Sprintf("xid %d err %d (%v), then %d bytes and closed", hdr.Xid, hdr.Err, err, n)
			}},
			{"getData first", func(c *zkwire.Conn) string {
				hdr, body, err := c.Call(proto.OpGetData, &proto.GetDataRequest{Path: "/"})
				n, _ := c.ExpectClosed()
				return fmt.Sprintf("err %d, %d bytes of body (%v), then %d bytes and closed", hdr.Err, len(body), err, n)
			}},
			{"wrong password", func(c *zkwire.Conn) string {
				c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: []byte{}})
				hdr, _, _ := c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: []byte("nonsense")})
				n, _ := c.ExpectClosed()
				return fmt.Sprintf("err %d, then %d bytes and closed", hdr.Err, n)
			}},
			{"authenticated", func(c *zkwire.Conn) string {
				_, body, _ := c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: []byte{}})
				var ch proto.SetSASLResponse
				proto.Unmarshal(body, &ch)
				c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: digestResponse(ch.Token, "bob", "bobsecret")})
				hdr, _, err := c.Call(proto.OpGetData, &proto.GetDataRequest{Path: "/"})
				return fmt.Sprintf("getData: err %d (%v)", hdr.Err, err)
			}},
		} {
			var results []string
			for _, addr := range []string{zookeeper.addr, collie.addr} {
				c, err := zkwire.Dial(addr, 10000)
				if err != nil {
					t.Fatal(err)
				}
				results = append(results, sc.run(c))
				c.Close()
			}
			if results[0] != results[1] {
				t.Errorf("%s: ZooKeeper: %s; Collie: %s", sc.name, results[0], results[1])
			}
			t.Logf("%s: %s", sc.name, results[0])
		}
	})
}

// TestSASLCollieCLI runs collie cli as zkCli.sh is run in
// TestSASLJavaClient, the JAAS file and section in CLIENT_JVMFLAGS,
// against ZooKeeper 3.8 and Collie: whoami prints what zkCli.sh prints,
// and a refused password fails the command on both.
func TestSASLCollieCLI(t *testing.T) {
	requireClientTool(t, zkCliPath, "zookeeper")
	zookeeper, collie := startSASLServers(t)
	jaas, err := filepath.Abs(saslJAAS)
	if err != nil {
		t.Fatal(err)
	}
	_, zkCliOut := runZkCliSASL(t, zookeeper.addr, "Client", "whoami")
	for _, srv := range []interopServer{zookeeper, collie} {
		t.Run(srv.name, func(t *testing.T) {
			t.Setenv("JVMFLAGS", "")
			t.Setenv("CLIENT_JVMFLAGS", "-Xmx64m -Djava.security.auth.login.config="+jaas)
			exit, out := runCollie(t, t.TempDir(), "cli", "-server", srv.addr, "whoami")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			slices.Sort(lines)
			want := slices.DeleteFunc(slices.Clone(zkCliOut), func(l string) bool { return !strings.Contains(l, ": ") })
			slices.Sort(want)
			if exit != 0 || !slices.Equal(lines, want) || !slices.Contains(lines, "sasl: bob") {
				t.Errorf("collie cli whoami: exit %d\n%s\nzkCli.sh printed:\n%s", exit, out, strings.Join(want, "\n"))
			}
			t.Setenv("CLIENT_JVMFLAGS", "-Djava.security.auth.login.config="+jaas+" -Dzookeeper.sasl.clientconfig=BadClient")
			if exit, out := runCollie(t, t.TempDir(), "cli", "-server", srv.addr, "whoami"); exit != 1 || !strings.Contains(out, "the server refused the credentials") {
				t.Errorf("collie cli with a wrong password: exit %d\n%s", exit, out)
			}
		})
	}
}
