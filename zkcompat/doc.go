// Package zkcompat holds the tests that hold Collie to Apache ZooKeeper
// 3.8's observable behaviour: differential runs of the same operations
// against a real ZooKeeper and a Collie server, and interoperability tests
// with ZooKeeper's own clients (zkCli.sh, the C client, Kazoo, Curator).
//
// The tests start the real ZooKeeper from the Debian package; scripts/test.sh
// installs it.
//
// TestPipelinedDifferential and TestPipelinedHistory hold Collie to
// ZooKeeper's order of one session's requests when a client pipelines them.
// They run a few seeds by default; a soak runs more:
//
//	COLLIE_PIPELINE_SEEDS=200 go test -race -run 'TestPipelined' -timeout 3h ./zkcompat/
package zkcompat
