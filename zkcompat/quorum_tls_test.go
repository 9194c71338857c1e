//go:build linux

package zkcompat

import (
	"cmp"
	"encoding/binary"
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

	"github.com/collie-io/collie/internal/tlstest"
)

// quorumEnsemble is an ensemble of collie processes, server i+1 on
// 127.0.0.(i+2) (client, peer and election ports), each with its own
// certificate for its address: servers talk over the loopback network as
// over a LAN, and a certificate names one server only.
type quorumEnsemble struct {
	hosts  []string
	addrs  []string // client addresses
	peers  []string // peer port addresses
	dirs   []string
	procs  []*serverProcess
	logs   []*teeBuffer
	lines  []string // server.N lines
	extras [][]string
	n      int // servers listed; the last may be an observer
	// logLevel is the servers' -log-level, warn unless set.
	logLevel string
}

// teeBuffer keeps a process's output and shows it in the test's output.
type teeBuffer struct {
	syncBuffer
	out io.Writer
}

func (b *teeBuffer) Write(p []byte) (int, error) {
	b.syncBuffer.Write(p)
	return b.out.Write(p)
}

// hasLine reports whether some line of the output holds every part.
func (b *teeBuffer) hasLine(parts ...string) bool {
	for line := range strings.SplitSeq(b.String(), "\n") {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			return true
		}
	}
	return false
}

