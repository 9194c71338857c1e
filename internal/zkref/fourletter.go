package zkref

import (
	"fmt"
	"io"
	"net"
	"time"
)

// fourLetterTimeout bounds one four-letter-word exchange, dial included.
const fourLetterTimeout = 5 * time.Second

// FourLetter sends a ZooKeeper four-letter word such as "ruok", "srvr" or
// "mntr" to the server at addr and returns everything it answers before
// closing the connection. It gives up after 5 seconds.
func FourLetter(addr, cmd string) (string, error) {
	if len(cmd) != 4 {
		return "", fmt.Errorf("four-letter word %q is not 4 bytes", cmd)
	}
	deadline := time.Now().Add(fourLetterTimeout)
	conn, err := net.DialTimeout("tcp", addr, fourLetterTimeout)
	if err != nil {
		return "", fmt.Errorf("%s to %s: %w", cmd, addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return "", fmt.Errorf("%s to %s: %w", cmd, addr, err)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", fmt.Errorf("%s to %s: %w", cmd, addr, err)
	}
	reply, err := io.ReadAll(conn)
	if err != nil {
		return string(reply), fmt.Errorf("%s to %s: %w", cmd, addr, err)
	}
	return string(reply), nil
}
