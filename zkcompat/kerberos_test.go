//go:build linux

package zkcompat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/collie-io/collie/client/krb5sasl"
	"github.com/collie-io/collie/internal/krbtest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
)

// krbRealm is a KDC with the service principal zookeeper/localhost, a JAAS
// file whose Server section logs the service in from its keytab, and
// client sections: Client (bob), HostClient (zkcli/localhost),
// StaleClient (carol, with keys the KDC has since replaced) and
// UnknownClient (mallory, whom the KDC does not know).
type krbRealm struct {
	kdc  *krbtest.KDC
	jaas string
	// keytabs of bob and zkcli/localhost, for the Go client.
	keytabs map[string]string
}

func newKrbRealm(t *testing.T) *krbRealm {
	t.Helper()
	kdc := krbtest.Start(t)
	r := &krbRealm{kdc: kdc, keytabs: map[string]string{}}
	service := kdc.Keytab(t, "zookeeper/localhost")
	for _, p := range []string{"bob", "zkcli/localhost"} {
		r.keytabs[p] = kdc.Keytab(t, p)
	}
	stale := kdc.Keytab(t, "carol")
	kdc.Keytab(t, "carol")
	unknown := filepath.Join(t.TempDir(), "mallory.keytab")
	kt := keytab.New()
	if err := kt.AddEntry("mallory", krbtest.Realm, "whatever", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	data, _ := kt.Marshal()
	if err := os.WriteFile(unknown, data, 0o600); err != nil {
		t.Fatal(err)
	}
	section := func(name, keytab, principal string) string {
		return fmt.Sprintf("%s {\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n  keyTab=%q\n  storeKey=true\n  useTicketCache=false\n  principal=%q;\n};\n",
			name, keytab, principal+"@"+krbtest.Realm)
	}
	r.jaas = filepath.Join(t.TempDir(), "jaas.conf")
	text := section("Server", service, "zookeeper/localhost") +
		section("Client", r.keytabs["bob"], "bob") +
		section("HostClient", r.keytabs["zkcli/localhost"], "zkcli/localhost") +
		section("StaleClient", stale, "carol") +
		section("UnknownClient", unknown, "mallory")
	if err := os.WriteFile(r.jaas, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// start runs ZooKeeper 3.8 and Collie with the realm's JAAS file and
// krb5.conf, the sasl provider, and lines.
func (r *krbRealm) start(t *testing.T, lines ...[2]string) (zookeeper, collie interopServer) {
	t.Helper()
	lines = append([][2]string{{"authProvider.1", config.SASLAuthenticationProvider}}, lines...)
	return startSASLServersFrom(t, r.jaas, r.kdc.Krb5Conf, lines)
}

// goClient logs principal in with its keytab.
func (r *krbRealm) goClient(t *testing.T, principal string) *krb5sasl.Client {
	t.Helper()
	cl, err := krb5sasl.NewClient(krb5sasl.Config{Krb5Conf: r.kdc.Krb5Conf, Principal: principal, Keytab: r.keytabs[principal]})
	if err != nil {
		t.Fatalf("%v\nKDC log:\n%s", err, r.kdc.Log())
	}
	t.Cleanup(cl.Close)
	return cl
}

// krbSession opens a session of addr and authenticates it with the Go
// client's mechanism; it returns the session and how the exchange ended.
func krbSession(t *testing.T, addr string, cl *krb5sasl.Client) (*zkwire.Conn, string) {
	t.Helper()
	c, err := zkwire.Dial(addr, 10000)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m := cl.Mechanism()
	token, err := m.Start("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		hdr, body, err := c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: token})
		if err != nil {
			return c, "closed: " + errors.Unwrap(err).Error()
		}
		if hdr.Err != 0 {
			return c, fmt.Sprintf("err %d", hdr.Err)
		}
		var resp proto.SetSASLResponse
		if err := proto.Unmarshal(body, &resp); err != nil {
			t.Fatal(err)
		}
		if m.Complete() {
			return c, fmt.Sprintf("authenticated as %s", m.ServicePrincipal())
		}
		if token, err = m.Next(resp.Token); err != nil {
			return c, "client: " + err.Error()
		}
	}
	return c, "no end after 5 rounds"
}

// sessionIDs returns a session's identities, "scheme:id" each.
func sessionIDs(t *testing.T, c *zkwire.Conn) []string {
	t.Helper()
	var resp proto.WhoAmIResponse
	if code, err := c.Do(proto.OpWhoAmI, nil, &resp); err != nil || code != 0 {
		t.Fatalf("whoAmI: %v %v", code, err)
	}
	var ids []string
	for _, ci := range resp.ClientInfo {
		ids = append(ids, ci.AuthScheme+":"+ci.User)
	}
	slices.Sort(ids)
	return ids
}

// TestKerberosJavaClient authenticates ZooKeeper's Java client, through
// zkCli.sh with a JAAS Client section that logs in from a keytab, against
// ZooKeeper 3.8 and Collie started from the same JAAS file, krb5.conf
// and zoo.cfg lines: the same principals get the same identities, a sasl
// ACL lets in the same one, and a client with stale keys or a principal
// the KDC does not know is refused alike.
func TestKerberosJavaClient(t *testing.T) {
	requireClientTool(t, zkCliPath, "zookeeper")
	r := newKrbRealm(t)
	zookeeper, collie := r.start(t)
	r.kdc.AddPrincipal(t, "zookeeper/otherhost")
	for _, tt := range []struct {
		name, section string
		args          []string
		want          string // a line both must print
		flags         string // more Java system properties
		// serverRefuses: the servers refuse the client after it
		// connected, and what zkCli.sh prints of the command racing the
		// closed connection varies; only want is compared.
		serverRefuses bool
	}{
		{"bob", "Client", []string{"whoami"}, "sasl: bob@" + krbtest.Realm, "", false},
		{"a host principal", "HostClient", []string{"whoami"}, "sasl: zkcli/localhost@" + krbtest.Realm, "", false},
		// The Java client's login fails before it connects.
		{"stale keys", "StaleClient", []string{"whoami"}, "WatchedEvent state:AuthFailed type:None path:null", "", false},
		{"an unknown principal", "UnknownClient", []string{"whoami"}, "WatchedEvent state:AuthFailed type:None path:null", "", false},
		{"bob creates a node for himself", "Client", []string{"create", "/krb-java", "x", "sasl:bob@" + krbtest.Realm + ":cdrwa"}, "Created /krb-java", "", false},
		{"another principal reads it", "HostClient", []string{"get", "/krb-java"}, "Insufficient permission : /krb-java", "", false},
		{"bob reads it", "Client", []string{"get", "/krb-java"}, "x", "", false},
		{"a ticket for another service", "Client", []string{"whoami"}, "WatchedEvent state:AuthFailed type:None path:null",
			"-Dzookeeper.server.principal=zookeeper/otherhost@" + krbtest.Realm, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			flags := "-Djava.security.auth.login.config=" + r.jaas + " -Djava.security.krb5.conf=" + r.kdc.Krb5Conf +
				" -Dzookeeper.sasl.clientconfig=" + tt.section + " -Dzookeeper.sasl.client.username=zookeeper " + tt.flags
			zkExit, zkOut := runZkCliWithFlags(t, zookeeper.addr, flags, tt.args...)
			colExit, colOut := runZkCliWithFlags(t, collie.addr, flags, tt.args...)
			for _, out := range []struct {
				name  string
				lines []string
			}{{"ZooKeeper", zkOut}, {"Collie", colOut}} {
				if !slices.Contains(out.lines, tt.want) {
					t.Errorf("%s: no line %q in\n%s", out.name, tt.want, strings.Join(out.lines, "\n"))
				}
				if strings.HasPrefix(tt.want, "WatchedEvent state:AuthFailed") && slices.ContainsFunc(out.lines, func(l string) bool { return strings.HasPrefix(l, "sasl: ") }) {
					t.Errorf("%s: a refused client has a sasl identity:\n%s", out.name, strings.Join(out.lines, "\n"))
				}
			}
			// zkCli.sh prints events from another thread than results,
			// and may exit before it prints SaslAuthenticated: the
			// results are compared, the events only logged.
			if !tt.serverRefuses && (zkExit != colExit || !slices.Equal(withoutEvents(zkOut), withoutEvents(colOut))) {
				t.Errorf("zkCli.sh %s differs\nZooKeeper (exit %d):\n%s\nCollie (exit %d):\n%s",
					strings.Join(tt.args, " "), zkExit, strings.Join(zkOut, "\n"), colExit, strings.Join(colOut, "\n"))
			}
			t.Logf("ZooKeeper (exit %d):\n%s", zkExit, strings.Join(zkOut, "\n"))
		})
	}
}

// withoutEvents drops the lines of zkCli.sh's watcher.
func withoutEvents(lines []string) []string {
	return slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.HasPrefix(l, "WatchedEvent ") })
}

