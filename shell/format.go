package shell

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
)

// usageError is a command the shell cannot run as written: its message is
// what zkCli.sh prints, such as the command's usage line.
type usageError string

func (e usageError) Error() string { return string(e) }

// serverError is a request the server, or the client on its behalf,
// refused: code and the path it concerned, as ZooKeeper's KeeperException
// carries them.
type serverError struct {
	code proto.Code
	path string
	msg  string // replaces zkCli's usual message when set
}

func (e *serverError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return keeperMessage(e.code, e.path)
}

func (e *serverError) Unwrap() error { return e.code }

// failure turns an error of the client into what the shell reports: a
// serverError for a code, a usageError for a path the client refused to
// send, the error itself otherwise (a closed client, a cancelled command).
func failure(err error, path string) error {
	var c proto.Code
	switch {
	case errors.As(err, &c):
		return &serverError{code: c, path: path}
	case errors.Is(err, client.ErrInvalidPath):
		return usageError(pathMessage(path))
	}
	return err
}

// keeperMessage is the message zkCli.sh prints for a failed request, from
// its CliWrapperException, falling back on KeeperException.getMessage.
func keeperMessage(code proto.Code, path string) string {
	if prefix, ok := keeperPrefix[code]; ok {
		return prefix + path
	}
	switch code {
	case proto.ErrReconfigInProgress:
		return "Another reconfiguration is in progress -- concurrent reconfigs not supported (yet)"
	case proto.ErrNewConfigNoQuorum:
		return "No quorum of new config is connected and up-to-date with the leader of last commmitted config - try invoking reconfiguration after new servers are connected and synced"
	}
	msg := "KeeperErrorCode = " + codeMessage(code)
	if path != "" {
		msg += " for " + path
	}
	return msg
}

var keeperPrefix = map[proto.Code]string{
	proto.ErrNoNode:                  "Node does not exist: ",
	proto.ErrNoChildrenForEphemerals: "Ephemerals cannot have children: ",
	proto.ErrNodeExists:              "Node already exists: ",
	proto.ErrNotEmpty:                "Node not empty: ",
	proto.ErrNotReadOnly:             "Not a read-only call: ",
	proto.ErrInvalidACL:              "Acl is not valid : ",
	proto.ErrNoAuth:                  "Insufficient permission : ",
	proto.ErrBadArguments:            "Arguments are not valid : ",
	proto.ErrBadVersion:              "version No is not valid : ",
	proto.ErrQuotaExceeded:           "Quota has exceeded : ",
}

// codeNames are the names of KeeperException.Code, and codeMessages the
// texts of KeeperException.getCodeMessage where they differ.
var (
	codeNames = map[proto.Code]string{
		proto.OK:                          "OK",
		proto.ErrSystemError:              "SYSTEMERROR",
		proto.ErrRuntimeInconsistency:     "RUNTIMEINCONSISTENCY",
		proto.ErrDataInconsistency:        "DATAINCONSISTENCY",
		proto.ErrConnectionLoss:           "CONNECTIONLOSS",
		proto.ErrMarshallingError:         "MARSHALLINGERROR",
		proto.ErrUnimplemented:            "UNIMPLEMENTED",
		proto.ErrOperationTimeout:         "OPERATIONTIMEOUT",
		proto.ErrBadArguments:             "BADARGUMENTS",
		proto.ErrUnknownSession:           "UNKNOWNSESSION",
		proto.ErrNewConfigNoQuorum:        "NEWCONFIGNOQUORUM",
		proto.ErrReconfigInProgress:       "RECONFIGINPROGRESS",
		proto.ErrAPIError:                 "APIERROR",
		proto.ErrNoNode:                   "NONODE",
		proto.ErrNoAuth:                   "NOAUTH",
		proto.ErrBadVersion:               "BADVERSION",
		proto.ErrNoChildrenForEphemerals:  "NOCHILDRENFOREPHEMERALS",
		proto.ErrNodeExists:               "NODEEXISTS",
		proto.ErrNotEmpty:                 "NOTEMPTY",
		proto.ErrSessionExpired:           "SESSIONEXPIRED",
		proto.ErrInvalidCallback:          "INVALIDCALLBACK",
		proto.ErrInvalidACL:               "INVALIDACL",
		proto.ErrAuthFailed:               "AUTHFAILED",
		proto.ErrSessionMoved:             "SESSIONMOVED",
		proto.ErrNotReadOnly:              "NOTREADONLY",
		proto.ErrEphemeralOnLocalSession:  "EPHEMERALONLOCALSESSION",
		proto.ErrNoWatcher:                "NOWATCHER",
		proto.ErrRequestTimeout:           "REQUESTTIMEOUT",
		proto.ErrReconfigDisabled:         "RECONFIGDISABLED",
		proto.ErrSessionClosedRequireSASL: "SESSIONCLOSEDREQUIRESASLAUTH",
		proto.ErrQuotaExceeded:            "QUOTAEXCEEDED",
		proto.ErrThrottledOp:              "THROTTLEDOP",
	}
	codeMessages = map[proto.Code]string{
		proto.OK:                          "ok",
		proto.ErrNotEmpty:                 "Directory not empty",
		proto.ErrSessionExpired:           "Session expired",
		proto.ErrInvalidCallback:          "Invalid callback",
		proto.ErrSessionMoved:             "Session moved",
		proto.ErrNotReadOnly:              "Not a read-only call",
		proto.ErrEphemeralOnLocalSession:  "Ephemeral node on local session",
		proto.ErrNoWatcher:                "No such watcher",
		proto.ErrReconfigDisabled:         "Reconfig is disabled",
		proto.ErrSessionClosedRequireSASL: "Session closed because client failed to authenticate",
		proto.ErrQuotaExceeded:            "Quota has exceeded",
		proto.ErrThrottledOp:              "Op throttled due to high load",
		proto.ErrSystemError:              "SystemError",
		proto.ErrRuntimeInconsistency:     "RuntimeInconsistency",
		proto.ErrDataInconsistency:        "DataInconsistency",
		proto.ErrConnectionLoss:           "ConnectionLoss",
		proto.ErrMarshallingError:         "MarshallingError",
		proto.ErrNewConfigNoQuorum:        "NewConfigNoQuorum",
		proto.ErrReconfigInProgress:       "ReconfigInProgress",
		proto.ErrUnimplemented:            "Unimplemented",
		proto.ErrOperationTimeout:         "OperationTimeout",
		proto.ErrBadArguments:             "BadArguments",
		proto.ErrAPIError:                 "APIError",
		proto.ErrNoNode:                   "NoNode",
		proto.ErrNoAuth:                   "NoAuth",
		proto.ErrBadVersion:               "BadVersion",
		proto.ErrNoChildrenForEphemerals:  "NoChildrenForEphemerals",
		proto.ErrNodeExists:               "NodeExists",
		proto.ErrInvalidACL:               "InvalidACL",
		proto.ErrAuthFailed:               "AuthFailed",
	}
)

