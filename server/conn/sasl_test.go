package conn

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/collie-io/collie/proto"
	saslmech "github.com/collie-io/collie/server/sasl"
)

// fakeSASL answers each token with "challenge-<n>", authenticates as bob on
// the second, and fails on a token "bad".
type fakeSASL struct{ n int }

func (f *fakeSASL) Next(token []byte) ([]byte, []proto.ID, error) {
	f.n++
	if string(token) == "bad" {
		return nil, nil, errors.New("bad token")
	}
	if f.n == 2 {
		return []byte("rspauth"), []proto.ID{{Scheme: "sasl", ID: "bob"}}, nil
	}
	return []byte("challenge"), nil, nil
}

type saslReply struct {
	hdr   proto.ReplyHeader
	token []byte
	body  int // bytes after the header
}

// saslReplies decodes the frames after the connect response as a reply
// header and, where there is one, a SetSASLResponse.
func saslReplies(t *testing.T, out []byte) []saslReply {
	t.Helper()
	var replies []saslReply
	for first := true; len(out) >= 4; first = false {
		n := binary.BigEndian.Uint32(out)
		frame := out[4 : 4+n]
		out = out[4+n:]
		if first {
			continue
		}
		d := proto.NewDecoder(frame)
		var r saslReply
		r.hdr.Decode(d)
		r.body = d.Remaining()
		if r.body > 0 {
			var resp proto.SetSASLResponse
			resp.Decode(d)
			r.token = resp.Token
		}
		if err := d.Err(); err != nil {
			t.Fatal(err)
		}
		replies = append(replies, r)
	}
	return replies
}

func sasl(xid int32, token string) []byte {
	return request(xid, proto.OpSASL, &proto.GetSASLRequest{Token: []byte(token)})
}

func TestSASLExchange(t *testing.T) {
	cfg := Config{MaxBuffer: 4096, HandshakeTimeout: time.Second}
	in := slices.Concat(connectFrame(), sasl(1, ""), sasl(2, "response"), request(3, proto.OpGetData, &proto.GetDataRequest{Path: "/a"}))
	got := saslReplies(t, serveConfig(t, &echoBackend{sasl: &fakeSASL{}}, cfg, in, 100*time.Millisecond))
	if len(got) != 3 || got[0].hdr != (proto.ReplyHeader{Xid: 1}) || string(got[0].token) != "challenge" ||
		got[1].hdr != (proto.ReplyHeader{Xid: 2}) || string(got[1].token) != "rspauth" || got[2].hdr.Xid != 3 {
		t.Fatalf("replies %+v", got)
	}
}

// A failed exchange is answered with AuthFailed and a nil token, and the
// connection closes: what follows is not served.
func TestSASLFailureClosesConnection(t *testing.T) {
	cfg := Config{MaxBuffer: 4096, HandshakeTimeout: time.Second}
	in := slices.Concat(connectFrame(), sasl(1, ""), sasl(2, "bad"), request(3, proto.OpGetData, &proto.GetDataRequest{Path: "/a"}))
	got := saslReplies(t, serveConfig(t, &echoBackend{sasl: &fakeSASL{}}, cfg, in, 5*time.Second))
	if len(got) != 2 || got[1].hdr != (proto.ReplyHeader{Xid: 2, Err: proto.ErrAuthFailed}) || got[1].token != nil || got[1].body != 4 {
		t.Fatalf("replies %+v, want the failure answered with AuthFailed and a nil token, then nothing", got)
	}

	// With allowSaslFailedClients the connection stays, and the failure
	// is an empty token.
	cfg.AllowSASLFailed = true
	got = saslReplies(t, serveConfig(t, &echoBackend{sasl: &fakeSASL{}}, cfg, in, 100*time.Millisecond))
	if len(got) != 3 || got[1].hdr != (proto.ReplyHeader{Xid: 2}) || got[1].token != nil || got[2].hdr.Xid != 3 {
		t.Fatalf("allowSaslFailedClients: replies %+v", got)
	}

	// Unless sasl is required: then the code is SessionClosedRequireSASL.
	cfg.EnforceAuthSchemes = []string{"sasl"}
	got = saslReplies(t, serveConfig(t, &echoBackend{sasl: &fakeSASL{}}, cfg, in, 5*time.Second))
	if len(got) != 2 || got[1].hdr != (proto.ReplyHeader{Xid: 2, Err: proto.ErrSessionClosedRequireSASL}) {
		t.Fatalf("required sasl: replies %+v", got)
	}
}

