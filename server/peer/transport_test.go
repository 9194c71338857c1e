package peer_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-io/collie/server/peer"
	"go.etcd.io/raft/v3/raftpb"
)

// heartbeat is a small raft message; Index numbers it.
func heartbeat(from, to, i uint64) raftpb.Message {
	return raftpb.Message{Type: raftpb.MsgHeartbeat, From: from, To: to, Term: 3, Index: i, Context: []byte("ctx")}
}

// sendMixed sends n messages from a to b, raft and application messages
// alternating, numbered from first.
func sendMixed(t *testing.T, a *member, b uint64, first, n int) {
	t.Helper()
	for i := first; i < first+n; i++ {
		if i%2 == 0 {
			a.tr.Send([]raftpb.Message{heartbeat(a.id, b, uint64(i))})
		} else if err := a.tr.SendApp(b, []byte(strconv.Itoa(i))); err != nil {
			t.Fatalf("SendApp: %v", err)
		}
	}
}

// checkMixed checks that got is what sendMixed sent, in order.
func checkMixed(t *testing.T, got []received, from, to uint64, first int) {
	t.Helper()
	for k, r := range got {
		i := first + k
		if i%2 == 0 {
			want := heartbeat(from, to, uint64(i))
			if r.app != nil || r.m.Type != want.Type || r.m.From != from || r.m.To != to || r.m.Index != want.Index || !bytes.Equal(r.m.Context, want.Context) {
				t.Fatalf("message %d from %d: got %+v, want %+v", i, from, r, want)
			}
		} else if string(r.app) != strconv.Itoa(i) {
			t.Fatalf("message %d from %d: got %+v, want app message %q", i, from, r, strconv.Itoa(i))
		}
	}
}

func TestExchangeInOrder(t *testing.T) {
	ms := ensemble(t, 3, nil)
	const n = 2000
	var wg sync.WaitGroup
	for _, a := range ms {
		for _, b := range ms {
			if a != b {
				wg.Go(func() { sendMixed(t, a, b.id, 0, n) })
			}
		}
	}
	wg.Wait()
	for _, b := range ms {
		for _, a := range ms {
			if a == b {
				continue
			}
			waitFor(t, fmt.Sprintf("%d messages from %d at %d", n, a.id, b.id), func() bool { return len(b.rec.from(a.id)) >= n })
			got := b.rec.from(a.id)
			if len(got) != n {
				t.Fatalf("%d received %d messages from %d, want %d", b.id, len(got), a.id, n)
			}
			checkMixed(t, got, a.id, b.id, 0)
		}
	}
	st := ms[0].tr.Stats()
	if st.ID != 1 || len(st.Peers) != 2 || st.Peers[0].ID != 2 || st.Peers[1].ID != 3 {
		t.Fatalf("Stats: %+v", st)
	}
	for _, p := range st.Peers {
		if !p.Connected || !p.Inbound || p.Sent != n || p.Dropped != 0 || p.Received != n || p.SentBytes == 0 || p.ReceivedBytes == 0 {
			t.Errorf("Stats of peer %d: %+v", p.ID, p)
		}
	}
	closeAll(t, ms...)
}

func TestReconnectAfterRestart(t *testing.T) {
	ms := ensemble(t, 2, nil)
	a, b := ms[0], ms[1]
	sendMixed(t, a, 2, 0, 10)
	waitFor(t, "the first messages", func() bool { return len(b.rec.from(1)) == 10 })

	addr := b.tr.Addr().String()
	if n := a.rec.lostCount(2); n != 0 {
		t.Fatalf("Lost(2) told %d times while 2 was up", n)
	}
	b.tr.Close()
	waitFor(t, "1 to notice 2 is gone", func() bool { return !peerStats(a.tr, 2).Connected })
	// Told without anything sent: a follower learns at once that its
	// leader went away.
	waitFor(t, "Lost(2)", func() bool { return a.rec.lostCount(2) > 0 })
	// Sent while 2 is down: dropped, and reported.
	a.tr.Send([]raftpb.Message{heartbeat(1, 2, 1000)})
	waitFor(t, "Unreachable(2)", func() bool { return a.rec.unreachableCount(2) > 0 })

	rec := newRecorder()
	cfg := testConfig(t, 2, rec)
	cfg.Listen = addr
	cfg.Peers = map[uint64]string{1: a.tr.Addr().String()}
	b2 := &member{id: 2, tr: newTransport(t, cfg), rec: rec}
	b2.tr.Start()
	waitConnected(t, a.tr)
	waitConnected(t, b2.tr)
	sendMixed(t, a, 2, 10, 10)
	sendMixed(t, b2, 1, 0, 10)
	waitFor(t, "later messages at the restarted peer", func() bool { return len(rec.from(1)) == 10 })
	checkMixed(t, rec.from(1), 1, 2, 10)
	waitFor(t, "messages from the restarted peer", func() bool { return len(a.rec.from(2)) == 10 })
	checkMixed(t, a.rec.from(2), 2, 1, 0)
	closeAll(t, a, b2)
}

