package fsm

import (
	"errors"
	"fmt"
	"slices"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
)

// EntryType is the first byte of every log entry after its version. Apply
// dispatches on it; an unknown type stops the replica rather than let it
// diverge.
type EntryType uint8

const (
	// EntryCreateSession opens a session with an id and a negotiated
	// timeout.
	EntryCreateSession EntryType = 1
	// EntryCloseSession ends a session, by the client's request or by
	// expiry, and deletes its ephemeral nodes.
	EntryCloseSession EntryType = 2
	// EntryRequest is a client write: create, delete, setData, setACL,
	// check or multi, with the session's identities for ACL checks.
	EntryRequest EntryType = 3
	// EntryDeleteContainer deletes an empty container or an expired TTL
	// node, if it still is one when applied.
	EntryDeleteContainer EntryType = 4
	// EntrySetSecret sets the secret that session passwords are derived
	// from (Body), unless one is set: every server of an ensemble must
	// check the passwords the others hand out, so the secret is part of
	// the replicated state. The first leader proposes it.
	EntrySetSecret EntryType = 5
	// EntryMoveSession makes the proposing server (Origin) the owner of
	// a session that reconnected to it: writes of the session that come
	// through any other server fail with SessionMoved from then on, as in
	// ZooKeeper.
	EntryMoveSession EntryType = 6
	// EntryMemberLog records that the voter whose id is Body (8 bytes, big
	// endian) has held the ensemble's log: it acknowledged entries, so
	// majorities may have counted on it. A voter that comes back without
	// its data must not be taken for a new one (see FSM.HeldLog). The
	// leader proposes it once per voter.
	EntryMemberLog EntryType = 7
)

// SecretLen is the length of the session secret.
const SecretLen = 32

// entryVersion is the version of the entries this code writes, the newest
// it knows. An entry's version names its encoding and the rules it applies
// under: Apply decides an entry of each version it knows by that version's
// rules, so a replica that replays an old entry from its log, or applies
// one an older leader wrote, reaches the state the code that wrote the
// entry reached, as the replicas that applied it then did, or that hold it
// in a snapshot. An entry of a version this code does not know stops the
// replica (ErrUnknownEntry): a member still running older code stops at the
// first entry a newer leader writes, and rejoins once upgraded.
//
// Version 1 is Collie's first. Version 2 has the same encoding and applies
// writes by ZooKeeper 3.8's rules, where version 1 did not
// (tree.ACLRulesV1 and multi's v1 branches keep version 1's):
//
//   - An "auth" ACL expands to the caller's digest identities in the order
//     ZooKeeper lists them (tree.ConnOrder), where version 1 took them in
//     the entry's order and took the super identity too.
//   - ACL schemes and ids are decoded as Java decodes UTF-8 before they are
//     checked and kept (version 1 kept them as sent); a digest id is valid
//     as Java's split(":") reads it (version 1: exactly one colon); ip ids
//     are IPv4 only, their numbers read as Integer.parseInt reads them, and
//     match by those rules too (version 1: IPv4 or IPv6 as net/netip).
//   - A multi with an op that is not a write fails whole with
//     MarshallingError (version 1 failed that op with BadArguments).
//   - A multi's creates are rebuilt from their flags: a createTTL without a
//     TTL mode is a plain create, and a create with one fails the multi
//     with MarshallingError (version 1 kept each request as it came and
//     checked its TTL against its flags, as for a request alone).
//
// The same changes need no version where they decide nothing an entry
// applies. Reads are answered by each server from its own state and never
// replayed: getACL's masking of digest ids, multiRead's refusal of writes
// and the order whoAmI lists identities in follow the newest rules. What is
// decided before an entry is written is in the entry: the identity digest
// auth makes of any input, the text of a client's address, and which
// identities a connection has, in the order they came, make the entry's
// Auth, which every replica applies alike.
//
// Version 3 adds AuthSchemes, the schemes beyond digest and ip that the
// proposing server has providers for (ZooKeeper's authProvider.N), encoded
// after Body, and applies writes by version 2's rules plus what those
// providers add: with "sasl" there, sasl ids are valid in ACLs, match, and
// count for "auth" (tree.ACLRulesSASL). Whether a scheme has a provider is
// the proposing server's configuration, as in ZooKeeper, where the leader
// checks every write; carried in the entry, it applies alike on every
// replica and at every replay, whatever their own configuration.
//
// Version 4 encodes as version 3 and adds the x509 scheme to the schemes
// AuthSchemes may name (tree.ACLRulesX509): x509 ids are valid in ACLs as
// Java's X500Principal reads them, match, and count for "auth". A version
// 3 entry never names x509; a replica of version 3 code would ignore it
// and decide otherwise, so naming it needs the new version.
//
// Version 5 adds EnforceQuota, encoded after AuthSchemes, and applies
// every entry by version 4's rules plus ZooKeeper's quotas: creates,
// deletes and setData keep the stats of the quotas they fall under
// (tree.KeepQuotaStats), and with EnforceQuota a create or setData that
// would take a quota past a hard limit fails with QuotaExceeded. Entries
// of earlier versions keep no stats: replicas that applied them did not.
const entryVersion = 5

