// Package localread owns what a server answers from its own copy of the
// state, without a log or a leader: reads, the watches they set, ping,
// whoAmI, SetWatches, addWatch, checkWatches and removeWatches; and
// firing the watches a change triggers, to the watchers allowed to see
// it. Collie's ensemble servers and its ZooKeeper follower share it, so
// both answer a client alike.
package localread

import (
	"sync"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/conn"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/tree"
	"github.com/collie-io/collie/server/watch"
)

// State is a server's state as its local requests see it.
type State struct {
	// FSM is the state machine, held still (read-locked) by the caller
	// for the whole of a call.
	FSM *fsm.FSM
	// WatchMu guards Watches.
	WatchMu *sync.Mutex
	Watches *watch.Registry[*conn.Conn]
	// ObserveRead, if set, is told of every read that succeeded.
	ObserveRead func(req, resp proto.Record)
	// ObserveWatches, if set, is told how many watches each event fired.
	ObserveWatches func(t proto.EventType, fired int)
}

// Answer answers a request that does not go through the log, sync
// excepted: a request that is neither a read nor one of the watch
// requests gets Unimplemented.
func (s State) Answer(c *conn.Conn, op proto.OpCode, req proto.Record, auth []proto.ID) conn.Reply {
	switch op {
	case proto.OpPing:
		return conn.Reply{}
	case proto.OpWhoAmI:
		return conn.Reply{Resp: &proto.WhoAmIResponse{ClientInfo: fsm.WhoAmI(auth)}}
	case proto.OpReconfig:
		return conn.Reply{Err: proto.ErrReconfigDisabled}
	case proto.OpDeleteContainer:
		// Only the server's own sweeper deletes containers.
		return conn.Reply{Err: proto.ErrBadArguments}
	case proto.OpSetWatches, proto.OpSetWatches2:
		s.setWatches(c, req)
		return conn.Reply{}
	case proto.OpAddWatch:
		r := req.(*proto.AddWatchRequest)
		kind := watch.Persistent
		if r.Mode == proto.AddWatchPersistentRecursive {
			kind = watch.PersistentRecursive
		} else if r.Mode != proto.AddWatchPersistent {
			// ZooKeeper fails to map an unknown mode and answers with a
			// marshalling error.
			return conn.Reply{Err: proto.ErrMarshallingError}
		}
		s.WatchMu.Lock()
		s.Watches.Add(c, r.Path, kind)
		s.WatchMu.Unlock()
		return conn.Reply{Resp: &proto.ErrorResponse{Err: proto.OK}}
	case proto.OpCheckWatches, proto.OpRemoveWatches:
		var path string
		var typ proto.WatcherType
		if r, ok := req.(*proto.CheckWatchesRequest); ok {
			path, typ = r.Path, r.Type
		} else {
			r := req.(*proto.RemoveWatchesRequest)
			path, typ = r.Path, r.Type
		}
		s.WatchMu.Lock()
		var found bool
		if op == proto.OpCheckWatches {
			found = s.Watches.Contains(c, path, typ)
		} else {
			found = s.Watches.Remove(c, path, typ)
		}
		s.WatchMu.Unlock()
		if !found {
			return conn.Reply{Err: proto.ErrNoWatcher}
		}
		return conn.Reply{}
	}
	if !op.IsRead() {
		return conn.Reply{Err: proto.ErrUnimplemented}
	}
	resp, code := s.FSM.Read(c.Session(), op, req, auth)
	if code == proto.OK && s.ObserveRead != nil {
		s.ObserveRead(req, resp)
	}
	if path, kind, ok := watchOf(req, code); ok {
		s.WatchMu.Lock()
		s.Watches.Add(c, path, kind)
		s.WatchMu.Unlock()
	}
	return conn.Reply{Err: code, Resp: resp}
}

// watchOf returns the watch a read asks to set: exists sets one whether or
// not the node exists; getData and getChildren only when they succeed.
func watchOf(req proto.Record, code proto.Code) (string, watch.Kind, bool) {
	switch r := req.(type) {
	case *proto.ExistsRequest:
		if r.Watch && (code == proto.OK || code == proto.ErrNoNode) {
			if code == proto.OK {
				return r.Path, watch.Data, true
			}
			return r.Path, watch.Exist, true
		}
	case *proto.GetDataRequest:
		return r.Path, watch.Data, r.Watch && code == proto.OK
	case *proto.GetChildrenRequest:
		return r.Path, watch.Child, r.Watch && code == proto.OK
	case *proto.GetChildren2Request:
		return r.Path, watch.Child, r.Watch && code == proto.OK
	}
	return "", 0, false
}

// setWatches re-arms a reconnecting client's watches and fires those whose
// change it missed.
func (s State) setWatches(c *conn.Conn, req proto.Record) {
	var sw proto.SetWatches2
	switch r := req.(type) {
	case *proto.SetWatches:
		sw = proto.SetWatches2{RelativeZxid: r.RelativeZxid, DataWatches: r.DataWatches, ExistWatches: r.ExistWatches, ChildWatches: r.ChildWatches}
	case *proto.SetWatches2:
		sw = *r
	}
	s.WatchMu.Lock()
	defer s.WatchMu.Unlock()
	t := s.FSM.Tree()
	deliveries := s.Watches.SetWatches(c, &sw, func(path string) watch.NodeInfo {
		n, ok := t.Get(path)
		if !ok {
			return watch.NodeInfo{}
		}
		return watch.NodeInfo{Exists: true, Mzxid: n.Mzxid, Pzxid: n.Pzxid}
	})
	for _, d := range deliveries {
		d.Watcher.Notify(d.Event)
	}
}

// Notify fires the watches a change's events trigger, in order. Called
// with FSM held still, before the state changes again, so that a client
// gets the event before any reply that shows the change.
func (s State) Notify(events []fsm.Event) {
	s.WatchMu.Lock()
	defer s.WatchMu.Unlock()
	for _, ev := range events {
		fired := s.Watches.Trigger(ev.Type, ev.Path)
		if s.ObserveWatches != nil {
			s.ObserveWatches(ev.Type, len(fired))
		}
		for _, d := range fired {
			// A one-shot watch is spent even when its event is withheld.
			if tree.CheckACL(ev.ACL, proto.PermRead, d.Watcher.Auth(), s.FSM.ReadRules()) {
				d.Watcher.Notify(d.Event)
			}
		}
	}
}

// Forget drops the watches of a connection that has closed.
func (s State) Forget(c *conn.Conn) {
	s.WatchMu.Lock()
	s.Watches.RemoveWatcher(c)
	s.WatchMu.Unlock()
}
