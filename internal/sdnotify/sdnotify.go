// Package sdnotify tells systemd how a service started with Type=notify is
// doing: READY=1 once it serves, STOPPING=1 when it begins to stop, and a
// STATUS= line for `systemctl status` (sd_notify(3)). It is the
// protocol's client side alone: one datagram to the socket that systemd
// names in $NOTIFY_SOCKET.
package sdnotify

import (
	"fmt"
	"net"
	"strings"
)

// The states a server reports.
const (
	Ready    = "READY=1"
	Stopping = "STOPPING=1"
)

// Status is a STATUS= line: free text that systemctl status shows.
func Status(text string) string {
	return "STATUS=" + strings.ReplaceAll(text, "\n", " ")
}

// Send sends the states, one per line, to socket, the value of
// $NOTIFY_SOCKET: a file system path, or an abstract socket's name after
// "@". Without a socket (not started by systemd, or not as Type=notify)
// it does nothing.
func Send(socket string, states ...string) error {
	if socket == "" {
		return nil
	}
	if !strings.HasPrefix(socket, "/") && !strings.HasPrefix(socket, "@") {
		return fmt.Errorf("sdnotify: NOTIFY_SOCKET %q is neither a path nor an abstract socket name", socket)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(strings.Join(states, "\n"))); err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	return nil
}
