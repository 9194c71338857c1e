//go:build linux

package zkcompat

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/internal/tlstest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
)

// benchSetupDialers is how many goroutines open sessions at once in the
// connection setup rows: enough to keep a server busy on this machine's
// two cores, few enough that the client does not starve it.
const benchSetupDialers = 4

// TestTLSLoadAgainstZooKeeper measures what TLS costs Collie and
// ZooKeeper 3.8, each against its own plaintext: both servers serve a
// plaintext client port and a secure one, from the same zoo.cfg lines and
// the same PKCS12 stores (client certificates required, ZooKeeper's
// default), and the same client (go-zookeeper) loads each port in turn.
// Then the rate at which new sessions are set up: a TCP connection (and
// TLS handshake), a connect request answered, a closeSession. It is a
// benchmark: it runs only when COLLIE_BENCH=1 (scripts/bench.sh --tls).
func TestTLSLoadAgainstZooKeeper(t *testing.T) {
	if os.Getenv("COLLIE_BENCH") != "1" {
		t.Skip("a benchmark of several minutes: set COLLIE_BENCH=1 or run scripts/bench.sh --tls")
	}
	settings := benchSettingsFromEnv(t)
	zkref.Require(t, zkref.Available())
	tlstest.Require(t)
	ca := tlstest.NewAuthority(t, "ca")
	serverID, clientID := ca.Issue("server", tlstest.Options{}), ca.Issue("client", tlstest.Options{})
	tlsLines := func(securePort int) []string {
		return []string{
			"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
			"secureClientPort=" + strconv.Itoa(securePort),
			"secureClientPortAddress=127.0.0.1",
			"ssl.keyStore.location=" + serverID.KeyStore("PKCS12"),
			"ssl.keyStore.password=" + tlstest.Password,
			"ssl.trustStore.location=" + ca.TrustStore("PKCS12"),
			"ssl.trustStore.password=" + tlstest.Password,
		}
	}
	bin := settings.bin
	if bin == "" {
		bin = collieBinary(t)
	}
	collieSecure := freeLocalPort(t)
	collie := &benchCollie{bin: bin, dir: t.TempDir(), port: freeLocalPort(t), extra: tlsLines(collieSecure)}
	collie.start(t)
	t.Cleanup(collie.kill)
	zkSecure := freeLocalPort(t)
	opts := []zkref.Option{
		zkref.WithFullJIT(),
		zkref.WithJVMArgs("-Xmx" + settings.zkHeap),
		zkref.WithConfig("maxClientCnxns", "0"),
	}
	for _, l := range tlsLines(zkSecure) {
		k, v, _ := strings.Cut(l, "=")
		opts = append(opts, zkref.WithConfig(k, v))
	}
	zookeeper := &benchZooKeeper{opts: opts}
	zookeeper.start(t, "")
	servers := []benchServer{collie, zookeeper}
	secure := []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(collieSecure)), net.JoinHostPort("127.0.0.1", strconv.Itoa(zkSecure))}

	clientTLS := goTLS(t, ca, clientID)
	tlsDialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		d := &net.Dialer{Timeout: timeout}
		return tls.DialWithDialer(d, network, address, clientTLS.Clone())
	}
	maxSessions := slices.Max(benchSessions)
	plainConns := make([][]*zk.Conn, len(servers))
	tlsConns := make([][]*zk.Conn, len(servers))
	for i, s := range servers {
		plainConns[i] = benchPrepareSessions(t, s.addr(), maxSessions)
		tlsConns[i] = make([]*zk.Conn, maxSessions)
		for j := range tlsConns[i] {
			tlsConns[i][j] = dialWith(t, secure[i], tlsDialer)
		}
	}
	t.Cleanup(func() {
		for _, cs := range slices.Concat(plainConns, tlsConns) {
			for _, c := range cs {
				c.Close()
			}
		}
	})

	var report strings.Builder
	fmt.Fprintf(&report, "TLS: %v measured after %v of warm-up per server, port and row; closed loop, one request in flight per session; "+
		"TLS 1.2 (ZooKeeper's default ssl.protocol) with ZooKeeper 3.8's default cipher suites, ECDSA P-256 certificates, client certificates required. "+
		"Load average before: %s.\n\n", settings.duration, settings.warmup, benchLoadAverage())
	report.WriteString(benchTLSTableHeader)
	setData := func(c *zk.Conn, path string, data []byte) error { _, err := c.Set(path, data, -1); return err }
	getData := func(c *zk.Conn, path string, _ []byte) error { _, _, err := c.Get(path); return err }
	for _, w := range []struct {
		name string
		op   func(c *zk.Conn, path string, data []byte) error
	}{{"setData 1 KiB", setData}, {"getData 1 KiB", getData}} {
		for _, n := range benchSessions {
			var plain, secured [2]benchLoadResult
			for i, s := range servers {
				plain[i] = benchRunLoad(t, plainConns[i][:n], s.pid(t), w.op, settings)
				secured[i] = benchRunLoad(t, tlsConns[i][:n], s.pid(t), w.op, settings)
				t.Logf("%s, %d sessions, %s: plaintext %s; TLS %s", w.name, n, s.name(), plain[i], secured[i])
			}
			report.WriteString(benchTLSTableRow(fmt.Sprintf("%s, %d sessions", w.name, n), plain, secured))
		}
	}

	var plainSetup, tlsSetup [2]benchLoadResult
	for i, s := range servers {
		plainSetup[i] = benchSessionSetup(t, s, nil, s.addr(), settings)
		tlsSetup[i] = benchSessionSetup(t, s, clientTLS, secure[i], settings)
		t.Logf("session setup, %s: plaintext %s; TLS %s", s.name(), plainSetup[i], tlsSetup[i])
	}
	report.WriteString(benchTLSTableRow(fmt.Sprintf("new sessions (connect, handshake, closeSession), %d at a time", benchSetupDialers), plainSetup, tlsSetup))
	fmt.Fprintf(&report, "\nLoad average after: %s.\n", benchLoadAverage())
	report.WriteString("\n\"cost\" is TLS ops/s over plaintext ops/s of the same server: 1.00 means TLS is free. " +
		"Collie's TLS costs no more than ZooKeeper's when its cost is at least ZooKeeper's.\n")

	t.Logf("results:\n%s", report.String())
	if settings.report != "" {
		if err := os.WriteFile(settings.report, []byte(report.String()), 0o644); err != nil {
			t.Errorf("write the report: %v", err)
		}
	}
}