// startAlone starts transport 1 with the one peer 2 at addr.
func startAlone(t *testing.T, addr string, change func(*peer.Config)) (*peer.Transport, *recorder) {
	rec := newRecorder()
	cfg := testConfig(t, 1, rec)
	cfg.Peers = map[uint64]string{2: addr}
	if change != nil {
		change(&cfg)
	}
	tr := newTransport(t, cfg)
	tr.Start()
	return tr, rec
}

func TestSendToDownPeer(t *testing.T) {
	tr, rec := startAlone(t, deadAddr(t), nil)

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const n, size = 20000, 4 << 10
	for i := range n {
		// Each message holds fresh memory: kept, it would add up to
		// n*size bytes.
		m := raftpb.Message{Type: raftpb.MsgApp, From: 1, To: 2, Index: uint64(i),
			Entries: []raftpb.Entry{{Index: uint64(i + 1), Data: make([]byte, size)}}}
		tr.Send([]raftpb.Message{m})
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > n*size/8 {
		t.Errorf("heap grew by %d bytes for %d bytes sent to a peer that is down", grown, n*size)
	}
	p := peerStats(tr, 2)
	if p.Connected || p.Dropped != n || p.Queued != 0 || p.Sent != 0 || p.DroppedBytes < n*size {
		t.Errorf("Stats after sending to a peer that is down: %+v", p)
	}
	waitFor(t, "Unreachable(2)", func() bool { return rec.unreachableCount(2) > 0 })
	if err := tr.SendApp(7, nil); err == nil {
		t.Errorf("SendApp to an unknown peer: no error")
	}
	tr.Send([]raftpb.Message{heartbeat(1, 7, 1)})
	if st := tr.Stats(); st.UnknownDropped != 2 {
		t.Errorf("UnknownDropped = %d, want 2", st.UnknownDropped)
	}
	tr.Close()
	checkNoLeaks(t)
}

// stalledPeer accepts peer connections, answers their handshake, and never
// reads a frame. accepted counts the connections.
func stalledPeer(t *testing.T) (addr string, accepted func() int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			var hello [32]byte
			if _, err := c.Read(hello[:]); err == nil {
				c.Write(reply(0))
			}
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String(), func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(conns)
	}
}

func TestQueueBoundWhenPeerStalls(t *testing.T) {
	const queueLen = 16
	addr, accepted := stalledPeer(t)
	tr, rec := startAlone(t, addr, func(cfg *peer.Config) {
		cfg.QueueLen = queueLen
		cfg.IOTimeout = 300 * time.Millisecond
	})
	waitConnected(t, tr)
	data := make([]byte, 64<<10)
	send := func() peer.PeerStats {
		for range 32 {
			tr.Send([]raftpb.Message{{Type: raftpb.MsgApp, From: 1, To: 2, Entries: []raftpb.Entry{{Data: data}}}})
		}
		p := peerStats(tr, 2)
		if p.Queued > queueLen {
			t.Fatalf("%d messages queued, over the bound of %d", p.Queued, queueLen)
		}
		return p
	}
	// The queue fills, then messages are dropped; Send never waits for
	// the peer.
	waitFor(t, "messages dropped", func() bool { return send().Dropped > 0 })
	waitFor(t, "Unreachable(2)", func() bool { return rec.unreachableCount(2) > 0 })
	// Once the socket buffers are full too, a write makes no progress for
	// IOTimeout: the connection is given up and made again.
	waitFor(t, "a stalled connection given up", func() bool { send(); return accepted() >= 2 })
	tr.Close()
	checkNoLeaks(t)
}

