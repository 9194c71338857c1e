package client

import (
	"context"
	"fmt"
	"time"

	"github.com/collie-io/collie/proto"
)

// Op is one operation of a transaction (Multi: CreateOp, CreateTTLOp,
// DeleteOp, SetOp, CheckOp) or of a batch of reads (MultiRead: GetOp,
// ChildrenOp).
type Op struct {
	kind    proto.OpCode // OpCreate for every create, OpDelete, OpSetData, OpCheck, OpGetData, OpGetChildren
	path    string
	data    []byte
	version int32
	mode    CreateMode
	acl     []ACL
	ttl     time.Duration
}

// CreateOp creates a node, as Create does.
func CreateOp(path string, data []byte, mode CreateMode, acl []ACL) Op {
	return Op{kind: proto.OpCreate, path: path, data: data, mode: mode, acl: acl}
}

// CreateTTLOp creates a TTL node, as CreateTTL does.
func CreateTTLOp(path string, data []byte, mode CreateMode, acl []ACL, ttl time.Duration) Op {
	switch mode {
	case ModePersistent:
		mode = ModePersistentWithTTL
	case ModePersistentSequential:
		mode = ModePersistentSequentialWithTTL
	}
	return Op{kind: proto.OpCreate, path: path, data: data, mode: mode, acl: acl, ttl: ttl}
}

// DeleteOp deletes a node, as Delete does.
func DeleteOp(path string, version int32) Op {
	return Op{kind: proto.OpDelete, path: path, version: version}
}

// SetOp sets a node's data, as Set does.
func SetOp(path string, data []byte, version int32) Op {
	return Op{kind: proto.OpSetData, path: path, data: data, version: version}
}

// CheckOp fails the transaction unless a node's version is version.
func CheckOp(path string, version int32) Op {
	return Op{kind: proto.OpCheck, path: path, version: version}
}

// GetOp reads a node's data and Stat in a MultiRead.
func GetOp(path string) Op { return Op{kind: proto.OpGetData, path: path} }

// ChildrenOp reads a node's children in a MultiRead.
func ChildrenOp(path string) Op { return Op{kind: proto.OpGetChildren, path: path} }

// Path returns the path the operation names.
func (o Op) Path() string { return o.path }

func (o Op) name() string {
	switch o.kind {
	case proto.OpCreate:
		return "create"
	case proto.OpDelete:
		return "delete"
	case proto.OpSetData:
		return "set"
	case proto.OpCheck:
		return "check"
	case proto.OpGetData:
		return "get"
	case proto.OpGetChildren:
		return "children"
	}
	return "unknown op"
}

// OpResult is the outcome of one operation of Multi or MultiRead.
type OpResult struct {
	// Path is the created node's path for a create (with its sequence
	// number), the operation's path otherwise.
	Path string
	// Stat is the node's Stat after a set, a container or TTL create, and
	// as read by GetOp. (ZooKeeper returns none for a plain create in a
	// transaction.)
	Stat Stat
	// Data is what GetOp read.
	Data []byte
	// Children is what ChildrenOp read.
	Children []string
	// Err is the operation's failure. In a failed transaction, the
	// operation that failed carries its code, the others ErrRuntimeInconsistency
	// or nil (those that would have succeeded), as the server reports.
	Err error
}

// record returns the op's request record, paths below the chroot.
func (o Op) record(chroot string) (proto.MultiOp, error) {
	switch o.kind {
	case proto.OpCreate:
		if !o.mode.Valid() {
			return proto.MultiOp{}, fmt.Errorf("%w: unknown mode %d", ErrBadArguments, o.mode)
		}
		sp, err := serverPath(chroot, o.path, o.mode.Sequential())
		if err != nil {
			return proto.MultiOp{}, err
		}
		op := createOpCode(o.mode)
		if op == proto.OpCreate2 {
			// In a transaction, ZooKeeper answers create2 as create, without
			// the Stat; send what its own client sends.
			op = proto.OpCreate
		}
		if op == proto.OpCreateTTL {
			if o.ttl <= 0 || o.ttl.Milliseconds() > proto.MaxTTL {
				return proto.MultiOp{}, fmt.Errorf("%w: TTL %v out of range", ErrBadArguments, o.ttl)
			}
			return proto.MultiOp{Type: op, Req: &proto.CreateTTLRequest{Path: sp, Data: o.data, ACL: aclOrOpen(o.acl), Flags: o.mode, TTL: o.ttl.Milliseconds()}}, nil
		}
		return proto.MultiOp{Type: op, Req: &proto.CreateRequest{Path: sp, Data: o.data, ACL: aclOrOpen(o.acl), Flags: o.mode}}, nil
	}
	sp, err := serverPath(chroot, o.path, false)
	if err != nil {
		return proto.MultiOp{}, err
	}
	switch o.kind {
	case proto.OpDelete:
		return proto.MultiOp{Type: o.kind, Req: &proto.DeleteRequest{Path: sp, Version: o.version}}, nil
	case proto.OpSetData:
		return proto.MultiOp{Type: o.kind, Req: &proto.SetDataRequest{Path: sp, Data: o.data, Version: o.version}}, nil
	case proto.OpCheck:
		return proto.MultiOp{Type: o.kind, Req: &proto.CheckVersionRequest{Path: sp, Version: o.version}}, nil
	case proto.OpGetData:
		return proto.MultiOp{Type: o.kind, Req: &proto.GetDataRequest{Path: sp}}, nil
	case proto.OpGetChildren:
		return proto.MultiOp{Type: o.kind, Req: &proto.GetChildrenRequest{Path: sp}}, nil
	}
	return proto.MultiOp{}, fmt.Errorf("%w: not an operation", ErrBadArguments)
}

