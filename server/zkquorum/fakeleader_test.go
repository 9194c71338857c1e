package zkquorum

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-io/collie/proto"
)

// A fakeLeader plays the leader's side of the learner protocol from a
// script, so tests can send what no real ZooKeeper would.
type fakeLeader struct {
	t  *testing.T
	ln net.Listener
	wg sync.WaitGroup
}

// startFakeLeader serves every connection with script until the test ends.
func startFakeLeader(t *testing.T, script func(l *leaderConn)) *fakeLeader {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeLeader{t: t, ln: ln}
	f.wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Go(func() {
				defer nc.Close()
				script(&leaderConn{t: t, nc: nc, in: &juteReader{r: bufio.NewReader(nc), max: DefaultMaxPacket}})
			})
		}
	})
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	return f
}

func (f *fakeLeader) addr() string { return f.ln.Addr().String() }

// leaderConn is the fake leader's end of one learner connection. Its
// methods report failures with t.Errorf, from the serving goroutine.
type leaderConn struct {
	t  *testing.T
	nc net.Conn
	in *juteReader
}

func (l *leaderConn) send(p Packet) { l.raw(appendPacket(nil, p)) }

func (l *leaderConn) raw(b []byte) {
	// The learner may have hung up already; what it saw is the test's
	// business.
	_, _ = l.nc.Write(b)
}

func (l *leaderConn) read() (Packet, bool) {
	if err := l.nc.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return Packet{}, false
	}
	p, err := readPacket(l.in)
	if err != nil {
		return Packet{}, false
	}
	return p, true
}

// expect reads a packet and checks its type.
func (l *leaderConn) expect(typ PacketType) Packet {
	p, ok := l.read()
	if !ok {
		l.t.Errorf("fake leader: no %v from the learner", typ)
	} else if p.Type != typ {
		l.t.Errorf("fake leader: got %v, want %v", p.Type, typ)
	}
	return p
}

// handshake answers OBSERVERINFO with LEADERINFO for epoch and returns the
// OBSERVERINFO and the ACKEPOCH.
func (l *leaderConn) handshake(epoch int64) (info, ack Packet) {
	info = l.expect(PacketObserverInfo)
	l.send(Packet{Type: PacketLeaderInfo, Zxid: makeZxid(epoch, 0), Data: binary.BigEndian.AppendUint32(nil, protocolVersion)})
	ack = l.expect(PacketAckEpoch)
	return info, ack
}

// syncDone sends NEWLEADER and UPTODATE and checks the ACK of each.
func (l *leaderConn) syncDone(epoch int64) {
	l.send(Packet{Type: PacketNewLeader, Zxid: makeZxid(epoch, 0), Data: []byte("server.1=127.0.0.1:1:2:participant\nversion=0")})
	if ack := l.expect(PacketAck); ack.Zxid != makeZxid(epoch, 0) {
		l.t.Errorf("ACK of NEWLEADER has zxid %#x, want %#x", ack.Zxid, makeZxid(epoch, 0))
	}
	l.send(Packet{Type: PacketUpToDate, Zxid: -1})
	if ack := l.expect(PacketAck); ack.Zxid != makeZxid(epoch, 0) {
		l.t.Errorf("ACK of UPTODATE has zxid %#x, want %#x", ack.Zxid, makeZxid(epoch, 0))
	}
}

// waitClosed waits until the learner hangs up.
func (l *leaderConn) waitClosed() {
	for {
		if _, ok := l.read(); !ok {
			return
		}
	}
}

// txnData returns a txn as a leader sends it: a TxnHeader, then a record.
func txnData(zxid int64, session int64, cxid int32, typ proto.OpCode, record []byte) []byte {
	e := proto.NewEncoder(nil)
	e.Long(session)
	e.Int(cxid)
	e.Long(zxid)
	e.Long(1700000000000)
	e.Int(int32(typ))
	return append(e.Bytes(), record...)
}

