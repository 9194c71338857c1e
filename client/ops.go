package client

import (
	"context"
	"fmt"
	"time"

	"github.com/collie-io/collie/proto"
)

// opError says which request failed on which path; err stays matchable
// with errors.Is.
func opError(op, path string, err error) error {
	return fmt.Errorf("%s %s: %w", op, path, err)
}

// errOutcomeUnknown explains a context that ended after its request was
// written: like a connection loss, the request may or may not have been
// applied.
type errOutcomeUnknown struct{ err error }

func (e errOutcomeUnknown) Error() string {
	return e.err.Error() + " (after the request was sent: it may have been applied)"
}
func (e errOutcomeUnknown) Unwrap() error { return e.err }

// do sends cl and waits for its reply. It returns nil when the reply has
// arrived: the caller reads cl.code and the response, then releases cl.
// Otherwise it returns why there is no reply (the context ended, the
// connection broke, the session expired, the client closed), and cl is no
// longer the caller's. Idempotent calls are sent again after a retryable
// failure while Config.Retry allows.
func (c *Client) do(ctx context.Context, cl *call) error {
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			cl.release()
			return err
		}
		if err := c.queue.push(cl); err != nil {
			cl.release()
			return err
		}
		select {
		case <-cl.done:
		case <-ctx.Done():
			if cl.state.CompareAndSwap(callQueued, callAbandoned) {
				return ctx.Err()
			}
			if cl.state.CompareAndSwap(callSent, callAbandoned) {
				return errOutcomeUnknown{ctx.Err()}
			}
			<-cl.done
		}
		failure := cl.err
		if failure == nil && cl.idempotent && retryableCode(cl.code) {
			failure = cl.code
		}
		if failure == nil {
			return nil
		}
		var delay time.Duration
		again := cl.idempotent && c.cfg.Retry != nil && Retryable(failure)
		if again {
			delay, again = c.cfg.Retry.Delay(n)
		}
		if !again {
			if cl.err == nil {
				return nil
			}
			cl.release()
			return failure
		}
		c.log.Debug("retrying", "op", cl.op.String(), "attempt", n+1, "err", failure)
		if err := sleepCtx(ctx, delay); err != nil {
			cl.release()
			return err
		}
		cl.err, cl.code = nil, proto.OK
		if cl.xid > 0 {
			cl.renumber(c.nextXid())
		}
	}
}

// request sends a request whose body is body and whose reply decodes into
// resp(cl), for the operations too rare to need a pooled response record.
// On nil error the reply was OK: the caller reads it and releases cl.
func (c *Client) request(ctx context.Context, op proto.OpCode, idempotent bool, resp func(*call) proto.Record, body proto.Record) (*call, error) {
	cl, e := newCall(c.nextXid(), op)
	if body != nil {
		body.Encode(e)
	}
	cl.seal()
	cl.idempotent = idempotent
	if resp != nil {
		cl.resp = resp(cl)
	}
	if err := c.do(ctx, cl); err != nil {
		return nil, err
	}
	if cl.code != proto.OK {
		code := cl.code
		cl.release()
		return nil, code
	}
	return cl, nil
}

func aclOrOpen(acl []ACL) []ACL {
	if acl == nil {
		return WorldACL(PermAll)
	}
	return acl
}

// Create creates a node and returns its path (with the sequence number of
// a sequential node) and its Stat. A nil acl means WorldACL(PermAll). For
// the TTL modes use CreateTTL.
//
// A create that fails with ErrConnectionLoss may have happened; see
// CreateProtected.
func (c *Client) Create(ctx context.Context, path string, data []byte, mode CreateMode, acl []ACL) (string, Stat, error) {
	if mode.TTL() {
		return "", Stat{}, opError("create", path, fmt.Errorf("%w: mode %d needs CreateTTL", ErrBadArguments, mode))
	}
	return c.create(ctx, path, data, mode, acl, 0)
}