// TestKerberosPrincipalRules authenticates bob and zkcli/localhost with
// the Go client against ZooKeeper 3.8 and Collie under each combination
// of kerberos.removeHostFromPrincipal and removeRealmFromPrincipal, and
// an auth_to_local rule: the identities, super user status and what a
// sasl ACL of each identity lets in are the same.
func TestKerberosPrincipalRules(t *testing.T) {
	zkref.Require(t, zkref.Available())
	r := newKrbRealm(t)
	bob, zkcli := r.goClient(t, "bob"), r.goClient(t, "zkcli/localhost")
	for _, tt := range []struct {
		name  string
		lines [][2]string
		want  []string // zkcli's identities
	}{
		{"defaults", nil, []string{"ip:127.0.0.1", "sasl:zkcli/localhost@" + krbtest.Realm}},
		{"host removed", [][2]string{{"kerberos.removeHostFromPrincipal", "true"}}, []string{"ip:127.0.0.1", "sasl:zkcli@" + krbtest.Realm}},
		{"realm removed", [][2]string{{"kerberos.removeRealmFromPrincipal", "true"}}, []string{"ip:127.0.0.1", "sasl:zkcli/localhost"}},
		{"both removed, zkcli a super user", [][2]string{
			{"kerberos.removeHostFromPrincipal", "true"}, {"kerberos.removeRealmFromPrincipal", "true"}, {"superUser", "zkcli"},
		}, []string{"ip:127.0.0.1", "sasl:zkcli", "super:"}},
		{"auth_to_local renames", [][2]string{
			{"security.auth_to_local", "RULE:[2:$1](zkcli)s/.*/admin/ DEFAULT"},
		}, []string{"ip:127.0.0.1", "sasl:admin/localhost@" + krbtest.Realm}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			zookeeper, collie := r.start(t, tt.lines...)
			var results [][]string
			for _, addr := range []string{zookeeper.addr, collie.addr} {
				results = append(results, principalOutcomes(t, addr, bob, zkcli))
			}
			if !slices.Equal(results[0], results[1]) {
				t.Errorf("ZooKeeper:\n%s\nCollie:\n%s", strings.Join(results[0], "\n"), strings.Join(results[1], "\n"))
			}
			if got := results[1][1]; got != "zkcli: "+strings.Join(tt.want, " ") {
				t.Errorf("Collie: %s, want zkcli: %s", got, strings.Join(tt.want, " "))
			}
			t.Logf("both:\n%s", strings.Join(results[0], "\n"))
		})
	}
}

