// Package watch owns a server's watch registry: which connection watches
// which znode, and who is to be notified when the tree changes. It is pure:
// no goroutines, no I/O, no clock, no logging. A Registry is not safe for
// concurrent use: the caller serializes registrations and triggers in the
// order the tree saw the reads and writes, so that a watch set by a read is
// fired by the first change after that read.
//
// # Model
//
// The registry reproduces ZooKeeper 3.8's server side exactly: two tables,
// one for data watches and one for child watches (DataTree's dataWatches and
// childWatches), each holding at most one watch per (watcher, path) with one
// of three modes: one-shot, persistent, or persistent-recursive.
//
//   - getData and exists register a one-shot watch in the data table; on the
//     server the two are the same thing.
//   - getChildren registers a one-shot watch in the child table.
//   - addWatch registers a persistent or recursive watch in both tables.
//
// A later registration for the same (watcher, path) in a table replaces the
// mode of the earlier one, as in 3.8: getData with a watch on a path that has
// a persistent watch turns the data half of it into a one-shot watch, which
// fires once and is gone, while the child half stays persistent. ZooKeeper
// 3.9 keeps both (ZOOKEEPER-4466); 3.8 does not, and 3.8 is the
// specification.
//
// # Events
//
// The state machine reports each change as ZooKeeper's DataTree does, and the
// caller passes each event to Trigger in order:
//
//	create  /a/b   NodeCreated /a/b, NodeChildrenChanged /a
//	delete  /a/b   NodeDeleted /a/b, NodeChildrenChanged /a
//	setData /a/b   NodeDataChanged /a/b
//
// NodeCreated and NodeDataChanged fire the data table; NodeChildrenChanged
// fires the child table; NodeDeleted fires both, and a watcher hit in both
// gets one event. A one-shot or persistent watch fires for its own path; a
// recursive watch fires for its path and every descendant, but never for
// NodeChildrenChanged. One-shot watches are removed when they fire. Every
// notification carries the changed node's path and state SyncConnected.
//
// # What the caller must do
//
//   - Register a watch only where ZooKeeper does: exists registers whether or
//     not the node exists; getData and getChildren only when it exists;
//     addWatch always. Never register for a connection after RemoveWatcher.
//   - Filter notifications by ACL. Since 3.8.4 ZooKeeper sends an event
//     only to a connection with READ permission on the node at the event's
//     path (the parent, for NodeChildrenChanged; the node as it was, for
//     NodeDeleted). A one-shot watch is consumed even when its event is
//     filtered out. Events that SetWatches returns are never filtered.
//   - Call RemoveWatcher when a connection closes.
//   - Answer removeWatches and checkWatches with NoWatcher when Remove or
//     Contains returns false. The server never sends the
//     DataWatchRemoved/ChildWatchRemoved/PersistentWatchRemoved events: a
//     client makes those up itself once the server says OK.
package watch