// CreateTTL creates a persistent node that the server deletes once it has
// had no children and no change for ttl (a TTL node; the server must have
// extendedTypesEnabled). mode is ModePersistentWithTTL or
// ModePersistentSequentialWithTTL (ModePersistent and
// ModePersistentSequential are taken to mean them).
func (c *Client) CreateTTL(ctx context.Context, path string, data []byte, mode CreateMode, acl []ACL, ttl time.Duration) (string, Stat, error) {
	switch mode {
	case ModePersistent:
		mode = ModePersistentWithTTL
	case ModePersistentSequential:
		mode = ModePersistentSequentialWithTTL
	}
	if !mode.TTL() {
		return "", Stat{}, opError("create", path, fmt.Errorf("%w: mode %d cannot have a TTL", ErrBadArguments, mode))
	}
	if ttl <= 0 || ttl.Milliseconds() > proto.MaxTTL {
		return "", Stat{}, opError("create", path, fmt.Errorf("%w: TTL %v out of range", ErrBadArguments, ttl))
	}
	return c.create(ctx, path, data, mode, acl, ttl)
}

// createOpCode returns the opcode that creates a node of mode and returns
// its Stat.
func createOpCode(mode CreateMode) proto.OpCode {
	switch {
	case mode.Container():
		return proto.OpCreateContainer
	case mode.TTL():
		return proto.OpCreateTTL
	}
	return proto.OpCreate2
}

func (c *Client) create(ctx context.Context, path string, data []byte, mode CreateMode, acl []ACL, ttl time.Duration) (string, Stat, error) {
	if !mode.Valid() {
		return "", Stat{}, opError("create", path, fmt.Errorf("%w: unknown mode %d", ErrBadArguments, mode))
	}
	sp, err := serverPath(c.chroot, path, mode.Sequential())
	if err != nil {
		return "", Stat{}, opError("create", path, err)
	}
	op := createOpCode(mode)
	cl, e := newCall(c.nextXid(), op)
	if op == proto.OpCreateTTL {
		req := proto.CreateTTLRequest{Path: sp, Data: data, ACL: aclOrOpen(acl), Flags: mode, TTL: ttl.Milliseconds()}
		req.Encode(e)
	} else {
		req := proto.CreateRequest{Path: sp, Data: data, ACL: aclOrOpen(acl), Flags: mode}
		req.Encode(e)
	}
	cl.seal()
	cl.resp = &cl.created
	if err := c.do(ctx, cl); err != nil {
		return "", Stat{}, opError("create", path, err)
	}
	if cl.code != proto.OK {
		code := cl.code
		cl.release()
		return "", Stat{}, opError("create", path, code)
	}
	created, stat := cl.created.Path, cl.created.Stat
	cl.release()
	cp, _ := clientPath(c.chroot, created)
	return cp, stat, nil
}

// Delete deletes a node if its version is version (AnyVersion for any).
func (c *Client) Delete(ctx context.Context, path string, version int32) error {
	sp, err := serverPath(c.chroot, path, false)
	if err != nil {
		return opError("delete", path, err)
	}
	cl, e := newCall(c.nextXid(), proto.OpDelete)
	req := proto.DeleteRequest{Path: sp, Version: version}
	req.Encode(e)
	cl.seal()
	if err := c.do(ctx, cl); err != nil {
		return opError("delete", path, err)
	}
	code := cl.code
	cl.release()
	if code != proto.OK {
		return opError("delete", path, code)
	}
	return nil
}

// oneShot prepares a read's one-shot watch on sp, if watch is set: the
// channel its event goes to (nil without a watch), whether the server must
// be asked to set it, and done, to call once the reply is in.
func (c *Client) oneShot(sp string, watch bool) (ch chan Event, ask bool, done func()) {
	if !watch {
		return nil, false, func() {}
	}
	ask = c.watches.begin(sp, false)
	return make(chan Event, 1), ask, func() { c.watches.finish(sp, false) }
}

