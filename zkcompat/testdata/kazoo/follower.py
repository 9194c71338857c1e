"""Uses a Collie server that follows a ZooKeeper ensemble as its observer.

The test created /kazoo-ro (b"v1", one child) through the ensemble. A
read-only client gets a read-only session of the follower and cannot
write; a read-write client gets a session of the ensemble, whose writes,
transactions and syncs the follower forwards to the ZooKeeper leader, and
reads what it wrote.
"""

from kazoo.exceptions import NodeExistsError, NotReadOnlyCallError
from kazoo.protocol.states import KeeperState

from common import check, clear, connect, eq, raises, run
from read_only import ROOT, read_only_client

RW = "/kazoo-follow"


def main():
    ro = read_only_client()
    raises(NotReadOnlyCallError, "a read-only client's create", ro.create, ROOT + "/new", b"x")

    rw = connect()
    eq(rw.client_state, KeeperState.CONNECTED, "the read-write client's state")
    clear(rw, RW)
    eq(rw.create(RW, b"a"), RW, "create")
    raises(NodeExistsError, "create again", rw.create, RW, b"b")
    eq(rw.set(RW, b"b").version, 1, "version after set")
    txn = rw.transaction()
    txn.create(RW + "/t", b"t")
    txn.set_data(RW, b"c", version=1)
    eq(len(txn.commit()), 2, "results of a transaction")
    eq(rw.sync(RW), RW, "sync")
    data, stat = rw.get(RW)
    eq((data, stat.version, stat.numChildren), (b"c", 2, 1), "read after the writes")
    rw.delete(RW, recursive=True)
    check(rw.exists(RW) is None, "deleted")
    rw.stop()
    rw.close()
    ro.stop()
    ro.close()


if __name__ == "__main__":
    run(main)
