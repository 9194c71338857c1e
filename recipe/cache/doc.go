// Package cache keeps a local copy of znodes in sync through a persistent
// watch, as Apache Curator's CuratorCache does: the configuration-center
// pattern of reading configuration at start, hearing of every change, and
// reading again. It is built on the client package alone.
//
// A Cache follows one of three scopes:
//
//   - Tree: the root and everything below it (Curator's CuratorCache,
//     TreeCache);
//   - Children: the root and its direct children (PathChildrenCache);
//   - Single: the root alone (NodeCache).
//
// # Events
//
// Start reads what the scope holds, sends a Created event for each node
// found (parents before children) and then one Initialized event. After
// that, every change the watch reports is read again and sent as Created,
// Changed or Deleted, with the node's new value and the value the cache
// held before. The events come in the order of the changes, on a channel
// fed from a queue of its own: the cache never waits for a slow reader and
// never drops an event. A node that changes twice quickly may be read once
// at its newer value: the cache reports values, not every write.
//
// # Connection loss and expiry
//
// ZooKeeper does not replay a persistent watch's events missed while the
// client was disconnected. When the session comes back (StateReconnected),
// the cache reads its scope again and sends the differences: nodes created,
// changed (by their mzxid) and deleted meanwhile, each once. When the
// session expires, the watch is gone; once the client has a new session
// (Renew, or Config.RenewSession), the cache sets the watch again and
// catches up the same way. Until then Get answers from the copy, which may
// be stale: Connected says whether the copy is being kept up to date.
//
// A Cache runs one goroutine, which Close ends; Close also removes the
// watch and closes the event channel.
package cache
