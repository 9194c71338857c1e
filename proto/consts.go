package proto

// OpCode is the Type of a RequestHeader (ZooDefs.OpCode).
type OpCode int32

const (
	OpNotification         OpCode = 0
	OpCreate               OpCode = 1
	OpDelete               OpCode = 2
	OpExists               OpCode = 3
	OpGetData              OpCode = 4
	OpSetData              OpCode = 5
	OpGetACL               OpCode = 6
	OpSetACL               OpCode = 7
	OpGetChildren          OpCode = 8
	OpSync                 OpCode = 9
	OpPing                 OpCode = 11
	OpGetChildren2         OpCode = 12
	OpCheck                OpCode = 13
	OpMulti                OpCode = 14
	OpCreate2              OpCode = 15
	OpReconfig             OpCode = 16
	OpCheckWatches         OpCode = 17
	OpRemoveWatches        OpCode = 18
	OpCreateContainer      OpCode = 19
	OpDeleteContainer      OpCode = 20
	OpCreateTTL            OpCode = 21
	OpMultiRead            OpCode = 22
	OpAuth                 OpCode = 100
	OpSetWatches           OpCode = 101
	OpSASL                 OpCode = 102
	OpGetEphemerals        OpCode = 103
	OpGetAllChildrenNumber OpCode = 104
	OpSetWatches2          OpCode = 105
	OpAddWatch             OpCode = 106
	OpWhoAmI               OpCode = 107
	OpCreateSession        OpCode = -10
	OpCloseSession         OpCode = -11
	OpError                OpCode = -1
)

var opNames = map[OpCode]string{
	OpNotification: "notification", OpCreate: "create", OpDelete: "delete",
	OpExists: "exists", OpGetData: "getData", OpSetData: "setData",
	OpGetACL: "getACL", OpSetACL: "setACL", OpGetChildren: "getChildren",
	OpSync: "sync", OpPing: "ping", OpGetChildren2: "getChildren2",
	OpCheck: "check", OpMulti: "multi", OpCreate2: "create2",
	OpReconfig: "reconfig", OpCheckWatches: "checkWatches",
	OpRemoveWatches: "removeWatches", OpCreateContainer: "createContainer",
	OpDeleteContainer: "deleteContainer", OpCreateTTL: "createTTL",
	OpMultiRead: "multiRead", OpAuth: "auth", OpSetWatches: "setWatches",
	OpSASL: "sasl", OpGetEphemerals: "getEphemerals",
	OpGetAllChildrenNumber: "getAllChildrenNumber", OpSetWatches2: "setWatches2",
	OpAddWatch: "addWatch", OpWhoAmI: "whoAmI", OpCreateSession: "createSession",
	OpCloseSession: "closeSession", OpError: "error",
}

// IsRead reports whether op only reads the tree: the requests a server
// answers from its local state (and that linearizable reads make wait for
// a ReadIndex).
func (o OpCode) IsRead() bool {
	switch o {
	case OpExists, OpGetData, OpGetACL, OpGetChildren, OpGetChildren2,
		OpGetAllChildrenNumber, OpGetEphemerals, OpMultiRead:
		return true
	}
	return false
}

func (o OpCode) String() string {
	if s, ok := opNames[o]; ok {
		return s
	}
	return "unknown"
}

// Reserved xids of packets that are not replies to a numbered request.
const (
	XidNotification int32 = -1
	XidPing         int32 = -2
	XidAuth         int32 = -4
	XidSetWatches   int32 = -8
)

// Permission bits of an ACL (ZooDefs.Perms).
const (
	PermRead   int32 = 1 << 0
	PermWrite  int32 = 1 << 1
	PermCreate int32 = 1 << 2
	PermDelete int32 = 1 << 3
	PermAdmin  int32 = 1 << 4
	PermAll    int32 = PermRead | PermWrite | PermCreate | PermDelete | PermAdmin
)

