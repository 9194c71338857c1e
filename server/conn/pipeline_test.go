package conn

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/proto"
)

// modelBackend is a log and its apply point, driven by the test: Write
// appends an entry, applyOne applies the next, and the "state" a read sees
// is how many entries are applied, which the read's reply carries as its
// zxid. Every applied entry also queues a watch event on the connection,
// its path the entry's index, as a change that fires a watch of the
// session does.
type modelBackend struct {
	// mu is the state lock: held while an entry is applied, while a sync
	// is answered and during View.
	mu      sync.Mutex
	c       *Conn
	log     []func(Reply, Reader) // nil for another session's entry
	applied int
	syncs   []modelSync
}

type modelSync struct {
	index int
	done  func(Reader, error)
}

// modelReader reads the model's state; handed out with mu held.
type modelReader struct{ b *modelBackend }

func (r modelReader) Read(*Conn, proto.OpCode, proto.Record, []proto.ID) Reply {
	return Reply{Zxid: int64(r.b.applied)}
}

func (b *modelBackend) LastZxid() int64 { return 0 }
func (b *modelBackend) OpenSession(_ context.Context, c *Conn, _ time.Duration, _ bool) (Session, error) {
	b.mu.Lock()
	b.c = c
	b.mu.Unlock()
	return Session{ID: 1, Passwd: make([]byte, 16), Timeout: 4 * time.Second}, nil
}
func (b *modelBackend) ResumeSession(context.Context, *Conn, int64, []byte, time.Duration) (time.Duration, bool) {
	return 0, false
}
func (b *modelBackend) Write(_ *Conn, _ proto.OpCode, _ []byte, _ []proto.ID, done func(Reply, Reader)) {
	b.mu.Lock()
	b.log = append(b.log, done)
	b.mu.Unlock()
}
func (b *modelBackend) Sync(_ *Conn, done func(Reader, error)) {
	b.mu.Lock()
	b.syncs = append(b.syncs, modelSync{index: len(b.log), done: done})
	b.mu.Unlock()
}
func (b *modelBackend) View(f func(Reader)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(modelReader{b})
}
func (b *modelBackend) Authenticate(*Conn, string, []byte) ([]proto.ID, bool)  { return nil, true }
func (b *modelBackend) SASL(*Conn) SASLServer                                  { return nil }
func (b *modelBackend) Touch(int64)                                            {}
func (b *modelBackend) Detach(*Conn)                                           {}
func (b *modelBackend) FourLetter(string, func() (int64, bool)) (string, bool) { return "", false }

// other appends another session's entry.
func (b *modelBackend) other() {
	b.mu.Lock()
	b.log = append(b.log, nil)
	b.mu.Unlock()
}

// logLen is how many entries the log holds.
func (b *modelBackend) logLen() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.log)
}

// applyOne applies the next entry, if any: its event, then its reply (and
// whatever the connection answers there); then the syncs whose index it
// reaches. It reports whether there was an entry to apply.
func (b *modelBackend) applyOne() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.applied == len(b.log) {
		b.answerSyncs()
		return false
	}
	done := b.log[b.applied]
	b.applied++
	if b.c != nil {
		b.c.Notify(proto.WatcherEvent{Type: proto.EventNodeDataChanged, State: proto.StateSyncConnected, Path: "/" + strconv.Itoa(b.applied)})
	}
	if done != nil {
		done(Reply{Zxid: int64(b.applied)}, modelReader{b})
	}
	b.answerSyncs()
	return true
}

// answerSyncs answers the syncs whose index is applied. Called with mu
// held.
func (b *modelBackend) answerSyncs() {
	kept := b.syncs[:0]
	for _, s := range b.syncs {
		if s.index <= b.applied {
			s.done(modelReader{b}, nil)
		} else {
			kept = append(kept, s)
		}
	}
	b.syncs = kept
}

// modelRequest is what the client sent.
type modelRequest struct {
	xid  int32
	kind kind
	// floor is the log's length when the request was sent: a sync, or a
	// linearizable read, must see at least that much.
	floor int
}

// frameKind is a frame the client received: a reply or an event.
type received struct {
	xid  int32
	zxid int64
	path string // events only
}

// TestPipelineOrderAgainstModel pipelines random requests on one session
// while the log applies in random steps and other sessions' entries
// interleave, and checks every reply and event against the session's
// order: a read shows every earlier write of the session and no later
// one, a sync (and a linearizable read) shows at least what was committed
// when it was sent, replies leave in request order, and the event of the
// entry at index k leaves after every reply that shows less than k and
// before every reply that shows k or more.
func TestPipelineOrderAgainstModel(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	for seed := range uint64(seeds) {
		linearizable := seed%2 == 1
		t.Run(fmt.Sprintf("seed=%d,linearizable=%v", seed, linearizable), func(t *testing.T) {
			runModel(t, seed, linearizable)
		})
	}
}