// newQuorumEnsemble lays out n servers, the last an observer when
// observer is set; nothing runs until start.
func newQuorumEnsemble(t *testing.T, n int, observer bool) *quorumEnsemble {
	t.Helper()
	root := t.TempDir()
	e := &quorumEnsemble{n: n, extras: make([][]string, n), procs: make([]*serverProcess, n), logs: make([]*teeBuffer, n)}
	for i := range n {
		host := fmt.Sprintf("127.0.0.%d", i+2)
		e.hosts = append(e.hosts, host)
		e.addrs = append(e.addrs, net.JoinHostPort(host, strconv.Itoa(freeLocalPort(t))))
		peer := freeLocalPort(t)
		e.peers = append(e.peers, net.JoinHostPort(host, strconv.Itoa(peer)))
		line := fmt.Sprintf("server.%d=%s:%d:%d", i+1, host, peer, freeLocalPort(t))
		if observer && i == n-1 {
			line += ":observer"
		}
		e.lines = append(e.lines, line)
		dir := filepath.Join(root, fmt.Sprintf("s%d", i+1))
		e.dirs = append(e.dirs, dir)
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "data", "myid"), []byte(strconv.Itoa(i+1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// configure writes server i's zoo.cfg with the extra lines.
func (e *quorumEnsemble) configure(t *testing.T, i int, extra ...string) {
	t.Helper()
	e.extras[i] = extra
	host, port, _ := net.SplitHostPort(e.addrs[i])
	cfg := fmt.Sprintf("tickTime=200\ndataDir=data\nclientPort=%s\nclientPortAddress=%s\n4lw.commands.whitelist=*\nadmin.enableServer=false\npreAllocSize=1024\n%s\n",
		port, host, strings.Join(slices.Concat(e.lines, extra), "\n"))
	if err := os.WriteFile(filepath.Join(e.dirs[i], "zoo.cfg"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// start starts server i; serving waits until it serves clients, which a
// member does once it knows a leader.
func (e *quorumEnsemble) start(t *testing.T, i int) {
	t.Helper()
	e.logs[i] = &teeBuffer{out: t.Output()}
	level := cmp.Or(e.logLevel, "warn")
	e.procs[i] = startCollie(t, e.dirs[i], e.logs[i], "server", "-c", "zoo.cfg", "-log-level", level)
}

func (e *quorumEnsemble) serving(t *testing.T, i int) {
	t.Helper()
	e.procs[i].waitServing(t, e.addrs[i], "srvr", "Zookeeper version: ")
}

// waitLog waits until server i has logged a line holding every part.
func (e *quorumEnsemble) waitLog(t *testing.T, i int, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !e.logs[i].hasLine(parts...) {
		if time.Now().After(deadline) {
			t.Fatalf("server %d logged no line with %q within 30s", i+1, parts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// quorumTLSLines are the ssl.quorum.* lines of a server with keyStore,
// trusting the CA of trustStore (both of the same type, inferred from
// their names).
func quorumTLSLines(keyStore, trustStore string) []string {
	return []string{
		"ssl.quorum.keyStore.location=" + keyStore,
		"ssl.quorum.keyStore.password=" + tlstest.Password,
		"ssl.quorum.trustStore.location=" + trustStore,
		"ssl.quorum.trustStore.password=" + tlstest.Password,
	}
}

// Three servers with sslQuorum=true serve writes. An observer whose
// certificate another CA issued cannot join: every member refuses it,
// saying so with its address and "unknown CA", it never serves, and the
// members go on serving writes. Once its key store file is replaced by
// one with a certificate of the right CA (sslQuorumReloadCertFiles), it
// joins without a restart and has every write.
func TestQuorumTLS(t *testing.T) {
	tlstest.Require(t)
	ca, other := tlstest.NewAuthority(t, "quorum-ca"), tlstest.NewAuthority(t, "other-ca")
	e := newQuorumEnsemble(t, 4, true)
	// Every line, so that the passwords' absence from the log means
	// something.
	e.logLevel = "debug"
	// One key store format per member, as ZooKeeper reads them all.
	types := []string{"JKS", "PKCS12", "PEM", "PEM"}
	for i := range 3 {
		id := ca.Issue(fmt.Sprintf("server%d", i+1), tlstest.Options{SAN: "IP:" + e.hosts[i]})
		e.configure(t, i, append([]string{"sslQuorum=true"}, quorumTLSLines(id.KeyStore(types[i]), ca.TrustStore(types[i]))...)...)
	}
	for i := range 3 {
		e.start(t, i)
	}
	for i := range 3 {
		e.serving(t, i)
	}
	awaitLeader(t, e.addrs[:3], -1)
	acked := map[string]string{}
	for i := range 3 {
		path := fmt.Sprintf("/tls-%d", i)
		writeNode(t, e.addrs[i], path, "over TLS")
		acked[path] = "over TLS"
	}
	verifyAcked(t, e.addrs[:3], acked)

	// The observer's key store holds a certificate of the other CA, in a
	// file it watches.
	stranger := other.Issue("server4", tlstest.Options{SAN: "IP:" + e.hosts[3]})
	keyStore := filepath.Join(e.dirs[3], "quorum.pem")
	copyFile(t, stranger.KeyStore("PEM"), keyStore)
	e.configure(t, 3, append([]string{"sslQuorum=true", "sslQuorumReloadCertFiles=true"}, quorumTLSLines(keyStore, ca.Cert)...)...)
	e.start(t, 3)
	observerHost := "addr=" + e.hosts[3] + ":"
	for i := range 3 {
		e.waitLog(t, i, `msg="peer connection refused"`, observerHost, `reason="unknown CA`)
	}
	e.waitLog(t, 3, `msg="cannot connect to peer"`, "the peer refused the TLS handshake")
	for i := range 3 {
		path := fmt.Sprintf("/while-refused-%d", i)
		writeNode(t, e.addrs[i], path, "x")
		acked[path] = "x"
	}
	if reply, err := fourLetterWord(e.addrs[3], "srvr"); err != nil || !strings.Contains(reply, "not currently serving") {
		t.Fatalf("the refused observer answers srvr with %q, %v; want not serving", reply, err)
	}

	// A good certificate, renamed onto the watched file.
	good := ca.Issue("server4-good", tlstest.Options{SAN: "IP:" + e.hosts[3]})
	copyFile(t, good.KeyStore("PEM"), keyStore+".new")
	if err := os.Rename(keyStore+".new", keyStore); err != nil {
		t.Fatal(err)
	}
	e.serving(t, 3)
	if m := modes(t, e.addrs[3:]); m[0] != "observer" {
		t.Errorf("server 4 is %q, want observer", m[0])
	}
	verifyAcked(t, e.addrs, acked)

	// Through refusals and a reload, the stores' password showed nowhere.
	for i := range e.n {
		shown := map[string]string{"log": e.logs[i].String()}
		for _, word := range []string{"conf", "envi", "mntr"} {
			shown[word], _ = fourLetterWord(e.addrs[i], word)
		}
		for where, text := range shown {
			if strings.Contains(text, tlstest.Password) {
				t.Errorf("server %d shows the stores' password in its %s", i+1, where)
			}
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// ZooKeeper's rolling switch of a running ensemble from plaintext to TLS
// between servers, one restart at a time, while a client writes without
// pause: (1) every server gets the ssl.quorum.* keys and
// portUnification=true, (2) then sslQuorum=true, (3) then
// portUnification=false. The ensemble serves writes after every restart,
// no acknowledged write is lost, and in the end the peer ports refuse
// plaintext.
func TestQuorumTLSRollingUpgrade(t *testing.T) {
	tlstest.Require(t)
	ca := tlstest.NewAuthority(t, "rolling-ca")
	const n = 3
	e := newQuorumEnsemble(t, n, false)
	tlsLines := make([][]string, n)
	for i := range n {
		id := ca.Issue(fmt.Sprintf("server%d", i+1), tlstest.Options{SAN: "IP:" + e.hosts[i]})
		tlsLines[i] = quorumTLSLines(id.KeyStore("PKCS12"), ca.TrustStore("PKCS12"))
		e.configure(t, i)
	}
	for i := range n {
		e.start(t, i)
	}
	for i := range n {
		e.serving(t, i)
	}

	w := startAckedWriters(t, e.addrs, 1)
	progress := func(what string) {
		t.Helper()
		before := w.count()
		deadline := time.Now().Add(30 * time.Second)
		for w.count() < before+20 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no writes acknowledged for 30s (%d in all)", what, w.count())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	progress("before the switch")

	steps := [][]string{
		{"sslQuorum=false", "portUnification=true"},
		{"sslQuorum=true", "portUnification=true"},
		{"sslQuorum=true", "portUnification=false"},
	}
	for s, step := range steps {
		for i := range n {
			e.procs[i].stop(t)
			e.configure(t, i, slices.Concat(step, tlsLines[i])...)
			e.start(t, i)
			e.serving(t, i)
			progress(fmt.Sprintf("step %d, server %d restarted", s+1, i+1))
		}
	}
	acked := w.stop()

	// TLS only now: a plaintext hello is answered "TLS required".
	for i := range n {
		if st := plaintextHelloStatus(t, e.peers[i]); st != 9 {
			t.Errorf("server %d answers a plaintext peer with status %d, want 9 (TLS required)", i+1, st)
		}
	}
	verifyAcked(t, e.addrs, acked)
}

// plaintextHelloStatus sends a plaintext peer hello to addr, as server 99
// would, and returns the status of the reply (Collie's peer wire format,
// see package server/peer).
func plaintextHelloStatus(t *testing.T, addr string) byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	hello := append([]byte("CLPR\x00\x02\x01\x00"), make([]byte, 8)...)
	hello = binary.BigEndian.AppendUint64(hello, 99)
	hello = binary.BigEndian.AppendUint64(hello, 1)
	hello = append(hello, 0, 0)
	if _, err := c.Write(hello); err != nil {
		t.Fatal(err)
	}
	var r [8]byte
	if _, err := io.ReadFull(c, r[:]); err != nil {
		t.Fatalf("reply of %s: %v", addr, err)
	}
	return r[6]
}

// TLS and SASL between servers together, as shops that turned on both in
// ZooKeeper run them: three servers serve writes, and a server whose
// certificate is good but whose QuorumLearner password is wrong is
// refused all the same, while the others serve on.
func TestQuorumTLSWithSASL(t *testing.T) {
	tlstest.Require(t)
	ca := tlstest.NewAuthority(t, "quorum-ca")
	e := newQuorumEnsemble(t, 3, false)
	lines := func(i int) []string {
		id := ca.Issue(fmt.Sprintf("server%d", i+1), tlstest.Options{SAN: "IP:" + e.hosts[i]})
		return slices.Concat([]string{
			"sslQuorum=true",
			"quorum.auth.enableSasl=true",
			"quorum.auth.learnerRequireSasl=true",
			"quorum.auth.serverRequireSasl=true",
			"java.security.auth.login.config=" + filepath.Join(e.dirs[i], "jaas.conf"),
		}, quorumTLSLines(id.KeyStore("PKCS12"), ca.TrustStore("PKCS12")))
	}
	for i := range 3 {
		writeJAAS(t, e.dirs[i], quorumPassword)
		e.configure(t, i, lines(i)...)
		e.start(t, i)
	}
	for i := range 3 {
		e.serving(t, i)
	}
	awaitLeader(t, e.addrs, -1)
	acked := map[string]string{}
	for i := range 3 {
		path := fmt.Sprintf("/both-%d", i)
		writeNode(t, e.addrs[i], path, "TLS and SASL")
		acked[path] = "TLS and SASL"
	}
	verifyAcked(t, e.addrs, acked)

	e.procs[2].stop(t)
	writeJAAS(t, e.dirs[2], wrongPassword)
	e.start(t, 2)
	for i := range 2 {
		e.waitLog(t, i, "refused the SASL authentication of server 3")
	}
	writeNode(t, e.addrs[0], "/without-3", "x")
	acked["/without-3"] = "x"
	if reply, err := fourLetterWord(e.addrs[2], "srvr"); err == nil && strings.HasPrefix(reply, "Zookeeper version: ") {
		t.Fatalf("server 3 serves with a wrong QuorumLearner password:\n%s", reply)
	}
	verifyAcked(t, e.addrs[:2], acked)
	for i := range 3 {
		if s := e.logs[i].String(); strings.Contains(s, quorumPassword) || strings.Contains(s, wrongPassword) || strings.Contains(s, tlstest.Password) {
			t.Errorf("server %d's log shows a password", i+1)
		}
	}
}
