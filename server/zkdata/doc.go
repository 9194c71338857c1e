// Package zkdata owns Apache ZooKeeper's own data formats, read as
// ZooKeeper 3.4 to 3.9 write them: the snapshot files
// (version-2/snapshot.<zxid>, plain, gzip or snappy, with or without the
// trailing tree digest), the transaction log files (version-2/log.<zxid>),
// and the transaction records inside both the log and the quorum
// protocol's packets.
//
// It also owns ZooKeeper's in-memory database as those formats describe
// it: a DataTree that applies transactions exactly as ZooKeeper's
// DataTree.processTxn does (the parent cversion a create carries, a
// fuzzy snapshot's already-applied transactions replayed harmlessly, the
// quota stat nodes ZooKeeper keeps), and the table of sessions with their
// timeouts. Load reads a ZooKeeper data directory the way a starting
// ZooKeeper server does: the newest snapshot that reads cleanly, then
// every logged transaction after it.
//
// Every length read from a file is bounded before anything is allocated
// for it, and damage is reported with the file and offset; the package
// never returns a tree silently shorter than what the files hold. It does
// no I/O beyond reading the files it is given.
package zkdata
