// Package cache keeps a local copy of znodes in sync through a persistent
// watch, as Apache Curator's CuratorCache does: the configuration-center
// pattern of reading configuration at start, hearing of every change, and
// reading again. It is built on the client package alone, and owns no
// node: it only reads.
//
// A Cache follows one of three scopes of a root path:
//
//   - Tree: the root and everything below it (Curator's CuratorCache and
//     TreeCache), through a recursive persistent watch on the root;
//   - Children: the root and its direct children (Curator's
//     PathChildrenCache, which leaves the root out), through the same
//     watch, the events of deeper nodes being ignored;
//   - Single: the root alone (Curator's NodeCache, or CuratorCache with
//     SINGLE_NODE_CACHE), through a plain persistent watch.
//
// The root need not exist: the cache holds it, and what is below it, from
// the moment it is created until it is deleted. A node whose ACL does not
// let the session read it is left out, with what is below it, as if it did
// not exist.
//
// # The copy
//
// Get, Children and Nodes read the copy, from any goroutine, without a
// request to the server. A Node is a path, its data and its Stat as last
// read. Data and Stat are read again when the node is created or its data
// changes; a node's Stat is not read again when only its children change,
// so its NumChildren and Cversion may lag (Children says what the copy
// holds below it).
//
// # Events
//
// Start sets the watch, then reads the scope: each node, then its
// children, and so on. It sends a Created event for each node found,
// parents before children, then one Initialized event. After that, each
// creation or data change the watch reports is read again and sent as
// Created or Changed, with the node's new value and the value the cache
// held before (Changed only when the node's Mzxid moved); each deletion is
// sent as Deleted, with the value the cache held. Events come in the order
// the cache changed, on a channel fed from a queue of the cache's own: the
// cache never waits for a slow reader and never drops an event.
//
// The cache reports values, not every write: a node that changes twice
// before the cache reads it is read once, at its newer value, and a node
// created and deleted before it is read may not be reported at all. What
// every consumer can count on is that, once the writes stop, the copy and
// the last event of each path agree with the server.
//
// # Connection loss and expiry
//
// ZooKeeper does not replay a persistent watch's events missed while a
// client was disconnected. When the connection breaks, Connected turns
// false. When the same session is back (StateReconnected), the cache reads
// its whole scope again and sends the differences with its copy: Created
// for nodes created meanwhile, Changed for nodes whose Mzxid moved (one
// event however many writes were missed; a node deleted and created again
// meanwhile is Changed too), Deleted for nodes gone; each once. Connected
// turns true again.
//
// When the session expires, the watch is gone with it. Once the client has
// a new session (Config.RenewSession, or a call to Renew: the cache never
// renews a session itself), the cache sets the watch again and catches up
// the same way. Until then Get answers from the copy as it was.
//
// A reading of the scope that fails while connected (the server timing
// out or shedding load) is tried again, backing off up to five seconds,
// until it succeeds or the connection breaks.
//
// # Goroutines and closing
//
// A started Cache runs two goroutines: one follows the watch and applies
// its events (the only writer of the copy and the only producer of
// events), the other hands the events to the channel. Close cancels the
// first, which removes the watch, and stops the second, which closes the
// channel; it returns once both have ended. When the client closes, the
// cache ends too: its channel is closed after the last event.
package cache
