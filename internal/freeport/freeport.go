// Package freeport hands out loopback TCP ports for test servers. The
// kernel may return a port it has just returned once the first listener is
// closed, so two ports asked for in a row, say a server's peer and election
// ports, can be the same; this package remembers what it has handed out in
// this process and never hands out a port twice.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
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

// Block returns a port base of 127.0.0.1 such that base+o was free a
// moment ago for every o of offsets, for a program that derives its ports
// from one it is given. The ports lie below the range the kernel draws
// from for outgoing connections (from 32768 on Linux), so that no
// client's connection can take one of them meanwhile, and none was
// handed out before in this process.
func Block(offsets ...int) (int, error) {
	const low, high = 15000, 32768
	span := 0
	for _, o := range offsets {
		span = max(span, o)
	}
	if span >= high-low {
		return 0, fmt.Errorf("find free ports: offsets up to %d do not fit below %d", span, high)
	}
	mu.Lock()
	defer mu.Unlock()
search:
	for range attempts {
		base := low + rand.IntN(high-low-span)
		var held []net.Listener
		release := func() {
			for _, l := range held {
				l.Close()
			}
		}
		for _, o := range offsets {
			if given[base+o] {
				release()
				continue search
			}
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+o)))
			if err != nil {
				release()
				continue search
			}
			held = append(held, l)
		}
		release()
		for _, o := range offsets {
			given[base+o] = true
		}
		return base, nil
	}
	return 0, fmt.Errorf("find free ports: no base of %d tried had offsets %v free", attempts, offsets)
}
