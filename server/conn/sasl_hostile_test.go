package conn_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/client/digestmd5"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
)

// saslFrame is a sasl packet whose body is given as it is.
func saslFrame(xid int32, body []byte) []byte {
	hdr := proto.RequestHeader{Xid: xid, Type: proto.OpSASL}
	return append(proto.Marshal(&hdr), body...)
}

// saslCall sends token in a sasl packet and returns the server's.
func saslCall(t *testing.T, c *zkwire.Conn, token []byte) []byte {
	t.Helper()
	hdr, body, err := c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: token})
	var resp proto.SetSASLResponse
	if err != nil || hdr.Err != proto.OK || proto.Unmarshal(body, &resp) != nil {
		t.Fatalf("sasl reply: %v, %v", hdr, err)
	}
	return resp.Token
}

// authenticate runs a DIGEST-MD5 exchange as bob on c with Collie's own
// client mechanism and returns the digest-response it sent.
func authenticate(t *testing.T, c *zkwire.Conn) []byte {
	t.Helper()
	m := digestmd5.New("bob", "bobsecret")
	challenge := saslCall(t, c, []byte{})
	response, err := m.Next(challenge)
	if err != nil {
		t.Fatal(err)
	}
	rspauth := saslCall(t, c, response)
	if _, err := m.Next(rspauth); err != nil || !m.Complete() {
		t.Fatalf("rspauth %q: %v", rspauth, err)
	}
	return response
}

// Hostile SASL input costs the connection that sent it, nothing else: the
// server answers AuthFailed (or nothing, for a frame it cannot read) and
// closes that connection; the session it belonged to lives on and can be
// resumed; an authenticated session of another client goes on as before,
// and new clients are served.
func TestHostileSASL(t *testing.T) {
	srv := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
		c.MaxSessionTimeout = 20 * time.Second
		c.SASLUsers = map[string]string{"bob": "bobsecret"}
		c.SASLAuthProvider = true
		c.JuteMaxBuffer = 64 << 10
	}))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	bystander, err := client.Dial(ctx, srv.Addr(), client.Config{SASL: func() client.SASLMechanism { return digestmd5.New("bob", "bobsecret") }})
	if err != nil {
		t.Fatal(err)
	}
	defer bystander.Close()
	bobOnly := []client.ACL{{Perms: client.PermAll, ID: client.ID{Scheme: "sasl", ID: "bob"}}}
	if _, _, err := bystander.Create(ctx, "/bob", []byte("b"), client.ModePersistent, bobOnly); err != nil {
		t.Fatal(err)
	}
	// An authenticated connection that stays open through every scenario.
	first, err := zkwire.Dial(srv.Addr(), 20000)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	replay := authenticate(t, first)

	garbage := make([]byte, 3000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	lengthField := func(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

	for _, tt := range []struct {
		name string
		// run sends the hostile input on c and returns the reply header of
		// its last packet, or an error when there was none.
		run func(t *testing.T, c *zkwire.Conn) (proto.ReplyHeader, error)
	}{
		{"token over DIGEST-MD5's 4096 bytes", func(t *testing.T, c *zkwire.Conn) (proto.ReplyHeader, error) {
			hdr, _, err := c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: bytes.Repeat([]byte("a"), 4097)})
			return hdr, err
		}},
		{"oversized response after the challenge", func(t *testing.T, c *zkwire.Conn) (proto.ReplyHeader, error) {
			c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: []byte{}})
			hdr, _, err := c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: bytes.Repeat([]byte("a"), 60000)})
			return hdr, err
		}},
		{"a token length beyond the frame", func(t *testing.T, c *zkwire.Conn) (proto.ReplyHeader, error) {
			c.WriteFrame(saslFrame(1, append(lengthField(1<<30), "short"...)))
			return proto.ReplyHeader{}, errNoReply
		}},
		{"a negative token length", func(t *testing.T, c *zkwire.Conn) (proto.ReplyHeader, error) {
			c.WriteFrame(saslFrame(1, lengthField(-7)))
			return proto.ReplyHeader{}, errNoReply
		}},
		{"a frame over jute.maxbuffer", func(t *testing.T, c *zkwire.Conn) (proto.ReplyHeader, error) {
			c.WriteFrame(saslFrame(1, append(lengthField(70000), make([]byte, 70000)...)))
			return proto.ReplyHeader{}, errNoReply
		}},
		{"garbage response", func(t *testing.T, c *zkwire.Conn) (proto.ReplyHeader, error) {
			c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: []byte{}})
			hdr, _, err := c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: garbage})
			return hdr, err
		}},
		{"a response replayed from another connection", func(t *testing.T, c *zkwire.Conn) (proto.ReplyHeader, error) {
			c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: []byte{}})
			hdr, _, err := c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: replay})
			return hdr, err
		}},
		{"a sasl packet after authentication", func(t *testing.T, c *zkwire.Conn) (proto.ReplyHeader, error) {
			authenticate(t, c)
			hdr, _, err := c.Call(proto.OpSASL, &proto.GetSASLRequest{Token: []byte{}})
			return hdr, err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := zkwire.Dial(srv.Addr(), 20000)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			hdr, err := tt.run(t, c)
			if err != errNoReply && (err != nil || hdr.Err != proto.ErrAuthFailed) {
				t.Errorf("reply %+v, %v; want AuthFailed", hdr, err)
			}
			// A server that closes with input unread resets the connection.
			if n, cerr := c.ExpectClosed(); (cerr != nil && !errors.Is(cerr, syscall.ECONNRESET)) || (err == errNoReply && n != 0) {
				t.Errorf("after the hostile input: %d bytes more, %v; want the connection closed", n, cerr)
			}
			checkUnharmed(t, ctx, srv.Addr(), c, first, bystander)
		})
	}

	t.Run("a sasl packet before the connect request", func(t *testing.T) {
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		body := saslFrame(1, proto.Marshal(&proto.GetSASLRequest{Token: []byte{}}))
		nc.Write(append(lengthField(int32(len(body))), body...))
		nc.SetReadDeadline(time.Now().Add(zkwire.Timeout))
		var b [1]byte
		if n, err := nc.Read(b[:]); n != 0 || errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			t.Fatalf("read %d bytes, %v; want the connection closed", n, err)
		}
		checkUnharmed(t, ctx, srv.Addr(), nil, first, bystander)
	})
}

