package client

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"strconv"

	"github.com/collie-io/collie/proto"
)

// Stat is a znode's metadata, under ZooKeeper's field names.
type Stat = proto.Stat

// ACL is one access control entry: permissions for an identity.
type ACL = proto.ACL

// ID is an identity in a scheme: world:anyone, digest:user:hash, ip:addr...
type ID = proto.ID

// ClientInfo is one identity of the session, as WhoAmI reports it.
type ClientInfo = proto.ClientInfo

// CreateMode says what kind of node Create makes.
type CreateMode = proto.CreateMode

// The create modes of ZooKeeper.
const (
	ModePersistent                  = proto.ModePersistent
	ModeEphemeral                   = proto.ModeEphemeral
	ModePersistentSequential        = proto.ModePersistentSequential
	ModeEphemeralSequential         = proto.ModeEphemeralSequential
	ModeContainer                   = proto.ModeContainer
	ModePersistentWithTTL           = proto.ModePersistentWithTTL
	ModePersistentSequentialWithTTL = proto.ModePersistentSequentialWithTTL
)

// Permission bits of an ACL.
const (
	PermRead   = proto.PermRead
	PermWrite  = proto.PermWrite
	PermCreate = proto.PermCreate
	PermDelete = proto.PermDelete
	PermAdmin  = proto.PermAdmin
	PermAll    = proto.PermAll
)

// AnyVersion matches every version in Set, Delete, SetACL and CheckOp.
const AnyVersion int32 = -1

// WorldACL returns an ACL that gives perms to everybody (world:anyone).
// WorldACL(PermAll) is ZooKeeper's OPEN_ACL_UNSAFE, what Create uses for a
// nil ACL.
func WorldACL(perms int32) []ACL {
	return []ACL{{Perms: perms, ID: ID{Scheme: "world", ID: "anyone"}}}
}

// AuthACL returns an ACL that gives perms to the identities the session has
// authenticated as (the "auth" scheme; ZooKeeper's CREATOR_ALL_ACL with
// PermAll). The server refuses it from a session without any.
func AuthACL(perms int32) []ACL {
	return []ACL{{Perms: perms, ID: ID{Scheme: "auth", ID: ""}}}
}

// DigestACL returns an ACL that gives perms to whoever authenticates with
// AddAuth(ctx, "digest", []byte(user+":"+password)).
func DigestACL(perms int32, user, password string) []ACL {
	return []ACL{{Perms: perms, ID: ID{Scheme: "digest", ID: DigestID(user, password)}}}
}

// DigestID returns the identity of a digest user, user:base64(sha1(user:password)),
// as ZooKeeper's DigestAuthenticationProvider computes it.
func DigestID(user, password string) string {
	sum := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// Auth is one set of credentials for AddAuth and Config.Auth: a scheme
// ("digest") and its data ("user:password").
type Auth struct {
	Scheme string
	Data   []byte
}

// State is the condition of the client's session, after Curator's
// ConnectionState. StateChanges delivers every transition.
type State int32

const (
	// StateConnecting: the client has not had a session yet.
	StateConnecting State = iota
	// StateConnected: a new session is established (the first one, or a
	// fresh one after expiry). Its watches and ephemerals start empty.
	StateConnected
	// StateDisconnected: the connection broke; the session may still be
	// alive and the client is trying the servers (Curator's SUSPENDED).
	// Requests wait for the next connection; a lock or leadership held
	// through the session must be treated as uncertain.
	StateDisconnected
	// StateReconnected: the same session is back on a connection, with its
	// ephemerals and watches; one-shot watches have been told of what
	// changed meanwhile, persistent watches must catch up by reading.
	StateReconnected
	// StateReadOnly: connected to a server in read-only mode (only with
	// Config.ReadOnly), with a session of that server alone; writes and
	// Sync fail with ErrNotReadOnly. StateReconnected follows when the
	// client has moved to a server with a leader.
	StateReadOnly
	// StateExpired: the session is gone (Curator's LOST); see
	// ErrSessionExpired and Renew.
	StateExpired
	// StateClosed: Close has ended the client.
	StateClosed
	// StateAuthFailed: the SASL exchange of Config.SASL failed (Java's
	// AUTH_FAILED): the server refused the credentials or the mechanism
	// failed. The client tries no other connection; requests and watches
	// fail with ErrAuthFailed until Close.
	StateAuthFailed
)

var stateNames = [...]string{"Connecting", "Connected", "Disconnected", "Reconnected", "ReadOnly", "Expired", "Closed", "AuthFailed"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Connected reports whether requests are being served in this state.
func (s State) Connected() bool {
	return s == StateConnected || s == StateReconnected || s == StateReadOnly
}

// EventType says what an Event reports.
type EventType int32

// The node events carry ZooKeeper's numbers (Watcher.Event.EventType);
// EventSession and EventNotWatching are the client's own.
const (
	EventNodeCreated         = EventType(proto.EventNodeCreated)
	EventNodeDeleted         = EventType(proto.EventNodeDeleted)
	EventNodeDataChanged     = EventType(proto.EventNodeDataChanged)
	EventNodeChildrenChanged = EventType(proto.EventNodeChildrenChanged)
	EventDataWatchRemoved    = EventType(proto.EventDataWatchRemoved)
	EventChildWatchRemoved   = EventType(proto.EventChildWatchRemoved)
	// EventSession reports a change of the session's State on a persistent
	// watch stream: after StateDisconnected, events may have been missed
	// until the following StateReconnected.
	EventSession = EventType(proto.EventNone)
	// EventNotWatching says the watch ended without its node changing:
	// the session expired or the client closed. Err says which.
	EventNotWatching EventType = -2
)

func (t EventType) String() string {
	switch t {
	case EventSession:
		return "Session"
	case EventNotWatching:
		return "NotWatching"
	}
	return proto.EventType(t).String()
}

// Event is what a watch delivers.
type Event struct {
	Type EventType
	// Path is the node concerned, in the client's namespace (below the
	// chroot); empty for EventSession.
	Path string
	// State is the new state, for EventSession.
	State State
	// Err is why the watch ended, for EventNotWatching: ErrSessionExpired
	// or ErrClosed.
	Err error
}

func (e Event) String() string {
	switch e.Type {
	case EventSession:
		return fmt.Sprintf("Session %v", e.State)
	case EventNotWatching:
		return fmt.Sprintf("NotWatching %s: %v", e.Path, e.Err)
	}
	return e.Type.String() + " " + e.Path
}

// WatcherType selects the one-shot watches RemoveWatches removes.
type WatcherType = proto.WatcherType

// The kinds of watch RemoveWatches removes: WatchData covers the watches of
// Get and Exists, WatchChildren those of Children.
const (
	WatchChildren = proto.WatcherChildren
	WatchData     = proto.WatcherData
	WatchAny      = proto.WatcherAny
)

// AddWatchMode selects the kind of persistent watch AddWatch sets.
type AddWatchMode = proto.AddWatchMode

const (
	// WatchPersistent reports data changes, creation, deletion and
	// children changes of one node, until removed.
	WatchPersistent = proto.AddWatchPersistent
	// WatchPersistentRecursive reports creation, deletion and data changes
	// of a node and all its descendants (not children changes, which the
	// creations and deletions already say), until removed.
	WatchPersistentRecursive = proto.AddWatchPersistentRecursive
)
