package peer

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/client/digestmd5"
	"github.com/collie-io/collie/server/sasl"
)

func testFrames(tb testing.TB) [][]byte {
	msgs := []raftpb.Message{
		{Type: raftpb.MsgHeartbeat, From: 1, To: 2, Term: 7, Commit: 9, Context: []byte("read-1")},
		{Type: raftpb.MsgApp, From: 1, To: 2, Term: 7, LogTerm: 7, Index: 10, Commit: 9,
			Entries: []raftpb.Entry{{Term: 7, Index: 11, Data: []byte("create /a")}, {Term: 7, Index: 12, Type: raftpb.EntryConfChangeV2}}},
		{Type: raftpb.MsgAppResp, From: 2, To: 1, Term: 7, Index: 12, Reject: true, RejectHint: 5},
		{Type: raftpb.MsgVote, From: 3, To: 1, Term: 8, LogTerm: 7, Index: 12},
	}
	var frames [][]byte
	for _, m := range msgs {
		b, err := appendRaftFrame(nil, &m)
		if err != nil {
			tb.Fatal(err)
		}
		frames = append(frames, b)
	}
	return append(frames, append(appendHeader(nil, frameApp, 5), "touch"...))
}

func newTestReader(data []byte, maxFrame int) *frameReader {
	return &frameReader{br: bufio.NewReaderSize(bytes.NewReader(data), 64), timeout: time.Second, maxFrame: maxFrame}
}

func TestFrameRoundTrip(t *testing.T) {
	frames := testFrames(t)
	r := newTestReader(bytes.Join(frames, nil), 1<<10)
	for i, f := range frames {
		kind, payload, err := r.next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if kind != frameKind(f[0]) || !bytes.Equal(payload, f[headerSize:]) {
			t.Fatalf("frame %d: kind %d payload %x, want %x", i, kind, payload, f)
		}
	}
	if _, _, err := r.next(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
	// A frame over the limit is refused from its header.
	if _, _, err := newTestReader(frames[1], len(frames[1])-headerSize-1).next(); !errors.Is(err, errProtocol) {
		t.Fatalf("frame over the limit: %v", err)
	}
	// A frame cut short is an unexpected EOF, not a protocol error.
	if _, _, err := newTestReader(frames[1][:len(frames[1])-1], 1<<10).next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("frame cut short: %v", err)
	}
}

func TestSnapshotFrameRoundTrip(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 3*chunkSize/16+5)
	m := raftpb.Message{Type: raftpb.MsgSnap, From: 1, To: 3, Term: 2, Snapshot: &raftpb.Snapshot{
		Data: data, Metadata: raftpb.SnapshotMetadata{Index: 99, Term: 2, ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}}},
	}}
	h, err := snapshotHeader(&m, int64(len(m.Snapshot.Data)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := newTestReader(append(h, data...), 1<<10).readSnapshot(int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Snapshot.Data, data) || got.Snapshot.Metadata.Index != 99 || len(got.Snapshot.Metadata.ConfState.Learners) != 1 {
		t.Fatalf("snapshot read back differs: %v", got.Snapshot.Metadata)
	}
	if len(m.Snapshot.Data) != len(data) {
		t.Fatal("encoding the header changed the message")
	}
	if _, err := newTestReader(append(h, data...), 1<<10).readSnapshot(int64(len(data)) - 1); !errors.Is(err, errProtocol) {
		t.Fatalf("snapshot over the limit: %v", err)
	}
}

func TestHandshakeRoundTrip(t *testing.T) {
	h := hello{version: wireVersion, kind: kindSnapshot, flags: 0xdeadbeef, from: 3, to: 1 << 60}
	b := h.append(nil)
	if len(b) != helloSize {
		t.Fatalf("hello of %d bytes", len(b))
	}
	got, err := parseHello(b)
	if err != nil || got != h {
		t.Fatalf("parseHello = %+v, %v; want %+v", got, err, h)
	}
	for st := range status(9) {
		r := reply{version: wireVersion, status: st}
		got, err := parseReply(r.append(nil))
		if err != nil || got != r {
			t.Fatalf("parseReply = %+v, %v; want %+v", got, err, r)
		}
		if err := got.status.err(); (err == nil) != (st == statusAccepted) {
			t.Fatalf("status %d: err %v", st, err)
		}
	}
}

func TestBackoff(t *testing.T) {
	var b backoff
	const maxWait = time.Second
	for i := range 100 {
		d := b.next(maxWait)
		if d < minBackoff/2 || d > maxWait {
			t.Fatalf("wait %d is %v, outside [%v, %v]", i, d, minBackoff/2, maxWait)
		}
	}
	b.reset()
	if d := b.next(maxWait); d > minBackoff {
		t.Fatalf("first wait after reset is %v", d)
	}
}

// FuzzReadFrame reads stream frames from arbitrary bytes; every raft
// message that decodes must encode and decode to the same message.
func FuzzReadFrame(f *testing.F) {
	frames := testFrames(f)
	for _, fr := range frames {
		f.Add(fr)
	}
	f.Add(bytes.Join(frames, nil))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{1, 0, 0, 0, 3, 0x08, 0x80, 0x80})
	f.Add([]byte{9, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newTestReader(data, 1<<12)
		for {
			kind, payload, err := r.next()
			if err != nil {
				return
			}
			if kind != frameRaft {
				continue
			}
			m, err := decodeRaft(payload)
			if err != nil {
				continue
			}
			enc, err := appendRaftFrame(nil, &m)
			if err != nil {
				t.Fatalf("decoded message does not encode: %v", err)
			}
			_, payload2, err := newTestReader(enc, len(enc)).next()
			if err != nil {
				t.Fatalf("encoded frame does not read: %v", err)
			}
			m2, err := decodeRaft(payload2)
			if err != nil {
				t.Fatalf("re-encoded message does not decode: %v", err)
			}
			a, _ := m.Marshal()
			b, _ := m2.Marshal()
			if !bytes.Equal(a, b) {
				t.Fatalf("message changed in a round trip:\n%v\n%v", m, m2)
			}
		}
	})
}

