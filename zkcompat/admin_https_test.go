//go:build linux

package zkcompat

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/internal/zkref"
)

// adminAnswer is what an admin server answered to one GET: the status (0
// when the request failed), the Strict-Transport-Security header and the
// members of the JSON body.
type adminAnswer struct {
	status  int
	sts     string
	members []string
}

func (a adminAnswer) String() string {
	if a.status == 0 {
		return "no answer"
	}
	return fmt.Sprintf("%d, Strict-Transport-Security %q, members %v", a.status, a.sts, a.members)
}

func getAdmin(hc *http.Client, url string) adminAnswer {
	resp, err := hc.Get(url)
	if err != nil {
		return adminAnswer{}
	}
	defer resp.Body.Close()
	a := adminAnswer{status: resp.StatusCode, sts: resp.Header.Get("Strict-Transport-Security")}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var m map[string]any
	if json.Unmarshal(body, &m) == nil {
		for k := range m {
			a.members = append(a.members, k)
		}
		slices.Sort(a.members)
	}
	return a
}

// TestAdminHTTPSAgainstZooKeeper starts ZooKeeper 3.8 and Collie from the
// same admin.* and ssl.quorum.* lines and fetches ruok from both, over
// HTTPS and over plain HTTP: they must answer alike.
func TestAdminHTTPSAgainstZooKeeper(t *testing.T) {
	tlstest.Require(t)
	ca := tlstest.NewAuthority(t, "ca")
	serverID := ca.Issue("server", tlstest.Options{})
	pem, err := os.ReadFile(ca.Cert)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	stores := []string{
		"ssl.quorum.keyStore.location=" + serverID.KeyStore("JKS"),
		"ssl.quorum.keyStore.password=" + tlstest.Password,
		"ssl.quorum.trustStore.location=" + ca.TrustStore("JKS"),
		"ssl.quorum.trustStore.password=" + tlstest.Password,
	}
	for _, mode := range []string{"admin.forceHttps", "admin.portUnification"} {
		t.Run(mode, func(t *testing.T) {
			lines := append([]string{mode + "=true"}, stores...)
			var opts []zkref.Option
			for _, l := range lines {
				k, v, _ := strings.Cut(l, "=")
				opts = append(opts, zkref.WithConfig(k, v))
			}
			ref := zkref.Start(t, append(opts, zkref.WithAdminServer())...)

			dir := t.TempDir()
			port, adminPort := freeLocalPort(t), freeLocalPort(t)
			cfg := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
				"admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=%d\n%s\n",
				filepath.Join(dir, "data"), port, adminPort, strings.Join(lines, "\n"))
			if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			out := newInteropTranscript()
			p := startCollie(t, dir, out, "server", "-c", "zoo.cfg")
			p.waitServing(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "srvr", "Zookeeper version:")

			servers := []struct{ name, addr string }{
				{"ZooKeeper", ref.AdminAddr()},
				{"Collie", net.JoinHostPort("127.0.0.1", strconv.Itoa(adminPort))},
			}
			var https, plain [2]adminAnswer
			for i, s := range servers {
				// ZooKeeper starts its admin server before its client port,
				// but give a slow JVM the benefit of the doubt.
				eventually(t, s.name+"'s admin server answering over HTTPS", func() bool {
					https[i] = getAdmin(hc, "https://"+s.addr+"/commands/ruok")
					return https[i].status != 0
				})
				plain[i] = getAdmin(hc, "http://"+s.addr+"/commands/ruok")
				t.Logf("%s: HTTPS %v; plain HTTP %v", s.name, https[i], plain[i])
			}
			if https[0].status != http.StatusOK || https[0].String() != https[1].String() {
				t.Errorf("ruok over HTTPS: ZooKeeper %v, Collie %v", https[0], https[1])
			}
			// forceHttps: neither serves plain HTTP (the status may
			// differ: Jetty closes, Go answers 400); portUnification: both do.
			served := func(a adminAnswer) bool { return a.status == http.StatusOK }
			if served(plain[0]) != served(plain[1]) || served(plain[0]) != (mode == "admin.portUnification") {
				t.Errorf("ruok over plain HTTP: ZooKeeper %v, Collie %v", plain[0], plain[1])
			}
			if strings.Contains(out.String(), tlstest.Password) {
				t.Errorf("Collie logged the stores' password:\n%s", out)
			}
			// The one command that shows zoo.cfg masks the passwords in it.
			resp, err := hc.Get("https://" + servers[1].addr + "/commands/initial_configuration")
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !strings.Contains(string(body), mode+"=true") || strings.Contains(string(body), tlstest.Password) {
				t.Errorf("Collie's initial_configuration over HTTPS (%v): want the zoo.cfg without its passwords:\n%s", err, body)
			}
		})
	}
}