// errNoReply marks hostile input the server cannot read: it closes the
// connection without a reply.
var errNoReply = errors.New("no reply expected")

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// checkUnharmed checks that the hostile connection's session (when it
// had one) can be resumed, that the authenticated connection first and
// the client bystander are served as bob still, and that a new client is
// served.
func checkUnharmed(t *testing.T, ctx context.Context, addr string, hostile, first *zkwire.Conn, bystander *client.Client) {
	t.Helper()
	if hostile != nil {
		again, err := hostile.Resume(addr, 0)
		if err != nil || again.TimeOut <= 0 {
			t.Fatalf("resuming the hostile connection's session: %v, timeout %d", err, again.TimeOut)
		}
		hdr, _, err := again.CallXid(proto.XidPing, proto.OpPing, nil)
		again.Close()
		if err != nil || hdr.Err != proto.OK {
			t.Errorf("ping on the resumed session: %+v, %v", hdr, err)
		}
	}
	var resp proto.GetDataResponse
	if code, err := first.Do(proto.OpGetData, &proto.GetDataRequest{Path: "/bob"}, &resp); err != nil || code != proto.OK || string(resp.Data) != "b" {
		t.Errorf("the authenticated connection reads /bob: %v, %v, %q", code, err, resp.Data)
	}
	if data, _, err := bystander.Get(ctx, "/bob"); err != nil || string(data) != "b" {
		t.Errorf("the authenticated client reads /bob: %q, %v", data, err)
	}
	if bystander.State() != client.StateConnected {
		t.Errorf("the authenticated client is %v", bystander.State())
	}
	c, err := zkwire.Dial(addr, 20000)
	if err != nil {
		t.Fatalf("a new client: %v", err)
	}
	defer c.Close()
	if hdr, _, err := c.CallXid(proto.XidPing, proto.OpPing, nil); err != nil || hdr.Err != proto.OK {
		t.Errorf("a new client's ping: %+v, %v", hdr, err)
	}
}
