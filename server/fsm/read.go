package fsm

import (
	"strings"
	"unicode/utf8"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
)

// Read answers a read request from the local state, with ZooKeeper's ACL
// checks and error codes. It does not register watches: the caller does,
// for a getData or getChildren that succeeded and for any exists.
//
// A read is answered once, by one server, and never replayed, so it
// follows the newest rules (tree.ACLRulesZK38, with tree.ACLRulesSASL and
// tree.ACLRulesX509 when this server has those providers), whatever the
// version of the entries
// that made the state it reads.
func (f *FSM) Read(session int64, op proto.OpCode, req proto.Record, ids []proto.ID) (proto.Record, proto.Code) {
	switch r := req.(type) {
	case *proto.ExistsRequest:
		if strings.IndexByte(r.Path, 0) >= 0 {
			return nil, proto.ErrBadArguments
		}
		n, ok := f.tree.Get(r.Path)
		if !ok {
			return nil, proto.ErrNoNode
		}
		return &proto.ExistsResponse{Stat: f.tree.Stat(n)}, proto.OK
	case *proto.GetDataRequest:
		n, code := f.readable(r.Path, proto.PermRead, ids)
		if code != proto.OK {
			return nil, code
		}
		return &proto.GetDataResponse{Data: n.Data, Stat: f.tree.Stat(n)}, proto.OK
	case *proto.GetChildrenRequest:
		n, code := f.readable(r.Path, proto.PermRead, ids)
		if code != proto.OK {
			return nil, code
		}
		return &proto.GetChildrenResponse{Children: n.Children()}, proto.OK
	case *proto.GetChildren2Request:
		n, code := f.readable(r.Path, proto.PermRead, ids)
		if code != proto.OK {
			return nil, code
		}
		return &proto.GetChildren2Response{Children: n.Children(), Stat: f.tree.Stat(n)}, proto.OK
	case *proto.GetACLRequest:
		n, code := f.readable(r.Path, proto.PermRead|proto.PermAdmin, ids)
		if code != proto.OK {
			return nil, code
		}
		acl := f.tree.ACL(n)
		if !tree.CheckACL(acl, proto.PermAdmin, ids, f.ReadRules()) {
			acl = maskDigests(acl)
		}
		return &proto.GetACLResponse{ACL: acl, Stat: f.tree.Stat(n)}, proto.OK
	case *proto.GetAllChildrenNumberRequest:
		if _, code := f.readable(r.Path, proto.PermRead, ids); code != proto.OK {
			return nil, code
		}
		return &proto.GetAllChildrenNumberResponse{TotalNumber: int32(f.tree.CountDescendants(r.Path))}, proto.OK
	case *proto.GetEphemeralsRequest:
		all := f.tree.Ephemerals(session)
		prefix := strings.TrimSpace(r.PrefixPath)
		out := make([]string, 0, len(all))
		for _, p := range all {
			if prefix == "" || prefix == "/" || strings.HasPrefix(p, r.PrefixPath) {
				out = append(out, p)
			}
		}
		return &proto.GetEphemeralsResponse{Ephemerals: out}, proto.OK
	case *proto.MultiRequest:
		return f.multiRead(r, ids)
	}
	return nil, proto.ErrUnimplemented
}

func (f *FSM) readable(path string, perm int32, ids []proto.ID) (*tree.Node, proto.Code) {
	n, ok := f.tree.Get(path)
	if !ok {
		return nil, proto.ErrNoNode
	}
	if !tree.CheckACL(f.tree.ACL(n), perm, ids, f.ReadRules()) {
		return nil, proto.ErrNoAuth
	}
	return n, proto.OK
}

// maskDigests hides the password hashes of digest ids from a reader
// without ADMIN permission, as ZooKeeper does.
func maskDigests(acl []proto.ACL) []proto.ACL {
	out := make([]proto.ACL, len(acl))
	for i, a := range acl {
		if a.ID.Scheme == tree.SchemeDigest {
			a.ID.ID = maskDigest(a.ID.ID)
		}
		out[i] = a
	}
	return out
}

// maskDigest hides the hash of a digest id as ZooKeeper does, with Java's
// id.replaceAll(":.*", ":x"): each colon and what follows it on its line
// become ":x", "." matching no line terminator (\n, \r, U+0085, U+2028,
// U+2029), so what comes after a line end shows, up to its own colon.
func maskDigest(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); {
		if id[i] != ':' {
			b.WriteByte(id[i])
			i++
			continue
		}
		b.WriteString(":x")
		i++
		for i < len(id) {
			r, size := utf8.DecodeRuneInString(id[i:])
			if r == '\n' || r == '\r' || r == '\u0085' || r == '\u2028' || r == '\u2029' {
				break
			}
			i += size
		}
	}
	return b.String()
}

// multiRead answers a multiRead. Its ops must all be reads, as for
// ZooKeeper: one that is not fails the whole request with
// MarshallingError, after an empty response when all its ops are writes
// (ZooKeeper reads them, then fails on the first, having started the
// response).
func (f *FSM) multiRead(m *proto.MultiRequest, ids []proto.ID) (proto.Record, proto.Code) {
	switch multiKind(m.Ops) {
	case opsWrite:
		return &proto.MultiResponse{}, proto.ErrMarshallingError
	case opsInvalid:
		return nil, proto.ErrMarshallingError
	}
	resp := &proto.MultiResponse{Results: make([]proto.OpResult, 0, len(m.Ops))}
	for _, op := range m.Ops {
		var res proto.OpResult
		switch r := op.Req.(type) {
		case *proto.GetDataRequest:
			if n, code := f.readable(r.Path, proto.PermRead, ids); code != proto.OK {
				res = proto.OpResult{Type: proto.OpError, Err: code}
			} else {
				res = proto.OpResult{Type: proto.OpGetData, Resp: &proto.GetDataResponse{Data: n.Data, Stat: f.tree.Stat(n)}}
			}
		case *proto.GetChildrenRequest:
			if n, code := f.readable(r.Path, proto.PermRead, ids); code != proto.OK {
				res = proto.OpResult{Type: proto.OpError, Err: code}
			} else {
				res = proto.OpResult{Type: proto.OpGetChildren, Resp: &proto.GetChildrenResponse{Children: n.Children()}}
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, proto.OK
}

// opsKind is what the ops of a multi or multiRead are together.
type opsKind int

const (
	opsNone opsKind = iota
	opsRead
	opsWrite
	// opsInvalid is a list that ZooKeeper's MultiOperationRecord does not
	// read: reads mixed with writes, or an op that is neither.
	opsInvalid
)

// multiKind returns what ops are together: getData and getChildren are
// reads; creates of every opcode, delete, setData and check are writes.
func multiKind(ops []proto.MultiOp) opsKind {
	kind := opsNone
	for _, op := range ops {
		k := opsWrite
		switch op.Type {
		case proto.OpGetData, proto.OpGetChildren:
			k = opsRead
		case proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL,
			proto.OpDelete, proto.OpSetData, proto.OpCheck:
		default:
			return opsInvalid
		}
		if kind != opsNone && kind != k {
			return opsInvalid
		}
		kind = k
	}
	return kind
}

// ReadRules are the ACL rules of reads and watch deliveries on this server.
func (f *FSM) ReadRules() tree.ACLRules {
	rules := tree.ACLRulesZK38
	if f.opts.SASLScheme {
		rules |= tree.ACLRulesSASL
	}
	if f.opts.X509Scheme {
		rules |= tree.ACLRulesX509
	}
	return rules
}
