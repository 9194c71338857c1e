package zkref

import (
	"context"

	"github.com/collie-io/collie/internal/fourletter"
)

// FourLetter sends a ZooKeeper four-letter word such as "ruok", "srvr" or
// "mntr" to the server at addr and returns everything it answers before
// closing the connection. It gives up after 5 seconds.
func FourLetter(addr, cmd string) (string, error) {
	return fourletter.Ask(context.Background(), addr, cmd)
}
