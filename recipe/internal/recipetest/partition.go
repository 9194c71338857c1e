package recipetest

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
)

// errPartitioned is what a dial through a cut or stalled Partition fails
// with.
var errPartitioned = errors.New("recipetest: partitioned")

// Partition stands between a client and its servers, as its Dial, and
// fails the network on demand: Cut breaks every connection at once, Stall
// lets connections go silent (what the client writes is lost, nothing
// arrives) so that requests already sent never get a reply, and Heal lets
// new connections through again. The zero value lets everything through.
type Partition struct {
	mu    sync.Mutex
	conns []*stallable
	down  bool // new connections are refused
}

// Partitioned connects a client through a partition of its own, with the
// given session timeout; the client renews its session when it expires,
// as Curator's always does.
func Partitioned(t testing.TB, addr string, timeout time.Duration) (*client.Client, *Partition) {
	t.Helper()
	p := &Partition{}
	return Dial(t, addr, client.Config{SessionTimeout: timeout, RenewSession: true, Dial: p.Dial}), p
}

// Dial is a client.Config.Dial that connects through the partition.
func (p *Partition) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return nil, errPartitioned
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	s := &stallable{Conn: conn}
	p.conns = append(p.conns, s)
	return s, nil
}

// Cut closes every connection made so far and refuses new ones until Heal.
func (p *Partition) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Stall silences every connection made so far, for good, and refuses new
// ones until Heal: the client finds out when its read timeout passes, or
// when Cut closes them.
func (p *Partition) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.stalled.Store(true)
	}
}

// Deafen lets what the client writes through but drops what arrives, on
// every connection made so far, for good, and refuses new ones until Heal:
// requests sent meanwhile reach the server, which applies them, and their
// replies are lost. The client finds out when its read timeout passes.
func (p *Partition) Deafen() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.deaf.Store(true)
	}
}

// Heal lets new connections through.
func (p *Partition) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// stallable is a connection that can go silent: once stalled, writes are
// swallowed and what arrives is dropped, until it is closed; once deaf,
// what arrives is dropped.
type stallable struct {
	net.Conn
	stalled atomic.Bool
	deaf    atomic.Bool
}

func (s *stallable) Write(b []byte) (int, error) {
	if s.stalled.Load() {
		return len(b), nil
	}
	return s.Conn.Write(b)
}

func (s *stallable) Read(b []byte) (int, error) {
	for {
		n, err := s.Conn.Read(b)
		if err != nil || !s.stalled.Load() && !s.deaf.Load() {
			return n, err
		}
	}
}

// AwaitState waits until states delivers want, failing the test after
// Timeout, or when the stream ends first.
func AwaitState(t testing.TB, states *client.Stream[client.State], want client.State) {
	t.Helper()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	for {
		select {
		case s, ok := <-states.Events():
			if !ok {
				t.Fatalf("state stream ended waiting for %v", want)
			}
			if s == want {
				return
			}
		case <-timer.C:
			t.Fatalf("timed out waiting for state %v", want)
		}
	}
}
