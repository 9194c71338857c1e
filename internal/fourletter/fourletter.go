// Package fourletter sends ZooKeeper's four-letter words (ruok, srvr,
// mntr, ...) to a server and reads the answer, for tools and tests that
// ask ZooKeeper and Collie servers how they are.
package fourletter

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"
)

// Timeout bounds one exchange, dial included, when the context has no
// earlier deadline.
const Timeout = 5 * time.Second

// maxReply bounds what is read of an answer: mntr and cons of a busy
// server are tens of kilobytes, never megabytes.
const maxReply = 4 << 20

// Ask sends cmd to the server at addr and returns everything it answers
// before closing the connection.
func Ask(ctx context.Context, addr, cmd string) (string, error) {
	if len(cmd) != 4 {
		return "", fmt.Errorf("four-letter word %q is not 4 bytes", cmd)
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s to %s: %w", cmd, addr, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return "", fmt.Errorf("%s to %s: %w", cmd, addr, err)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", fmt.Errorf("%s to %s: %w", cmd, addr, err)
	}
	reply, err := io.ReadAll(io.LimitReader(conn, maxReply))
	if err != nil {
		return string(reply), fmt.Errorf("%s to %s: %w", cmd, addr, err)
	}
	return string(reply), nil
}