// principalOutcomes authenticates bob and zkcli on addr, lists their
// identities, and has bob create a node only zkcli's sasl identity may
// read, which each then tries to read.
func principalOutcomes(t *testing.T, addr string, bob, zkcli *krb5sasl.Client) []string {
	t.Helper()
	b, bobAuth := krbSession(t, addr, bob)
	z, zkcliAuth := krbSession(t, addr, zkcli)
	bobIDs, zkcliIDs := sessionIDs(t, b), sessionIDs(t, z)
	out := []string{
		"bob: " + strings.Join(bobIDs, " ") + " (" + bobAuth + ")",
		"zkcli: " + strings.Join(zkcliIDs, " "),
		"zkcli's exchange: " + zkcliAuth,
	}
	var id string
	for _, s := range zkcliIDs {
		if rest, ok := strings.CutPrefix(s, "sasl:"); ok {
			id = rest
		}
	}
	code, err := b.Do(proto.OpCreate, &proto.CreateRequest{Path: "/krb", Data: []byte("x"),
		ACL: []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "sasl", ID: id}}}}, &proto.CreateResponse{})
	out = append(out, fmt.Sprintf("bob creates /krb for sasl:%s: %v %v", id, code, err))
	for _, s := range []struct {
		name string
		c    *zkwire.Conn
	}{{"bob", b}, {"zkcli", z}} {
		code, err := s.c.Do(proto.OpGetData, &proto.GetDataRequest{Path: "/krb"}, &proto.GetDataResponse{})
		out = append(out, fmt.Sprintf("%s reads /krb: %v %v", s.name, code, err))
	}
	return out
}

