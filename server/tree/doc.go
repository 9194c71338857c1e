// Package tree owns the znode tree: nodes with their data, ACLs and Stat,
// children, the index of ephemerals by session, the sets of container and
// TTL nodes, the quotas under /zookeeper/quota and their stats, ACL
// matching, and a journal that undoes a failed multi.
//
// Tree is a data structure, not a protocol: it applies mutations whose
// preconditions the caller (package fsm) has checked, exactly as ZooKeeper's
// DataTree applies transactions that PrepRequestProcessor has validated. It
// does no I/O, starts no goroutines and never reads the clock; zxids and
// times come in as arguments.
package tree