func testConfig(t *testing.T) Config {
	return Config{
		ServerID:  4,
		TickTime:  100 * time.Millisecond,
		InitLimit: 50,
		SyncLimit: 50,
		Logger:    slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// nextEvents reads events until one of kind stop, or an error.
func nextEvents(ctx context.Context, c *Conn, stop EventKind) ([]Event, error) {
	var events []Event
	for {
		ev, err := c.Next(ctx)
		if err != nil {
			return events, err
		}
		events = append(events, ev)
		if ev.Kind == stop {
			return events, nil
		}
	}
}

func kinds(events []Event) string {
	var s []string
	for _, ev := range events {
		s = append(s, ev.Kind.String())
	}
	return strings.Join(s, " ")
}

func TestDiffSyncThenBroadcast(t *testing.T) {
	const epoch = 3
	z := func(n int64) int64 { return makeZxid(2, n) }
	// The learner's PING answer, REQUEST and REVALIDATE, by type: the
	// first is written by Next, the others by Forward and Revalidate.
	fromLearner := make(chan map[PacketType]Packet, 1)
	leader := startFakeLeader(t, func(l *leaderConn) {
		info, ack := l.handshake(epoch)
		d := proto.NewDecoder(info.Data)
		if sid, version, cfgVersion := d.Long(), d.Int(), d.Long(); sid != 4 || version != protocolVersion || cfgVersion != 0 || d.Err() != nil {
			l.t.Errorf("LearnerInfo = sid %d, version %#x, config version %d (%v)", sid, version, cfgVersion, d.Err())
		}
		if info.Zxid != makeZxid(2, 0) {
			l.t.Errorf("OBSERVERINFO zxid %#x, want the accepted epoch 2: %#x", info.Zxid, makeZxid(2, 0))
		}
		if ack.Zxid != z(5) || binary.BigEndian.Uint32(ack.Data) != 2 {
			l.t.Errorf("ACKEPOCH = zxid %#x, epoch %d; want %#x, 2", ack.Zxid, int32(binary.BigEndian.Uint32(ack.Data)), z(5))
		}
		l.send(Packet{Type: PacketDiff, Zxid: z(8)})
		l.send(Packet{Type: PacketProposal, Zxid: z(6), Data: txnData(z(6), 7, 1, proto.OpCreate, []byte("create"))})
		l.send(Packet{Type: PacketCommit, Zxid: z(6)})
		l.send(Packet{Type: PacketPing, Zxid: z(6)}) // ignored during the sync, as ZooKeeper's learner does
		l.send(Packet{Type: PacketProposal, Zxid: z(7), Data: txnData(z(7), 7, 2, proto.OpSetData, []byte("set"))})
		l.send(Packet{Type: PacketCommit, Zxid: z(7)})
		l.send(Packet{Type: PacketInform, Zxid: z(8), Data: txnData(z(8), 7, 3, proto.OpDelete, []byte("delete"))})
		l.syncDone(epoch)
		l.send(Packet{Type: PacketInform, Zxid: makeZxid(epoch, 1), Data: txnData(makeZxid(epoch, 1), 8, 0, proto.OpCreateSession, nil)})
		l.send(Packet{Type: PacketPing, Zxid: makeZxid(epoch, 1)})
		got := map[PacketType]Packet{}
		for range 3 {
			if p, ok := l.read(); ok {
				got[p.Type] = p
			}
		}
		fromLearner <- got
		l.send(Packet{Type: PacketSync})
		l.send(Packet{Type: PacketRevalidate, Data: append(binary.BigEndian.AppendUint64(nil, 8), 1)})
		l.waitClosed()
	})

	ctx := t.Context()
	c, err := Dial(ctx, testConfig(t), leader.addr(), makeZxid(2, 5))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Forward(Request{SessionID: 8, Type: proto.OpSetData}); !errors.Is(err, ErrNotSynced) {
		t.Errorf("Forward before UPTODATE = %v, want ErrNotSynced", err)
	}
	events, err := nextEvents(ctx, c, EventUpToDate)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(events); got != "diff txn txn txn uptodate" {
		t.Fatalf("sync events = %s", got)
	}
	for i, want := range []struct {
		zxid int64
		typ  proto.OpCode
		cxid int32
	}{{z(6), proto.OpCreate, 1}, {z(7), proto.OpSetData, 2}, {z(8), proto.OpDelete, 3}} {
		h := events[i+1].Txn.Header
		if h.Zxid != want.zxid || h.Type != want.typ || h.Cxid != want.cxid || h.ClientID != 7 {
			t.Errorf("txn %d header = %+v, want zxid %#x type %v cxid %d", i, h, want.zxid, want.typ, want.cxid)
		}
	}
	if up := events[4]; up.Zxid != makeZxid(epoch, 0) || !strings.HasPrefix(up.Config, "server.1=") {
		t.Errorf("uptodate = zxid %#x config %q", up.Zxid, up.Config)
	}
	if zxid, ok := c.Applied(); !ok || zxid != z(8) {
		t.Errorf("Applied() = %#x, %v; want %#x", zxid, ok, z(8))
	}

	c.Touch(8, 6*time.Second)
	ev, err := c.Next(ctx)
	if err != nil || ev.Kind != EventTxn || ev.Txn.Header.Type != proto.OpCreateSession {
		t.Fatalf("Next = %v, %v; want the createSession txn", ev.Kind, err)
	}
	auth := []proto.ID{{Scheme: "digest", ID: "bob:hash"}}
	if err := c.Forward(Request{SessionID: 8, Cxid: 5, Type: proto.OpSync, Body: []byte{0, 0, 0, 1, '/'}, Auth: auth}); err != nil {
		t.Fatal(err)
	}
	if err := c.Revalidate(8, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	events, err = nextEvents(ctx, c, EventRevalidated)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(events); got != "synced revalidated" || events[1].SessionID != 8 || !events[1].Valid {
		t.Errorf("events = %s %+v", got, events)
	}
	got := <-fromLearner
	ping := got[PacketPing]
	if want := append(binary.BigEndian.AppendUint64(nil, 8), 0, 0, 0x17, 0x70); string(ping.Data) != string(want) || ping.Zxid != makeZxid(epoch, 1) {
		t.Errorf("PING answer = zxid %#x data %x; want %#x, %x", ping.Zxid, ping.Data, makeZxid(epoch, 1), want)
	}
	req := got[PacketRequest]
	if want := "\x00\x00\x00\x00\x00\x00\x00\x08\x00\x00\x00\x05\x00\x00\x00\x09\x00\x00\x00\x01/"; string(req.Data) != want || len(req.AuthInfo) != 1 || req.AuthInfo[0] != auth[0] {
		t.Errorf("REQUEST = data %x auth %v", req.Data, req.AuthInfo)
	}
	if reval := got[PacketRevalidate]; string(reval.Data) != "\x00\x00\x00\x00\x00\x00\x00\x08\x00\x00\x17\x70" {
		t.Errorf("REVALIDATE data = %x", reval.Data)
	}
}

func TestTruncSync(t *testing.T) {
	leader := startFakeLeader(t, func(l *leaderConn) {
		l.handshake(2)
		l.send(Packet{Type: PacketTrunc, Zxid: makeZxid(1, 4)})
		l.send(Packet{Type: PacketProposal, Zxid: makeZxid(1, 5), Data: txnData(makeZxid(1, 5), 1, 1, proto.OpCreate, nil)})
		l.send(Packet{Type: PacketCommit, Zxid: makeZxid(1, 5)})
		l.syncDone(2)
		l.waitClosed()
	})
	c, err := Dial(t.Context(), testConfig(t), leader.addr(), makeZxid(1, 9))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	events, err := nextEvents(t.Context(), c, EventUpToDate)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(events); got != "trunc txn uptodate" || events[0].Zxid != makeZxid(1, 4) || events[1].Zxid != makeZxid(1, 5) {
		t.Errorf("events = %s (trunc to %#x, txn %#x)", got, events[0].Zxid, events[1].Zxid)
	}
}
