package zkquorum

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-io/collie/proto"
)

// snapshotPayload returns a SNAP payload of one session and the nodes
// given as path → data, after the root, in the layout ZooKeeper sends.
func snapshotPayload(nodes ...string) []byte {
	e := proto.NewEncoder(nil)
	e.Int(1) // sessions
	e.Long(0x400000000001)
	e.Int(30000)
	e.Int(1) // ACL cache
	e.Long(1)
	e.Int(1)
	e.Int(proto.PermAll)
	e.String("world")
	e.String("anyone")
	node := func(path string, data []byte, acl int64) {
		e.String(path)
		e.Buffer(data)
		e.Long(acl)
		// StatPersisted, zero: czxid, mzxid, ctime, mtime, version,
		// cversion, aversion, ephemeralOwner, pzxid.
		for range 4 {
			e.Long(0)
		}
		for range 3 {
			e.Int(0)
		}
		e.Long(0)
		e.Long(0)
	}
	node("", nil, -1)
	for _, path := range nodes {
		node(path, []byte("data of "+path), 1)
	}
	e.String("/")
	return e.Bytes()
}

func appendString(b []byte, s string) []byte {
	e := proto.NewEncoder(b)
	e.String(s)
	return e.Bytes()
}

func TestSnapshotSync(t *testing.T) {
	payload := snapshotPayload("/a", "/a/b", "/c")
	leader := startFakeLeader(t, func(l *leaderConn) {
		l.handshake(1)
		l.send(Packet{Type: PacketSnap, Zxid: makeZxid(1, 3)})
		l.raw(appendString(payload, snapshotSignature))
		l.send(Packet{Type: PacketInform, Zxid: makeZxid(1, 4), Data: txnData(makeZxid(1, 4), 1, 1, proto.OpCreate, nil)})
		l.syncDone(1)
		l.waitClosed()
	})
	for _, readAll := range []bool{true, false} {
		c, err := Dial(t.Context(), testConfig(t), leader.addr(), 0)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := c.Next(t.Context())
		if err != nil || ev.Kind != EventSnapshot || ev.Zxid != makeZxid(1, 3) {
			t.Fatalf("Next = %v %#x, %v; want a snapshot at %#x", ev.Kind, ev.Zxid, err, makeZxid(1, 3))
		}
		if _, ok := c.Applied(); ok {
			t.Error("Applied() during the snapshot says ok")
		}
		if readAll {
			got, err := io.ReadAll(ev.Snapshot)
			if err != nil || !bytes.Equal(got, payload) {
				t.Errorf("snapshot reader = %d bytes, %v; want the %d bytes of the payload", len(got), err, len(payload))
			}
		} else if _, err := io.ReadFull(ev.Snapshot, make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
		// Next skips what was not read and goes on after the signature.
		events, err := nextEvents(t.Context(), c, EventUpToDate)
		if err != nil || kinds(events) != "txn uptodate" {
			t.Errorf("after the snapshot (read whole: %v): %s, %v", readAll, kinds(events), err)
		}
		if zxid, ok := c.Applied(); !ok || zxid != makeZxid(1, 4) {
			t.Errorf("Applied() = %#x, %v; want %#x", zxid, ok, makeZxid(1, 4))
		}
		c.Close()
	}
}

// TestHostileLeader feeds the learner what a broken or hostile leader might
// send: each must end in a clear error naming the leader and the step,
// quickly and without a panic or a huge allocation.
func TestHostileLeader(t *testing.T) {
	huge := binary.BigEndian.AppendUint32(nil, 0x7fffffff)
	header := func(typ PacketType, zxid int64) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(typ))
		return binary.BigEndian.AppendUint64(b, uint64(zxid))
	}
	z := func(n int64) int64 { return makeZxid(1, n) }
	snap := func(payload []byte) []byte {
		return append(appendPacket(nil, Packet{Type: PacketSnap, Zxid: z(1)}), payload...)
	}
	cases := []struct {
		name string
		// handshake says whether the fake completes the handshake before
		// sending junk; when false, junk answers OBSERVERINFO.
		handshake bool
		junk      []byte
		step      string // in the error
		malformed bool   // the error wraps ErrMalformed
	}{
		{"garbage instead of LEADERINFO", false, []byte("HTTP/1.1 400 Bad Request\r\n\r\n"), "read LEADERINFO", true},
		{"LEADERINFO data of 2 GiB", false, append(header(PacketLeaderInfo, z(0)), huge...), "read LEADERINFO", true},
		{"negative data length", false, append(header(PacketLeaderInfo, z(0)), 0xff, 0xff, 0xff, 0xf0), "read LEADERINFO", true},
		{"LEADERINFO without version", false, appendPacket(nil, Packet{Type: PacketLeaderInfo, Zxid: z(0)}), "read LEADERINFO", true},
		{"NEWLEADER instead of LEADERINFO", false, appendPacket(nil, Packet{Type: PacketNewLeader, Zxid: z(0)}), "read LEADERINFO", true},
		{"an old protocol", false, appendPacket(nil, Packet{Type: PacketLeaderInfo, Zxid: z(0), Data: []byte{0, 0, 0, 1}}), "read LEADERINFO", false},
		{"a billion authinfo entries", true, append(append(header(PacketDiff, z(0)), 0xff, 0xff, 0xff, 0xff), 0x40, 0, 0, 0), "read DIFF, SNAP or TRUNC", true},
		{"cut in the middle of a packet", true, header(PacketDiff, z(0))[:7], "read DIFF, SNAP or TRUNC", true},
		{"INFORM before DIFF", true, appendPacket(nil, Packet{Type: PacketInform, Zxid: z(1), Data: txnData(z(1), 1, 1, proto.OpCreate, nil)}), "sync", true},
		{"txn shorter than its header", true, append(appendPacket(nil, Packet{Type: PacketDiff}), appendPacket(nil, Packet{Type: PacketInform, Zxid: z(1), Data: []byte{1, 2, 3}})...), "sync INFORM", true},
		{"txn for another zxid", true, append(appendPacket(nil, Packet{Type: PacketDiff}), appendPacket(nil, Packet{Type: PacketInform, Zxid: z(1), Data: txnData(z(2), 1, 1, proto.OpCreate, nil)})...), "sync INFORM", true},
		{"the same txn twice", true, bytes.Join([][]byte{
			appendPacket(nil, Packet{Type: PacketDiff}),
			appendPacket(nil, Packet{Type: PacketInform, Zxid: z(1), Data: txnData(z(1), 1, 1, proto.OpCreate, nil)}),
			appendPacket(nil, Packet{Type: PacketInform, Zxid: z(1), Data: txnData(z(1), 1, 1, proto.OpCreate, nil)}),
		}, nil), "sync INFORM", true},
		{"proposals that are never committed", true, func() []byte {
			b := appendPacket(nil, Packet{Type: PacketDiff})
			for i := range int64(maxUncommitted + 1) {
				b = appendPacket(b, Packet{Type: PacketProposal, Zxid: z(i + 1), Data: txnData(z(i+1), 1, 1, proto.OpCreate, nil)})
			}
			return b
		}(), "sync PROPOSAL", true},
		{"COMMIT of nothing proposed", true, append(appendPacket(nil, Packet{Type: PacketDiff}), appendPacket(nil, Packet{Type: PacketCommit, Zxid: z(1)})...), "sync COMMIT", true},
		{"snapshot path of 2 GiB", true, snap(append(make([]byte, 8), huge...)), "read SNAP payload", true},
		{"snapshot with a negative session count", true, snap([]byte{0xff, 0xff, 0xff, 0xfe}), "read SNAP payload", true},
		{"snapshot cut short", true, snap(snapshotPayload("/a")[:40]), "read SNAP payload", true},
		{"snapshot without signature", true, snap(appendString(snapshotPayload("/a"), "NotBen")), "read SNAP signature", true},
		{"REVALIDATE answer too short", true, bytes.Join([][]byte{
			appendPacket(nil, Packet{Type: PacketDiff}),
			appendPacket(nil, Packet{Type: PacketUpToDate}),
			appendPacket(nil, Packet{Type: PacketRevalidate, Data: []byte{1}}),
		}, nil), "REVALIDATE", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			leader := startFakeLeader(t, func(l *leaderConn) {
				if tc.handshake {
					l.handshake(1)
				} else {
					l.expect(PacketObserverInfo)
				}
				l.raw(tc.junk)
				if tcp, ok := l.nc.(*net.TCPConn); ok {
					_ = tcp.CloseWrite()
				}
				l.waitClosed()
			})
			err := run(t, leader.addr())
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), leader.addr()) || !strings.Contains(err.Error(), tc.step) {
				t.Errorf("error %q does not name the leader %s and the step %q", err, leader.addr(), tc.step)
			}
			if tc.malformed && !errors.Is(err, ErrMalformed) {
				t.Errorf("error %q is not ErrMalformed", err)
			}
		})
	}
}