// A server without SASL users answers every sasl packet with an empty
// token, as ZooKeeper without a JAAS section does.
func TestSASLWithoutUsers(t *testing.T) {
	cfg := Config{MaxBuffer: 4096, HandshakeTimeout: time.Second}
	in := slices.Concat(connectFrame(), sasl(1, ""), sasl(2, "x"), request(-2, proto.OpPing, nil))
	got := saslReplies(t, serveConfig(t, &echoBackend{}, cfg, in, 100*time.Millisecond))
	if len(got) != 3 || got[0].hdr != (proto.ReplyHeader{Xid: 1}) || got[0].token != nil || got[0].body != 4 || got[2].hdr.Xid != -2 {
		t.Fatalf("replies %+v", got)
	}
}

// With enforce.auth, anything but auth and sasl packets from a connection
// without an identity of a required scheme, a ping included, is refused
// with SessionClosedRequireSASL and closes the connection.
func TestEnforceAuth(t *testing.T) {
	cfg := Config{MaxBuffer: 4096, HandshakeTimeout: time.Second, EnforceAuthSchemes: []string{"sasl"}}
	in := slices.Concat(connectFrame(), request(-2, proto.OpPing, nil), request(1, proto.OpGetData, &proto.GetDataRequest{Path: "/a"}))
	xids, codes := replyXids(t, serveConfig(t, &echoBackend{sasl: &fakeSASL{}}, cfg, in, 5*time.Second))
	if !slices.Equal(xids, []int32{-2}) || codes[0] != proto.ErrSessionClosedRequireSASL {
		t.Fatalf("replies %v %v, want only the ping's, SessionClosedRequireSASL", xids, codes)
	}
	// Once authenticated the session is served.
	in = slices.Concat(connectFrame(), sasl(1, ""), sasl(2, "r"), request(-2, proto.OpPing, nil), request(3, proto.OpGetData, &proto.GetDataRequest{Path: "/a"}))
	xids, codes = replyXids(t, serveConfig(t, &echoBackend{sasl: &fakeSASL{}}, cfg, in, 100*time.Millisecond))
	if !slices.Equal(xids, []int32{1, 2, -2, 3}) || slices.ContainsFunc(codes, func(c proto.Code) bool { return c != proto.OK }) {
		t.Fatalf("replies %v %v", xids, codes)
	}
	// The address is an identity: ip is always met.
	cfg.EnforceAuthSchemes = []string{"ip"}
	xids, _ = replyXids(t, serveConfig(t, &echoBackend{}, cfg, slices.Concat(connectFrame(), request(-2, proto.OpPing, nil)), 100*time.Millisecond))
	if !slices.Equal(xids, []int32{-2}) {
		t.Fatalf("replies %v", xids)
	}
}

// Hostile sasl packets cost their connection only: a malformed one, one
// before the connect request, one larger than jute.maxbuffer.
func TestSASLHostileInput(t *testing.T) {
	cfg := Config{MaxBuffer: 4096, HandshakeTimeout: time.Second}
	for name, in := range map[string][]byte{
		"malformed":           slices.Concat(connectFrame(), frameOf([]byte{0, 0, 0, 1, 0, 0, 0, 102, 0, 0, 0x10, 0})),
		"before connect":      sasl(1, ""),
		"over jute.maxbuffer": slices.Concat(connectFrame(), sasl(1, string(make([]byte, 5000)))),
	} {
		got := saslReplies(t, serveConfig(t, &echoBackend{sasl: &fakeSASL{}}, cfg, in, 5*time.Second))
		if len(got) != 0 {
			t.Errorf("%s: replies %+v, want the connection closed", name, got)
		}
	}
}

// digestExchange runs the real DIGEST-MD5 exchange for FuzzSASLConn.
type digestExchange struct{ m *saslmech.DigestMD5 }

func (d digestExchange) Next(token []byte) ([]byte, []proto.ID, error) {
	out, err := d.m.Next(token)
	if err != nil || !d.m.Complete() {
		return out, nil, err
	}
	return out, []proto.ID{{Scheme: "sasl", ID: d.m.Username()}}, nil
}

// FuzzSASLConn sends arbitrary bytes after a handshake to a connection
// with DIGEST-MD5 users: it must end cleanly whatever they are.
func FuzzSASLConn(f *testing.F) {
	f.Add(slices.Concat(sasl(1, ""), sasl(2, `username="bob",realm="zk-sasl-md5",nonce="x",cnonce="y",digest-uri="zookeeper/zk-sasl-md5",response=00`)))
	f.Add(slices.Concat(sasl(1, ""), sasl(2, "\x00"), sasl(3, "")))
	f.Add(sasl(7, string(make([]byte, 4097))))
	users := func(u string) (string, bool) { return "bobsecret", u == "bob" }
	cfg := Config{MaxBuffer: 8192, HandshakeTimeout: time.Second, EnforceAuthSchemes: []string{"sasl"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		backend := &echoBackend{sasl: digestExchange{saslmech.NewDigestMD5(users, rand.Reader)}}
		serveConfig(t, backend, cfg, append(connectFrame(), b...), 2*time.Millisecond)
	})
}