const benchTLSTableHeader = `| workload | Collie plaintext ops/s | Collie TLS ops/s | Collie cost | ZooKeeper plaintext ops/s | ZooKeeper TLS ops/s | ZooKeeper cost | TLS ops/s Collie/ZooKeeper | p99 Collie plaintext / TLS | p99 ZooKeeper plaintext / TLS | server CPU µs/op TLS Collie / ZooKeeper |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
`

func benchTLSTableRow(name string, plain, secured [2]benchLoadResult) string {
	c, z := 0, 1
	return fmt.Sprintf("| %s | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f | %.2f | %s / %s | %s / %s | %.0f / %.0f |\n", name,
		plain[c].opsPerSec(), secured[c].opsPerSec(), secured[c].opsPerSec()/plain[c].opsPerSec(),
		plain[z].opsPerSec(), secured[z].opsPerSec(), secured[z].opsPerSec()/plain[z].opsPerSec(),
		secured[c].opsPerSec()/secured[z].opsPerSec(),
		benchMillis(plain[c].p99), benchMillis(secured[c].p99), benchMillis(plain[z].p99), benchMillis(secured[z].p99),
		secured[c].cpuPerOp(), secured[z].cpuPerOp())
}

// benchSessionSetup opens and closes sessions at addr in a closed loop
// from benchSetupDialers goroutines, over TLS when cfg is not nil: a
// session counts once it has been set up and closed within the measured
// interval.
func benchSessionSetup(t *testing.T, s benchServer, cfg *tls.Config, addr string, settings benchSettings) benchLoadResult {
	t.Helper()
	once := func() error {
		nc, err := net.DialTimeout("tcp", addr, benchTimeout)
		if err != nil {
			return err
		}
		if cfg != nil {
			c := cfg.Clone()
			c.ServerName, _, _ = net.SplitHostPort(addr)
			tc := tls.Client(nc, c)
			tc.SetDeadline(time.Now().Add(benchTimeout))
			if err := tc.Handshake(); err != nil {
				nc.Close()
				return fmt.Errorf("TLS handshake: %w", err)
			}
			nc = tc
		}
		c, err := zkwire.HandshakeOn(nc, &proto.ConnectRequest{TimeOut: int32(benchTimeout.Milliseconds()), Passwd: make([]byte, proto.PasswordLen)})
		if err != nil {
			return err
		}
		defer c.Close()
		if c.TimeOut == 0 {
			return fmt.Errorf("session refused")
		}
		hdr, _, err := c.Call(proto.OpCloseSession, nil)
		if err == nil && hdr.Err != 0 {
			err = fmt.Errorf("closeSession: error %d", hdr.Err)
		}
		return err
	}
	return benchClosedLoop(t, s.pid(t), settings, benchSetupDialers, func(int) error {
		if err := once(); err != nil {
			return fmt.Errorf("%s, session setup at %s: %w", s.name(), addr, err)
		}
		return nil
	})
}
