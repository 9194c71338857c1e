package replication

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// sizedStorage is a memStorage whose snapshot readers tell their size, as
// the disk's do.
type sizedStorage struct{ *memStorage }

type sizedReader struct{ *bytes.Reader }

func (sizedReader) Close() error { return nil }

func (s sizedStorage) OpenSnapshot(meta raftpb.SnapshotMetadata) (io.ReadCloser, error) {
	r, err := s.memStorage.OpenSnapshot(meta)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(r)
	return sizedReader{bytes.NewReader(b)}, err
}

func takeSnapshot(t *testing.T, n *Node) (raftpb.SnapshotMetadata, uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	meta, r, err := n.TakeSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil || int64(len(b)) != r.Size() || len(b) != 8 {
		t.Fatalf("snapshot data %x (size %d): %v", b, r.Size(), err)
	}
	return meta, binary.BigEndian.Uint64(b)
}

// TestTakeSnapshot: a snapshot taken on demand holds everything applied
// when it was asked for; with nothing applied since, the newest one is
// returned; one asked for while another is written waits for a newer one.
func TestTakeSnapshot(t *testing.T) {
	st, fsm := &memStorage{}, &sumFSM{}
	n, err := Start(Config{ID: 1, Voters: []uint64{1}, TickInterval: 10 * time.Millisecond,
		ElectionTicks: 10, HeartbeatTicks: 1, Storage: sizedStorage{st}, FSM: fsm})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := n.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	for v := uint64(1); v <= 100; v++ {
		propose(n, v)
	}
	waitFor(t, "100 entries applied", func() bool { _, c := fsm.state(); return c == 100 })
	last := fsm.lastIndex()
	meta, sum := takeSnapshot(t, n)
	if meta.Index != last || sum != 5050 || st.snapIndex() != last {
		t.Fatalf("snapshot at %d holding %d (storage's newest %d); applied to %d, sum 5050", meta.Index, sum, st.snapIndex(), last)
	}
	if again, _ := takeSnapshot(t, n); again.Index != meta.Index || again.Term != meta.Term {
		t.Fatalf("with nothing applied since, a new snapshot %+v, not %+v", again, meta)
	}

	// A snapshot held in its writing: the ask for a newer state waits for
	// it, then gets one that holds the newer entries.
	fsm.mu.Lock()
	fsm.holdSnapshot = make(chan struct{})
	fsm.mu.Unlock()
	propose(n, 1000)
	waitFor(t, "entry 1000 applied", func() bool { s, _ := fsm.state(); return s == 6050 })
	n.wantSnapshot.Store(true)
	n.applyq.push(applyTask{})
	waitFor(t, "a snapshot being written", n.snapping.Load)
	propose(n, 2000)
	waitFor(t, "entry 2000 applied", func() bool { s, _ := fsm.state(); return s == 8050 })
	got := make(chan error, 1)
	var data []byte
	go func() {
		_, r, err := n.TakeSnapshot(ctx)
		if err == nil {
			data, err = io.ReadAll(r)
			r.Close()
		}
		got <- err
	}()
	waitFor(t, "the ask to wait for a snapshot", func() bool {
		n.snapAsks.mu.Lock()
		defer n.snapAsks.mu.Unlock()
		return len(n.snapAsks.waiting) == 1
	})
	fsm.mu.Lock()
	close(fsm.holdSnapshot)
	fsm.holdSnapshot = nil
	fsm.mu.Unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if sum := binary.BigEndian.Uint64(data); sum != 8050 {
		t.Fatalf("snapshot asked for after entry 2000 holds %d, want 8050", sum)
	}
}
