//go:build linux

package zkcompat

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/server/tlsconfig"
)

// tlsPKI is what the TLS tests use: a CA and the identities it issued, and
// another CA no server trusts.
type tlsPKI struct {
	ca, other                        *tlstest.Authority
	server, client, expired, strange *tlstest.Identity
}

func newTLSPKI(t *testing.T) *tlsPKI {
	tlstest.Require(t)
	ca := tlstest.NewAuthority(t, "ca")
	other := tlstest.NewAuthority(t, "other")
	return &tlsPKI{
		ca: ca, other: other,
		server:  ca.Issue("server", tlstest.Options{}),
		client:  ca.Issue("client", tlstest.Options{}),
		expired: ca.Issue("expired", tlstest.Options{Expired: true}),
		strange: other.Issue("stranger", tlstest.Options{}),
	}
}

// zooCfgLines are the TLS lines of a zoo.cfg giving both servers a secure
// client port: key and trust stores of the given type ("JKS", "PKCS12",
// "PEM") with their passwords, the type left to the files' extensions.
func (p *tlsPKI) zooCfgLines(typ string, securePort int, extra ...string) []string {
	return append([]string{
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"secureClientPort=" + strconv.Itoa(securePort),
		"secureClientPortAddress=127.0.0.1",
		"ssl.keyStore.location=" + p.server.KeyStore(typ),
		"ssl.keyStore.password=" + tlstest.Password,
		"ssl.trustStore.location=" + p.ca.TrustStore(typ),
		"ssl.trustStore.password=" + tlstest.Password,
	}, extra...)
}

// tlsServer is a server with a plaintext client port (addr) and, unless
// the lines unify them, a secure one.
type tlsServer struct {
	name         string
	addr, secure string
}

// startTLSServers starts ZooKeeper 3.8 and the collie binary, each from
// the zoo.cfg lines that lines returns for its secure port, after the
// lines naming its own client port and data.
func startTLSServers(t *testing.T, lines func(securePort int) []string) (zookeeper, collie tlsServer) {
	t.Helper()
	zkSecure := freeLocalPort(t)
	var opts []zkref.Option
	for _, l := range lines(zkSecure) {
		k, v, _ := strings.Cut(l, "=")
		opts = append(opts, zkref.WithConfig(k, v))
	}
	ref := zkref.Start(t, opts...)
	zookeeper = tlsServer{"ZooKeeper", ref.Addr(), net.JoinHostPort("127.0.0.1", strconv.Itoa(zkSecure))}

	dir := t.TempDir()
	port, secure := freeLocalPort(t), freeLocalPort(t)
	cfg := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\n%s\n",
		filepath.Join(dir, "data"), port, strings.Join(lines(secure), "\n"))
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startCollie(t, dir, newInteropTranscript(), "server", "-c", "zoo.cfg")
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	p.waitServing(t, addr, "srvr", "Zookeeper version:")
	collie = tlsServer{"Collie", addr, net.JoinHostPort("127.0.0.1", strconv.Itoa(secure))}
	return zookeeper, collie
}

// javaTLSFlags are the Java client's TLS system properties, with the
// class path Debian's zkCli.sh lacks for Netty (netty-codec.jar).
func javaTLSFlags(t *testing.T, keyStore, trustStore string) string {
	t.Helper()
	cp, err := zkref.Classpath()
	zkref.Require(t, err)
	flags := []string{
		// The last -cp counts: this one replaces zkCli.sh's, keeping
		// its log configuration.
		"-cp", "/etc/zookeeper/conf:" + cp,
		"-Dzookeeper.client.secure=true",
		"-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
		"-Dzookeeper.ssl.trustStore.location=" + trustStore,
		"-Dzookeeper.ssl.trustStore.password=" + tlstest.Password,
	}
	if keyStore != "" {
		flags = append(flags, "-Dzookeeper.ssl.keyStore.location="+keyStore, "-Dzookeeper.ssl.keyStore.password="+tlstest.Password)
	}
	return strings.Join(flags, " ")
}

// runZkCliTLS runs zkCli.sh with a command line against addr with the
// given extra JVM flags, and returns its exit code and output lines.
func runZkCliTLS(t *testing.T, addr, jvmFlags string, args ...string) (int, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), zkCliTimeout)
	defer cancel()
	env := slices.Clone(zkCliEnv)
	for i, e := range env {
		if v, ok := strings.CutPrefix(e, "CLIENT_JVMFLAGS="); ok {
			env[i] = "CLIENT_JVMFLAGS=" + v + " " + jvmFlags
		}
	}
	p := startInteropProcess(ctx, t, false, env, zkCliPath, append([]string{"-server", addr}, args...)...)
	exit, err := p.wait()
	if err != nil {
		t.Fatalf("zkCli.sh %s against %s: %v\noutput:\n%s", strings.Join(args, " "), addr, err, p.out)
	}
	var lines []string
	for _, l := range p.out.Lines() {
		if !isZkCliNoise(l) && !strings.HasPrefix(l, "Connecting to ") && !strings.HasPrefix(l, "WatchedEvent ") {
			lines = append(lines, l)
		}
	}
	return exit, lines
}

