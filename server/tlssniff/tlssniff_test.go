package tlssniff

import (
	"io"
	"net"
	"testing"
)

func TestSniffTellsTLSAndReplaysTheFirstByte(t *testing.T) {
	tests := []struct {
		first string
		tls   bool
	}{
		{"\x16\x03\x01\x00\x05hello", true},
		{"GET / HTTP/1.1\r\n\r\n", false},
		{"ruok", false},
		{"\x00\x00\x00\x2c", false}, // a ZooKeeper frame's length
	}
	for _, tt := range tests {
		client, server := net.Pipe()
		go func() {
			client.Write([]byte(tt.first))
			client.Close()
		}()
		conn, isTLS, err := Sniff(server)
		if err != nil || isTLS != tt.tls {
			t.Errorf("%q: TLS %v, %v; want %v", tt.first, isTLS, err, tt.tls)
		}
		got, err := io.ReadAll(conn)
		if err != nil || string(got) != tt.first {
			t.Errorf("%q: read back %q, %v", tt.first, got, err)
		}
		server.Close()
	}
}

func TestSniffOfAClosedConnection(t *testing.T) {
	client, server := net.Pipe()
	client.Close()
	if _, _, err := Sniff(server); err == nil {
		t.Error("Sniff of a connection closed before its first byte succeeded")
	}
}