// oneShotReq is the watch a read registers when its reply comes: none
// without a channel.
func oneShotReq(kind watchKind, sp string, ch chan Event) watchReq {
	if ch == nil {
		return watchReq{}
	}
	return watchReq{kind: kind, path: sp, ch: ch}
}

// Exists reports whether a node exists, with its Stat if it does.
func (c *Client) Exists(ctx context.Context, path string) (bool, Stat, error) {
	ok, stat, _, err := c.exists(ctx, path, false)
	return ok, stat, err
}

// ExistsW is Exists that also sets a one-shot watch, whether or not the
// node exists: the channel receives one Event when the node is created,
// changed or deleted (or EventNotWatching when the session ends first).
func (c *Client) ExistsW(ctx context.Context, path string) (bool, Stat, <-chan Event, error) {
	return c.exists(ctx, path, true)
}

func (c *Client) exists(ctx context.Context, path string, watch bool) (bool, Stat, <-chan Event, error) {
	sp, err := serverPath(c.chroot, path, false)
	if err != nil {
		return false, Stat{}, nil, opError("exists", path, err)
	}
	ch, ask, done := c.oneShot(sp, watch)
	defer done()
	cl, e := newCall(c.nextXid(), proto.OpExists)
	req := proto.ExistsRequest{Path: sp, Watch: ask}
	req.Encode(e)
	cl.seal()
	cl.resp, cl.idempotent = &cl.stat, true
	cl.watch = oneShotReq(watchExists, sp, ch)
	if err := c.do(ctx, cl); err != nil {
		return false, Stat{}, nil, opError("exists", path, err)
	}
	code, stat := cl.code, cl.stat
	cl.release()
	switch code {
	case proto.OK:
		return true, stat, ch, nil
	case proto.ErrNoNode:
		return false, Stat{}, ch, nil
	}
	return false, Stat{}, nil, opError("exists", path, code)
}

// Get returns a node's data and Stat.
func (c *Client) Get(ctx context.Context, path string) ([]byte, Stat, error) {
	data, stat, _, err := c.get(ctx, path, false)
	return data, stat, err
}

// GetW is Get that also sets a one-shot watch: the channel receives one
// Event when the node's data changes or the node is deleted (or
// EventNotWatching when the session ends first). No watch is set when the
// node does not exist; use ExistsW for that.
func (c *Client) GetW(ctx context.Context, path string) ([]byte, Stat, <-chan Event, error) {
	return c.get(ctx, path, true)
}

func (c *Client) get(ctx context.Context, path string, watch bool) ([]byte, Stat, <-chan Event, error) {
	sp, err := serverPath(c.chroot, path, false)
	if err != nil {
		return nil, Stat{}, nil, opError("get", path, err)
	}
	ch, ask, done := c.oneShot(sp, watch)
	defer done()
	cl, e := newCall(c.nextXid(), proto.OpGetData)
	req := proto.GetDataRequest{Path: sp, Watch: ask}
	req.Encode(e)
	cl.seal()
	cl.resp, cl.idempotent = &cl.data, true
	cl.watch = oneShotReq(watchData, sp, ch)
	if err := c.do(ctx, cl); err != nil {
		return nil, Stat{}, nil, opError("get", path, err)
	}
	code, data, stat := cl.code, cl.data.Data, cl.data.Stat
	cl.release()
	if code != proto.OK {
		return nil, Stat{}, nil, opError("get", path, code)
	}
	return data, stat, ch, nil
}

