package client

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/proto"
)

const (
	// readBufferSize and writeBufferSize size a connection's buffers: a
	// burst of small replies is one read system call, and a burst of
	// queued requests one write.
	readBufferSize  = 64 << 10
	writeBufferSize = 64 << 10
	// keepFrameBuffer is the largest reply buffer the reader keeps for the
	// next reply; a larger one is allocated for its reply alone.
	keepFrameBuffer = 64 << 10
)

// errReadTimeout ends a connection on which nothing arrived for a read
// timeout, although pings were sent.
var errReadTimeout = errors.New("no reply from the server within the read timeout")

// pingFrame is the whole ping request: a header with no body.
var pingFrame = func() []byte {
	b := binary.BigEndian.AppendUint32(nil, 8)
	hdr := proto.RequestHeader{Xid: proto.XidPing, Type: proto.OpPing}
	return proto.AppendMarshal(b, &hdr)
}()

// conn is one TCP connection of a session, served by two goroutines:
//
//   - the reader decodes every frame in order: replies complete their calls
//     (and register the watches they set) before the next frame is read, so
//     a watch is always registered before its first event is delivered;
//     events go to the watch registry, which never blocks.
//   - the writer writes the priming packets (auth, setWatches) first, then
//     every call of the client's send queue, as many per system call as
//     are waiting; it also sends pings when the connection is idle and ends
//     it when nothing has been received for the read timeout.
//
// A call goes into pending before its bytes are written, so its reply
// always finds it. When either goroutine fails it kills the connection,
// which stops the other; the session loop then fails what is pending.
type conn struct {
	c           *Client
	nc          net.Conn
	br          *bufio.Reader // holds what the handshake read beyond its reply
	addr        string
	readTimeout time.Duration

	pending  pending
	received atomic.Uint64 // frames read, watched by the writer
	primers  []*call       // auth and setWatches packets, written first

	dead     chan struct{} // closed by kill
	killOnce sync.Once
	cause    error // why the connection ended; set once by kill
	wg       sync.WaitGroup

	// Owned by the reader.
	lenBuf [4]byte
	frame  []byte
	dec    proto.Decoder
	// replayed holds the catch-up events that setWatches caused, until the
	// last setWatches reply: a path in two of its lists yields two events
	// for one change, and each watcher must see the change once.
	replayed map[proto.WatcherEvent]bool

	// lastHeard is when the writer last saw a frame arrive, at its tick's
	// granularity. Owned by the writer; the session loop reads it after
	// the writer has exited.
	lastHeard time.Time
}

// kill ends the connection; the first cause is kept.
func (cn *conn) kill(err error) {
	cn.killOnce.Do(func() {
		cn.cause = err
		close(cn.dead)
		cn.nc.Close()
	})
}

// readFrame reads one length-prefixed frame into the reader's buffer.
func (cn *conn) readFrame() ([]byte, error) {
	if _, err := io.ReadFull(cn.br, cn.lenBuf[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(cn.lenBuf[:])))
	if n < 0 || n > cn.c.cfg.MaxPacket {
		return nil, fmt.Errorf("reply of %d bytes, more than Config.MaxPacket (%d)", n, cn.c.cfg.MaxPacket)
	}
	b := cn.frame
	if cap(b) < n {
		b = make([]byte, n)
		if n <= keepFrameBuffer {
			cn.frame = b
		}
	}
	b = b[:n]
	if _, err := io.ReadFull(cn.br, b); err != nil {
		return nil, err
	}
	return b, nil
}

// read is the reader goroutine.
func (cn *conn) read() {
	c := cn.c
	for {
		frame, err := cn.readFrame()
		if err != nil {
			cn.kill(err)
			return
		}
		cn.received.Add(1)
		cn.dec = *proto.NewDecoder(frame)
		var hdr proto.ReplyHeader
		hdr.Decode(&cn.dec)
		if err := cn.dec.Err(); err != nil {
			cn.kill(err)
			return
		}
		switch hdr.Xid {
		case proto.XidPing:
			continue
		case proto.XidNotification:
			var ev proto.WatcherEvent
			ev.Decode(&cn.dec)
			if err := cn.dec.Err(); err != nil {
				cn.kill(err)
				return
			}
			if cn.replayed != nil {
				if cn.replayed[ev] {
					continue
				}
				cn.replayed[ev] = true
			}
			c.watches.deliver(&ev, c.chroot)
			continue
		}
		cl, setWatchesLeft := cn.pending.pop(hdr.Xid)
		if cl == nil || cl.xid != hdr.Xid {
			err := fmt.Errorf("reply with xid %d does not match the oldest request", hdr.Xid)
			if cl != nil {
				cl.fail(callSent, ErrConnectionLoss)
			}
			cn.kill(err)
			return
		}
		if hdr.Xid >= 0 && hdr.Zxid > c.lastZxid.Load() {
			c.lastZxid.Store(hdr.Zxid)
		}
		if err := cn.finish(cl, &hdr); err != nil {
			cn.kill(err)
			return
		}
		if hdr.Xid == proto.XidSetWatches && setWatchesLeft == 0 {
			cn.replayed = nil
		}
	}
}

