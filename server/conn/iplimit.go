package conn

import (
	"net"
	"sync"
)

// IPLimit counts open connections by client address, for
// maxClientCnxns. Its zero value admits everyone until Max is set; it is
// safe for concurrent use.
type IPLimit struct {
	// Max is the most connections from one address; 0 or less is
	// unlimited.
	Max int

	mu sync.Mutex
	n  map[string]int
}

// Admit counts a new connection from addr, or reports false, counting
// nothing, when its address has Max connections already.
func (l *IPLimit) Admit(addr net.Addr) bool {
	host := ipHost(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Max > 0 && l.n[host] >= l.Max {
		return false
	}
	if l.n == nil {
		l.n = map[string]int{}
	}
	l.n[host]++
	return true
}

// Release uncounts a closed connection that Admit counted.
func (l *IPLimit) Release(addr net.Addr) {
	host := ipHost(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[host]--; l.n[host] <= 0 {
		delete(l.n, host)
	}
}

func ipHost(addr net.Addr) string {
	host, _, _ := net.SplitHostPort(addr.String())
	return host
}