// Set replaces a node's data if its version is version (AnyVersion for
// any) and returns the new Stat.
func (c *Client) Set(ctx context.Context, path string, data []byte, version int32) (Stat, error) {
	sp, err := serverPath(c.chroot, path, false)
	if err != nil {
		return Stat{}, opError("set", path, err)
	}
	cl, e := newCall(c.nextXid(), proto.OpSetData)
	req := proto.SetDataRequest{Path: sp, Data: data, Version: version}
	req.Encode(e)
	cl.seal()
	cl.resp = &cl.stat
	if err := c.do(ctx, cl); err != nil {
		return Stat{}, opError("set", path, err)
	}
	code, stat := cl.code, cl.stat
	cl.release()
	if code != proto.OK {
		return Stat{}, opError("set", path, code)
	}
	return stat, nil
}

// Children returns the names of a node's children, in no particular
// order, and the node's Stat.
func (c *Client) Children(ctx context.Context, path string) ([]string, Stat, error) {
	children, stat, _, err := c.getChildren(ctx, path, false)
	return children, stat, err
}

// ChildrenW is Children that also sets a one-shot watch: the channel
// receives one Event when a child is created or deleted or the node is
// deleted (or EventNotWatching when the session ends first).
func (c *Client) ChildrenW(ctx context.Context, path string) ([]string, Stat, <-chan Event, error) {
	return c.getChildren(ctx, path, true)
}

func (c *Client) getChildren(ctx context.Context, path string, watch bool) ([]string, Stat, <-chan Event, error) {
	sp, err := serverPath(c.chroot, path, false)
	if err != nil {
		return nil, Stat{}, nil, opError("children", path, err)
	}
	ch, ask, done := c.oneShot(sp, watch)
	defer done()
	cl, e := newCall(c.nextXid(), proto.OpGetChildren2)
	req := proto.GetChildren2Request{Path: sp, Watch: ask}
	req.Encode(e)
	cl.seal()
	cl.resp, cl.idempotent = &cl.children, true
	cl.watch = oneShotReq(watchChild, sp, ch)
	if err := c.do(ctx, cl); err != nil {
		return nil, Stat{}, nil, opError("children", path, err)
	}
	code, children, stat := cl.code, cl.children.Children, cl.children.Stat
	cl.release()
	if code != proto.OK {
		return nil, Stat{}, nil, opError("children", path, code)
	}
	return children, stat, ch, nil
}

// AllChildrenNumber returns the number of descendants of a node, the node
// itself excluded.
func (c *Client) AllChildrenNumber(ctx context.Context, path string) (int, error) {
	sp, err := serverPath(c.chroot, path, false)
	if err != nil {
		return 0, opError("getAllChildrenNumber", path, err)
	}
	var resp proto.GetAllChildrenNumberResponse
	cl, err := c.request(ctx, proto.OpGetAllChildrenNumber, true,
		func(*call) proto.Record { return &resp }, &proto.GetAllChildrenNumberRequest{Path: sp})
	if err != nil {
		return 0, opError("getAllChildrenNumber", path, err)
	}
	cl.release()
	return int(resp.TotalNumber), nil
}

// Ephemerals returns the paths of the session's ephemeral nodes that
// start with prefix ("/" for all), as full paths.
func (c *Client) Ephemerals(ctx context.Context, prefix string) ([]string, error) {
	sp, err := serverPath(c.chroot, prefix, false)
	if err != nil {
		return nil, opError("getEphemerals", prefix, err)
	}
	var resp proto.GetEphemeralsResponse
	cl, err := c.request(ctx, proto.OpGetEphemerals, true,
		func(*call) proto.Record { return &resp }, &proto.GetEphemeralsRequest{PrefixPath: sp})
	if err != nil {
		return nil, opError("getEphemerals", prefix, err)
	}
	cl.release()
	out := resp.Ephemerals[:0]
	for _, p := range resp.Ephemerals {
		if cp, ok := clientPath(c.chroot, p); ok {
			out = append(out, cp)
		}
	}
	return out, nil
}