func codeMessage(c proto.Code) string {
	if m, ok := codeMessages[c]; ok {
		return m
	}
	return "Unknown error " + strconv.Itoa(int(c))
}

func codeName(c proto.Code) string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return strconv.Itoa(int(c))
}

// checkPath validates a path as the Java client does before sending it
// (with a digit appended for a sequential create, whose name may end the
// path with "/"), and returns the message zkCli.sh prints for a bad one.
func checkPath(path string, sequential bool) error {
	if sequential {
		path += "1"
	}
	if proto.ValidatePath(path) == nil {
		return nil
	}
	return usageError(pathMessage(path))
}

// pathMessage is the message of Java's PathUtils for an invalid path.
func pathMessage(path string) string {
	switch {
	case path == "":
		return "Path length must be > 0"
	case path[0] != '/':
		return "Path must start with / character"
	case path[len(path)-1] == '/':
		return "Path must not end with / character"
	}
	err := proto.ValidatePath(path)
	if err == nil {
		return "Invalid path string \"" + path + "\""
	}
	msg := err.Error()
	reason := msg[strings.LastIndex(msg, ": ")+2:]
	return "Invalid path string \"" + path + "\" caused by " + reason
}

// javaDate formats a time in milliseconds as Java's Date.toString does, in
// the local time zone.
func javaDate(ms int64) string {
	return time.UnixMilli(ms).Format("Mon Jan 02 15:04:05 MST 2006")
}

// hex formats a zxid or session id as Java's "0x" + Long.toHexString.
func hex(v int64) string {
	return "0x" + strconv.FormatUint(uint64(v), 16)
}

// statLines returns a Stat as zkCli.sh prints it.
func statLines(s client.Stat) []string {
	return []string{
		"cZxid = " + hex(s.Czxid),
		"ctime = " + javaDate(s.Ctime),
		"mZxid = " + hex(s.Mzxid),
		"mtime = " + javaDate(s.Mtime),
		"pZxid = " + hex(s.Pzxid),
		"cversion = " + strconv.Itoa(int(s.Cversion)),
		"dataVersion = " + strconv.Itoa(int(s.Version)),
		"aclVersion = " + strconv.Itoa(int(s.Aversion)),
		"ephemeralOwner = " + hex(s.EphemeralOwner),
		"dataLength = " + strconv.Itoa(int(s.DataLength)),
		"numChildren = " + strconv.Itoa(int(s.NumChildren)),
	}
}