// FuzzReadSnapshot reads a snapshot frame from arbitrary bytes.
func FuzzReadSnapshot(f *testing.F) {
	m := raftpb.Message{Type: raftpb.MsgSnap, From: 1, To: 2, Snapshot: &raftpb.Snapshot{Data: []byte("state"),
		Metadata: raftpb.SnapshotMetadata{Index: 5, Term: 1}}}
	h, err := snapshotHeader(&m, int64(len(m.Snapshot.Data)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append(h, "state"...))
	f.Add(h)
	f.Add(testFrames(f)[0])
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := newTestReader(data, 1<<12).readSnapshot(1 << 12)
		if err != nil {
			return
		}
		if m.Type != raftpb.MsgSnap || m.Snapshot == nil || len(m.Snapshot.Data) > 1<<12 {
			t.Fatalf("accepted %v", m)
		}
	})
}

// FuzzHandshake decodes hellos and replies; what decodes encodes back to
// the same bytes.
func FuzzHandshake(f *testing.F) {
	f.Add(hello{version: wireVersion, kind: kindStream, flags: 1, from: 2, to: 3}.append(nil))
	f.Add(reply{version: wireVersion, status: statusWrongCluster}.append(nil))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: collie\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= helloSize {
			if h, err := parseHello(data[:helloSize]); err == nil && !bytes.Equal(h.append(nil), data[:helloSize]) {
				t.Fatalf("hello %+v encodes to %x, decoded from %x", h, h.append(nil), data[:helloSize])
			}
		}
		if len(data) >= replySize {
			if r, err := parseReply(data[:replySize]); err == nil && !bytes.Equal(r.append(nil), data[:replySize]) {
				t.Fatalf("reply %+v encodes to %x, decoded from %x", r, r.append(nil), data[:replySize])
			}
		}
	})
}

// FuzzDialAuth hands arbitrary receiver answers to a dialler's exchange:
// nothing may panic, and the dialler is done only when the receiver
// proved it knows the password, which these bytes cannot.
func FuzzDialAuth(f *testing.F) {
	challenge := `realm="zk-quorum-sasl-md5",nonce="n",charset=utf-8,algorithm=md5-sess`
	f.Add(appendBlock([]byte{authContinue}, []byte(challenge)))
	f.Add(append(appendBlock([]byte{authContinue}, []byte(challenge)), appendBlock([]byte{authDone}, []byte("rspauth=0"))...))
	f.Add(appendBlock([]byte{authDone}, []byte(challenge)))
	f.Add(appendBlock([]byte{authFailed}, []byte("no")))
	f.Add([]byte{9, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, answers []byte) {
		ex := digestmd5.New("test", "secret", digestmd5.WithService(sasl.QuorumService.Protocol, sasl.QuorumService.ServerName))
		rw := struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(answers), io.Discard}
		if err := dialAuth(rw, ex, 2); err == nil {
			t.Fatalf("authenticated by %q", answers)
		}
	})
}