// kazooTLS is a Kazoo script: it connects with use_ssl and the given
// options, creates the path with data when it is not there, and prints the
// data; or prints "refused" when it gets no session within 3 seconds.
const kazooTLS = `
import sys
from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
hosts, path, ca, certfile, keyfile, use_ssl = sys.argv[1:7]
zk = KazooClient(hosts=hosts, use_ssl=use_ssl == "ssl", ca=ca or None,
                 certfile=certfile or None, keyfile=keyfile or None, verify_certs=True)
try:
    zk.start(timeout=3)
except KazooTimeoutError:
    print("refused")
    zk.stop()
    sys.exit(0)
zk.ensure_path(path)
zk.set(path, b"via kazoo")
print("data:", zk.get(path)[0])
zk.stop()
zk.close()
`

// runKazooTLS runs kazooTLS and returns its output.
func runKazooTLS(t *testing.T, addr, path string, useSSL bool, ca, certfile, keyfile string) string {
	t.Helper()
	python, err := zkref.Python()
	zkref.Require(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), kazooScriptTimeout)
	defer cancel()
	mode := "plain"
	if useSSL {
		mode = "ssl"
	}
	p := startInteropProcess(ctx, t, false, nil, python, "-c", kazooTLS, addr, path, ca, certfile, keyfile, mode)
	if exit, err := p.wait(); exit != 0 {
		t.Fatalf("kazoo against %s: exit %d (%v)\n%s", addr, exit, err, p.out)
	}
	var kept []string
	for _, l := range p.out.Lines() {
		if l == "refused" || strings.HasPrefix(l, "data:") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}

// goTLS returns a Go client configuration trusting ca, presenting id's
// certificate when id is not nil, sent whatever CA the server names so
// that the server judges it.
func goTLS(t *testing.T, ca *tlstest.Authority, id *tlstest.Identity) *tls.Config {
	t.Helper()
	s := tlsconfig.Settings{TrustStore: tlsconfig.Store{Location: ca.Cert}}
	if id != nil {
		s.KeyStore = tlsconfig.Store{Location: id.KeyStore("PEM-plain")}
	}
	c, err := s.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if id != nil {
		own := c.Certificates[0]
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &own, nil }
	}
	return c
}

// goSession reports whether the Go client gets a session at addr with cfg
// within 5 seconds, writing path when it does.
func goSession(t *testing.T, addr string, cfg *tls.Config, path string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Config{TLS: cfg, SessionTimeout: 10 * time.Second})
	if errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if err != nil {
		t.Fatalf("Go client at %s: %v", addr, err)
	}
	defer c.Close()
	if _, _, err := c.Create(ctx, path, []byte("via go"), client.ModePersistent, nil); err != nil && !errors.Is(err, client.ErrNodeExists) {
		t.Fatalf("Go client at %s: create %s: %v", addr, path, err)
	}
	return true
}

// TestTLSClients runs ZooKeeper's Java client (zkCli.sh over Netty), Kazoo
// and the Go client against ZooKeeper 3.8 and Collie started from the same
// TLS lines, for key and trust stores in each format ZooKeeper reads, with
// ZooKeeper's default clientAuth=need; every client must see the same.
func TestTLSClients(t *testing.T) {
	requireClientTool(t, zkCliPath, "zookeeper")
	pki := newTLSPKI(t)
	for _, typ := range []string{"JKS", "PKCS12", "PEM"} {
		t.Run(typ, func(t *testing.T) {
			zookeeper, collie := startTLSServers(t, func(port int) []string { return pki.zooCfgLines(typ, port) })
			jvm := javaTLSFlags(t, pki.client.KeyStore(typ), pki.ca.TrustStore(typ))
			var outputs [2][]string
			for i, srv := range []tlsServer{zookeeper, collie} {
				path := "/tls-" + strings.ToLower(typ)
				exit, lines := runZkCliTLS(t, srv.secure, jvm, "create", path, "via-zkcli")
				if exit != 0 {
					t.Fatalf("%s: zkCli.sh create over TLS: exit %d\n%s", srv.name, exit, strings.Join(lines, "\n"))
				}
				_, lines = runZkCliTLS(t, srv.secure, jvm, "get", path)
				outputs[i] = append(outputs[i], lines...)
				outputs[i] = append(outputs[i], runKazooTLS(t, srv.secure, path, true, pki.ca.Cert, pki.client.Cert, pki.client.Key))
				if !goSession(t, srv.secure, goTLS(t, pki.ca, pki.client), path+"-go") {
					t.Errorf("%s: the Go client got no session", srv.name)
				}
			}
			compareClientOutput(t, typ+" stores", zookeeper.name, outputs[0], collie.name, outputs[1])
			if !slices.Contains(outputs[1], "via-zkcli") || !slices.Contains(outputs[1], "data: b'via kazoo'") {
				t.Errorf("Collie: the clients did not read what they wrote: %q", outputs[1])
			}
		})
	}
}

