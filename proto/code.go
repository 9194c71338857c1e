package proto

import (
	"errors"
	"strconv"
)

// Code is a ZooKeeper error code as carried in ReplyHeader.Err. Code
// implements error, so a wrapped code matches with errors.Is:
//
//	if errors.Is(err, proto.ErrNoNode) { ... }
type Code int32

// The codes of org.apache.zookeeper.KeeperException.Code.
const (
	OK                          Code = 0
	ErrSystemError              Code = -1
	ErrRuntimeInconsistency     Code = -2
	ErrDataInconsistency        Code = -3
	ErrConnectionLoss           Code = -4
	ErrMarshallingError         Code = -5
	ErrUnimplemented            Code = -6
	ErrOperationTimeout         Code = -7
	ErrBadArguments             Code = -8
	ErrUnknownSession           Code = -12
	ErrNewConfigNoQuorum        Code = -13
	ErrReconfigInProgress       Code = -14
	ErrAPIError                 Code = -100
	ErrNoNode                   Code = -101
	ErrNoAuth                   Code = -102
	ErrBadVersion               Code = -103
	ErrNoChildrenForEphemerals  Code = -108
	ErrNodeExists               Code = -110
	ErrNotEmpty                 Code = -111
	ErrSessionExpired           Code = -112
	ErrInvalidCallback          Code = -113
	ErrInvalidACL               Code = -114
	ErrAuthFailed               Code = -115
	ErrSessionMoved             Code = -118
	ErrNotReadOnly              Code = -119
	ErrEphemeralOnLocalSession  Code = -120
	ErrNoWatcher                Code = -121
	ErrRequestTimeout           Code = -122
	ErrReconfigDisabled         Code = -123
	ErrSessionClosedRequireSASL Code = -124
	ErrQuotaExceeded            Code = -125
	ErrThrottledOp              Code = -127
)

var codeText = map[Code]string{
	OK:                          "ok",
	ErrSystemError:              "system error",
	ErrRuntimeInconsistency:     "runtime inconsistency",
	ErrDataInconsistency:        "data inconsistency",
	ErrConnectionLoss:           "connection loss",
	ErrMarshallingError:         "marshalling error",
	ErrUnimplemented:            "unimplemented",
	ErrOperationTimeout:         "operation timeout",
	ErrBadArguments:             "bad arguments",
	ErrUnknownSession:           "unknown session",
	ErrNewConfigNoQuorum:        "new config has no quorum",
	ErrReconfigInProgress:       "reconfig in progress",
	ErrAPIError:                 "api error",
	ErrNoNode:                   "no node",
	ErrNoAuth:                   "not authenticated",
	ErrBadVersion:               "bad version",
	ErrNoChildrenForEphemerals:  "no children for ephemerals",
	ErrNodeExists:               "node exists",
	ErrNotEmpty:                 "directory not empty",
	ErrSessionExpired:           "session expired",
	ErrInvalidCallback:          "invalid callback",
	ErrInvalidACL:               "invalid ACL",
	ErrAuthFailed:               "authentication failed",
	ErrSessionMoved:             "session moved",
	ErrNotReadOnly:              "not a read-only call",
	ErrEphemeralOnLocalSession:  "ephemeral on local session",
	ErrNoWatcher:                "no watcher",
	ErrRequestTimeout:           "request timeout",
	ErrReconfigDisabled:         "reconfig disabled",
	ErrSessionClosedRequireSASL: "session closed because client failed to authenticate",
	ErrQuotaExceeded:            "quota exceeded",
	ErrThrottledOp:              "op throttled due to high load",
}

func (c Code) Error() string {
	if s, ok := codeText[c]; ok {
		return "zk: " + s
	}
	return "zk: unknown error " + strconv.Itoa(int(c))
}

// Err returns nil for OK and the code itself otherwise.
func (c Code) Err() error {
	if c == OK {
		return nil
	}
	return c
}

// CodeOf returns the Code carried by err: OK for nil, ErrSystemError when err
// carries no Code.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var c Code
	if errors.As(err, &c) {
		return c
	}
	return ErrSystemError
}