// finish completes cl with its reply, whose header has been decoded.
func (cn *conn) finish(cl *call, hdr *proto.ReplyHeader) error {
	c := cn.c
	cl.code = hdr.Err
	var bad error
	multi := cl.op == proto.OpMulti || cl.op == proto.OpMultiRead
	if cl.resp != nil && (hdr.Err == proto.OK || multi && cn.dec.Remaining() > 0) {
		cl.resp.Decode(&cn.dec)
		if err := cn.dec.Err(); err != nil {
			bad = fmt.Errorf("%v reply: %w", cl.op, err)
			cl.code = ErrMarshallingError
		}
	}
	if !cl.state.CompareAndSwap(callSent, callDone) {
		// Abandoned: nobody reads the outcome, but the server acted on the
		// request, and the registry must agree with what it did.
		c.settleAbandoned(cl)
		return bad
	}
	if cl.watch.kind != watchNone {
		cl.code = c.watches.register(&cl.watch, cl.code, c.chroot)
	}
	if cl.auth != nil && cl.code == proto.OK && !cl.noWait {
		c.keepAuth(*cl.auth)
	}
	if cl.noWait {
		switch {
		case cl.auth != nil && cl.code == ErrAuthFailed:
			// The server closes the connection after refusing credentials;
			// sending them again on the next one would do the same forever.
			c.forgetAuth(*cl.auth)
			cn.kill(errAuthRefused)
			c.log.Error("credentials refused; they will not be sent again", "scheme", cl.auth.Scheme, "peer", cn.addr)
		case cl.code != proto.OK && !(cl.op == proto.OpRemoveWatches && cl.code == ErrNoWatcher):
			c.log.Warn("request without a waiting caller failed", "op", cl.op.String(), "err", cl.code, "peer", cn.addr)
		}
		cl.release()
		return bad
	}
	if cl.op == proto.OpAuth && cl.code == ErrAuthFailed {
		// The server closes the connection after refusing credentials.
		// Closing it first keeps the caller's next requests off it: they
		// wait for the next connection instead of failing with it.
		cn.kill(errAuthRefused)
	}
	cl.done <- struct{}{}
	return bad
}

// settleAbandoned brings the registry in line with the reply to a call its
// caller gave up on. A one-shot watch is kept, with nobody waiting on it:
// RemoveWatches can still remove it at the server, and it is spent when it
// fires. A removal takes effect here as it did at the server. A persistent
// watch would bring events for ever to a stream nobody reads, so it is
// dropped at once, which removes it at the server unless another stream on
// the path still needs it.
func (c *Client) settleAbandoned(cl *call) {
	if cl.watch.kind == watchNone {
		return
	}
	c.watches.register(&cl.watch, cl.code, c.chroot)
	if cl.watch.kind == watchPersistent && cl.code == proto.OK {
		// AddWatch has halted the stream already. Dropping it may send a
		// request: not from the reader, which must go on reading replies.
		go c.dropPersistent(cl.watch.stream)
	}
}

// errAuthRefused ends a connection on which the server refused credentials.
var errAuthRefused = errors.New("the server refused credentials and closes the connection")

// write is the writer goroutine.
func (cn *conn) write() {
	c := cn.c
	bw := bufio.NewWriterSize(cn.nc, writeBufferSize)
	tick := time.NewTicker(cn.readTimeout / 3)
	defer tick.Stop()
	seen := cn.received.Load()
	wrote := true // the handshake was just written
	if err := cn.writeCalls(bw, cn.primers); err != nil {
		cn.kill(err)
		return
	}
	cn.primers = nil
	var batch []*call
	for {
		batch = c.queue.take(batch)
		if len(batch) > 0 {
			err := cn.writeCalls(bw, batch)
			clear(batch)
			if err != nil {
				cn.kill(err)
				return
			}
			wrote = true
			select {
			case now := <-tick.C:
				if err := cn.onTick(bw, now, &seen, &wrote); err != nil {
					cn.kill(err)
					return
				}
			case <-cn.dead:
				return
			default:
			}
			continue
		}
		select {
		case <-c.queue.wake:
		case now := <-tick.C:
			if err := cn.onTick(bw, now, &seen, &wrote); err != nil {
				cn.kill(err)
				return
			}
		case <-cn.dead:
			return
		}
	}
}

// onTick runs every third of the read timeout: it ends a connection that
// has been silent for a read timeout, and pings the server when nothing
// was written since the last tick, so the session stays alive and the
// silence check has replies to see.
func (cn *conn) onTick(bw *bufio.Writer, now time.Time, seen *uint64, wrote *bool) error {
	if n := cn.received.Load(); n != *seen {
		*seen, cn.lastHeard = n, now
	} else if now.Sub(cn.lastHeard) >= cn.readTimeout {
		return errReadTimeout
	}
	if !*wrote {
		if _, err := bw.Write(pingFrame); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	*wrote = false
	return nil
}

// writeCalls writes calls with one flush. Calls abandoned while queued are
// skipped. When a write fails, the calls not yet handed to the socket go
// back to the front of the send queue for the next connection: they were
// never sent, so sending them later is not a resend.
func (cn *conn) writeCalls(bw *bufio.Writer, calls []*call) error {
	n := 0
	for _, cl := range calls {
		if cl.state.CompareAndSwap(callQueued, callSent) {
			calls[n] = cl
			n++
		}
	}
	calls = calls[:n]
	cn.pending.push(calls)
	for i, cl := range calls {
		if _, err := bw.Write(cl.buf); err != nil {
			rest := calls[i+1:]
			cn.pending.unwrite(rest)
			var back []*call
			for _, r := range rest {
				if !r.noWait && r.state.CompareAndSwap(callSent, callQueued) {
					back = append(back, r)
				}
			}
			if len(back) > 0 {
				cn.c.queue.requeue(back)
			}
			return err
		}
	}
	return bw.Flush()
}