// TestTLSClientAuth checks ssl.clientAuth need, want and none, a client
// certificate of a CA the server does not trust, an expired one, a client
// that does not trust the server's CA, and plaintext clients on the TLS
// port, against both servers; the servers keep serving.
func TestTLSClientAuth(t *testing.T) {
	pki := newTLSPKI(t)
	type attempt struct {
		name string
		id   *tlstest.Identity // the client's certificate, if any
	}
	attempts := []attempt{{"trusted", pki.client}, {"no certificate", nil}, {"other CA", pki.strange}, {"expired", pki.expired}}
	want := map[string][]bool{ // by clientAuth, whether each attempt gets a session
		"need": {true, false, false, false},
		"want": {true, true, false, false},
		"none": {true, true, true, true},
	}
	for _, auth := range []string{"need", "want", "none"} {
		t.Run(auth, func(t *testing.T) {
			zookeeper, collie := startTLSServers(t, func(port int) []string {
				return pki.zooCfgLines("PKCS12", port, "ssl.clientAuth="+auth)
			})
			var results [2][]string
			for i, srv := range []tlsServer{zookeeper, collie} {
				for j, a := range attempts {
					got := tlsAnswers(srv.secure, goTLS(t, pki.ca, a.id))
					if got != want[auth][j] {
						t.Errorf("%s, clientAuth=%s, %s: session %v, want %v", srv.name, auth, a.name, got, want[auth][j])
					}
					var cert, key string
					if a.id != nil {
						cert, key = a.id.Cert, a.id.Key
					}
					results[i] = append(results[i], a.name+": "+runKazooTLS(t, srv.secure, "/auth-kazoo", true, pki.ca.Cert, cert, key))
				}
				// The client's side: a server of a CA it does not trust.
				if tlsAnswers(srv.secure, goTLS(t, pki.other, pki.client)) {
					t.Errorf("%s: a client trusting another CA accepted the server", srv.name)
				}
				results[i] = append(results[i], "client trusts another CA: "+runKazooTLS(t, srv.secure, "/auth-kazoo", true, pki.other.Cert, pki.client.Cert, pki.client.Key))
				// Plaintext on the TLS port: no session, and the server
				// goes on serving TLS clients.
				results[i] = append(results[i], "plaintext: "+runKazooTLS(t, srv.secure, "/auth-kazoo", false, "", "", ""))
				if s := plainSession(t, srv.secure); s {
					t.Errorf("%s: a plaintext go-zookeeper client got a session on the TLS port", srv.name)
				}
				if !goSession(t, srv.secure, goTLS(t, pki.ca, pki.client), "/auth-after") {
					t.Errorf("%s: no TLS session after the plaintext clients", srv.name)
				}
			}
			compareClientOutput(t, "clientAuth="+auth+" through Kazoo", zookeeper.name, results[0], collie.name, results[1])
		})
	}
}

// tlsAnswers reports whether a TLS connection with cfg to addr is served:
// whether a four-letter word gets its answer. A server that refuses the
// client closes the connection, during the handshake or (TLS 1.3, or
// ZooKeeper's check of the certificate after it) at once after.
func tlsAnswers(addr string, cfg *tls.Config) bool {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("ruok")); err != nil {
		return false
	}
	b, _ := io.ReadAll(c)
	return string(b) == "imok"
}

