package session

import (
	"log/slog"
	"math"
	"strconv"
	"sync/atomic"
	"time"
)

// ID is a session id, as carried in ConnectRequest and in a znode's
// EphemeralOwner.
type ID int64

// containerOwner is the EphemeralOwner that marks a container node
// (ZooKeeper's EphemeralType.CONTAINER_EPHEMERAL_OWNER); no session may have it.
const containerOwner ID = math.MinInt64

// String formats id as ZooKeeper logs it: "0x" and the two's-complement
// hexadecimal digits without leading zeros.
func (id ID) String() string {
	return "0x" + strconv.FormatUint(uint64(id), 16)
}

// LogValue makes slog print id in hexadecimal, as ZooKeeper's logs do.
func (id ID) LogValue() slog.Value {
	return slog.StringValue(id.String())
}

// InitialID is the first session id a server hands out, laid out as
// ZooKeeper's SessionTrackerImpl.initializeNextSessionId does: the top byte
// is the server id, the next five bytes are the low 40 bits of the time in
// milliseconds, the low two bytes are zero. Servers therefore never collide,
// and one server's ids do not repeat across restarts more than 65536 ids
// apart.
//
// ZooKeeper takes the milliseconds from its elapsed-time clock; we take them
// from now's Unix time, whose origin does not move across restarts. Only the
// low byte of serverID is used, as in ZooKeeper.
func InitialID(serverID uint64, now time.Time) ID {
	ms := uint64(now.UnixMilli())
	id := ID(ms<<24>>8 | serverID<<56)
	if id == containerOwner {
		id++
	}
	return id
}

// Generator hands out session ids: InitialID, then one more each time. It is
// safe for concurrent use, since connections create sessions concurrently.
type Generator struct {
	next atomic.Int64
}

// NewGenerator returns a Generator whose first id is InitialID(serverID, now).
func NewGenerator(serverID uint64, now time.Time) *Generator {
	g := new(Generator)
	g.next.Store(int64(InitialID(serverID, now)))
	return g
}

// Next returns a session id that this Generator has not returned before.
// It skips 0, which a ConnectRequest uses to ask for a new session, and the
// container-node owner.
func (g *Generator) Next() ID {
	for {
		id := ID(g.next.Add(1) - 1)
		if id != 0 && id != containerOwner {
			return id
		}
	}
}