func TestSnapshotOnItsOwnConnection(t *testing.T) {
	// The snapshot from 1 to 2 stops after its first chunk until released:
	// small messages must keep flowing meanwhile.
	release := make(chan struct{})
	var once sync.Once
	peer.SetSnapshotChunkHook(t, func(to uint64) {
		if to == 2 {
			once.Do(func() { <-release })
		}
	})
	ms := ensemble(t, 3, nil)
	a, b, c := ms[0], ms[1], ms[2]

	data := make([]byte, 50<<20)
	rand.NewChaCha8([32]byte{1}).Read(data)
	snap := raftpb.Message{Type: raftpb.MsgSnap, From: 1, To: 2, Term: 4, Snapshot: &raftpb.Snapshot{
		Data:     data,
		Metadata: raftpb.SnapshotMetadata{Index: 1234, Term: 4, ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}}},
	}}
	a.tr.Send([]raftpb.Message{snap})
	sendMixed(t, a, 2, 0, 100)
	sendMixed(t, c, 2, 0, 100)
	waitFor(t, "small messages while the snapshot is under way", func() bool {
		return len(b.rec.from(1)) == 100 && len(b.rec.from(3)) == 100
	})
	checkMixed(t, b.rec.from(1), 1, 2, 0)
	if n := len(b.rec.snapshots()); n != 0 {
		t.Fatalf("%d snapshots received before the transfer was released", n)
	}
	close(release)

	waitFor(t, "the snapshot", func() bool { return len(b.rec.snapshots()) == 1 })
	got := b.rec.snapshots()[0]
	if got.From != 1 || got.To != 2 || got.Term != 4 || got.Snapshot.Metadata.Index != 1234 ||
		!slices.Equal(got.Snapshot.Metadata.ConfState.Voters, []uint64{1, 2, 3}) {
		t.Errorf("snapshot message: %+v", got.Snapshot.Metadata)
	}
	if !bytes.Equal(got.Snapshot.Data, data) {
		t.Errorf("snapshot data of %d bytes differs from the %d bytes sent", len(got.Snapshot.Data), len(data))
	}
	waitFor(t, "SnapshotStatus(2)", func() bool { return len(a.rec.snapshotStatus(2)) == 1 })
	if failed := a.rec.snapshotStatus(2)[0]; failed {
		t.Errorf("SnapshotStatus(2, failed=true) for a snapshot delivered")
	}
	if p := peerStats(a.tr, 2); p.SnapshotsSent != 1 || p.SnapshotsFailed != 0 {
		t.Errorf("Stats: %+v", p)
	}
	if p := peerStats(b.tr, 1); p.SnapshotsReceived != 1 {
		t.Errorf("Stats: %+v", p)
	}
	closeAll(t, ms...)
}

func TestSnapshotToDownPeerFails(t *testing.T) {
	tr, rec := startAlone(t, deadAddr(t), nil)
	tr.Send([]raftpb.Message{{Type: raftpb.MsgSnap, From: 1, To: 2, Snapshot: &raftpb.Snapshot{Data: []byte("state")}}})
	waitFor(t, "SnapshotStatus(2)", func() bool { return len(rec.snapshotStatus(2)) > 0 })
	if failed := rec.snapshotStatus(2)[0]; !failed {
		t.Errorf("SnapshotStatus(2, failed=false) for a peer that is down")
	}
	tr.Close()
	checkNoLeaks(t)
}

