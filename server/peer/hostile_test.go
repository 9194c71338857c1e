package peer_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/collie-io/collie/server/peer"
	"go.etcd.io/raft/v3/raftpb"
)

// The bytes here are written from the wire format of the package doc, not
// with the package's encoders, so that the doc is checked too.

// helloBytes is a hello of this version's layout, with desc after it.
func helloBytes(version uint16, kind byte, from, to uint64, desc string) []byte {
	b := []byte("CLPR")
	b = binary.BigEndian.AppendUint16(b, version)
	b = append(b, kind, 0)
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint64(b, from)
	b = binary.BigEndian.AppendUint64(b, to)
	b = binary.BigEndian.AppendUint16(b, uint16(len(desc)))
	return append(b, desc...)
}

// reply is the receiver's answer with status, its description "a", and
// no refusal; refusedReply the answer of a refusal.
func reply(status byte) []byte {
	return append([]byte("CLPR\x00\x02"), status, 0, 0, 1, 'a', 0, 0, 0)
}

func refusedReply(code byte, reason string) []byte {
	b := append([]byte("CLPR\x00\x02"), 6, 0, 0, 1, 'a', code)
	b = binary.BigEndian.AppendUint16(b, uint16(len(reason)))
	return append(b, reason...)
}

func frame(kind byte, payload []byte) []byte {
	b := []byte{kind}
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

func raftFrame(t *testing.T, m raftpb.Message) []byte {
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return frame(1, b)
}

func TestHostileInput(t *testing.T) {
	const hostile = 3 // a configured peer whose server is not running
	var ms []*member
	ms = ensemble(t, 2, func(cfg *peer.Config) {
		cfg.HandshakeTimeout = 300 * time.Millisecond
		cfg.IOTimeout = 300 * time.Millisecond
		if cfg.ID == 1 {
			cfg.Peers = map[uint64]string{hostile: deadAddr(t)}
			cfg.Describe = func() []byte { return []byte("a") }
			cfg.Admit = func(_ uint64, desc []byte) *peer.Refusal {
				if string(desc) == "refuse me" {
					return &peer.Refusal{Code: 7, Reason: "refused as asked"}
				}
				return nil
			}
		}
	})
	a, b := ms[0], ms[1]
	addr := a.tr.Addr().String()
	hb := raftpb.Message{Type: raftpb.MsgHeartbeat, From: hostile, To: 1, Term: 1}
	snapMsg, err := (&raftpb.Message{Type: raftpb.MsgSnap, From: hostile, To: 1, Snapshot: &raftpb.Snapshot{}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// Clipped: every case appends to it.
	accepted := slices.Clip(helloBytes(2, 1, hostile, 1, ""))

	cases := []struct {
		name string
		// send is written at once; reply is the answer expected before the
		// connection closes (nil: none).
		send  []byte
		reply []byte
		// protocol says the connection breaks the wire format, counted in
		// Stats.Rejected (a stall is a lost connection).
		protocol bool
		// delivered is how many raft messages from the hostile peer reach
		// the handler before the connection is closed.
		delivered int
	}{
		{name: "garbage", send: []byte("GET / HTTP/1.1\r\nHost: collie\r\n\r\n"), protocol: true},
		{name: "stall mid-handshake", send: helloBytes(2, 1, hostile, 1, "")[:10], protocol: true},
		{name: "stall mid-description", send: helloBytes(2, 1, hostile, 1, "abc")[:34], protocol: true},
		{name: "oversized description", send: append(helloBytes(2, 1, hostile, 1, "")[:32], 0xff, 0xff), protocol: true},
		{name: "refused description", send: helloBytes(2, 1, hostile, 1, "refuse me"), reply: refusedReply(7, "refused as asked"), protocol: true},
		{name: "wrong receiver", send: helloBytes(2, 1, hostile, 2, ""), reply: reply(3), protocol: true},
		{name: "unknown sender", send: helloBytes(2, 1, 99, 1, ""), reply: reply(4), protocol: true},
		{name: "bad version", send: helloBytes(9, 1, hostile, 1, ""), reply: []byte("CLPR\x00\x02\x01\x00"), protocol: true},
		{name: "first version", send: helloBytes(1, 1, hostile, 1, "")[:32], reply: []byte("CLPR\x00\x02\x01\x00"), protocol: true},
		{name: "bad kind", send: helloBytes(2, 7, hostile, 1, ""), reply: reply(5), protocol: true},
		{name: "absurd length", send: append(accepted, 1, 0xff, 0xff, 0xff, 0xff), reply: reply(0), protocol: true},
		{name: "unknown frame kind", send: append(accepted, frame(9, []byte("x"))...), reply: reply(0), protocol: true},
		{name: "undecodable message", send: append(accepted, frame(1, []byte{0xff, 0xff, 0xff, 0xff, 0x0f})...), reply: reply(0), protocol: true},
		{
			name: "message then garbage", reply: reply(0), protocol: true, delivered: 1,
			send: append(append(append([]byte{}, accepted...), raftFrame(t, hb)...), frame(1, []byte{0x0a})...),
		},
		{
			name: "impersonated sender", reply: reply(0), protocol: true,
			send: append(append([]byte{}, accepted...), raftFrame(t, raftpb.Message{Type: raftpb.MsgHeartbeat, From: 2, To: 1})...),
		},
		{name: "snapshot on a stream", send: append(accepted, raftFrame(t, raftpb.Message{Type: raftpb.MsgSnap, From: hostile, To: 1, Snapshot: &raftpb.Snapshot{}})...), reply: reply(0), protocol: true},
		{
			name: "absurd snapshot length", reply: reply(0), protocol: true,
			send: binary.BigEndian.AppendUint64(append(helloBytes(2, 2, hostile, 1, ""), frame(3, snapMsg)...), 1<<62),
		},
		{name: "stall mid-frame", send: append(accepted, frame(1, make([]byte, 100))[:20]...), reply: reply(0)},
		{name: "stall mid-snapshot", send: append(helloBytes(2, 2, hostile, 1, ""), frame(3, snapMsg)[:7]...), reply: reply(0)},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rejected := a.tr.Stats().Rejected
			before := len(a.rec.from(hostile))
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(testTimeout))
			if _, err := c.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(c)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("connection still open after %v", testTimeout)
			}
			if string(got) != string(tc.reply) {
				t.Errorf("answer %q, want %q", got, tc.reply)
			}
			if tc.protocol {
				waitFor(t, "the connection counted as rejected", func() bool { return a.tr.Stats().Rejected > rejected })
			}
			if n := len(a.rec.from(hostile)) - before; n != tc.delivered {
				t.Errorf("%d messages delivered, want %d", n, tc.delivered)
			}
			// The transport goes on serving its peers, both ways.
			sendMixed(t, b, 1, i*2, 2)
			sendMixed(t, a, 2, i*2, 2)
			waitFor(t, "messages between the peers", func() bool {
				return len(a.rec.from(2)) == 2*(i+1) && len(b.rec.from(1)) == 2*(i+1)
			})
		})
	}
	checkMixed(t, a.rec.from(2), 2, 1, 0)
	checkMixed(t, b.rec.from(1), 1, 2, 0)
	closeAll(t, ms...)
}