// ErrUnknownEntry is returned when a log entry is of a version or type this
// server does not know: the log was written by a newer Collie, and applying
// what we cannot read would diverge from the other replicas.
var ErrUnknownEntry = errors.New("fsm: unknown log entry")

// Entry is one replicated command.
//
// Encoding (jute, after a version byte and a type byte): ReqID long, Origin
// long, Session long, Cxid int, Time long, Timeout int, Op int, Auth as a
// vector of (scheme, id), Body buffer, then from version 3 on AuthSchemes as
// a vector of strings. Every type uses the same fields; those a type does
// not need are zero. Versions 1 and 2 encode alike and apply differently
// (see entryVersion).
type Entry struct {
	// Version is the version of the rules the entry applies under, written
	// as its version byte. Zero is this code's version (entryVersion):
	// Marshal writes that, and Apply applies by it. UnmarshalEntry sets it.
	Version uint8
	Type    EntryType
	// ReqID identifies the proposal on the server that made it, so that
	// server can hand the result to the waiting client.
	ReqID uint64
	// Origin is the id of the server that proposed the entry.
	Origin uint64
	// Session is the client session the entry acts for.
	Session int64
	// Cxid is the client's xid of the request.
	Cxid int32
	// Time is the proposer's wall clock in milliseconds since the epoch,
	// used for ctime and mtime: Apply never reads a clock.
	Time int64
	// Timeout is the negotiated session timeout in milliseconds
	// (EntryCreateSession).
	Timeout int32
	// Op is the request's opcode (EntryRequest).
	Op proto.OpCode
	// Auth is the session's identities at the time of the request, in the
	// order its connection added them. One may come twice: a connection
	// records an identity added again where that changes the order
	// ZooKeeper lists them in (tree.IDSet.Add).
	Auth []proto.ID
	// AuthSchemes are the ACL schemes beyond digest and ip that the
	// proposing server has providers for: "sasl" (version 3 on), "x509"
	// (version 4 on), or none (EntryRequest).
	AuthSchemes []string
	// EnforceQuota says the proposing server enforces quotas
	// (zookeeper.enforceQuota), as ZooKeeper's leader decides for every
	// write; carried in the entry, it applies alike everywhere (version 5
	// on; EntryRequest).
	EnforceQuota bool
	// Body is the request record, jute-encoded (EntryRequest), the path
	// (EntryDeleteContainer), the secret (EntrySetSecret), or a member's
	// id (EntryMemberLog).
	Body []byte
}

