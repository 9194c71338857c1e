// Package freeport hands out loopback TCP ports for test servers. The
// kernel may return a port it has just returned once the first listener is
// closed, so two ports asked for in a row, say a server's peer and election
// ports, can be the same; this package remembers what it has handed out in
// this process and never hands out a port twice.
package freeport

import (
	"fmt"
	"net"
	"sync"
)

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// attempts bounds the search: a kernel that keeps returning ports already
// given has run out of ephemeral ports to offer.
const attempts = 100

// Take returns a port of 127.0.0.1 that was free a moment ago and that no
// earlier Take in this process returned.
func Take() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	// Listeners stay open until the search ends, so the kernel cannot offer
	// the same refused port again.
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range attempts {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		if !given[port] {
			given[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("find a free port: %d ports offered were all handed out before", attempts)
}
