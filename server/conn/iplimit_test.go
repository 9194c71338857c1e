package conn

import (
	"net"
	"testing"
)

func TestIPLimit(t *testing.T) {
	l := IPLimit{Max: 2}
	a1 := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1000}
	a2 := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1001}
	a3 := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1002}
	other := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 1000}
	if !l.Admit(a1) || !l.Admit(a2) {
		t.Fatal("refused a connection under the limit")
	}
	if l.Admit(a3) {
		t.Fatal("admitted a third connection from one address with maxClientCnxns=2")
	}
	if !l.Admit(other) {
		t.Fatal("refused another address")
	}
	l.Release(a1)
	if !l.Admit(a3) {
		t.Fatal("refused a connection after one from its address closed")
	}
	var unlimited IPLimit
	for range 100 {
		if !unlimited.Admit(a1) {
			t.Fatal("a zero IPLimit refused a connection")
		}
	}
}
