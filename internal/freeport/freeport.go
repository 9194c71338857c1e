// Package freeport hands out loopback TCP ports for test servers: ports
// below the range the kernel draws from for outgoing connections, which
// were free a moment ago, and which it never hands out twice in this
// process.
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

// attempts bounds the search.
const attempts = 100

// Take returns a port of 127.0.0.1 that was free a moment ago and that no
// earlier Take or Block in this process returned. It lies below the range
// the kernel draws from for outgoing connections, as Block's do: a port
// the kernel offered could be taken by a client's or a server's outgoing
// connection before the test server listens on it.
func Take() (int, error) {
	return Block(0)
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
