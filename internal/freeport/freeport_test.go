package freeport

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"
)

func TestTakeNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		port, err := Take()
		if err != nil {
			t.Fatal(err)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
	}
}

func TestTakenPortIsFree(t *testing.T) {
	port, err := Take()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("listen on the port Take returned: %v", err)
	}
	l.Close()
}

func TestBlockPortsAreFreeAndNeverRepeat(t *testing.T) {
	offsets := []int{0, 1, 2, 707, 708, 709}
	seen := map[int]bool{}
	for range 20 {
		base, err := Block(offsets...)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range offsets {
			port := base + o
			if port >= 32768 {
				t.Fatalf("port %d is in the kernel's range for outgoing connections", port)
			}
			if seen[port] {
				t.Fatalf("port %d handed out twice", port)
			}
			seen[port] = true
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				t.Fatalf("listen on port %d of the block: %v", port, err)
			}
			l.Close()
		}
	}
}

// A taken port must not be one the kernel may give an outgoing
// connection meanwhile, before the test server listens on it.
func TestTakenPortIsOutsideTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral port range to compare with: %v", err)
	}
	var low, high int
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil {
		t.Fatalf("ip_local_port_range %q: %v", b, err)
	}
	for range 100 {
		port, err := Take()
		if err != nil {
			t.Fatal(err)
		}
		if port >= low && port <= high {
			t.Fatalf("port %d is in the ephemeral range %d-%d", port, low, high)
		}
	}
}