// GetACL returns a node's ACL and Stat.
func (c *Client) GetACL(ctx context.Context, path string) ([]ACL, Stat, error) {
	sp, err := serverPath(c.chroot, path, false)
	if err != nil {
		return nil, Stat{}, opError("getACL", path, err)
	}
	var resp proto.GetACLResponse
	cl, err := c.request(ctx, proto.OpGetACL, true,
		func(*call) proto.Record { return &resp }, &proto.GetACLRequest{Path: sp})
	if err != nil {
		return nil, Stat{}, opError("getACL", path, err)
	}
	cl.release()
	return resp.ACL, resp.Stat, nil
}

// SetACL replaces a node's ACL if its ACL version (Stat.Aversion) is
// version (AnyVersion for any) and returns the new Stat.
func (c *Client) SetACL(ctx context.Context, path string, acl []ACL, version int32) (Stat, error) {
	sp, err := serverPath(c.chroot, path, false)
	if err != nil {
		return Stat{}, opError("setACL", path, err)
	}
	cl, err := c.request(ctx, proto.OpSetACL, false,
		func(cl *call) proto.Record { return &cl.stat }, &proto.SetACLRequest{Path: sp, ACL: acl, Version: version})
	if err != nil {
		return Stat{}, opError("setACL", path, err)
	}
	stat := cl.stat
	cl.release()
	return stat, nil
}

// Sync waits until the server this client is connected to has applied
// every write committed when the sync reached the ensemble, so that reads
// after it see them.
func (c *Client) Sync(ctx context.Context, path string) error {
	sp, err := serverPath(c.chroot, path, false)
	if err != nil {
		return opError("sync", path, err)
	}
	cl, err := c.request(ctx, proto.OpSync, true, nil, &proto.SyncRequest{Path: sp})
	if err != nil {
		return opError("sync", path, err)
	}
	cl.release()
	return nil
}

// Check succeeds if a node's version is version. The protocol has no check
// outside a transaction, so it is a transaction of one CheckOp.
func (c *Client) Check(ctx context.Context, path string, version int32) error {
	_, err := c.Multi(ctx, CheckOp(path, version))
	return err
}

// AddAuth adds credentials to the session, such as
// AddAuth(ctx, "digest", []byte("user:password")). They are sent again on
// every later connection. When the server refuses them
// (ErrAuthFailed), it also closes the connection.
func (c *Client) AddAuth(ctx context.Context, scheme string, auth []byte) error {
	cl, e := newCall(proto.XidAuth, proto.OpAuth)
	pkt := proto.AuthPacket{Scheme: scheme, Auth: auth}
	pkt.Encode(e)
	cl.seal()
	cl.idempotent = true
	cl.auth = &Auth{Scheme: scheme, Data: append([]byte(nil), auth...)}
	if err := c.do(ctx, cl); err != nil {
		return fmt.Errorf("auth %s: %w", scheme, err)
	}
	code := cl.code
	cl.release()
	if code != proto.OK {
		return fmt.Errorf("auth %s: %w", scheme, code)
	}
	return nil
}

// WhoAmI returns the identities the session is authenticated as.
func (c *Client) WhoAmI(ctx context.Context) ([]ClientInfo, error) {
	var resp proto.WhoAmIResponse
	cl, err := c.request(ctx, proto.OpWhoAmI, true, func(*call) proto.Record { return &resp }, nil)
	if err != nil {
		return nil, fmt.Errorf("whoAmI: %w", err)
	}
	cl.release()
	return resp.ClientInfo, nil
}

