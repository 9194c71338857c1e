package discovery

import (
	"context"
	"errors"
	"time"

	"github.com/collie-io/collie/client"
)

// The background goroutines of the package (a keeper's, a live list's)
// follow the client's session through a StateChanges stream, subscribed
// before their first request so that no new session goes unnoticed, and
// retry failed requests at the pace of retryPolicy.

// retryPolicy paces the attempts of the background goroutines after a
// failure with the session up, and Leave's and Unregister's deletes across
// connection losses.
var retryPolicy = client.ExponentialBackoff(50*time.Millisecond, time.Second, client.Forever)

// skipSubscriptionState receives the first state of a stream, the one at
// subscription, which the goroutine's first requests came after. It
// returns false when ctx ends first.
func skipSubscriptionState(ctx context.Context, states *client.Stream[client.State]) bool {
	select {
	case <-states.Events():
		return true
	case <-ctx.Done():
		return false
	}
}

// pacer counts the consecutive failures of a goroutine's attempts.
type pacer struct{ failures int }

// after takes the outcome of an attempt and returns how long to wait
// before the next one: 0 after a success. It returns false when the
// goroutine must end: ctx ended, or the client closed.
func (p *pacer) after(ctx context.Context, err error) (time.Duration, bool) {
	switch {
	case ctx.Err() != nil || errors.Is(err, client.ErrClosed):
		return 0, false
	case err != nil:
		p.failures++
		delay, _ := retryPolicy.Delay(p.failures)
		return delay, true
	}
	p.failures = 0
	return 0, true
}

// awaitChange waits for something that calls for another look: the watch
// firing, a new session, the retry delay passing (when not zero) or, while
// retrying, the connection coming back. It returns false when ctx ends or
// the client closes.
func awaitChange(ctx context.Context, states *client.Stream[client.State], watch <-chan client.Event, retry time.Duration) bool {
	var timeout <-chan time.Time
	if retry > 0 {
		timer := time.NewTimer(retry)
		defer timer.Stop()
		timeout = timer.C
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-watch:
			return true
		case <-timeout:
			return true
		case st, ok := <-states.Events():
			switch {
			case !ok || st == client.StateClosed:
				return false
			case st == client.StateConnected:
				return true // a new session: what the old one owned and watched is gone
			case retry > 0 && st.Connected():
				return true
			}
		}
	}
}