// TestKerberosGoClient authenticates the Go client against Collie, and
// compares what refused exchanges get from Collie and ZooKeeper 3.8: a
// ticket for another service (zookeeper.server.principal naming it), a
// garbage token, an oversized one.
func TestKerberosGoClient(t *testing.T) {
	zkref.Require(t, zkref.Available())
	r := newKrbRealm(t)
	zookeeper, collie := r.start(t)
	bob := r.goClient(t, "bob")
	c, outcome := krbSession(t, collie.addr, bob)
	if outcome != "authenticated as zookeeper/localhost" {
		t.Fatalf("Collie: %s", outcome)
	}
	if ids := sessionIDs(t, c); !slices.Equal(ids, []string{"ip:127.0.0.1", "sasl:bob@" + krbtest.Realm}) {
		t.Errorf("Collie: whoAmI %q", ids)
	}

	r.kdc.AddPrincipal(t, "zookeeper/otherhost")
	other, err := krb5sasl.NewClient(krb5sasl.Config{Krb5Conf: r.kdc.Krb5Conf, Principal: "bob", Keytab: r.keytabs["bob"], ServerPrincipal: "zookeeper/otherhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, sc := range []struct {
		name string
		run  func(addr string) string
	}{
		{"a ticket for another service", func(addr string) string {
			_, outcome := krbSession(t, addr, other)
			return outcome
		}},
		{"a garbage token", func(addr string) string { return rawSASL(t, addr, []byte("garbage")) }},
		{"an oversized token", func(addr string) string {
			return rawSASL(t, addr, append([]byte{0x60, 0x83, 0x01, 0x00, 0x00}, make([]byte, 0x10000)...))
		}},
	} {
		zk, col := sc.run(zookeeper.addr), sc.run(collie.addr)
		if zk != col {
			t.Errorf("%s: ZooKeeper: %s; Collie: %s", sc.name, zk, col)
		}
		t.Logf("%s: %s", sc.name, zk)
	}
}

// rawSASL sends one sasl packet and reports the answer and whether the
// connection stays.
func rawSASL(t *testing.T, addr string, token []byte) string {
	t.Helper()
	c, err := zkwire.Dial(addr, 10000)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hdr, _, err := c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: token})
	if err != nil {
		return "closed at once"
	}
	out := fmt.Sprintf("err %d", hdr.Err)
	if _, _, err := c.CallXid(proto.XidPing, proto.OpPing, nil); err != nil {
		return out + ", then closed"
	}
	return out + ", then a ping answered"
}

