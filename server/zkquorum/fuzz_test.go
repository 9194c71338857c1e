package zkquorum

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/collie-io/collie/proto"
)

func FuzzReadPacket(f *testing.F) {
	f.Add(appendPacket(nil, Packet{Type: PacketInform, Zxid: 0x100000001, Data: txnData(0x100000001, 1, 1, proto.OpCreate, []byte("x"))}))
	f.Add(appendPacket(nil, Packet{Type: PacketRequest, Zxid: -1, Data: []byte{1}, AuthInfo: []proto.ID{{Scheme: "ip", ID: "127.0.0.1"}}}))
	f.Add(appendPacket(nil, Packet{Type: PacketPing, AuthInfo: []proto.ID{}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		j := &juteReader{r: bufio.NewReader(bytes.NewReader(b)), max: 1 << 16}
		p, err := readPacket(j)
		if err != nil {
			return
		}
		again, err := readPacket(&juteReader{r: bufio.NewReader(bytes.NewReader(appendPacket(nil, p))), max: 1 << 16})
		if err != nil {
			t.Fatalf("re-reading %+v: %v", p, err)
		}
		if !reflect.DeepEqual(p, again) {
			t.Fatalf("round trip: %+v became %+v", p, again)
		}
	})
}

func FuzzScanSnapshot(f *testing.F) {
	f.Add(snapshotPayload("/a", "/a/b"))
	f.Add(snapshotPayload())
	f.Fuzz(func(t *testing.T, b []byte) {
		var out bytes.Buffer
		if err := scanSnapshot(bufio.NewReader(bytes.NewReader(b)), &out, 1<<16); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		// A payload that scans is a prefix of the input, copied unchanged.
		if !bytes.HasPrefix(b, out.Bytes()) {
			t.Fatalf("scanned %d bytes that are not the input's prefix", out.Len())
		}
	})
}

// FuzzLearner runs a learner connection, from the handshake on, over bytes
// a leader might send, and requires that it ends in an error and no panic.
func FuzzLearner(f *testing.F) {
	var sync []byte
	sync = appendPacket(sync, Packet{Type: PacketLeaderInfo, Zxid: 0x100000000, Data: []byte{0, 1, 0, 0}})
	withDiff := appendPacket(sync, Packet{Type: PacketDiff, Zxid: 0x100000000})
	withDiff = appendPacket(withDiff, Packet{Type: PacketProposal, Zxid: 0x100000001, Data: txnData(0x100000001, 1, 1, proto.OpCreate, nil)})
	withDiff = appendPacket(withDiff, Packet{Type: PacketCommit, Zxid: 0x100000001})
	withDiff = appendPacket(withDiff, Packet{Type: PacketNewLeader, Zxid: 0x100000000})
	withDiff = appendPacket(withDiff, Packet{Type: PacketUpToDate, Zxid: -1})
	withDiff = appendPacket(withDiff, Packet{Type: PacketPing, Zxid: 0x100000001})
	withDiff = appendPacket(withDiff, Packet{Type: PacketInformAndActivate, Zxid: 0x100000002, Data: append(make([]byte, 8), txnData(0x100000002, 1, 2, proto.OpReconfig, nil)...)})
	withDiff = appendPacket(withDiff, Packet{Type: PacketRevalidate, Data: make([]byte, 9)})
	withDiff = appendPacket(withDiff, Packet{Type: PacketSync})
	f.Add(withDiff)
	withSnap := appendPacket(sync, Packet{Type: PacketSnap, Zxid: 0x100000000})
	withSnap = appendString(append(withSnap, snapshotPayload("/a")...), snapshotSignature)
	f.Add(withSnap)
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg := Config{TickTime: time.Second, InitLimit: 1, SyncLimit: 1, MaxPacket: 1 << 16}
		c := newConn(cfg, "fuzz", &streamConn{r: bytes.NewReader(b)}, 0, newTouchTable())
		if err := c.handshake(0, epochs{}); err != nil {
			return
		}
		for {
			ev, err := c.next()
			if err != nil {
				return
			}
			if ev.Kind == EventSnapshot {
				_, _ = io.Copy(io.Discard, ev.Snapshot)
			}
		}
	})
}

// streamConn is a net.Conn that reads a fixed stream and swallows writes.
type streamConn struct {
	net.Conn
	r io.Reader
}

func (s *streamConn) Read(p []byte) (int, error)       { return s.r.Read(p) }
func (s *streamConn) Write(p []byte) (int, error)      { return len(p), nil }
func (s *streamConn) Close() error                     { return nil }
func (s *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (s *streamConn) SetWriteDeadline(time.Time) error { return nil }