// Multi applies ops as one transaction: all of them or none. It returns
// one result per op. When the transaction fails, the error is the first
// failing op's, wrapped with its index and path, and the results say what
// became of each op.
func (c *Client) Multi(ctx context.Context, ops ...Op) ([]OpResult, error) {
	return c.multi(ctx, proto.OpMulti, ops)
}

// MultiRead reads with GetOp and ChildrenOp in one round trip. Each op
// succeeds or fails on its own: the error is nil unless the request as a
// whole failed, and each result's Err says how its read went.
func (c *Client) MultiRead(ctx context.Context, ops ...Op) ([]OpResult, error) {
	return c.multi(ctx, proto.OpMultiRead, ops)
}

func (c *Client) multi(ctx context.Context, op proto.OpCode, ops []Op) ([]OpResult, error) {
	name := "multi"
	if op == proto.OpMultiRead {
		name = "multiRead"
	}
	if len(ops) == 0 {
		return nil, nil
	}
	req := proto.MultiRequest{Ops: make([]proto.MultiOp, len(ops))}
	for i, o := range ops {
		read := o.kind == proto.OpGetData || o.kind == proto.OpGetChildren
		if read != (op == proto.OpMultiRead) {
			return nil, fmt.Errorf("%s: op %d (%s %s): %w: not allowed here", name, i, o.name(), o.path, ErrBadArguments)
		}
		rec, err := o.record(c.chroot)
		if err != nil {
			return nil, fmt.Errorf("%s: op %d (%s %s): %w", name, i, o.name(), o.path, err)
		}
		req.Ops[i] = rec
	}
	var resp proto.MultiResponse
	cl, e := newCall(c.nextXid(), op)
	req.Encode(e)
	cl.seal()
	cl.resp, cl.idempotent = &resp, op == proto.OpMultiRead
	if err := c.do(ctx, cl); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	code := cl.code
	cl.release()
	if len(resp.Results) == 0 && code != proto.OK {
		return nil, fmt.Errorf("%s: %w", name, code)
	}
	if len(resp.Results) != len(ops) {
		return nil, fmt.Errorf("%s: %w: %d results for %d ops", name, ErrMarshallingError, len(resp.Results), len(ops))
	}
	results := make([]OpResult, len(ops))
	var first error
	for i, r := range resp.Results {
		res := &results[i]
		res.Path = ops[i].path
		switch v := r.Resp.(type) {
		case *proto.CreateResponse:
			res.Path, _ = clientPath(c.chroot, v.Path)
		case *proto.Create2Response:
			res.Path, _ = clientPath(c.chroot, v.Path)
			res.Stat = v.Stat
		case *proto.SetDataResponse:
			res.Stat = v.Stat
		case *proto.GetDataResponse:
			res.Data, res.Stat = v.Data, v.Stat
		case *proto.GetChildrenResponse:
			res.Children = v.Children
		}
		if r.Type == proto.OpError && r.Err != proto.OK {
			res.Err = r.Err
		}
	}
	if op == proto.OpMulti {
		// The op that failed is the first error other than the
		// ErrRuntimeInconsistency of the ops after it.
		failed := -1
		for i := range results {
			if err := results[i].Err; err != nil && (failed < 0 || results[failed].Err == ErrRuntimeInconsistency && err != ErrRuntimeInconsistency) {
				failed = i
			}
		}
		if failed >= 0 {
			first = fmt.Errorf("%s: op %d (%s %s): %w", name, failed, ops[failed].name(), ops[failed].path, results[failed].Err)
		}
	}
	if first == nil && code != proto.OK {
		first = fmt.Errorf("%s: %w", name, code)
	}
	return results, first
}