func TestRemoveAndUpdatePeer(t *testing.T) {
	ms := ensemble(t, 3, nil)
	a, b, c := ms[0], ms[1], ms[2]
	if err := a.tr.RemovePeer(3); err != nil {
		t.Fatal(err)
	}
	if err := a.tr.RemovePeer(3); err == nil {
		t.Error("RemovePeer of a removed peer: no error")
	}
	// 3 is refused by 1 from now on; 1 drops what it would send to 3.
	waitFor(t, "3 to lose its connection to 1", func() bool { return !peerStats(c.tr, 1).Connected })
	a.tr.Send([]raftpb.Message{heartbeat(1, 3, 1)})
	if st := a.tr.Stats(); st.UnknownDropped != 1 || len(st.Peers) != 1 {
		t.Errorf("Stats after RemovePeer: %+v", st)
	}
	waitFor(t, "1 to refuse 3", func() bool { return a.tr.Stats().Rejected > 0 })

	// Pointing 1's peer 2 at 3's address: 3 refuses (it is not 2).
	if err := a.tr.UpdatePeer(2, c.tr.Addr().String()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 to refuse 1 as 2", func() bool { return c.tr.Stats().Rejected > 0 && !peerStats(a.tr, 2).Connected })
	if err := a.tr.UpdatePeer(2, b.tr.Addr().String()); err != nil {
		t.Fatal(err)
	}
	waitConnected(t, a.tr)
	sendMixed(t, a, 2, 0, 10)
	waitFor(t, "messages after the address is right again", func() bool { return len(b.rec.from(1)) == 10 })
	checkMixed(t, b.rec.from(1), 1, 2, 0)

	if err := a.tr.AddPeer(2, "x:1"); err == nil {
		t.Error("AddPeer of an existing peer: no error")
	}
	if err := a.tr.AddPeer(1, "x:1"); err == nil {
		t.Error("AddPeer of this server: no error")
	}
	if err := a.tr.UpdatePeer(9, "x:1"); err == nil {
		t.Error("UpdatePeer of an unknown peer: no error")
	}
	closeAll(t, ms...)
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	checkNoLeaks(t)
	base := runtime.NumGoroutine()
	ms := ensemble(t, 3, nil)
	// Something in flight everywhere: queued messages and a snapshot.
	ms[0].tr.Send([]raftpb.Message{{Type: raftpb.MsgSnap, From: 1, To: 2, Snapshot: &raftpb.Snapshot{Data: make([]byte, 8<<20)}}})
	for _, m := range ms {
		sendMixed(t, m, m.id%3+1, 0, 500)
	}
	for _, m := range ms {
		if err := m.tr.Close(); err != nil {
			t.Fatal(err)
		}
		if err := m.tr.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	checkNoLeaks(t)
	waitFor(t, "goroutines to settle", func() bool { return runtime.NumGoroutine() <= base })
	if err := ms[0].tr.SendApp(2, nil); err == nil {
		t.Error("SendApp after Close: no error")
	}
	ms[0].tr.Send([]raftpb.Message{heartbeat(1, 2, 1)}) // dropped, does not panic
}

// closeCounter is a snapshot reader that records that it was closed.
type closeCounter struct {
	io.Reader
	closed atomic.Int32
}

func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

// A snapshot sent with SendSnapshot is read from its reader as the
// connection takes it, and a receiver with StoreSnapshot gets the data as
// a stream, then Raft gets the message without it.
func TestSnapshotStreamed(t *testing.T) {
	data := make([]byte, 20<<20+123)
	rand.NewChaCha8([32]byte{2}).Read(data)
	var mu sync.Mutex
	var stored []byte
	ms := ensemble(t, 2, func(cfg *peer.Config) {
		cfg.StoreSnapshot = func(m raftpb.Message, r io.Reader) error {
			b, err := io.ReadAll(r)
			mu.Lock()
			stored = b
			mu.Unlock()
			return err
		}
	})
	a, b := ms[0], ms[1]
	src := &closeCounter{Reader: bytes.NewReader(data)}
	snap := raftpb.Message{Type: raftpb.MsgSnap, From: 1, To: 2, Term: 3, Snapshot: &raftpb.Snapshot{
		Metadata: raftpb.SnapshotMetadata{Index: 77, Term: 3},
	}}
	a.tr.SendSnapshot(snap, src, int64(len(data)))
	waitFor(t, "the snapshot", func() bool { return len(b.rec.snapshots()) == 1 })
	got := b.rec.snapshots()[0]
	if got.Snapshot.Metadata.Index != 77 || len(got.Snapshot.Data) != 0 {
		t.Errorf("message handed to Raft: index %d, %d bytes of data", got.Snapshot.Metadata.Index, len(got.Snapshot.Data))
	}
	mu.Lock()
	if !bytes.Equal(stored, data) {
		t.Errorf("stored %d bytes, sent %d, or they differ", len(stored), len(data))
	}
	mu.Unlock()
	waitFor(t, "SnapshotStatus(2)", func() bool { return len(a.rec.snapshotStatus(2)) == 1 })
	if failed := a.rec.snapshotStatus(2)[0]; failed {
		t.Error("SnapshotStatus(2, failed=true) for a snapshot delivered")
	}
	if n := src.closed.Load(); n != 1 {
		t.Errorf("snapshot reader closed %d times, want 1", n)
	}

	// A store that fails refuses the snapshot: Raft never sees it, and
	// the sender hears of the failure.
	failing := &closeCounter{Reader: bytes.NewReader(data)}
	ms2 := ensemble(t, 2, func(cfg *peer.Config) {
		cfg.StoreSnapshot = func(raftpb.Message, io.Reader) error { return errors.New("disk full") }
	})
	ms2[0].tr.SendSnapshot(snap, failing, int64(len(data)))
	waitFor(t, "SnapshotStatus(2) of the refused snapshot", func() bool { return len(ms2[0].rec.snapshotStatus(2)) == 1 })
	if failed := ms2[0].rec.snapshotStatus(2)[0]; !failed {
		t.Error("SnapshotStatus(2, failed=false) for a snapshot the receiver could not store")
	}
	if n := len(ms2[1].rec.snapshots()); n != 0 {
		t.Errorf("Raft got %d snapshots the receiver could not store", n)
	}
	closeAll(t, append(ms, ms2...)...)
}

// Each server judges the other's description, whichever dialled: a
// refused dialler is told why (Refused), and nothing passes either way
// until the descriptions change.
func TestAdmitJudgesDescriptionsBothWays(t *testing.T) {
	var (
		mu      sync.Mutex
		desc    = map[uint64]string{1: "ensemble x", 2: "ensemble y"}
		refused = make(chan *peer.Refusal, 16)
	)
	ms := startMembers(t, 2, func(cfg *peer.Config) {
		id := cfg.ID
		cfg.Describe = func() []byte {
			mu.Lock()
			defer mu.Unlock()
			return []byte(desc[id])
		}
		cfg.Admit = func(from uint64, d []byte) *peer.Refusal {
			mu.Lock()
			defer mu.Unlock()
			if string(d) != desc[id] {
				return &peer.Refusal{Code: 9, Reason: fmt.Sprintf("server %d is in %s, server %d in %s", from, d, id, desc[id])}
			}
			return nil
		}
		cfg.Refused = func(from uint64, r *peer.Refusal) {
			select {
			case refused <- r:
			default:
			}
		}
	})
	a, b := ms[0], ms[1]
	r := <-refused
	if r.Code != 9 || !errors.Is(r, peer.ErrRefused) {
		t.Fatalf("refusal %+v", r)
	}
	sendMixed(t, a, 2, 0, 4)
	sendMixed(t, b, 1, 0, 4)
	if n := len(a.rec.from(2)) + len(b.rec.from(1)); n != 0 {
		t.Fatalf("%d messages passed between refused servers", n)
	}

	mu.Lock()
	desc[2] = "ensemble x"
	mu.Unlock()
	waitFor(t, "the servers to connect once the descriptions agree", func() bool {
		return peerStats(a.tr, 2).Connected && peerStats(b.tr, 1).Connected
	})
	sendMixed(t, a, 2, 0, 4)
	sendMixed(t, b, 1, 0, 4)
	waitFor(t, "messages between them", func() bool { return len(a.rec.from(2)) == 4 && len(b.rec.from(1)) == 4 })
	closeAll(t, ms...)
}
