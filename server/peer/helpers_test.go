package peer_test

import (
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/server/peer"
	"go.etcd.io/raft/v3/raftpb"
)

// testTimeout bounds every wait of a test; the tests never sleep for
// correctness, they wait for conditions and fail after this long.
const testTimeout = 20 * time.Second

// testLogger logs to the test's output, shown when it fails or with -v.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// waitFor polls cond until it holds, and fails the test after testTimeout.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// received is one message a recorder was handed: raft's or the
// application's.
type received struct {
	from uint64
	m    raftpb.Message
	app  []byte
}

// recorder keeps what a transport's handlers were called with.
type recorder struct {
	mu          sync.Mutex
	msgs        []received
	snaps       []raftpb.Message
	unreachable map[uint64]int
	lost        map[uint64]int
	snapStatus  map[uint64][]bool
}

func newRecorder() *recorder {
	return &recorder{unreachable: map[uint64]int{}, lost: map[uint64]int{}, snapStatus: map[uint64][]bool{}}
}

func (r *recorder) config(cfg *peer.Config) {
	cfg.Raft = func(m raftpb.Message) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if m.Type == raftpb.MsgSnap {
			r.snaps = append(r.snaps, m)
			return
		}
		r.msgs = append(r.msgs, received{from: m.From, m: m})
	}
	cfg.App = func(from uint64, data []byte) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.msgs = append(r.msgs, received{from: from, app: data})
	}
	cfg.Unreachable = func(id uint64) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.unreachable[id]++
	}
	cfg.Lost = func(id uint64) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.lost[id]++
	}
	cfg.SnapshotStatus = func(id uint64, failed bool) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.snapStatus[id] = append(r.snapStatus[id], failed)
	}
}

// from returns what was received from id, in order.
func (r *recorder) from(id uint64) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []received
	for _, m := range r.msgs {
		if m.from == id {
			out = append(out, m)
		}
	}
	return out
}

func (r *recorder) unreachableCount(id uint64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unreachable[id]
}

func (r *recorder) lostCount(id uint64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost[id]
}

func (r *recorder) snapshots() []raftpb.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]raftpb.Message(nil), r.snaps...)
}

func (r *recorder) snapshotStatus(id uint64) []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bool(nil), r.snapStatus[id]...)
}

// member is a started transport with its recorder.
type member struct {
	id  uint64
	tr  *peer.Transport
	rec *recorder
}

// testConfig is the configuration of a test transport on a free port of
// 127.0.0.1, with short waits so that reconnecting takes little time.
func testConfig(t testing.TB, id uint64, rec *recorder) peer.Config {
	cfg := peer.Config{
		ID:               id,
		Listen:           "127.0.0.1:0",
		Logger:           testLogger(t).With("server", id),
		MaxBackoff:       100 * time.Millisecond,
		HandshakeTimeout: 2 * time.Second,
		IOTimeout:        5 * time.Second,
	}
	rec.config(&cfg)
	return cfg
}

// newTransport creates a transport and closes it when the test ends.
func newTransport(t testing.TB, cfg peer.Config) *peer.Transport {
	t.Helper()
	tr, err := peer.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// ensemble starts n transports, ids 1..n, each the peer of every other,
// and waits until all are connected. change, if not nil, changes each
// configuration first.
func ensemble(t testing.TB, n int, change func(*peer.Config)) []*member {
	t.Helper()
	ms := startMembers(t, n, change)
	for _, a := range ms {
		for _, b := range ms {
			if a != b {
				waitFor(t, fmt.Sprintf("%d to connect to %d", a.id, b.id), func() bool { return peerStats(a.tr, b.id).Connected })
			}
		}
	}
	return ms
}

// startMembers is ensemble without the wait for connections.
func startMembers(t testing.TB, n int, change func(*peer.Config)) []*member {
	t.Helper()
	ms := make([]*member, n)
	for i := range ms {
		rec := newRecorder()
		cfg := testConfig(t, uint64(i+1), rec)
		if change != nil {
			change(&cfg)
		}
		ms[i] = &member{id: uint64(i + 1), tr: newTransport(t, cfg), rec: rec}
	}
	for _, a := range ms {
		for _, b := range ms {
			if a != b {
				if err := a.tr.AddPeer(b.id, b.tr.Addr().String()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, m := range ms {
		m.tr.Start()
	}
	return ms
}

// waitConnected waits until tr is connected to all its peers.
func waitConnected(t testing.TB, tr *peer.Transport) {
	t.Helper()
	waitFor(t, "connections to every peer", func() bool {
		for _, p := range tr.Stats().Peers {
			if !p.Connected {
				return false
			}
		}
		return true
	})
}

func peerStats(tr *peer.Transport, id uint64) peer.PeerStats {
	for _, p := range tr.Stats().Peers {
		if p.ID == id {
			return p
		}
	}
	return peer.PeerStats{}
}

// deadAddr returns an address of 127.0.0.1 nothing listens on.
func deadAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// checkNoLeaks waits until no goroutine of the package is left.
func checkNoLeaks(t testing.TB) {
	t.Helper()
	var leaked []string
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		leaked = leaked[:0]
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, "collie/server/peer.") && !strings.Contains(g, "testing.tRunner") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%d goroutines left after Close:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
}

// closeAll closes the transports and checks that nothing of them is left
// running.
func closeAll(t testing.TB, ms ...*member) {
	t.Helper()
	for _, m := range ms {
		m.tr.Close()
	}
	checkNoLeaks(t)
}
