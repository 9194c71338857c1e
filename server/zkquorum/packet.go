package zkquorum

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/collie-io/collie/proto"
)

// PacketType is the type field of a QuorumPacket, with ZooKeeper's numbers
// (Leader.java).
type PacketType int32

const (
	PacketRequest           PacketType = 1
	PacketProposal          PacketType = 2
	PacketAck               PacketType = 3
	PacketCommit            PacketType = 4
	PacketPing              PacketType = 5
	PacketRevalidate        PacketType = 6
	PacketSync              PacketType = 7
	PacketInform            PacketType = 8
	PacketCommitAndActivate PacketType = 9
	PacketNewLeader         PacketType = 10
	PacketFollowerInfo      PacketType = 11
	PacketUpToDate          PacketType = 12
	PacketDiff              PacketType = 13
	PacketTrunc             PacketType = 14
	PacketSnap              PacketType = 15
	PacketObserverInfo      PacketType = 16
	PacketLeaderInfo        PacketType = 17
	PacketAckEpoch          PacketType = 18
	PacketInformAndActivate PacketType = 19
)

var packetNames = map[PacketType]string{
	PacketRequest: "REQUEST", PacketProposal: "PROPOSAL", PacketAck: "ACK",
	PacketCommit: "COMMIT", PacketPing: "PING", PacketRevalidate: "REVALIDATE",
	PacketSync: "SYNC", PacketInform: "INFORM", PacketCommitAndActivate: "COMMITANDACTIVATE",
	PacketNewLeader: "NEWLEADER", PacketFollowerInfo: "FOLLOWERINFO", PacketUpToDate: "UPTODATE",
	PacketDiff: "DIFF", PacketTrunc: "TRUNC", PacketSnap: "SNAP",
	PacketObserverInfo: "OBSERVERINFO", PacketLeaderInfo: "LEADERINFO", PacketAckEpoch: "ACKEPOCH",
	PacketInformAndActivate: "INFORMANDACTIVATE",
}

func (t PacketType) String() string {
	if name, ok := packetNames[t]; ok {
		return name
	}
	return "UNKNOWN(" + strconv.Itoa(int(t)) + ")"
}

// A Packet is ZooKeeper's QuorumPacket: the only message on a learner
// connection. Data is nil when the sender wrote a null buffer.
type Packet struct {
	Type     PacketType
	Zxid     int64
	Data     []byte
	AuthInfo []proto.ID
}

// ErrMalformed says bytes from the leader break the protocol: a length out of
// bounds, a truncated record, an unexpected packet. The connection that
// carried them is closed.
var ErrMalformed = errors.New("zkquorum: malformed quorum packet")

// DefaultMaxPacket bounds one packet's data buffer, and every string and
// buffer inside a snapshot: ZooKeeper's default jute.maxbuffer (1 MiB) with
// room for a txn's header, ACLs and digest around a full-size node.
const DefaultMaxPacket = 1<<20 + 64<<10

// maxAuthInfo bounds the authinfo vector of one packet; the leader sends
// none, and a client's identities are a handful.
const maxAuthInfo = 1024

// juteReader reads jute values from a stream, which the quorum protocol does
// not frame: a packet is its fields back to back, and a length is trusted
// only up to max.
type juteReader struct {
	r   *bufio.Reader
	max int
	buf [8]byte
}

func (j *juteReader) fixed(n int, what string) ([]byte, error) {
	if _, err := io.ReadFull(j.r, j.buf[:n]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: %s cut short", ErrMalformed, what)
		}
		return nil, err
	}
	return j.buf[:n], nil
}

func (j *juteReader) int(what string) (int32, error) {
	b, err := j.fixed(4, what)
	if err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

func (j *juteReader) long(what string) (int64, error) {
	b, err := j.fixed(8, what)
	if err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// length reads a buffer or string length: -1 is null, anything else must
// lie in [0, max].
func (j *juteReader) length(what string) (n int, null bool, err error) {
	v, err := j.int(what)
	if err != nil {
		return 0, false, err
	}
	if v == -1 {
		return 0, true, nil
	}
	if v < 0 || int(v) > j.max {
		return 0, false, fmt.Errorf("%w: %s length %d outside [0, %d]", ErrMalformed, what, v, j.max)
	}
	return int(v), false, nil
}

func (j *juteReader) buffer(what string) ([]byte, error) {
	n, null, err := j.length(what)
	if err != nil || null {
		return nil, err
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(j.r, b); err != nil {
		return nil, cutShort(err, what)
	}
	return b, nil
}

func (j *juteReader) string(what string) (string, error) {
	b, err := j.buffer(what)
	return string(b), err
}

func cutShort(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %s cut short", ErrMalformed, what)
	}
	return err
}

// readPacket reads one QuorumPacket. A clean end of stream before its first
// byte is io.EOF; anything cut short after that is ErrMalformed.
func readPacket(j *juteReader) (Packet, error) {
	var p Packet
	typ, err := j.int("packet type")
	if err != nil {
		return p, err
	}
	p.Type = PacketType(typ)
	if p.Zxid, err = j.long("zxid"); err != nil {
		return p, cutShort(err, "zxid")
	}
	if p.Data, err = j.buffer("data"); err != nil {
		return p, cutShort(err, "data")
	}
	n, err := j.int("authinfo count")
	if err != nil {
		return p, cutShort(err, "authinfo count")
	}
	if n < -1 || n > maxAuthInfo {
		return p, fmt.Errorf("%w: authinfo count %d outside [-1, %d]", ErrMalformed, n, maxAuthInfo)
	}
	if n >= 0 {
		p.AuthInfo = []proto.ID{}
	}
	size := 0 // of the authinfo strings, which together stay within max
	for range max(n, 0) {
		var id proto.ID
		if id.Scheme, err = j.string("authinfo scheme"); err != nil {
			return p, cutShort(err, "authinfo scheme")
		}
		if id.ID, err = j.string("authinfo id"); err != nil {
			return p, cutShort(err, "authinfo id")
		}
		if size += len(id.Scheme) + len(id.ID); size > j.max {
			return p, fmt.Errorf("%w: authinfo of more than %d bytes", ErrMalformed, j.max)
		}
		p.AuthInfo = append(p.AuthInfo, id)
	}
	return p, nil
}

// appendPacket appends p in jute: a nil Data is written as a null buffer and
// a nil AuthInfo as a null vector, as ZooKeeper writes them.
func appendPacket(buf []byte, p Packet) []byte {
	e := proto.NewEncoder(buf)
	e.Int(int32(p.Type))
	e.Long(p.Zxid)
	e.Buffer(p.Data)
	if p.AuthInfo == nil {
		e.Int(-1)
	} else {
		e.Int(int32(len(p.AuthInfo)))
		for i := range p.AuthInfo {
			p.AuthInfo[i].Encode(e)
		}
	}
	return e.Bytes()
}
