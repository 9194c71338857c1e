package client

import (
	"errors"

	"github.com/collie-io/collie/proto"
)

// The codes a server answers with. They are proto's codes, so
// errors.Is(err, client.ErrNoNode) and errors.Is(err, proto.ErrNoNode) agree,
// and proto.CodeOf(err) recovers the code from any error the client returns.
const (
	ErrSystemError              = proto.ErrSystemError
	ErrRuntimeInconsistency     = proto.ErrRuntimeInconsistency
	ErrDataInconsistency        = proto.ErrDataInconsistency
	ErrMarshallingError         = proto.ErrMarshallingError
	ErrUnimplemented            = proto.ErrUnimplemented
	ErrOperationTimeout         = proto.ErrOperationTimeout
	ErrBadArguments             = proto.ErrBadArguments
	ErrUnknownSession           = proto.ErrUnknownSession
	ErrNewConfigNoQuorum        = proto.ErrNewConfigNoQuorum
	ErrReconfigInProgress       = proto.ErrReconfigInProgress
	ErrAPIError                 = proto.ErrAPIError
	ErrNoNode                   = proto.ErrNoNode
	ErrNoAuth                   = proto.ErrNoAuth
	ErrBadVersion               = proto.ErrBadVersion
	ErrNoChildrenForEphemerals  = proto.ErrNoChildrenForEphemerals
	ErrNodeExists               = proto.ErrNodeExists
	ErrNotEmpty                 = proto.ErrNotEmpty
	ErrInvalidCallback          = proto.ErrInvalidCallback
	ErrInvalidACL               = proto.ErrInvalidACL
	ErrAuthFailed               = proto.ErrAuthFailed
	ErrSessionMoved             = proto.ErrSessionMoved
	ErrNotReadOnly              = proto.ErrNotReadOnly
	ErrEphemeralOnLocalSession  = proto.ErrEphemeralOnLocalSession
	ErrNoWatcher                = proto.ErrNoWatcher
	ErrRequestTimeout           = proto.ErrRequestTimeout
	ErrReconfigDisabled         = proto.ErrReconfigDisabled
	ErrSessionClosedRequireSASL = proto.ErrSessionClosedRequireSASL
	ErrQuotaExceeded            = proto.ErrQuotaExceeded
	ErrThrottledOp              = proto.ErrThrottledOp
)

// ErrConnectionLoss says the connection carrying a request broke after the
// request was handed to it, before its reply arrived. The server may or may
// not have applied it; the client never sends it again by itself.
//
// What a caller may safely do, as with database/sql/driver.ErrBadConn:
//
//   - A read (Get, Exists, Children, GetACL, Sync, MultiRead...) changed
//     nothing: send it again. Config.Retry does that automatically.
//   - A write may have happened. Send it again only if a second application
//     is harmless or detectable: Set with a version fails with
//     ErrBadVersion if the first one took effect, Delete fails with
//     ErrNoNode, Create of a plain node fails with ErrNodeExists. A
//     sequential create cannot tell: use CreateProtected, which finds a
//     create whose reply was lost.
//   - Re-read what the write depended on, then decide.
//
// Requests that were still waiting for a connection when it broke are not
// affected: they are sent on the next connection of the same session.
const ErrConnectionLoss = proto.ErrConnectionLoss

// ErrSessionExpired says the session is gone, with its ephemeral nodes and
// watches: the server expired it, or no server could be reached within the
// session timeout. Requests and watches of the session fail with it. The
// client stays expired until Renew starts a new session (or at once when
// Config.RenewSession is set).
const ErrSessionExpired = proto.ErrSessionExpired

// ErrClosed is returned by requests made after Close, or still waiting
// when Close ended the session, and carried by watches that Close ended.
var ErrClosed = errors.New("client: closed")

// ErrInvalidPath is wrapped by the error of a request whose path ZooKeeper
// would refuse. Such a request is not sent.
var ErrInvalidPath = proto.ErrInvalidPath
