package admin

import (
	"io"
	"time"
)

// Backend is the running server the admin commands describe. Every method
// may be called from several goroutines at once, while the server works;
// each answer is a snapshot that the caller owns.
type Backend interface {
	// Serving reports whether the server serves clients. A member of an
	// ensemble that has known no leader for too long does not (unless it
	// serves read-only sessions); ZooKeeper's commands then answer only
	// that it is not serving, and so do Collie's.
	Serving() bool
	// ReadOnly reports whether the server serves read-only sessions only
	// (ZooKeeper's read-only mode).
	ReadOnly() bool
	// Monitor returns what the four-letter word mntr reports, in its
	// order: each name without mntr's "zk_" prefix, each value as mntr
	// prints it. The monitor command serves these values; server_stats
	// reads its numbers from them too, so both agree.
	Monitor() []Metric
	// Metrics writes the server's metrics in Prometheus's text format.
	Metrics(w io.Writer) error
	// Ready reports whether the server serves clients with a quorum
	// behind it, and when not, why not, in a few words.
	Ready() (ready bool, reason string)
	// LastZxid returns the zxid of the last applied transaction.
	LastZxid() int64
	// Connections describes the client connections with a session.
	Connections() []Connection
	// Configuration returns the settings the configuration command reports.
	Configuration() Configuration
	// Dirs returns the bytes held in the snapshot and log directories.
	Dirs() Dirs
	// Sessions lists the live sessions with their expiry.
	Sessions() []Session
	// Ephemerals maps each session that owns ephemeral nodes to their paths.
	Ephemerals() map[int64][]string
	// Watches describes the data watches, as wchc, wchp and wchs do.
	Watches() Watches
	// Environment returns the lines of the four-letter word envi as
	// key/value pairs, in its order.
	Environment() []Property
	// InitialConfiguration returns the text of the configuration file the
	// server started from, or "" when it started without one.
	InitialConfiguration() string
	// LastSnapshot describes the newest snapshot on disk; ok is false when
	// there is none.
	LastSnapshot() (snap Snapshot, ok bool)
	// TraceMask returns the trace mask (gtmk); SetTraceMask sets it (stmk).
	TraceMask() int64
	SetTraceMask(mask int64)
	// Digests returns the digests of the tree kept for the hash command,
	// oldest first.
	Digests() []Digest
	// ResetServerStats clears the latency and packet counters (srst).
	ResetServerStats()
	// ResetConnectionStats clears every connection's counters (crst).
	ResetConnectionStats()
}

// Metric is one line of mntr.
type Metric struct {
	Name  string // "znode_count"
	Value string // "5", "0.25", "standalone"
}

// Connection is one client connection, with what cons prints about it.
type Connection struct {
	RemoteAddr   string // host:port
	Outstanding  int64  // requests in flight
	Received     int64  // packets received
	Sent         int64  // packets sent
	Session      int64
	LastOp       string // the four-letter name of the last operation, "NA" before any
	Established  time.Time
	Timeout      time.Duration // negotiated session timeout
	LastCxid     int64
	LastZxid     int64
	LastResponse time.Time
	LastLatency  time.Duration
	MinLatency   time.Duration
	AvgLatency   time.Duration
	MaxLatency   time.Duration
}

// Configuration is what ZooKeeper's configuration command reports.
type Configuration struct {
	ClientPort        int
	DataDir           string // absolute path of the snapshot directory
	DataLogDir        string // absolute path of the log directory
	TickTime          time.Duration
	MaxClientCnxns    int
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	ServerID          uint64 // 0 for a standalone server, as in ZooKeeper
	ListenBacklog     int
}

// Dirs are the sizes of the data directories, in bytes.
type Dirs struct {
	DataDirSize int64
	LogDirSize  int64
}

// Session is a live session and the end of the tick in which it expires
// unless the client is heard from.
type Session struct {
	ID      int64
	Expires time.Time
}

// Watches is the server's data watches seen three ways. Like ZooKeeper's
// wchc and wchp, it covers data watches only.
type Watches struct {
	BySession map[int64][]string // session -> watched paths, sorted
	ByPath    map[string][]int64 // path -> watching sessions, sorted
	// Connections, Paths and Total are the counts wchs prints.
	Connections, Paths, Total int
}

// Property is one key=value line.
type Property struct {
	Key, Value string
}

// Digest is the digest of the tree after the transaction Zxid, as
// ZooKeeper's DigestCalculator of version Version computes it.
type Digest struct {
	Zxid    int64
	Version int
	Digest  int64
}

// Snapshot describes a snapshot file.
type Snapshot struct {
	Zxid    int64     // the last transaction it holds
	ModTime time.Time // when it was written
}
