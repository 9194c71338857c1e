package peer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// The wire format is described in the package doc; the constants here are
// its numbers.
const (
	magic = "CLPR"
	// wireVersion is the only version spoken. A receiver refuses any other
	// with statusBadVersion and its own version, so a later version can
	// fall back. Version 2 added the descriptions and refusal reasons
	// after the hello and the reply.
	wireVersion uint16 = 2

	// MaxDescription bounds what a server says about itself in a
	// handshake, and a refusal's reason.
	MaxDescription = 4096

	helloSize   = 32
	replySize   = 8
	headerSize  = 5 // kind byte and 32-bit length
	snapLenSize = 8

	// chunkSize is how much of a large frame is read or written between
	// two deadline refreshes, and how much a receive buffer grows by before
	// the bytes announced have actually arrived.
	chunkSize = 1 << 20
)

// connKind says what a connection carries.
type connKind uint8

const (
	kindStream   connKind = 1 // raft (but MsgSnap) and app frames, in order
	kindSnapshot connKind = 2 // one snapshot frame, then an acknowledgement
)

func (k connKind) String() string {
	switch k {
	case kindStream:
		return "stream"
	case kindSnapshot:
		return "snapshot"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// frameKind is the first byte of a frame.
type frameKind uint8

const (
	frameRaft     frameKind = 1
	frameApp      frameKind = 2
	frameSnapshot frameKind = 3
)

// status is the receiver's answer to a hello.
type status uint8

const (
	statusAccepted      status = 0
	statusBadVersion    status = 1
	statusWrongCluster  status = 2
	statusWrongReceiver status = 3
	statusUnknownSender status = 4
	statusBadKind       status = 5
	// statusRefused: the receiver's Config.Admit refused the sender's
	// description; the reply's refusal says why.
	statusRefused status = 6
	// statusAuthenticate: the sender asked to authenticate, and the
	// exchange follows this reply (8 bytes alone); then the reply again.
	statusAuthenticate status = 7
	// statusUnauthenticated: the receiver refuses the sender for
	// authentication (Config.Auth); the reply's refusal says why.
	statusUnauthenticated status = 8
	// statusTLSRequired: the receiver takes TLS peers only, and the
	// sender spoke plaintext.
	statusTLSRequired status = 9
	// statusBadName: the sender's certificate does not name it; the
	// reply's refusal says what it names.
	statusBadName status = 10
)

// Errors a sender gets when the receiver refuses its handshake. They say
// the two servers are configured differently; redialling will not help
// until one configuration changes.
var (
	ErrBadVersion    = errors.New("peer: refused: unsupported protocol version")
	ErrWrongCluster  = errors.New("peer: refused: different cluster id")
	ErrWrongReceiver = errors.New("peer: refused: the server at that address has another id")
	ErrUnknownSender = errors.New("peer: refused: this server is not one of the receiver's peers")
	ErrBadKind       = errors.New("peer: refused: unknown connection kind")
	// ErrTLSRequired: the receiver takes TLS peers only (sslQuorum=true,
	// portUnification=false there), and this server dialled in plaintext.
	ErrTLSRequired = errors.New("peer: refused: the peer takes TLS connections only")
	// ErrBadName: the receiver found that this server's certificate does
	// not name this server's address.
	ErrBadName = errors.New("peer: refused: the peer says this server's certificate does not name it")
	// ErrRefused is matched by the *Refusal a receiver sends.
	ErrRefused = errors.New("peer: refused")
)

// Refusal is a server's refusal of a peer after reading its description
// (Config.Admit): Code is the application's, Reason says why to the
// operator. The refused side gets it back as an error.
type Refusal struct {
	Code   uint8
	Reason string
}

func (r *Refusal) Error() string { return "peer: refused: " + r.Reason }

// Is makes a Refusal match ErrRefused.
func (r *Refusal) Is(target error) bool { return target == ErrRefused }

func (s status) err() error {
	switch s {
	case statusAccepted:
		return nil
	case statusBadVersion:
		return ErrBadVersion
	case statusWrongCluster:
		return ErrWrongCluster
	case statusWrongReceiver:
		return ErrWrongReceiver
	case statusUnknownSender:
		return ErrUnknownSender
	case statusBadKind:
		return ErrBadKind
	case statusRefused:
		return ErrRefused
	case statusUnauthenticated:
		return ErrUnauthenticated
	case statusAuthenticate:
		return fmt.Errorf("%w: an authentication exchange the sender did not ask for", errProtocol)
	case statusTLSRequired:
		return ErrTLSRequired
	case statusBadName:
		return ErrBadName
	}
	return fmt.Errorf("%w: unknown refusal %d", errProtocol, uint8(s))
}

// errProtocol marks bytes that break the wire format: the connection is
// closed and the fact logged at Warn, unlike an ordinary connection loss.
var errProtocol = errors.New("peer: protocol violation")

// hello opens every connection, from the dialling side.
type hello struct {
	version uint16
	kind    connKind
	flags   uint64 // flagAuthenticate; other bits are ignored
	from    uint64
	to      uint64
}

func (h hello) append(b []byte) []byte {
	b = appendPrefix(b, h.version, byte(h.kind))
	b = binary.BigEndian.AppendUint64(b, h.flags)
	b = binary.BigEndian.AppendUint64(b, h.from)
	return binary.BigEndian.AppendUint64(b, h.to)
}

// parseHello decodes a hello. It checks the framing only (magic, the
// reserved byte); version, kind and ids are for the receiver to judge, so
// that it can say why it refuses.
func parseHello(b []byte) (hello, error) {
	version, kind, err := parsePrefix(b, helloSize, "handshake")
	if err != nil {
		return hello{}, err
	}
	return hello{
		version: version,
		kind:    connKind(kind),
		flags:   binary.BigEndian.Uint64(b[8:]),
		from:    binary.BigEndian.Uint64(b[16:]),
		to:      binary.BigEndian.Uint64(b[24:]),
	}, nil
}

// reply answers a hello.
type reply struct {
	version uint16
	status  status
}

func (r reply) append(b []byte) []byte { return appendPrefix(b, r.version, byte(r.status)) }

func parseReply(b []byte) (reply, error) {
	version, st, err := parsePrefix(b, replySize, "handshake reply")
	if err != nil {
		return reply{}, err
	}
	return reply{version: version, status: status(st)}, nil
}

// appendBlock appends a length-prefixed block: a 2-byte length, then the
// bytes.
func appendBlock(b, data []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
	return append(b, data...)
}

// readBlock reads a block of appendBlock, of at most MaxDescription bytes.
func readBlock(r io.Reader, what string) ([]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errProtocol, what, err)
	}
	size := int(binary.BigEndian.Uint16(n[:]))
	if size > MaxDescription {
		return nil, fmt.Errorf("%w: %s of %d bytes", errProtocol, what, size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errProtocol, what, err)
	}
	return b, nil
}

