package server_test

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/tlsconfig"
)

// clientHello returns the first TLS record a Go client with cfg sends: its
// ClientHello.
func clientHello(t *testing.T, cfg *tls.Config) []byte {
	t.Helper()
	cfg = cfg.Clone()
	cfg.ServerName = "localhost"
	ours, theirs := net.Pipe()
	defer ours.Close()
	go func() {
		tls.Client(theirs, cfg).Handshake()
		theirs.Close()
	}()
	header := make([]byte, 5)
	if _, err := io.ReadFull(ours, header); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint16(header[3:]))
	if _, err := io.ReadFull(ours, body); err != nil {
		t.Fatal(err)
	}
	return append(header, body...)
}

// closedByServer waits until the server closes nc, reading and dropping
// what it sends, and fails t when it has not within the deadline: the
// handshake's bound, whatever the client does, is what ends nc.
func closedByServer(t *testing.T, nc net.Conn, what string) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.Copy(io.Discard, nc); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s: the server has not closed the connection within a minute", what)
		}
	}
}

// waitGoroutines waits until the process runs at most want goroutines.
func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		n := runtime.NumGoroutine()
		if n <= want {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines a minute after the flood, want at most %d:\n%s", n, want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A flood of connections that stall in the handshake (silent, a ClientHello
// and nothing more, half a record header) neither stops a TLS client from
// being served meanwhile nor outlives the handshake's bound: the server
// closes each, and its goroutines go away.
func TestTLSHandshakeFlood(t *testing.T) {
	pki := newTLSPKI(t)
	srv := collietest.Start(t, collietest.WithTLS(pki.settings(tlsconfig.NeedClientAuth)), collietest.WithConfig(func(c *config.Config) {
		c.MaxClientCnxns = 0 // the flood comes from one address
	}))
	good := connectTLS(t, srv.SecureAddr(), pki.clientTLS(t, pki.client))
	if _, err := good.Create("/flood", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	hello := clientHello(t, pki.clientTLS(t, pki.client))
	baseline := runtime.NumGoroutine()

	const flood = 300
	stalls := []struct {
		name string
		send []byte
	}{
		{"silent", nil},
		{"a ClientHello and nothing more", hello},
		{"half a record header", hello[:3]},
	}
	var conns []net.Conn
	for i := range flood {
		nc, err := net.Dial("tcp", srv.SecureAddr())
		if err != nil {
			t.Fatalf("connection %d of the flood: %v", i, err)
		}
		defer nc.Close()
		if _, err := nc.Write(stalls[i%len(stalls)].send); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
	}

	// The TLS client is served while the flood stalls, and a new one
	// connects.
	for i := range 20 {
		if _, err := good.Set("/flood", []byte{byte(i)}, -1); err != nil {
			t.Fatalf("the TLS client during the flood: %v", err)
		}
	}
	connectTLS(t, srv.SecureAddr(), pki.clientTLS(t, pki.client))

	var wg sync.WaitGroup
	for i, nc := range conns {
		wg.Go(func() { closedByServer(t, nc, stalls[i%len(stalls)].name) })
	}
	wg.Wait()
	for _, nc := range conns {
		nc.Close()
	}
	// The new client's goroutines and some of the runtime's may remain.
	waitGoroutines(t, baseline+20)
	if _, err := good.Set("/flood", []byte("after"), -1); err != nil {
		t.Fatalf("the TLS client after the flood: %v", err)
	}
}

// Garbage before a handshake, garbage after a ClientHello, and a record of
// the largest length a header can give, full of junk, cost their own
// connection only, on the secure port and on a unified one.
func TestTLSGarbage(t *testing.T) {
	pki := newTLSPKI(t)
	srv := collietest.Start(t, collietest.WithTLS(pki.settings(tlsconfig.NeedClientAuth)), collietest.WithConfig(func(c *config.Config) {
		c.ClientPortUnification = true
		c.SSL = pki.settings(tlsconfig.NeedClientAuth)
	}))
	good := connectTLS(t, srv.SecureAddr(), pki.clientTLS(t, pki.client))
	hello := clientHello(t, pki.clientTLS(t, pki.client))

	junk := bytes.Repeat([]byte{0xa5}, 1<<16)
	record := func(typ byte, length int) []byte {
		return append([]byte{typ, 3, 3, byte(length >> 8), byte(length)}, junk[:length]...)
	}
	cases := []struct {
		name string
		send []byte
	}{
		{"garbage before the handshake", append([]byte("\x00\x00\x00\x2c"), junk[:64]...)},
		{"a handshake record of garbage", record(0x16, 64)},
		{"garbage after a ClientHello", append(append([]byte{}, hello...), junk[:64]...)},
		{"an application record after a ClientHello", append(append([]byte{}, hello...), record(0x17, 512)...)},
		{"a ClientHello cut in the middle, then garbage", append(append([]byte{}, hello[:len(hello)/2]...), record(0x16, 1024)...)},
		{"a record of 2^14 bytes of junk", record(0x16, 1<<14)},
		{"a record of the largest length a header gives", record(0x16, 1<<16-1)},
	}
	for _, addr := range []string{srv.SecureAddr(), srv.Addr()} {
		for _, tc := range cases {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			// The server may close before it has read everything; a
			// write that fails then is what a client sees.
			go nc.Write(tc.send)
			closedByServer(t, nc, tc.name)
			nc.Close()
		}
	}
	if _, err := good.Create("/after-garbage", nil, 0, acl); err != nil {
		t.Fatalf("the TLS client after the garbage: %v", err)
	}
	if mntr := fourLetter(t, srv.Addr(), "mntr"); !strings.Contains(mntr, "zk_unsuccessful_handshake\t") {
		t.Errorf("mntr does not count the failed handshakes:\n%s", mntr)
	}
}