// AddWatch sets a persistent watch on path and returns the stream of its
// events, until the stream is closed or the session ends. The stream also
// carries EventSession events: after StateDisconnected, node events may
// have been missed until StateReconnected, when the caller should read
// what it watches again. It ends with an EventNotWatching when the session
// expires.
func (c *Client) AddWatch(ctx context.Context, path string, mode AddWatchMode) (*Stream[Event], error) {
	sp, err := serverPath(c.chroot, path, false)
	if err != nil {
		return nil, opError("addWatch", path, err)
	}
	if mode != WatchPersistent && mode != WatchPersistentRecursive {
		return nil, opError("addWatch", path, fmt.Errorf("%w: unknown mode %d", ErrBadArguments, mode))
	}
	pw := &persistentWatch{path: sp, recursive: mode == WatchPersistentRecursive, events: newStream[Event]()}
	pw.events.onClose = func() { c.dropPersistent(pw) }
	c.mu.Lock()
	started := c.startStreamLocked(pw.events)
	c.mu.Unlock()
	if !started {
		return nil, opError("addWatch", path, ErrClosed)
	}
	if !pw.recursive && c.watches.addPlainLocally(pw) {
		return pw.events, nil
	}
	cl, e := newCall(c.nextXid(), proto.OpAddWatch)
	req := proto.AddWatchRequest{Path: sp, Mode: mode}
	req.Encode(e)
	cl.seal()
	cl.idempotent = true
	cl.watch = watchReq{kind: watchPersistent, path: sp, stream: pw}
	c.watches.begin(sp, true)
	defer c.watches.finish(sp, true)
	err = c.do(ctx, cl)
	if err == nil {
		if cl.code != proto.OK {
			err = cl.code
		}
		cl.release()
	}
	if err != nil {
		pw.events.halt()
		<-pw.events.exited
		return nil, opError("addWatch", path, err)
	}
	return pw.events, nil
}

// dropPersistent removes a closed stream's watch, and changes the server's
// as the registry says: removed when nothing else relies on it, made plain
// when only plain streams are left. While one-shot watches remain on the
// path the server's watch stays as it is: removing it would remove theirs
// too. Nothing is waited for; events the server still sends find no
// stream and are ignored.
func (c *Client) dropPersistent(pw *persistentWatch) {
	var cl *call
	switch c.watches.removeStream(pw) {
	case removeServerWatch:
		var e *proto.Encoder
		cl, e = newCall(c.nextXid(), proto.OpRemoveWatches)
		req := proto.RemoveWatchesRequest{Path: pw.path, Type: WatchAny}
		req.Encode(e)
	case makeServerPlain:
		var e *proto.Encoder
		cl, e = newCall(c.nextXid(), proto.OpAddWatch)
		req := proto.AddWatchRequest{Path: pw.path, Mode: WatchPersistent}
		req.Encode(e)
	default:
		return
	}
	cl.seal()
	cl.noWait = true
	if err := c.queue.push(cl); err != nil {
		cl.release()
	}
}

// RemoveWatches removes this client's one-shot watches of type t on path
// (WatchData: those of Get and Exists; WatchChildren: those of Children;
// WatchAny: both), at the server too. Each removed watch receives
// EventDataWatchRemoved or EventChildWatchRemoved. It fails with
// ErrNoWatcher when there is none. Persistent watches are removed by
// closing their stream.
func (c *Client) RemoveWatches(ctx context.Context, path string, t WatcherType) error {
	sp, err := serverPath(c.chroot, path, false)
	if err != nil {
		return opError("removeWatches", path, err)
	}
	if t != WatchData && t != WatchChildren && t != WatchAny {
		return opError("removeWatches", path, fmt.Errorf("%w: unknown watcher type %d", ErrBadArguments, t))
	}
	found, ask := c.watches.prepareRemove(sp, t, c.chroot)
	if !found {
		return opError("removeWatches", path, ErrNoWatcher)
	}
	if !ask {
		return nil
	}
	cl, e := newCall(c.nextXid(), proto.OpRemoveWatches)
	req := proto.RemoveWatchesRequest{Path: sp, Type: t}
	req.Encode(e)
	cl.seal()
	cl.watch = watchReq{kind: watchRemove, path: sp, remove: t}
	if err := c.do(ctx, cl); err != nil {
		return opError("removeWatches", path, err)
	}
	code := cl.code
	cl.release()
	if code != proto.OK {
		return opError("removeWatches", path, code)
	}
	return nil
}