// appendAnswer appends what follows the reply: the receiver's description,
// then its refusal (code 0 and no reason when it accepts).
func appendAnswer(b, desc []byte, r *Refusal) []byte {
	b = appendBlock(b, desc)
	if r == nil {
		return appendBlock(append(b, 0), nil)
	}
	reason := r.Reason
	if len(reason) > MaxDescription {
		reason = reason[:MaxDescription]
	}
	return appendBlock(append(b, r.Code), []byte(reason))
}

// readAnswer reads what appendAnswer wrote.
func readAnswer(r io.Reader) (desc []byte, refusal *Refusal, err error) {
	if desc, err = readBlock(r, "description"); err != nil {
		return nil, nil, err
	}
	var code [1]byte
	if _, err := io.ReadFull(r, code[:]); err != nil {
		return nil, nil, fmt.Errorf("%w: refusal: %w", errProtocol, err)
	}
	reason, err := readBlock(r, "refusal")
	if err != nil {
		return nil, nil, err
	}
	if code[0] != 0 || len(reason) > 0 {
		refusal = &Refusal{Code: code[0], Reason: string(reason)}
	}
	return desc, refusal, nil
}

// appendPrefix appends the 8 bytes hello and reply begin with: magic,
// version, the kind or status byte, and a reserved 0.
func appendPrefix(b []byte, version uint16, x byte) []byte {
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint16(b, version)
	return append(b, x, 0)
}

// parsePrefix checks the size, magic and reserved byte of a hello or a
// reply, and returns its version and kind or status byte.
func parsePrefix(b []byte, size int, what string) (version uint16, x byte, err error) {
	switch {
	case len(b) != size:
		return 0, 0, fmt.Errorf("%w: %s of %d bytes", errProtocol, what, len(b))
	case string(b[:4]) != magic:
		return 0, 0, fmt.Errorf("%w: bad %s magic %q", errProtocol, what, b[:4])
	case b[7] != 0:
		return 0, 0, fmt.Errorf("%w: reserved %s byte is %d", errProtocol, what, b[7])
	}
	return binary.BigEndian.Uint16(b[4:]), b[6], nil
}

