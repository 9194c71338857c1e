//go:build linux

package zkcompat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/proto"
)

// kazooX509 is a Kazoo script: it connects with use_ssl and the given
// certificate (none when empty) and prints what each read of the paths
// gives: the data, or the name of the exception.
const kazooX509 = `
import sys
from kazoo.client import KazooClient
hosts, ca, certfile, keyfile = sys.argv[1:5]
zk = KazooClient(hosts=hosts, use_ssl=True, ca=ca, certfile=certfile or None,
                 keyfile=keyfile or None, verify_certs=True)
zk.start(timeout=5)
for path in sys.argv[5:]:
    try:
        print(path, "data:", zk.get(path)[0])
    except Exception as e:
        print(path, type(e).__name__)
zk.stop()
zk.close()
`

func runKazooX509(t *testing.T, addr, ca string, id *tlstest.Identity, paths ...string) []string {
	t.Helper()
	python, err := zkref.Python()
	zkref.Require(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), kazooScriptTimeout)
	defer cancel()
	var cert, key string
	if id != nil {
		cert, key = id.Cert, id.Key
	}
	p := startInteropProcess(ctx, t, false, nil, python, append([]string{"-c", kazooX509, addr, ca, cert, key}, paths...)...)
	if exit, err := p.wait(); exit != 0 {
		t.Fatalf("kazoo against %s: exit %d (%v)\n%s", addr, exit, err, p.out)
	}
	var kept []string
	for _, l := range p.out.Lines() {
		if strings.HasPrefix(l, "/") {
			kept = append(kept, l)
		}
	}
	return kept
}

// TestTLSX509Identities runs clients with different certificates (the Go
// client, zkCli.sh over Netty, Kazoo) against ZooKeeper 3.8 and Collie
// started from the same zoo.cfg lines and certificate files, with
// clientAuth=want and X509AuthenticationProvider.superUser: whoami, x509
// ACLs that let one client in and keep the others out, "auth" ACLs, the
// super user, a client without a certificate and its addauth x509, and an
// x509 id Java cannot read. Every outcome must be the same.
func TestTLSX509Identities(t *testing.T) {
	requireClientTool(t, zkCliPath, "zookeeper")
	pki := newTLSPKI(t)
	ids := map[string]*tlstest.Identity{
		// Subjects whose getName() text has commas, escapes, an OID
		// with a hex value, non-ASCII text and a multi-valued RDN.
		"alice": pki.ca.Issue("alice", tlstest.Options{Subject: "/C=US/O=Example/OU=dev/OU=ops/CN=alice"}),
		"bob":   pki.ca.Issue("bob", tlstest.Options{Subject: "/CN=bob"}),
		"eve":   pki.ca.Issue("eve", tlstest.Options{Subject: `/DC=org/DC=example/emailAddress=eve@example.org/CN=Ève Ñ\, "Q"+UID=7`}),
		"admin": pki.ca.Issue("admin", tlstest.Options{Subject: "/O=Example/CN=admin"}),
	}
	const aliceID, bobID, adminID = "CN=alice,OU=ops,OU=dev,O=Example,C=US", "CN=bob", "CN=admin,O=Example"
	zookeeper, collie := startTLSServers(t, func(port int) []string {
		return pki.zooCfgLines("JKS", port, "ssl.clientAuth=want", "X509AuthenticationProvider.superUser="+adminID)
	})

	var outputs [2][]string
	for i, srv := range []tlsServer{zookeeper, collie} {
		out := func(format string, args ...any) { outputs[i] = append(outputs[i], fmt.Sprintf(format, args...)) }
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		sessions := map[string]*client.Client{}
		for _, name := range []string{"alice", "bob", "eve", "admin", "none"} {
			c, err := client.Dial(ctx, srv.secure, client.Config{TLS: goTLS(t, pki.ca, ids[name]), SessionTimeout: 10 * time.Second})
			if err != nil {
				t.Fatalf("%s: %s's session: %v", srv.name, name, err)
			}
			defer c.Close()
			sessions[name] = c
			infos, err := c.WhoAmI(ctx)
			out("%s whoami: %v %v", name, infos, err)
		}
		x509 := func(id string, perms int32) []client.ACL {
			return []client.ACL{{Perms: perms, ID: client.ID{Scheme: "x509", ID: id}}}
		}
		alice := sessions["alice"]
		for _, n := range []struct {
			path string
			acl  []client.ACL
		}{
			{"/x509-alice", x509(aliceID, proto.PermAll)},
			{"/x509-bob", x509(bobID, proto.PermAll)},
			{"/x509-spaced", x509("CN=alice, OU=ops, OU=dev, O=Example, C=US", proto.PermAll)},
			{"/x509-bad", x509("alice", proto.PermAll)},
			{"/x509-auth", []client.ACL{{Perms: proto.PermRead | proto.PermAdmin, ID: client.ID{Scheme: "auth"}}}},
		} {
			_, _, err := alice.Create(ctx, n.path, []byte(n.path), client.ModePersistent, n.acl)
			out("alice create %s: %v", n.path, err)
		}
		acl, _, err := alice.GetACL(ctx, "/x509-auth")
		out("auth ACL: %v %v", acl, err)
		for _, name := range []string{"alice", "bob", "eve", "admin", "none"} {
			for _, path := range []string{"/x509-alice", "/x509-bob", "/x509-spaced"} {
				_, _, err := sessions[name].Get(ctx, path)
				out("%s get %s: %v", name, path, err)
			}
		}
		err = sessions["bob"].AddAuth(ctx, "x509", nil)
		out("bob addauth x509: %v", err)
		infos, err := sessions["bob"].WhoAmI(ctx)
		out("bob whoami after addauth x509: %v %v", infos, err)
		err = sessions["admin"].AddAuth(ctx, "digest", []byte("ops:secret"))
		infos, _ = sessions["admin"].WhoAmI(ctx)
		out("admin addauth digest: %v, whoami %v", err, infos)
		err = sessions["none"].AddAuth(ctx, "x509", nil)
		out("no certificate addauth x509: %v", errors.Is(err, client.ErrAuthFailed))

		// zkCli.sh as bob: its whoami; as the super user, an x509 ACL of
		// one RDN (zkCli.sh splits ACLs at commas) that lets bob read
		// alice's node.
		zkCli := func(id *tlstest.Identity, args ...string) {
			_, lines := runZkCliTLS(t, srv.secure, javaTLSFlags(t, id.KeyStore("JKS"), pki.ca.TrustStore("JKS")), args...)
			for _, l := range lines {
				if !strings.HasPrefix(l, "log4j:") {
					outputs[i] = append(outputs[i], l)
				}
			}
		}
		zkCli(ids["bob"], "whoami")
		zkCli(ids["admin"], "setAcl", "/x509-alice", "x509:"+bobID+":r")

		for _, name := range []string{"eve", "bob"} {
			outputs[i] = append(outputs[i], runKazooX509(t, srv.secure, pki.ca.Cert, ids[name], "/x509-alice", "/x509-bob")...)
		}
	}
	compareClientOutput(t, "x509 identities", zookeeper.name, outputs[0], collie.name, outputs[1])
	t.Logf("Collie:\n\t%s", strings.Join(outputs[1], "\n\t"))
}