// TestKerberosKazoo runs Kazoo with GSSAPI (pure-sasl over MIT's GSSAPI
// library, which asks for mutual authentication, unlike Java's client)
// against ZooKeeper 3.8 and Collie: the same outcomes on both.
func TestKerberosKazoo(t *testing.T) {
	python, err := zkref.Python()
	zkref.Require(t, err)
	r := newKrbRealm(t)
	zookeeper, collie := r.start(t)
	// MIT's library names the service by the host Kazoo connects to,
	// 127.0.0.1; only with DNS canonicalization, reverse lookups
	// included, does that become localhost, the service's host.
	conf, err := os.ReadFile(r.kdc.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("dns_canonicalize_hostname = false", "dns_canonicalize_hostname = true", "rdns = false", "rdns = true").Replace(string(conf))
	krb5Conf := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(krb5Conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "kazoo", "sasl_gssapi.py"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(addr string) []string {
		ctx, cancel := context.WithTimeout(t.Context(), 2*kazooScriptTimeout)
		defer cancel()
		env := []string{"PYTHONDONTWRITEBYTECODE=1", "KRB5_CONFIG=" + krb5Conf,
			"KRB5_CLIENT_KTNAME=" + r.keytabs["bob"], "KRB5CCNAME=FILE:" + filepath.Join(t.TempDir(), "ccache")}
		p := startInteropProcess(ctx, t, false, env, python, script, addr, "bob@"+krbtest.Realm)
		exit, err := p.wait()
		lines := p.out.Lines()
		if exit != 0 || err != nil || len(lines) == 0 || lines[len(lines)-1] != "DONE" {
			t.Fatalf("sasl_gssapi.py against %s: exit code %d (%v)\noutput:\n%s", addr, exit, err, p.out)
		}
		return outcomes(lines)
	}
	want, got := run(zookeeper.addr), run(collie.addr)
	if !slices.Equal(got, want) {
		t.Errorf("Collie's outcomes differ from ZooKeeper's\nCollie:\n%s\nZooKeeper:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Contains(got, "reads it: ok b'k'") || !slices.Contains(got, "a client without SASL reads it: NoAuthError") {
		t.Errorf("Collie's outcomes:\n%s", strings.Join(got, "\n"))
	}
	t.Logf("outcomes on both servers:\n%s", strings.Join(want, "\n"))
}

// TestKerberosSectionWithDigestUsers starts both servers from a Server
// section that holds a DigestLoginModule with users beside the
// Krb5LoginModule: ZooKeeper's login then has a Kerberos principal and
// its server offers GSSAPI alone, so a DIGEST-MD5 client is refused by
// both, and a Kerberos client authenticates.
func TestKerberosSectionWithDigestUsers(t *testing.T) {
	zkref.Require(t, zkref.Available())
	r := newKrbRealm(t)
	data, err := os.ReadFile(r.jaas)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "Server {\n", "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_bob=\"bobsecret\";\n", 1)
	r.jaas = filepath.Join(t.TempDir(), "jaas.conf")
	if err := os.WriteFile(r.jaas, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	zookeeper, collie := r.start(t)
	digest := []saslStep{{token: []byte{}}, {password: "bobsecret"}}
	// Whether a packet after the close reads EOF or a reset depends on
	// when it reached the closing socket.
	closed := func(lines []string) []string {
		for i, l := range lines {
			if strings.HasPrefix(l, "closed: ") {
				lines[i] = "closed"
			}
		}
		return lines
	}
	want, got := closed(saslTranscript(t, zookeeper.addr, digest)), closed(saslTranscript(t, collie.addr, digest))
	if !slices.Equal(got, want) {
		t.Errorf("DIGEST-MD5: Collie:\n%s\nZooKeeper:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	t.Logf("DIGEST-MD5 on both:\n%s", strings.Join(want, "\n"))
	bob := r.goClient(t, "bob")
	for _, s := range []interopServer{zookeeper, collie} {
		if _, outcome := krbSession(t, s.addr, bob); outcome != "authenticated as zookeeper/localhost" {
			t.Errorf("%s: Kerberos: %s", s.name, outcome)
		}
	}
}

// TestKerberosKeytabRotation rewrites the server's keytab with new keys,
// as a key rotation does: ZooKeeper 3.8 (Java reads a keytab when it
// needs keys) and Collie take them without a restart, and a client with
// a ticket of the new keys authenticates.
func TestKerberosKeytabRotation(t *testing.T) {
	zkref.Require(t, zkref.Available())
	r := newKrbRealm(t)
	zookeeper, collie := r.start(t)
	before := r.goClient(t, "bob")
	for _, s := range []interopServer{zookeeper, collie} {
		if _, outcome := krbSession(t, s.addr, before); outcome != "authenticated as zookeeper/localhost" {
			t.Fatalf("%s before the rotation: %s", s.name, outcome)
		}
	}

	// Both servers read the keytab the Server section names.
	jaas, err := os.ReadFile(r.jaas)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(jaas), `keyTab="`)
	serverKeytab, _, _ := strings.Cut(rest, `"`)
	rotated, err := os.ReadFile(r.kdc.Keytab(t, "zookeeper/localhost"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := serverKeytab + ".new"
	if err := os.WriteFile(tmp, rotated, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, serverKeytab); err != nil {
		t.Fatal(err)
	}

	after := r.goClient(t, "bob") // a new login, so a ticket of the new keys
	for _, s := range []interopServer{zookeeper, collie} {
		if _, outcome := krbSession(t, s.addr, after); outcome != "authenticated as zookeeper/localhost" {
			t.Errorf("%s after the rotation: %s", s.name, outcome)
		}
	}
}

// TestKerberosUnmappedPrincipal is where Collie departs from ZooKeeper
// on purpose: when no auth_to_local rule maps the principal (here a rule
// that gives a name with "@", which is no short name), ZooKeeper 3.8
// takes the authorization id the client sent, so a client may name
// itself anyone; Collie keeps the principal the client proved.
func TestKerberosUnmappedPrincipal(t *testing.T) {
	zkref.Require(t, zkref.Available())
	r := newKrbRealm(t)
	zookeeper, collie := r.start(t, [2]string{"security.auth_to_local", "RULE:[1:$1@$0]"})
	cl, err := krb5sasl.NewClient(krb5sasl.Config{Krb5Conf: r.kdc.Krb5Conf, Principal: "bob", Keytab: r.keytabs["bob"], AuthorizationID: "super-admin"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, tt := range []struct {
		server interopServer
		want   string
	}{
		{zookeeper, "sasl:super-admin"},
		{collie, "sasl:bob@" + krbtest.Realm},
	} {
		c, outcome := krbSession(t, tt.server.addr, cl)
		ids := sessionIDs(t, c)
		if !slices.Equal(ids, []string{"ip:127.0.0.1", tt.want}) {
			t.Errorf("%s: %s, identities %q; want %s", tt.server.name, outcome, ids, tt.want)
		}
	}
}

// TestKerberosCollieCLI runs collie cli as zkCli.sh is run with a
// Kerberos JAAS Client section: the JAAS file and the krb5.conf named in
// CLIENT_JVMFLAGS. Against ZooKeeper 3.8 and Collie, whoami prints what
// zkCli.sh prints, for a login from a keytab and from kinit's ticket
// cache (KRB5CCNAME), and so do the same logins from flags and collie
// bench's; a principal the keytab lacks, stale keys, a principal the KDC
// does not know and a missing ticket cache fail the command with a
// message that names them, and the Java client's properties name the
// service.
func TestKerberosCollieCLI(t *testing.T) {
	requireClientTool(t, zkCliPath, "zookeeper")
	r := newKrbRealm(t)
	zookeeper, collie := r.start(t)
	flags := "-Djava.security.auth.login.config=" + r.jaas + " -Djava.security.krb5.conf=" + r.kdc.Krb5Conf
	_, zkCliOut := runZkCliWithFlags(t, zookeeper.addr, flags, "whoami")
	want := slices.DeleteFunc(slices.Clone(zkCliOut), func(l string) bool { return !strings.Contains(l, ": ") })
	slices.Sort(want)
	if !slices.Contains(want, "sasl: bob@"+krbtest.Realm) {
		t.Fatalf("zkCli.sh whoami:\n%s", strings.Join(zkCliOut, "\n"))
	}

	// The client's own sections, beside the servers' file.
	clientJAAS := filepath.Join(t.TempDir(), "client.conf")
	text := fmt.Sprintf(`Cache {
  com.sun.security.auth.module.Krb5LoginModule required
  useTicketCache=true;
};
WrongPrincipal {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true keyTab=%q principal="alice";
};
`, r.keytabs["bob"])
	if err := os.WriteFile(clientJAAS, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ccache := r.kdc.Kinit(t, "bob", r.keytabs["bob"])
	t.Setenv("JVMFLAGS", "")
	cli := func(addr, jaas, section string) (int, string) {
		t.Setenv("CLIENT_JVMFLAGS", "-Xmx64m -Djava.security.auth.login.config="+jaas+" -Djava.security.krb5.conf="+r.kdc.Krb5Conf+" -Dzookeeper.sasl.clientconfig="+section)
		return runCollie(t, t.TempDir(), "cli", "-server", addr, "-timeout", "10000", "whoami")
	}
	for _, srv := range []interopServer{zookeeper, collie} {
		for _, login := range []struct{ name, jaas, section, ccache string }{
			{"keytab", r.jaas, "Client", ""},
			{"ticket cache", clientJAAS, "Cache", "FILE:" + ccache},
		} {
			t.Run(srv.name+" "+login.name, func(t *testing.T) {
				t.Setenv("KRB5CCNAME", login.ccache)
				exit, out := cli(srv.addr, login.jaas, login.section)
				lines := strings.Split(strings.TrimSpace(out), "\n")
				slices.Sort(lines)
				if exit != 0 || !slices.Equal(lines, want) {
					t.Errorf("collie cli whoami: exit %d\n%s\nzkCli.sh printed:\n%s\nKDC log:\n%s", exit, out, strings.Join(want, "\n"), r.kdc.Log())
				}
			})
		}
	}

	// The same logins from flags, without CLIENT_JVMFLAGS.
	for _, login := range []struct {
		name, ccache string
		args         []string
	}{
		{"keytab flags", "", []string{"-sasl-principal", "bob", "-sasl-keytab", r.keytabs["bob"]}},
		{"ticket cache flags", "FILE:" + ccache, []string{"-sasl-principal", "bob@" + krbtest.Realm}},
	} {
		t.Run(login.name, func(t *testing.T) {
			t.Setenv("CLIENT_JVMFLAGS", "")
			t.Setenv("KRB5CCNAME", login.ccache)
			args := append([]string{"cli", "-server", collie.addr, "-timeout", "10000", "-krb5-conf", r.kdc.Krb5Conf}, login.args...)
			exit, out := runCollie(t, t.TempDir(), append(args, "whoami")...)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			slices.Sort(lines)
			if exit != 0 || !slices.Equal(lines, want) {
				t.Errorf("collie %s: exit %d\n%s", strings.Join(args, " "), exit, out)
			}
		})
	}

	// collie bench's clients share one login.
	t.Run("bench", func(t *testing.T) {
		t.Setenv("CLIENT_JVMFLAGS", "")
		t.Setenv("KRB5CCNAME", "")
		exit, out := runCollie(t, t.TempDir(), "bench", "-server", collie.addr, "-krb5-conf", r.kdc.Krb5Conf, "-sasl-principal", "bob", "-sasl-keytab", r.keytabs["bob"],
			"-workload", "set", "-clients", "2", "-duration", "200ms", "-warmup", "0", "-quiet")
		if exit != 0 || !strings.Contains(out, "2 clients") {
			t.Errorf("collie bench with Kerberos: exit %d\n%s", exit, out)
		}
	})

	for _, tt := range []struct{ name, jaas, section, ccache, flags, want string }{
		{"a principal the keytab lacks", clientJAAS, "WrongPrincipal", "", "", "holds no key of alice@" + krbtest.Realm},
		{"stale keys", r.jaas, "StaleClient", "", "", "login of carol@" + krbtest.Realm},
		{"a principal the KDC does not know", r.jaas, "UnknownClient", "", "", "login of mallory@" + krbtest.Realm},
		{"no ticket cache", clientJAAS, "Cache", "FILE:" + filepath.Join(t.TempDir(), "none"), "", "no ticket cache"},
		// The Java client's properties name the service.
		{"a server principal the KDC does not know", r.jaas, "Client", "", " -Dzookeeper.server.principal=zookeeper/nohost@" + krbtest.Realm, "ticket for zookeeper/nohost"},
		{"no canonicalization", r.jaas, "Client", "", " -Dzookeeper.sasl.client.canonicalize.hostname=false", "ticket for zookeeper/127.0.0.1"},
		{"another service name", r.jaas, "Client", "", " -Dzookeeper.sasl.client.username=zk", "ticket for zk/localhost"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KRB5CCNAME", tt.ccache)
			exit, out := cli(collie.addr, tt.jaas, tt.section+tt.flags)
			if exit == 0 || !strings.Contains(out, tt.want) || slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return strings.HasPrefix(l, "sasl: ") }) {
				t.Errorf("collie cli whoami: exit %d\n%s\nwant a failure naming %q", exit, out, tt.want)
			}
			t.Logf("exit %d: %s", exit, out)
		})
	}
}