// Marshal encodes the entry for the log.
func (e *Entry) Marshal() []byte {
	enc := proto.NewEncoder(make([]byte, 0, 64+len(e.Body)))
	b := enc.Bytes()
	b = append(b, e.version(), byte(e.Type))
	enc = proto.NewEncoder(b)
	enc.Long(int64(e.ReqID))
	enc.Long(int64(e.Origin))
	enc.Long(e.Session)
	enc.Int(e.Cxid)
	enc.Long(e.Time)
	enc.Int(e.Timeout)
	enc.Int(int32(e.Op))
	enc.Int(int32(len(e.Auth)))
	for _, id := range e.Auth {
		enc.String(id.Scheme)
		enc.String(id.ID)
	}
	enc.Buffer(e.Body)
	if e.version() >= 3 {
		enc.Int(int32(len(e.AuthSchemes)))
		for _, s := range e.AuthSchemes {
			enc.String(s)
		}
	}
	if e.version() >= 5 {
		enc.Bool(e.EnforceQuota)
	}
	return enc.Bytes()
}

// UnmarshalEntry decodes a log entry.
func UnmarshalEntry(b []byte) (*Entry, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("%w: %d bytes", ErrUnknownEntry, len(b))
	}
	if !knownVersion(b[0]) {
		return nil, fmt.Errorf("%w: version %d", ErrUnknownEntry, b[0])
	}
	e := &Entry{Version: b[0], Type: EntryType(b[1])}
	switch e.Type {
	case EntryCreateSession, EntryCloseSession, EntryRequest, EntryDeleteContainer, EntrySetSecret, EntryMoveSession, EntryMemberLog:
	default:
		return nil, fmt.Errorf("%w: type %d", ErrUnknownEntry, b[1])
	}
	d := proto.NewDecoder(b[2:])
	e.ReqID = uint64(d.Long())
	e.Origin = uint64(d.Long())
	e.Session = d.Long()
	e.Cxid = d.Int()
	e.Time = d.Long()
	e.Timeout = d.Int()
	e.Op = proto.OpCode(d.Int())
	n := d.Int()
	if n < 0 || int(n) > d.Remaining()/8 {
		return nil, fmt.Errorf("%w: %d identities", ErrUnknownEntry, n)
	}
	if n > 0 {
		e.Auth = make([]proto.ID, n)
		for i := range e.Auth {
			e.Auth[i] = proto.ID{Scheme: d.String(), ID: d.String()}
		}
	}
	// The body shares b: log entries are never changed once written, and
	// the body is decoded again, with copies, before anything keeps it.
	e.Body = d.BufferView()
	if e.Version >= 3 {
		n := d.Int()
		if n < 0 || int(n) > d.Remaining()/4 {
			return nil, fmt.Errorf("%w: %d auth schemes", ErrUnknownEntry, n)
		}
		for range n {
			e.AuthSchemes = append(e.AuthSchemes, d.String())
		}
	}
	if e.Version >= 5 {
		e.EnforceQuota = d.Bool()
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("fsm: decode entry: %w", err)
	}
	return e, nil
}

// version returns the version the entry applies under.
func (e *Entry) version() uint8 {
	if e.Version == 0 {
		return entryVersion
	}
	return e.Version
}

// knownVersion reports whether this code applies entries of version v.
func knownVersion(v uint8) bool { return v >= 1 && v <= entryVersion }

// quotas reports whether the entry's version keeps quota stats.
func (e *Entry) quotas() bool { return e.version() >= 5 }

// aclRules are the ACL rules of the entry's version.
func (e *Entry) aclRules() tree.ACLRules {
	if e.version() == 1 {
		return tree.ACLRulesV1
	}
	rules := tree.ACLRulesZK38
	if e.version() >= 3 && slices.Contains(e.AuthSchemes, tree.SchemeSASL) {
		rules |= tree.ACLRulesSASL
	}
	if e.version() >= 4 && slices.Contains(e.AuthSchemes, tree.SchemeX509) {
		rules |= tree.ACLRulesX509
	}
	return rules
}
