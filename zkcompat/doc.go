// Package zkcompat holds the tests that hold Collie to Apache ZooKeeper
// 3.8's observable behaviour: differential runs of the same operations
// against a real ZooKeeper and a Collie server, and interoperability tests
// with ZooKeeper's own clients (zkCli.sh, the C client, Kazoo, Curator).
//
// The tests start the real ZooKeeper from the Debian package; scripts/test.sh
// installs it.
package zkcompat
