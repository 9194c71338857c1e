// Package zkwire is a bare ZooKeeper protocol client for tests: it sends
// exactly the bytes a test asks for and returns the replies undecoded, so
// tests can send what no real client would and compare servers reply by
// reply.
package zkwire

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/collie-io/collie/proto"
)

// Timeout bounds every read and write of a Conn whose IOTimeout is zero.
const Timeout = 10 * time.Second

// Conn is one connection with a session.
type Conn struct {
	NC      net.Conn
	r       *bufio.Reader
	xid     int32
	Session int64
	Passwd  []byte
	TimeOut int32
	// Events are the watch notifications received so far, in order.
	Events []proto.WatcherEvent
	// IOTimeout bounds every read and write after the handshake; zero
	// means Timeout. A server that is slow for a while, a JVM collecting
	// a large heap on a loaded machine, wants more.
	IOTimeout time.Duration
}

// Dial opens a new session with the given timeout in milliseconds.
func Dial(addr string, timeoutMs int32) (*Conn, error) {
	return Handshake(addr, &proto.ConnectRequest{TimeOut: timeoutMs, Passwd: make([]byte, proto.PasswordLen)})
}

// Handshake connects and sends req as the connect request. A refused
// session (timeout 0) is returned as a Conn with TimeOut 0 and no error.
func Handshake(addr string, req *proto.ConnectRequest) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, Timeout)
	if err != nil {
		return nil, err
	}
	return HandshakeOn(nc, req)
}

// HandshakeOn sends req as the connect request on nc, a connection made
// by the caller (a TLS one, say), and closes nc if that fails.
func HandshakeOn(nc net.Conn, req *proto.ConnectRequest) (*Conn, error) {
	c := &Conn{NC: nc, r: bufio.NewReader(nc)}
	if err := c.WriteFrame(proto.Marshal(req)); err != nil {
		nc.Close()
		return nil, err
	}
	b, err := c.ReadFrame()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect response: %w", err)
	}
	var resp proto.ConnectResponse
	if err := proto.Unmarshal(b, &resp); err != nil {
		nc.Close()
		return nil, err
	}
	c.Session, c.Passwd, c.TimeOut = resp.SessionID, resp.Passwd, resp.TimeOut
	return c, nil
}

// Resume connects to addr with c's session, as a client does after losing
// its connection: it presents the session's id and password, the timeout
// it was given, and lastZxid, the highest zxid it has seen in a reply. The
// new Conn numbers its requests on from c's. A refused session (timeout
// 0) is returned as a Conn with TimeOut 0 and no error; a server that
// closes the connection instead (it has seen less than lastZxid, or has no
// leader) returns an error.
func (c *Conn) Resume(addr string, lastZxid int64) (*Conn, error) {
	n, err := Handshake(addr, &proto.ConnectRequest{LastZxidSeen: lastZxid, TimeOut: c.TimeOut, SessionID: c.Session, Passwd: c.Passwd})
	if err != nil {
		return nil, err
	}
	n.xid = c.xid
	return n, nil
}

func (c *Conn) ioTimeout() time.Duration {
	if c.IOTimeout > 0 {
		return c.IOTimeout
	}
	return Timeout
}

// Close closes the connection (not the session).
func (c *Conn) Close() error { return c.NC.Close() }

// CloseSession ends the session, as a client's close does, then closes
// the connection. A session left to expire instead ends with a txn of the
// server's, later.
func (c *Conn) CloseSession() error {
	hdr, _, err := c.Call(proto.OpCloseSession, nil)
	c.NC.Close()
	if err != nil {
		return err
	}
	if hdr.Err != proto.OK {
		return hdr.Err
	}
	return nil
}

// WriteFrame writes b with its length prefix.
func (c *Conn) WriteFrame(b []byte) error {
	c.NC.SetWriteDeadline(time.Now().Add(c.ioTimeout()))
	buf := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	_, err := c.NC.Write(append(buf, b...))
	return err
}

// ReadFrame reads one length-prefixed frame.
func (c *Conn) ReadFrame() ([]byte, error) {
	c.NC.SetReadDeadline(time.Now().Add(c.ioTimeout()))
	return ReadFrame(c.r)
}