func runModel(t *testing.T, seed uint64, linearizable bool) {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := &modelBackend{}
	client, server := net.Pipe()
	served := make(chan struct{})
	go func() {
		Serve(context.Background(), server, b, Config{MaxBuffer: 4096, HandshakeTimeout: 5 * time.Second, LinearizableReads: linearizable, Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))})
		close(served)
	}()
	defer func() {
		client.Close()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Error("connection did not end")
		}
	}()

	if _, err := client.Write(connectFrame()); err != nil {
		t.Fatal(err)
	}
	frames := make(chan []byte, 1024)
	go func() {
		defer close(frames)
		for {
			var n [4]byte
			if _, err := io.ReadFull(client, n[:]); err != nil {
				return
			}
			f := make([]byte, binary.BigEndian.Uint32(n[:]))
			if _, err := io.ReadFull(client, f); err != nil {
				return
			}
			frames <- f
		}
	}()
	<-frames // the connect response

	n := 5 + rng.IntN(60)
	var sent []modelRequest
	for i := range n {
		xid := int32(i + 1)
		r := modelRequest{xid: xid, floor: b.logLen()}
		var frame []byte
		switch rng.IntN(8) {
		case 0, 1, 2:
			r.kind = write
			frame = request(xid, proto.OpSetData, &proto.SetDataRequest{Path: "/a", Version: -1})
		case 3, 4:
			r.kind = local
			if linearizable {
				r.kind = indexed
			}
			frame = request(xid, proto.OpGetData, &proto.GetDataRequest{Path: "/a"})
		case 5:
			r.kind = indexed
			frame = request(xid, proto.OpSync, &proto.SyncRequest{Path: "/a"})
		case 6:
			r.kind = local
			frame = request(xid, proto.OpPing, nil)
		case 7:
			r.kind = answered
			frame = request(xid, proto.OpCode(99), nil)
		}
		sent = append(sent, r)
		if _, err := client.Write(frame); err != nil {
			t.Fatal(err)
		}
		// The log moves on while the connection takes the request in:
		// other sessions' entries arrive, entries apply.
		for range rng.IntN(4) {
			if rng.IntN(3) == 0 {
				b.other()
			} else {
				b.applyOne()
			}
		}
	}

	var got []received
	replies := 0
	timeout := time.After(20 * time.Second)
	for replies < n {
		b.applyOne()
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatalf("connection ended after %d of %d replies", replies, n)
			}
			var h proto.ReplyHeader
			d := proto.NewDecoder(f)
			h.Decode(d)
			r := received{xid: h.Xid, zxid: h.Zxid}
			if h.Xid == proto.XidNotification {
				var ev proto.WatcherEvent
				ev.Decode(d)
				r.path = ev.Path
			} else {
				replies++
			}
			got = append(got, r)
		case <-time.After(time.Millisecond):
			// Nothing yet: apply more.
		case <-timeout:
			t.Fatalf("only %d of %d replies", replies, n)
		}
	}
	checkModel(t, sent, got)
}

func checkModel(t *testing.T, sent []modelRequest, got []received) {
	t.Helper()
	var replies []received
	for _, r := range got {
		if r.xid != proto.XidNotification {
			replies = append(replies, r)
		}
	}
	for i, r := range replies {
		if r.xid != sent[i].xid {
			t.Fatalf("reply %d has xid %d, want %d", i, r.xid, sent[i].xid)
		}
	}
	for i, r := range sent {
		shows := replies[i].zxid
		switch r.kind {
		case local, indexed:
			for j, w := range sent {
				if w.kind != write {
					continue
				}
				if j < i && shows < replies[j].zxid {
					t.Fatalf("xid %d shows %d entries, not the session's earlier write at %d", r.xid, shows, replies[j].zxid)
				}
				if j > i && shows >= replies[j].zxid {
					t.Fatalf("xid %d shows %d entries, with the session's later write at %d", r.xid, shows, replies[j].zxid)
				}
			}
			if r.kind == indexed && shows < int64(r.floor) {
				t.Fatalf("xid %d (sync or linearizable read) shows %d entries; %d were in the log when it was sent", r.xid, shows, r.floor)
			}
		}
	}
	// Each event against every reply that carries a state.
	early := make(map[int32]bool)
	for _, r := range sent {
		early[r.xid] = r.kind == answered
	}
	for i, ev := range got {
		if ev.xid != proto.XidNotification {
			continue
		}
		k, err := strconv.ParseInt(ev.path[1:], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		for j, r := range got {
			if r.xid == proto.XidNotification || early[r.xid] {
				continue
			}
			if j < i && r.zxid >= k {
				t.Fatalf("the reply to xid %d shows %d entries but left before the event of entry %d", r.xid, r.zxid, k)
			}
			if j > i && r.zxid < k {
				t.Fatalf("the reply to xid %d shows %d entries but left after the event of entry %d", r.xid, r.zxid, k)
			}
		}
	}
}
