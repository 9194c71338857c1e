"""Uses a Collie server that follows a ZooKeeper ensemble as its observer.

The test created /kazoo-ro (b"v1", one child) through the ensemble. Like a
ZooKeeper observer in sync, the follower gives a client that accepts a
read-only session a session of the ensemble: it reads what the ensemble
has, and its writes, transactions and syncs go to the ZooKeeper leader.
"""

from kazoo.exceptions import NodeExistsError
from kazoo.protocol.states import KeeperState

from common import check, clear, connect, eq, raises, run

ROOT = "/kazoo-ro"
RW = "/kazoo-follow"


def main():
    zk = connect(read_only=True)
    eq(zk.client_state, KeeperState.CONNECTED, "the state of a client that accepts read-only")
    data, stat = zk.get(ROOT)
    eq((data, stat.version, stat.numChildren), (b"v1", 0, 1), "data the ensemble has")

    clear(zk, RW)
    eq(zk.create(RW, b"a"), RW, "create")
    raises(NodeExistsError, "create again", zk.create, RW, b"b")
    eq(zk.set(RW, b"b").version, 1, "version after set")
    txn = zk.transaction()
    txn.create(RW + "/t", b"t")
    txn.set_data(RW, b"c", version=1)
    eq(len(txn.commit()), 2, "results of a transaction")
    eq(zk.sync(RW), RW, "sync")
    data, stat = zk.get(RW)
    eq((data, stat.version, stat.numChildren), (b"c", 2, 1), "read after the writes")
    zk.delete(RW, recursive=True)
    check(zk.exists(RW) is None, "deleted")
    zk.stop()
    zk.close()


if __name__ == "__main__":
    run(main)