// jsonStat is a Stat in --json output, under zkCli.sh's names; zxids and
// the owner are hex strings, as a session id does not fit a JSON number.
type jsonStat struct {
	Czxid          string `json:"cZxid"`
	Ctime          int64  `json:"ctime"`
	Mzxid          string `json:"mZxid"`
	Mtime          int64  `json:"mtime"`
	Pzxid          string `json:"pZxid"`
	Cversion       int32  `json:"cversion"`
	DataVersion    int32  `json:"dataVersion"`
	ACLVersion     int32  `json:"aclVersion"`
	EphemeralOwner string `json:"ephemeralOwner"`
	DataLength     int32  `json:"dataLength"`
	NumChildren    int32  `json:"numChildren"`
}

func toJSONStat(s client.Stat) *jsonStat {
	return &jsonStat{
		Czxid: hex(s.Czxid), Ctime: s.Ctime, Mzxid: hex(s.Mzxid), Mtime: s.Mtime, Pzxid: hex(s.Pzxid),
		Cversion: s.Cversion, DataVersion: s.Version, ACLVersion: s.Aversion,
		EphemeralOwner: hex(s.EphemeralOwner), DataLength: s.DataLength, NumChildren: s.NumChildren,
	}
}

// aclLines returns an ACL entry as zkCli.sh's getAcl prints it: the id as
// jute's toString writes a record, then the permissions.
func aclLines(a client.ACL) []string {
	return []string{juteString(a.ID.Scheme) + "," + juteString(a.ID.ID), ": " + proto.PermString(a.Perms)}
}

// juteString escapes a string as jute's ToStringOutputArchive does.
func juteString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case 0:
			b.WriteString("%00")
		case '\n':
			b.WriteString("%0A")
		case '\r':
			b.WriteString("%0D")
		case ',':
			b.WriteString("%2C")
		case '}':
			b.WriteString("%7D")
		case '%':
			b.WriteString("%25")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// parseACL parses ACL entries as zkCli.sh's AclParser does:
// "scheme:id:perms[,scheme:id:perms...]", the id running to the last
// colon. Malformed entries and unknown permission letters are reported in
// warnings and skipped.
//
// One difference: zkCli.sh splits the text at every comma first, so it
// cannot write an id with commas, as x509 ids have (x509:CN=a,O=b:r):
// each piece has fewer than two colons and is refused. Here a run of such
// pieces that makes one entry (one colon, pieces without any, one colon)
// is read as that entry; every text zkCli.sh reads gives what it gives.
func parseACL(s string) (acl []client.ACL, warnings []string) {
	acl = []client.ACL{}
	pieces := strings.Split(s, ",")
	for i := 0; i < len(pieces); i++ {
		entry := pieces[i]
		if j, ok := commaID(pieces, i); ok {
			entry, i = strings.Join(pieces[i:j+1], ","), j
		}
		first, last := strings.IndexByte(entry, ':'), strings.LastIndexByte(entry, ':')
		if first < 0 || first == last {
			warnings = append(warnings, entry+" does not have the form scheme:id:perm")
			continue
		}
		var perms int32
		for _, c := range entry[last+1:] {
			switch c {
			case 'r':
				perms |= proto.PermRead
			case 'w':
				perms |= proto.PermWrite
			case 'c':
				perms |= proto.PermCreate
			case 'd':
				perms |= proto.PermDelete
			case 'a':
				perms |= proto.PermAdmin
			default:
				warnings = append(warnings, "Unknown perm type: "+string(c))
			}
		}
		acl = append(acl, client.ACL{Perms: perms, ID: client.ID{Scheme: entry[:first], ID: entry[first+1 : last]}})
	}
	return acl, warnings
}

// commaID reports whether pieces[i:j+1] is one entry whose id holds
// commas: pieces[i] and pieces[j] have one colon each, those between none.
func commaID(pieces []string, i int) (j int, ok bool) {
	if strings.Count(pieces[i], ":") != 1 {
		return 0, false
	}
	for j = i + 1; j < len(pieces); j++ {
		switch strings.Count(pieces[j], ":") {
		case 0:
		case 1:
			return j, true
		default:
			return 0, false
		}
	}
	return 0, false
}

// javaText decodes data as Java's new String(data, UTF_8): every byte
// that is not part of valid UTF-8 becomes U+FFFD. Nil data is "null".
func javaText(data []byte) string {
	if data == nil {
		return "null"
	}
	if utf8.Valid(data) {
		return string(data)
	}
	var b strings.Builder
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		b.WriteRune(r) // RuneError for an invalid byte, as Java's decoder
		data = data[n:]
	}
	return b.String()
}

// joinList formats names as Java's List.toString: "[a, b]".
func joinList(names []string) string {
	return "[" + strings.Join(names, ", ") + "]"
}

// parseInt parses an int option value; flag names the option in the error.
func parseInt(value, flag string) (int32, error) {
	v, err := strconv.ParseInt(value, 10, 32)
	if err != nil {
		return 0, usageError(fmt.Sprintf("-%s argument must be an int value", flag))
	}
	return int32(v), nil
}
