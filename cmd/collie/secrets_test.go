package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/tlstest"
)

// The stores' password shows nowhere a server makes visible: not in its
// log (at debug level, through a failed handshake and a reload), nor in a
// four-letter word, an admin command or the metrics.
func TestSecretsAreNeverShown(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	server := ca.Issue("server", tlstest.Options{})
	dir := t.TempDir()
	secure := collietest.FreePort(t)
	admin := collietest.FreePort(t)
	keyStore := filepath.Join(dir, "keystore.jks")
	copyTestFile(t, server.KeyStore("JKS"), keyStore)
	port := writeZooCfg(t, dir, fmt.Sprintf(`4lw.commands.whitelist=*
admin.enableServer=true
admin.serverAddress=127.0.0.1
admin.serverPort=%d
secureClientPort=%d
secureClientPortAddress=127.0.0.1
client.certReload=true
ssl.keyStore.location=%s
ssl.keyStore.password=%s
ssl.trustStore.location=%s
ssl.trustStore.password=%s
DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=
`, admin, secure, keyStore, tlstest.Password, ca.TrustStore("JKS"), tlstest.Password))
	secrets := []string{tlstest.Password, "D/InIHSb7yEEbrWz8b9l71RjZJU="}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := collieCommand(ctx, t, dir, "server", "-c", "zoo.cfg", "-log-level", "debug")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	serving := make(chan struct{})
	reloaded := make(chan struct{})
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			log.WriteString(s.Text() + "\n")
			switch {
			case strings.Contains(s.Text(), `msg="serving clients"`):
				close(serving)
			case strings.Contains(s.Text(), `msg="reloaded the TLS key and trust stores"`):
				select {
				case <-reloaded:
				default:
					close(reloaded)
				}
			}
		}
	}()
	select {
	case <-serving:
	case <-logDone:
		t.Fatalf("the server exited before serving:\n%s", log.String())
	}
	plain := fmt.Sprintf("127.0.0.1:%d", port)

	var shown []string
	// A client without a certificate fails its handshake, which is logged.
	if c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", secure), &tls.Config{InsecureSkipVerify: true}); err == nil {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.ReadAll(c)
		c.Close()
	}
	// A reload is logged too.
	copyTestFile(t, server.KeyStore("JKS"), keyStore)
	select {
	case <-reloaded:
	case <-logDone:
		t.Fatal("the server exited")
	case <-time.After(30 * time.Second):
		t.Fatal("no reload logged within 30s of the key store's change")
	}
	for _, word := range []string{"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "ruok", "srst", "srvr", "stat", "wchs", "wchc", "wchp", "mntr", "isro", "hash"} {
		shown = append(shown, fourLetterWord(t, plain, word))
	}
	index := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/commands", admin))
	commands := regexp.MustCompile(`href="([^"]+)"`).FindAllStringSubmatch(index, -1)
	if len(commands) < 20 {
		t.Fatalf("the admin server lists %d commands:\n%s", len(commands), index)
	}
	for _, m := range commands {
		shown = append(shown, httpGet(t, fmt.Sprintf("http://127.0.0.1:%d%s", admin, m[1])))
	}
	shown = append(shown, httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", admin)))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-logDone
	cmd.Wait()
	shown = append(shown, log.String())

	for _, out := range shown {
		for _, secret := range secrets {
			if strings.Contains(out, secret) {
				t.Errorf("%q is shown:\n%s", secret, out)
			}
		}
	}
	if !strings.Contains(strings.Join(shown, "\n"), "ssl.keyStore.password=********") {
		t.Error("initial_configuration does not show the password key, masked")
	}
	if !strings.Contains(log.String(), "TLS handshake failed") {
		t.Errorf("the failed handshake was not logged:\n%s", log.String())
	}
}

// A store that a wrong password cannot open stops the server with a
// message naming the store, and not the password.
func TestWrongStorePasswordIsNotShown(t *testing.T) {
	ca := tlstest.NewAuthority(t, "ca")
	server := ca.Issue("server", tlstest.Options{})
	dir := t.TempDir()
	const wrong = "not-the-store-password"
	writeZooCfg(t, dir, fmt.Sprintf("secureClientPort=%d\nssl.keyStore.location=%s\nssl.keyStore.password=%s\n",
		collietest.FreePort(t), server.KeyStore("PKCS12"), wrong))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := collieCommand(ctx, t, dir, "server", "-c", "zoo.cfg").CombinedOutput()
	if err == nil {
		t.Fatalf("the server started with a wrong password:\n%s", out)
	}
	if !strings.Contains(string(out), server.KeyStore("PKCS12")) || strings.Contains(string(out), wrong) {
		t.Errorf("want the store named and the password not shown:\n%s", out)
	}
}

func fourLetterWord(t *testing.T, addr, word string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, word)
	b, _ := io.ReadAll(c)
	return string(b)
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func copyTestFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
