// Package reqstats owns the request statistics that srvr, stat and mntr
// report: packets received and sent, and the latency of replies.
package reqstats

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Latency aggregates request latencies and packet counts. Its zero value
// is ready; it is safe for concurrent use.
type Latency struct {
	mu              sync.Mutex
	received, sent  int64
	min, max, total time.Duration
	count           int64
}

// Observe counts a reply sent after d.
func (l *Latency) Observe(d time.Duration) {
	l.mu.Lock()
	if l.count == 0 || d < l.min {
		l.min = d
	}
	l.max = max(l.max, d)
	l.total += d
	l.count++
	l.sent++
	l.mu.Unlock()
}

// Packet counts a request received.
func (l *Latency) Packet() {
	l.mu.Lock()
	l.received++
	l.mu.Unlock()
}

// Reset starts the counts over (srst).
func (l *Latency) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Field by field: overwriting the struct would overwrite the held lock.
	l.received, l.sent = 0, 0
	l.min, l.max, l.total = 0, 0, 0
	l.count = 0
}

// Summary returns the counts as srvr and mntr print them.
func (l *Latency) Summary() (minMs int64, avgMs string, maxMs int64, received, sent int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	avg := 0.0
	if l.count > 0 {
		avg = float64(l.total.Microseconds()) / float64(l.count) / 1000
	}
	return l.min.Milliseconds(), javaDouble(avg), l.max.Milliseconds(), l.received, l.sent
}

// javaDouble formats a float as Java's Double.toString does for the
// values latencies take ("0.0", "11.0", "0.25"), which is what tools that
// parse srvr and mntr have seen from ZooKeeper.
func javaDouble(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// Srvr is what srvr and stat report besides the latencies.
type Srvr struct {
	// Version is the version line's, with its build date.
	Version string
	// ReadOnly says the server serves read-only sessions only.
	ReadOnly bool
	// WithClients lists Clients, as stat does; srvr does not.
	WithClients bool
	Clients     []string // one cons line each
	Connections int
	Outstanding int
	Zxid        int64
	Mode        string
	Nodes       int
}

// Format writes srvr's (or stat's) answer as a ZooKeeper server does,
// with l's latencies and counts.
func (l *Latency) Format(r Srvr) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Zookeeper version: %s\n", r.Version)
	if r.ReadOnly {
		b.WriteString("READ-ONLY mode; serving only read-only clients\n")
	}
	if r.WithClients {
		b.WriteString("Clients:\n")
		for _, c := range r.Clients {
			b.WriteString(c)
		}
		b.WriteString("\n")
	}
	minL, avgL, maxL, recv, sent := l.Summary()
	fmt.Fprintf(&b, "Latency min/avg/max: %d/%s/%d\n", minL, avgL, maxL)
	fmt.Fprintf(&b, "Received: %d\nSent: %d\nConnections: %d\nOutstanding: %d\n", recv, sent, r.Connections, r.Outstanding)
	fmt.Fprintf(&b, "Zxid: 0x%x\nMode: %s\nNode count: %d\n", r.Zxid, r.Mode, r.Nodes)
	return b.String()
}