// PermString writes permissions as ZooKeeper's ZKUtil.getPermString does:
// the letters of cdrwa that are set, in that order.
func PermString(perms int32) string {
	b := make([]byte, 0, 5)
	for _, p := range []struct {
		bit  int32
		char byte
	}{{PermCreate, 'c'}, {PermDelete, 'd'}, {PermRead, 'r'}, {PermWrite, 'w'}, {PermAdmin, 'a'}} {
		if perms&p.bit != 0 {
			b = append(b, p.char)
		}
	}
	return string(b)
}

// CreateMode is the Flags of a create request.
type CreateMode int32

const (
	ModePersistent                  CreateMode = 0
	ModeEphemeral                   CreateMode = 1
	ModePersistentSequential        CreateMode = 2
	ModeEphemeralSequential         CreateMode = 3
	ModeContainer                   CreateMode = 4
	ModePersistentWithTTL           CreateMode = 5
	ModePersistentSequentialWithTTL CreateMode = 6
)

// Valid reports whether m is one of ZooKeeper's create modes.
func (m CreateMode) Valid() bool { return m >= ModePersistent && m <= ModePersistentSequentialWithTTL }

// Sequential reports whether the server appends a sequence suffix.
func (m CreateMode) Sequential() bool {
	return m == ModePersistentSequential || m == ModeEphemeralSequential || m == ModePersistentSequentialWithTTL
}

// Ephemeral reports whether the node goes with its session.
func (m CreateMode) Ephemeral() bool { return m == ModeEphemeral || m == ModeEphemeralSequential }

// Container reports whether the node is a container.
func (m CreateMode) Container() bool { return m == ModeContainer }

// TTL reports whether the node is a TTL node.
func (m CreateMode) TTL() bool {
	return m == ModePersistentWithTTL || m == ModePersistentSequentialWithTTL
}

// EventType is the Type of a WatcherEvent (Watcher.Event.EventType).
type EventType int32

const (
	EventNone                   EventType = -1
	EventNodeCreated            EventType = 1
	EventNodeDeleted            EventType = 2
	EventNodeDataChanged        EventType = 3
	EventNodeChildrenChanged    EventType = 4
	EventDataWatchRemoved       EventType = 5
	EventChildWatchRemoved      EventType = 6
	EventPersistentWatchRemoved EventType = 7
)

func (e EventType) String() string {
	switch e {
	case EventNone:
		return "None"
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case EventDataWatchRemoved:
		return "DataWatchRemoved"
	case EventChildWatchRemoved:
		return "ChildWatchRemoved"
	case EventPersistentWatchRemoved:
		return "PersistentWatchRemoved"
	}
	return "Unknown"
}

// KeeperState is the State of a WatcherEvent (Watcher.Event.KeeperState).
type KeeperState int32

const (
	StateDisconnected      KeeperState = 0
	StateSyncConnected     KeeperState = 3
	StateAuthFailed        KeeperState = 4
	StateConnectedReadOnly KeeperState = 5
	StateSASLAuthenticated KeeperState = 6
	StateExpired           KeeperState = -112
	StateClosed            KeeperState = 7
)

// AddWatchMode is the Mode of an AddWatchRequest.
type AddWatchMode int32

const (
	AddWatchPersistent          AddWatchMode = 0
	AddWatchPersistentRecursive AddWatchMode = 1
)

// WatcherType selects the watches that checkWatches and removeWatches act on.
type WatcherType int32

const (
	WatcherChildren WatcherType = 1
	WatcherData     WatcherType = 2
	WatcherAny      WatcherType = 3
)

// Limits and fixed values of the protocol.
const (
	// DefaultMaxBuffer is jute.maxbuffer's default: the largest packet a
	// server accepts, and the largest znode data.
	DefaultMaxBuffer = 0xfffff
	// PasswordLen is the length of a session password.
	PasswordLen = 16
	// SequenceDigits is the width of a sequential node's suffix.
	SequenceDigits = 10
	// MaxTTL is the largest TTL in milliseconds (EphemeralType.MAX_TTL).
	MaxTTL = 0x00FFFFFFFFFF
)
