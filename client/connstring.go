package client

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strings"

	"github.com/collie-io/collie/proto"
)

// defaultPort is ZooKeeper's client port, used for hosts given without one.
const defaultPort = "2181"

// parseConnectString reads ZooKeeper's connect string,
// "host:port,host:port/chroot", and returns the servers in a random order
// (so a fleet of clients spreads over them) and the chroot ("" for none).
func parseConnectString(s string) (servers []string, chroot string, err error) {
	hosts := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hosts, chroot = s[:i], s[i:]
		if err := proto.ValidatePath(chroot); err != nil {
			return nil, "", fmt.Errorf("client: chroot of %q: %w", s, err)
		}
		if chroot == "/" {
			chroot = ""
		}
	}
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), defaultPort)
		}
		servers = append(servers, h)
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("client: connect string %q names no server", s)
	}
	rand.Shuffle(len(servers), func(i, j int) { servers[i], servers[j] = servers[j], servers[i] })
	return servers, chroot, nil
}

// serverPath validates a client path and returns it below the chroot.
// A sequential create may end in "/": the server appends the sequence
// number to it.
func serverPath(chroot, path string, sequential bool) (string, error) {
	check := path
	if sequential {
		check += "1"
	}
	if err := proto.ValidatePath(check); err != nil {
		return "", err
	}
	if chroot == "" {
		return path, nil
	}
	if path == "/" {
		return chroot, nil
	}
	return chroot + path, nil
}

// clientPath returns a server path in the client's namespace, and false
// when it lies outside the chroot.
func clientPath(chroot, path string) (string, bool) {
	if chroot == "" {
		return path, true
	}
	if path == chroot {
		return "/", true
	}
	if len(path) > len(chroot) && path[len(chroot)] == '/' && path[:len(chroot)] == chroot {
		return path[len(chroot):], true
	}
	return path, false
}