// run dials addr and reads events until an error, reading snapshots whole.
func run(t *testing.T, addr string) error {
	t.Helper()
	c, err := Dial(t.Context(), testConfig(t), addr, 0)
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		ev, err := c.Next(t.Context())
		if err != nil {
			return err
		}
		if ev.Kind == EventSnapshot {
			// Errors show again from Next.
			_, _ = io.Copy(io.Discard, ev.Snapshot)
		}
	}
}

func TestSilentLeaderTimesOut(t *testing.T) {
	leader := startFakeLeader(t, func(l *leaderConn) {
		l.expect(PacketObserverInfo)
		l.waitClosed()
	})
	cfg := testConfig(t)
	cfg.TickTime = 10 * time.Millisecond
	cfg.InitLimit = 5
	_, err := Dial(t.Context(), cfg, leader.addr(), 0)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !strings.Contains(err.Error(), "read LEADERINFO") {
		t.Errorf("Dial to a leader that never answers = %v, want a timeout reading LEADERINFO", err)
	}
}

func TestNextEndsWithContext(t *testing.T) {
	leader := startFakeLeader(t, func(l *leaderConn) {
		l.handshake(1)
		l.send(Packet{Type: PacketDiff})
		l.syncDone(1)
		l.waitClosed()
	})
	c, err := Dial(t.Context(), testConfig(t), leader.addr(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nextEvents(t.Context(), c, EventUpToDate); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Next(ctx)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel = %v, want context.Canceled", err)
	}
	if err := c.Forward(Request{Type: proto.OpCreate}); !errors.Is(err, ErrClosed) {
		t.Errorf("Forward on a connection closed by cancel = %v, want ErrClosed", err)
	}
}

func TestFollowerFindsLeaderAndResyncs(t *testing.T) {
	// The first server does not listen, as a follower's quorum port does
	// not; the second leads, serves one txn and goes away; then it leads
	// again and must hear the zxid the caller applied.
	goneAddr := refusingAddr(t)
	acks := make(chan Packet, 2)
	var connections atomic.Int64
	leader := startFakeLeader(t, func(l *leaderConn) {
		epoch := connections.Add(1)
		_, ack := l.handshake(epoch)
		acks <- ack
		l.send(Packet{Type: PacketDiff, Zxid: ack.Zxid})
		l.syncDone(epoch)
		if epoch == 1 {
			l.send(Packet{Type: PacketInform, Zxid: makeZxid(1, 1), Data: txnData(makeZxid(1, 1), 1, 1, proto.OpCreate, nil)})
			return // hang up: the leader is gone
		}
		l.waitClosed()
	})
	cfg := testConfig(t)
	cfg.Servers = []Server{{ID: 1, Addr: goneAddr}, {ID: 2, Addr: leader.addr()}}
	f, err := NewFollower(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	for len(got) < 6 {
		ev, err := f.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Kind.String())
	}
	if strings.Join(got, " ") != "diff uptodate txn disconnected diff uptodate" {
		t.Errorf("events = %v", got)
	}
	first, second := <-acks, <-acks
	if first.Zxid != 0 || second.Zxid != makeZxid(1, 1) {
		t.Errorf("ACKEPOCH zxids = %#x, %#x; want 0 then the applied %#x", first.Zxid, second.Zxid, makeZxid(1, 1))
	}
	// The second leader's epoch 2 is above the accepted 1: the ack carries
	// the current epoch, 1.
	if epoch := int32(binary.BigEndian.Uint32(second.Data)); epoch != 1 {
		t.Errorf("second ACKEPOCH epoch = %d, want 1", epoch)
	}
	if f.Applied() != makeZxid(1, 1) {
		t.Errorf("Applied() = %#x", f.Applied())
	}
}

func TestFollowerNextEndsWithContextWhileNoLeader(t *testing.T) {
	cfg := testConfig(t)
	cfg.Servers = []Server{{ID: 1, Addr: refusingAddr(t)}}
	f, err := NewFollower(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	go cancel()
	if _, err := f.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next with no leader and a cancelled context = %v, want context.Canceled", err)
	}
}

func TestCloseEndsUnreadSnapshot(t *testing.T) {
	leader := startFakeLeader(t, func(l *leaderConn) {
		l.handshake(1)
		l.send(Packet{Type: PacketSnap, Zxid: makeZxid(1, 1)})
		// More than the pipe and buffers hold, and no end.
		l.raw(snapshotPayload(make([]string, 0)...)[:8])
		for range 64 {
			l.raw(append(appendString(nil, "/"+strings.Repeat("x", 4096)), make([]byte, 4+8+statPersistedSize)...))
		}
		l.waitClosed()
	})
	c, err := Dial(t.Context(), testConfig(t), leader.addr(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := c.Next(t.Context())
	if err != nil || ev.Kind != EventSnapshot {
		t.Fatalf("Next = %v, %v; want a snapshot", ev.Kind, err)
	}
	c.Close()
	if err := c.snap.wait(); err == nil {
		t.Error("the snapshot's copy ended without error after Close")
	}
	if _, err := io.ReadAll(ev.Snapshot); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("reading the snapshot after Close = %v, want io.ErrClosedPipe", err)
	}
}

// refusingAddr returns an address where nothing listens, as on a
// follower's quorum port.
func refusingAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
