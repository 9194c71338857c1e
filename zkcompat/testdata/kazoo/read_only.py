"""Reads from a server in read-only mode with Kazoo's read_only client.

The server is the last one running of its ensemble, started with read-only
mode enabled; the test created /kazoo-ro (b"v1", one child) before it lost
its quorum. A read-only client gets a read-only connection and reads; its
writes and syncs fail with NotReadOnlyCallError; a client that does not ask
for read-only service gets no session.
"""

import sys
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import NotReadOnlyCallError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KeeperState

from common import TIMEOUT, check, connect, eq, raises, run

ROOT = "/kazoo-ro"


def main():
    ro = connect(read_only=True)
    eq(ro.client_state, KeeperState.CONNECTED_RO, "the client's state")

    data, stat = ro.get(ROOT)
    eq((data, stat.version, stat.numChildren), (b"v1", 0, 1), "data read in read-only mode")
    eq(ro.get_children(ROOT), ["child"], "children read in read-only mode")
    check(ro.exists(ROOT + "/missing") is None, "exists of a missing node")

    fired = threading.Event()
    ro.get(ROOT, watch=lambda event: fired.set())
    raises(NotReadOnlyCallError, "create", ro.create, ROOT + "/new", b"x")
    raises(NotReadOnlyCallError, "set", ro.set, ROOT, b"v2")
    raises(NotReadOnlyCallError, "delete", ro.delete, ROOT + "/child")
    raises(NotReadOnlyCallError, "sync", ro.sync, ROOT)
    txn = ro.transaction()
    txn.create(ROOT + "/in-txn", b"x")
    raises(NotReadOnlyCallError, "transaction", txn.commit)
    data, stat = ro.get(ROOT)
    eq((data, stat.version), (b"v1", 0), "nothing changed")
    check(not fired.is_set(), "no watch fired")

    rw = KazooClient(hosts=sys.argv[1], timeout=TIMEOUT)
    raises(KazooTimeoutError, "a read-write client's connection", rw.start, timeout=3)
    rw.stop()
    rw.close()
    ro.stop()
    ro.close()


if __name__ == "__main__":
    run(main)