// ReadFrame reads one length-prefixed frame from r, without a deadline:
// for a test's own proxy or fake server.
func ReadFrame(r io.Reader) ([]byte, error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(lenBuf[:])
	if n > 16<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// Call sends one request with the next xid and waits for its reply,
// collecting watch events that arrive first. It returns the reply header
// and the undecoded body.
func (c *Conn) Call(op proto.OpCode, req proto.Record) (proto.ReplyHeader, []byte, error) {
	c.xid++
	return c.CallXid(c.xid, op, req)
}

// CallXid is Call with a given xid (negative xids are ZooKeeper's special
// ones: ping -2, auth -4, setWatches -8).
func (c *Conn) CallXid(xid int32, op proto.OpCode, req proto.Record) (proto.ReplyHeader, []byte, error) {
	if err := c.WriteFrame(encodeRequest(Request{Xid: xid, Op: op, Req: req})); err != nil {
		return proto.ReplyHeader{}, nil, err
	}
	for {
		f, err := c.Receive()
		if err != nil {
			return f.Header, nil, err
		}
		if f.Header.Xid == proto.XidNotification {
			c.Events = append(c.Events, f.Event)
			continue
		}
		if f.Header.Xid != xid {
			return f.Header, nil, fmt.Errorf("reply xid %d, want %d", f.Header.Xid, xid)
		}
		return f.Header, f.Body, nil
	}
}

// A Request is one request of a pipeline.
type Request struct {
	Xid int32 // NextXid for a numbered request, or a special xid
	Op  proto.OpCode
	Req proto.Record // nil for a request without a body
}

// A Frame is one packet the server sent after the handshake: the reply to
// a request, or a watch event (Header.Xid is proto.XidNotification).
type Frame struct {
	Header proto.ReplyHeader
	Body   []byte             // the reply's undecoded body
	Event  proto.WatcherEvent // the event, when the frame is one
}

// NextXid returns the xid of the next numbered request, the one Call
// would use.
func (c *Conn) NextXid() int32 {
	c.xid++
	return c.xid
}

func encodeRequest(r Request) []byte {
	e := proto.NewEncoder(nil)
	(&proto.RequestHeader{Xid: r.Xid, Type: r.Op}).Encode(e)
	if r.Req != nil {
		r.Req.Encode(e)
	}
	return e.Bytes()
}

// Send writes reqs back to back, in one write, without waiting for any
// reply: a client pipelining its requests.
func (c *Conn) Send(reqs ...Request) error {
	var buf []byte
	for _, r := range reqs {
		b := encodeRequest(r)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
		buf = append(buf, b...)
	}
	c.NC.SetWriteDeadline(time.Now().Add(c.ioTimeout()))
	_, err := c.NC.Write(buf)
	return err
}

// Receive reads the next frame, reply or event. Unlike Call, it leaves
// Events alone: the caller sees every event in the frames it receives.
func (c *Conn) Receive() (Frame, error) {
	b, err := c.ReadFrame()
	if err != nil {
		return Frame{}, err
	}
	d := proto.NewDecoder(b)
	var f Frame
	f.Header.Decode(d)
	if d.Err() != nil {
		return f, d.Err()
	}
	f.Body = b[len(b)-d.Remaining():]
	if f.Header.Xid == proto.XidNotification {
		if err := proto.Unmarshal(f.Body, &f.Event); err != nil {
			return f, err
		}
	}
	return f, nil
}

// Pipeline sends reqs as Send does, then reads until every one of them has
// its reply, and returns every frame received meanwhile, events included,
// in the order they arrived. On an error it returns the frames received
// before it.
func (c *Conn) Pipeline(reqs ...Request) ([]Frame, error) {
	if err := c.Send(reqs...); err != nil {
		return nil, err
	}
	var frames []Frame
	for replies := 0; replies < len(reqs); {
		f, err := c.Receive()
		if err != nil {
			return frames, err
		}
		frames = append(frames, f)
		if f.Header.Xid != proto.XidNotification {
			replies++
		}
	}
	return frames, nil
}

// Do is Call that decodes the body into resp when the reply is OK, and
// returns the reply's error code.
func (c *Conn) Do(op proto.OpCode, req, resp proto.Record) (proto.Code, error) {
	hdr, body, err := c.Call(op, req)
	if err != nil {
		return 0, err
	}
	if hdr.Err == proto.OK && resp != nil {
		if err := proto.Unmarshal(body, resp); err != nil {
			return 0, err
		}
	}
	return hdr.Err, nil
}

// ExpectClosed reads until the server closes the connection and returns
// how many bytes came first.
func (c *Conn) ExpectClosed() (int, error) {
	c.NC.SetReadDeadline(time.Now().Add(c.ioTimeout()))
	b, err := io.ReadAll(c.r)
	return len(b), err
}

// OpenACL is world:anyone with every permission.
var OpenACL = []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}

// TryCreate opens a new session on addr and creates path as a persistent
// node open to everyone. It reports whether the server acknowledged the
// node, or said it exists (an earlier attempt whose reply was lost): a
// probe of whether a server serves writes, to poll after a failure.
func TryCreate(addr, path string) bool {
	c, err := Dial(addr, 6000)
	if err != nil {
		return false
	}
	defer c.Close()
	if c.TimeOut <= 0 {
		return false
	}
	code, err := c.Do(proto.OpCreate, &proto.CreateRequest{Path: path, ACL: OpenACL}, &proto.CreateResponse{})
	return err == nil && (code == proto.OK || code == proto.ErrNodeExists)
}
