package zkdata

import (
	"errors"
	"fmt"

	"github.com/collie-io/collie/proto"
)

// Header is a transaction's TxnHeader.
type Header struct {
	Session int64 // clientId: the session the request came from
	Cxid    int32
	Zxid    int64
	Time    int64 // milliseconds since the epoch, on the leader's clock
	Type    proto.OpCode
}

// Txn is one transaction as ZooKeeper logs it: the header, the record of
// its type, and the tree digest after it when digests were enabled.
type Txn struct {
	Header
	// Record is one of the *...Txn types below, or nil for a
	// closeSession logged before CloseSessionTxn existed.
	Record any
	// Digest is the tree digest ZooKeeper computed after applying the
	// transaction; nil when the writer had digests disabled.
	Digest *TxnDigest
}

// TxnDigest is the digest of the whole tree after a transaction.
type TxnDigest struct {
	Version    int32
	TreeDigest int64
}

// CreateTxn creates a node. ParentCversion is the parent's cversion after
// the create; -1 (an old log's CreateTxnV0) means one more than it was.
// Create, create2 and the sub-transactions of a multi use it.
type CreateTxn struct {
	Path           string
	Data           []byte
	ACL            []proto.ACL
	Ephemeral      bool
	ParentCversion int32
}

// CreateTTLTxn creates a TTL node.
type CreateTTLTxn struct {
	Path           string
	Data           []byte
	ACL            []proto.ACL
	ParentCversion int32
	TTL            int64
}

// CreateContainerTxn creates a container node.
type CreateContainerTxn struct {
	Path           string
	Data           []byte
	ACL            []proto.ACL
	ParentCversion int32
}

// DeleteTxn deletes a node (delete and deleteContainer).
type DeleteTxn struct{ Path string }

// SetDataTxn sets a node's data; Version is the node's version after it.
// Reconfig transactions use it too, for /zookeeper/config.
type SetDataTxn struct {
	Path    string
	Data    []byte
	Version int32
}

// SetACLTxn sets a node's ACL; Version is its aversion after it.
type SetACLTxn struct {
	Path    string
	ACL     []proto.ACL
	Version int32
}

// CheckVersionTxn is a multi's version check.
type CheckVersionTxn struct {
	Path    string
	Version int32
}

// CreateSessionTxn opens a session with its negotiated timeout in ms.
type CreateSessionTxn struct{ Timeout int32 }

// CloseSessionTxn closes a session; Paths are the ephemerals the leader
// deleted with it (3.6 and later).
type CloseSessionTxn struct{ Paths []string }

// ErrorTxn is a failed request, or a failed multi's sub-transaction.
type ErrorTxn struct{ Err proto.Code }

// MultiTxn is a multi: its sub-transactions, each with its own type.
type MultiTxn struct{ Txns []SubTxn }

// SubTxn is one operation of a multi.
type SubTxn struct {
	Type   proto.OpCode
	Record any
}

// ErrBadTxn wraps every failure to decode a transaction.
var ErrBadTxn = errors.New("zkdata: bad transaction")

// maxTxnBytes bounds one transaction record: ZooKeeper refuses requests
// over jute.maxbuffer (1 MiB by default, configurable); a log written with
// a larger setting is still read, up to this.
const maxTxnBytes = 64 << 20

// DecodeTxn decodes a logged transaction: a TxnHeader, the record its type
// names, and an optional TxnDigest.
func DecodeTxn(b []byte) (*Txn, error) {
	if len(b) > maxTxnBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadTxn, len(b))
	}
	d := proto.NewDecoder(b)
	t := &Txn{Header: Header{Session: d.Long(), Cxid: d.Int(), Zxid: d.Long(), Time: d.Long(), Type: proto.OpCode(d.Int())}}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrBadTxn, err)
	}
	body := b[len(b)-d.Remaining():]
	rec, rest, err := decodeRecord(t.Type, body, false)
	if err != nil {
		return nil, fmt.Errorf("%w: zxid 0x%x, %s: %w", ErrBadTxn, t.Zxid, opName(t.Type), err)
	}
	t.Record = rec
	switch {
	case len(rest) == 12:
		d := proto.NewDecoder(rest)
		t.Digest = &TxnDigest{Version: d.Int(), TreeDigest: d.Long()}
	case len(rest) != 0:
		return nil, fmt.Errorf("%w: zxid 0x%x, %s: %d bytes after the record", ErrBadTxn, t.Zxid, opName(t.Type), len(rest))
	}
	return t, nil
}