// appendHeader appends a frame header.
func appendHeader(b []byte, kind frameKind, n int) []byte {
	b = append(b, byte(kind))
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// appendRaftFrame appends m as a raft frame.
func appendRaftFrame(b []byte, m *raftpb.Message) ([]byte, error) {
	n := m.Size()
	b = appendHeader(b, frameRaft, n)
	start := len(b)
	b = append(b, make([]byte, n)...)
	if _, err := m.MarshalToSizedBuffer(b[start:]); err != nil {
		return nil, fmt.Errorf("peer: encode %v: %w", m.Type, err)
	}
	return b, nil
}

// deadliner is the part of net.Conn that bounds a read; nil where there is
// no connection (the fuzz targets).
type deadliner interface {
	SetReadDeadline(time.Time) error
}

// frameReader reads the frames of one connection.
type frameReader struct {
	br       *bufio.Reader
	conn     deadliner
	timeout  time.Duration
	maxFrame int
	// buf is the payload buffer, reused while frames are small.
	buf []byte
}

// next returns the next stream frame. The payload is valid until the next
// call. A connection may sit idle between frames (raft is quiet between
// followers), so only a frame that has begun is bounded in time.
func (r *frameReader) next() (frameKind, []byte, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r.br, h[:]); err != nil {
		return 0, nil, err
	}
	kind, n := frameKind(h[0]), int64(binary.BigEndian.Uint32(h[1:]))
	if kind != frameRaft && kind != frameApp {
		return 0, nil, fmt.Errorf("%w: frame kind %d on a stream connection", errProtocol, h[0])
	}
	if n > int64(r.maxFrame) {
		return 0, nil, fmt.Errorf("%w: frame of %d bytes, over the limit of %d", errProtocol, n, r.maxFrame)
	}
	var err error
	r.buf, err = r.read(r.buf, n)
	if r.buf != nil && cap(r.buf) > 4*chunkSize {
		// A rare large frame must not pin its buffer for the life of
		// the connection.
		p := r.buf
		r.buf = nil
		return kind, p, err
	}
	return kind, r.buf, err
}

// read reads n bytes into buf (reusing it when it is large enough). The
// buffer grows only as bytes arrive, so a peer announcing a large frame
// and sending nothing holds no memory; while bytes are missing, every
// chunk must arrive within the timeout.
func (r *frameReader) read(buf []byte, n int64) ([]byte, error) {
	if int64(r.br.Buffered()) >= n {
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		_, err := io.ReadFull(r.br, buf)
		return buf, err
	}
	if r.conn != nil {
		defer r.conn.SetReadDeadline(time.Time{})
	}
	if int64(cap(buf)) >= n {
		buf = buf[:0]
	} else {
		buf = make([]byte, 0, min(n, chunkSize))
	}
	for int64(len(buf)) < n {
		if err := r.arm(); err != nil {
			return buf, err
		}
		want := min(n-int64(len(buf)), chunkSize)
		if int64(cap(buf)-len(buf)) < want {
			// Double, so that the copying stays linear in n.
			buf = slices.Grow(buf, int(max(want, min(int64(len(buf)), n-int64(len(buf))))))
		}
		m, err := io.ReadFull(r.br, buf[len(buf):len(buf)+int(want)])
		buf = buf[:len(buf)+m]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
	}
	return buf, nil
}

// decodeRaft decodes the payload of a raft frame. The message does not
// alias payload.
func decodeRaft(payload []byte) (raftpb.Message, error) {
	var m raftpb.Message
	if err := m.Unmarshal(payload); err != nil {
		return raftpb.Message{}, fmt.Errorf("%w: raft message does not decode: %v", errProtocol, err)
	}
	return m, nil
}

// checkMessage checks that m is addressed as the handshake said: raft
// itself trusts From and To.
func checkMessage(m *raftpb.Message, from, to uint64, kind connKind) error {
	switch {
	case m.From != from:
		return fmt.Errorf("%w: %v from %d on the connection of %d", errProtocol, m.Type, m.From, from)
	case m.To != to:
		return fmt.Errorf("%w: %v to %d received by %d", errProtocol, m.Type, m.To, to)
	case kind == kindStream && m.Type == raftpb.MsgSnap:
		return fmt.Errorf("%w: snapshot on a stream connection", errProtocol)
	case kind == kindSnapshot && (m.Type != raftpb.MsgSnap || m.Snapshot == nil):
		return fmt.Errorf("%w: %v on a snapshot connection", errProtocol, m.Type)
	}
	return nil
}

