package session

import "time"

// Negotiate returns the session timeout the server grants for a requested
// one: raised to minTimeout, then lowered to maxTimeout, in that order, as
// ZooKeeper's processConnectRequest does (so maxTimeout wins if the two are
// crossed).
func Negotiate(requested, minTimeout, maxTimeout time.Duration) time.Duration {
	if requested < minTimeout {
		requested = minTimeout
	}
	if requested > maxTimeout {
		requested = maxTimeout
	}
	return requested
}