// decodeRecord decodes the record of a transaction of type op from b and
// returns what follows it. inMulti restricts the types to those a multi
// holds.
func decodeRecord(op proto.OpCode, b []byte, inMulti bool) (rec any, rest []byte, err error) {
	d := proto.NewDecoder(b)
	switch op {
	case proto.OpCreate, proto.OpCreate2:
		c := &CreateTxn{Path: d.String(), Data: d.Buffer(), ACL: d.ACLs(), Ephemeral: d.Bool()}
		if d.Err() == nil && d.Remaining() == 0 {
			// CreateTxnV0, from ZooKeeper before 3.3: the parent's
			// cversion is one more than it was.
			c.ParentCversion = -1
		} else {
			c.ParentCversion = d.Int()
		}
		rec = c
	case proto.OpCreateTTL:
		rec = &CreateTTLTxn{Path: d.String(), Data: d.Buffer(), ACL: d.ACLs(), ParentCversion: d.Int(), TTL: d.Long()}
	case proto.OpCreateContainer:
		rec = &CreateContainerTxn{Path: d.String(), Data: d.Buffer(), ACL: d.ACLs(), ParentCversion: d.Int()}
	case proto.OpDelete, proto.OpDeleteContainer:
		rec = &DeleteTxn{Path: d.String()}
	case proto.OpSetData, proto.OpReconfig:
		rec = &SetDataTxn{Path: d.String(), Data: d.Buffer(), Version: d.Int()}
	case proto.OpSetACL:
		rec = &SetACLTxn{Path: d.String(), ACL: d.ACLs(), Version: d.Int()}
	case proto.OpCheck:
		rec = &CheckVersionTxn{Path: d.String(), Version: d.Int()}
	case proto.OpCreateSession:
		rec = &CreateSessionTxn{Timeout: d.Int()}
	case proto.OpCloseSession:
		// Before 3.6 a closeSession has no record; after, the paths its
		// ephemerals had. A bare digest can follow either.
		if d.Remaining() == 0 || d.Remaining() == 12 && digestFollows(b) {
			return nil, b, nil
		}
		rec = &CloseSessionTxn{Paths: d.Strings()}
	case proto.OpError:
		rec = &ErrorTxn{Err: proto.Code(d.Int())}
	case proto.OpMulti:
		n := d.Int()
		if d.Err() == nil && (n < 0 || int(n) > d.Remaining()/8) {
			d.Fail("multi of %d transactions in %d bytes", n, d.Remaining())
		}
		m := &MultiTxn{}
		for i := 0; i < int(n) && d.Err() == nil; i++ {
			sub := SubTxn{Type: proto.OpCode(d.Int())}
			data := d.BufferView()
			if d.Err() != nil {
				break
			}
			r, left, err := decodeRecord(sub.Type, data, true)
			if err != nil {
				return nil, nil, fmt.Errorf("multi op %d: %w", i, err)
			}
			if len(left) != 0 {
				return nil, nil, fmt.Errorf("multi op %d (%s): %d bytes after the record", i, opName(sub.Type), len(left))
			}
			sub.Record = r
			m.Txns = append(m.Txns, sub)
		}
		rec = m
	default:
		return nil, nil, fmt.Errorf("unknown transaction type %d", op)
	}
	if inMulti {
		switch op {
		case proto.OpCreate, proto.OpCreate2, proto.OpCreateTTL, proto.OpCreateContainer, proto.OpDelete,
			proto.OpDeleteContainer, proto.OpSetData, proto.OpError, proto.OpCheck:
		default:
			return nil, nil, fmt.Errorf("a multi cannot hold %s", opName(op))
		}
	}
	if err := d.Err(); err != nil {
		return nil, nil, err
	}
	return rec, b[len(b)-d.Remaining():], nil
}

// digestFollows reports whether b, 12 bytes, reads as a TxnDigest of a
// version ZooKeeper writes (1 or 2) rather than as the tail of a record.
func digestFollows(b []byte) bool {
	d := proto.NewDecoder(b)
	v := d.Int()
	return d.Err() == nil && (v == 1 || v == 2)
}

// opName names a transaction type as ZooKeeper's logs do.
func opName(op proto.OpCode) string {
	if name := op.String(); name != "unknown" {
		return name
	}
	return fmt.Sprintf("type %d", op)
}