// plainSession reports whether go-zookeeper in plaintext gets a session at
// addr within 5 seconds.
func plainSession(t *testing.T, addr string) bool {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(discardZKLog{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// TestTLSPortUnification runs TLS and plaintext clients (zkCli.sh, Kazoo,
// Go) on one client port with client.portUnification=true, against both
// servers. With clientAuth none: ZooKeeper 3.8.0 registers its x509
// provider too late when no secureClientPort is set, and then closes every
// TLS connection whose client presents a certificate ("X509 Auth provider
// not found: x509"); Collie serves them (see server.TestPortUnification).
func TestTLSPortUnification(t *testing.T) {
	requireClientTool(t, zkCliPath, "zookeeper")
	pki := newTLSPKI(t)
	lines := func(int) []string {
		return []string{
			"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
			"client.portUnification=true",
			"ssl.clientAuth=none",
			"ssl.keyStore.location=" + pki.server.KeyStore("JKS"),
			"ssl.keyStore.password=" + tlstest.Password,
			"ssl.trustStore.location=" + pki.ca.TrustStore("JKS"),
			"ssl.trustStore.password=" + tlstest.Password,
		}
	}
	zookeeper, collie := startTLSServers(t, lines)
	jvm := javaTLSFlags(t, pki.client.KeyStore("JKS"), pki.ca.TrustStore("JKS"))
	var outputs [2][]string
	for i, srv := range []tlsServer{zookeeper, collie} {
		if exit, lines := runZkCliTLS(t, srv.addr, jvm, "create", "/unified", "via-tls"); exit != 0 {
			t.Fatalf("%s: zkCli.sh over TLS on the unified port: exit %d\n%s", srv.name, exit, strings.Join(lines, "\n"))
		}
		_, lines := runZkCliTLS(t, srv.addr, "", "get", "/unified")
		outputs[i] = append(outputs[i], lines...)
		outputs[i] = append(outputs[i],
			runKazooTLS(t, srv.addr, "/unified-kazoo", true, pki.ca.Cert, pki.client.Cert, pki.client.Key),
			runKazooTLS(t, srv.addr, "/unified-kazoo", false, "", "", ""))
		if !goSession(t, srv.addr, goTLS(t, pki.ca, pki.client), "/unified-go") {
			t.Errorf("%s: the Go client over TLS got no session on the unified port", srv.name)
		}
		if !plainSession(t, srv.addr) {
			t.Errorf("%s: a plaintext client got no session on the unified port", srv.name)
		}
		// The TLS side keeps checking the server's certificate.
		if tlsAnswers(srv.addr, goTLS(t, pki.other, nil)) {
			t.Errorf("%s: a TLS client trusting another CA accepted the server on the unified port", srv.name)
		}
	}
	compareClientOutput(t, "port unification", zookeeper.name, outputs[0], collie.name, outputs[1])
	if !slices.Contains(outputs[1], "via-tls") {
		t.Errorf("Collie: a plaintext zkCli.sh did not read what a TLS one wrote: %q", outputs[1])
	}
}

// TestTLSCertReload replaces the key store under running servers: Collie,
// with client.certReload=true, serves the new certificate to new
// connections while the sessions made before go on. ZooKeeper 3.8.0
// (Debian's) has no client.certReload and keeps serving the old one; the
// test records what it serves.
func TestTLSCertReload(t *testing.T) {
	pki := newTLSPKI(t)
	renewed := pki.ca.Issue("renewed", tlstest.Options{})
	dir := t.TempDir()
	keyStore := filepath.Join(dir, "keystore.p12")
	copyTLSFile(t, pki.server.KeyStore("PKCS12"), keyStore)
	zookeeper, collie := startTLSServers(t, func(port int) []string {
		lines := pki.zooCfgLines("PKCS12", port, "client.certReload=true", "ssl.clientAuth=none")
		lines[3] = "ssl.keyStore.location=" + keyStore
		return lines
	})
	before := map[string]*client.Client{}
	for _, srv := range []tlsServer{zookeeper, collie} {
		if got := servedCN(t, srv.secure); got != "server" {
			t.Fatalf("%s serves %q, want server", srv.name, got)
		}
		c, err := client.Dial(t.Context(), srv.secure, client.Config{TLS: goTLS(t, pki.ca, nil)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		before[srv.name] = c
	}

	tmp := keyStore + ".new"
	copyTLSFile(t, renewed.KeyStore("PKCS12"), tmp)
	if err := os.Rename(tmp, keyStore); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for servedCN(t, collie.secure) != "renewed" {
		if time.Now().After(deadline) {
			t.Fatal("Collie does not serve the renewed certificate 30s after it replaced the old one")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !goSession(t, collie.secure, goTLS(t, pki.ca, nil), "/after-reload") {
		t.Error("Collie: no new TLS session after the reload")
	}
	for name, c := range before {
		if _, _, err := c.Exists(t.Context(), "/"); err != nil {
			t.Errorf("%s: a session made before the reload: %v", name, err)
		}
	}
	t.Logf("ZooKeeper 3.8.0 with client.certReload=true, after the same change: serves %q", servedCN(t, zookeeper.secure))
}

// servedCN returns the CN of the certificate the TLS port at addr
// presents.
func servedCN(t *testing.T, addr string) string {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS to %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

func copyTLSFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