// snapshotHeader encodes m without its snapshot data, which follows the
// header on the wire rather than inside the protobuf message: the data can
// be hundreds of megabytes, and this way neither side copies it.
func snapshotHeader(m *raftpb.Message, size int64) ([]byte, error) {
	meta := *m
	snap := *m.Snapshot
	snap.Data = nil
	meta.Snapshot = &snap
	b := appendHeader(nil, frameSnapshot, meta.Size())
	start := len(b)
	b = append(b, make([]byte, meta.Size())...)
	if _, err := meta.MarshalToSizedBuffer(b[start:]); err != nil {
		return nil, fmt.Errorf("peer: encode snapshot message: %w", err)
	}
	return binary.BigEndian.AppendUint64(b, uint64(size)), nil
}

// readSnapshot reads the one frame of a snapshot connection: the message
// without its data, then the data, into memory.
func (r *frameReader) readSnapshot(maxSnapshot int64) (raftpb.Message, error) {
	m, size, err := r.readSnapshotHeader(maxSnapshot)
	if err != nil {
		return raftpb.Message{}, err
	}
	data, err := r.read(nil, size)
	if err != nil {
		return raftpb.Message{}, err
	}
	m.Snapshot.Data = data
	return m, nil
}

// snapshotData returns a reader of the size bytes of snapshot data that
// follow the header on a snapshot connection: each read must make
// progress within the timeout, as every chunk of a frame must.
func (r *frameReader) snapshotData(size int64) io.Reader {
	return io.LimitReader(armedReader{r}, size)
}

// armedReader arms the deadline before each read of the frame reader.
type armedReader struct{ r *frameReader }

func (a armedReader) Read(p []byte) (int, error) {
	if err := a.r.arm(); err != nil {
		return 0, err
	}
	n, err := a.r.br.Read(p)
	return n, unexpected(err)
}

// readSnapshotHeader reads the message of a snapshot connection and the
// length of the data that follows it.
func (r *frameReader) readSnapshotHeader(maxSnapshot int64) (raftpb.Message, int64, error) {
	// Unlike a stream, a snapshot connection is never idle: the frame
	// follows the handshake at once.
	if err := r.arm(); err != nil {
		return raftpb.Message{}, 0, err
	}
	var h [headerSize]byte
	if _, err := io.ReadFull(r.br, h[:]); err != nil {
		return raftpb.Message{}, 0, err
	}
	kind, n := frameKind(h[0]), int64(binary.BigEndian.Uint32(h[1:]))
	if kind != frameSnapshot {
		return raftpb.Message{}, 0, fmt.Errorf("%w: frame kind %d on a snapshot connection", errProtocol, h[0])
	}
	if n > int64(r.maxFrame) {
		return raftpb.Message{}, 0, fmt.Errorf("%w: snapshot message of %d bytes, over the limit of %d", errProtocol, n, r.maxFrame)
	}
	payload, err := r.read(nil, n)
	if err != nil {
		return raftpb.Message{}, 0, err
	}
	m, err := decodeRaft(payload)
	if err != nil {
		return raftpb.Message{}, 0, err
	}
	if m.Type != raftpb.MsgSnap || m.Snapshot == nil {
		return raftpb.Message{}, 0, fmt.Errorf("%w: %v in a snapshot frame", errProtocol, m.Type)
	}
	if len(m.Snapshot.Data) != 0 {
		return raftpb.Message{}, 0, fmt.Errorf("%w: snapshot data inside the message", errProtocol)
	}
	if err := r.arm(); err != nil {
		return raftpb.Message{}, 0, err
	}
	var l [snapLenSize]byte
	if _, err := io.ReadFull(r.br, l[:]); err != nil {
		return raftpb.Message{}, 0, unexpected(err)
	}
	size := binary.BigEndian.Uint64(l[:])
	if size > uint64(maxSnapshot) {
		return raftpb.Message{}, 0, fmt.Errorf("%w: snapshot of %d bytes, over the limit of %d", errProtocol, size, maxSnapshot)
	}
	return m, int64(size), nil
}

// arm bounds the next read by the timeout.
func (r *frameReader) arm() error {
	if r.conn == nil {
		return nil
	}
	return r.conn.SetReadDeadline(time.Now().Add(r.timeout))
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
