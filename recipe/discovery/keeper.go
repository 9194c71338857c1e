package discovery

import (
	"context"
	"time"

	"github.com/collie-io/collie/client"
)

// keepRetry paces the attempts to register again while they fail with
// the session up (a server that refuses, a connection that flaps).
const keepRetry = 200 * time.Millisecond

// keeper calls restore each time the client's session comes back or a
// new one begins, until restore succeeds or the session goes again: the
// nodes a session owned may be gone, and must be written again.
type keeper struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startKeeper(c *client.Client, restore func(context.Context) error) *keeper {
	ctx, cancel := context.WithCancel(context.Background())
	k := &keeper{cancel: cancel, done: make(chan struct{})}
	states := c.StateChanges()
	go func() {
		defer close(k.done)
		defer states.Close()
		// The first state is the current one: a fresh client needs no
		// restoring.
		first := true
		for {
			var st client.State
			var ok bool
			select {
			case st, ok = <-states.Events():
				if !ok || st == client.StateClosed {
					return
				}
			case <-ctx.Done():
				return
			}
			if first {
				first = false
				continue
			}
			if st != client.StateConnected && st != client.StateReconnected {
				continue
			}
			for restore(ctx) != nil && c.State().Connected() {
				select {
				case <-ctx.Done():
					return
				case <-time.After(keepRetry):
				}
			}
		}
	}()
	return k
}

func (k *keeper) stop() {
	k.cancel()
	<-k.done
}
