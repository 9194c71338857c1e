"""Checks multi-operation transactions through Kazoo: a committed
transaction applies every operation at one zxid; a failed one applies none,
fires no watch, and reports which operation failed."""

import queue

from kazoo.exceptions import (BadVersionError, NodeExistsError, NoNodeError,
                              NotEmptyError, RolledBackError,
                              RuntimeInconsistency)
from kazoo.protocol.states import ZnodeStat

from common import check, clear, connect, eq, next_item, run

ROOT = "/kazoo-txn"


def kinds(results):
    """Names the type of each result, so that lists of results compare."""
    return [type(r).__name__ if not isinstance(r, str) else r for r in results]


def main():
    zk = connect()
    clear(zk, ROOT)
    zk.create(ROOT, b"v0")
    zk.create(ROOT + "/old", b"old")

    tx = zk.transaction()
    tx.create(ROOT + "/a", b"a")
    tx.check(ROOT, 0)
    tx.set_data(ROOT, b"v1", version=0)
    tx.create(ROOT + "/seq-", b"s", sequence=True)
    tx.create(ROOT + "/tmp", b"")
    tx.delete(ROOT + "/tmp")
    tx.delete(ROOT + "/old", version=0)
    results = tx.commit()
    eq(kinds(results), [ROOT + "/a", "bool", "ZnodeStat", ROOT + "/seq-0000000002",
                        ROOT + "/tmp", "bool", "bool"], "committed results")
    check(isinstance(results[2], ZnodeStat) and results[2].version == 1, "set_data result has the new version")
    data, stat = zk.get(ROOT)
    eq((data, stat.version, stat.numChildren), (b"v1", 1, 2), "root after the transaction")
    eq(sorted(zk.get_children(ROOT)), ["a", "seq-0000000002"], "children after the transaction")
    a = zk.exists(ROOT + "/a")
    check(a.czxid == stat.mzxid == stat.pzxid == results[2].mzxid, "every operation has the same zxid")

    # Failures: nothing is applied, the failed operation names its error, the
    # ones before it are rolled back and the ones after it never ran.
    events = queue.Queue()
    zk.exists(ROOT + "/b", watch=lambda e: events.put((e.type, e.path)))
    cases = [
        ("stale check", lambda tx: tx.check(ROOT, 0), BadVersionError),
        ("stale set", lambda tx: tx.set_data(ROOT, b"x", version=7), BadVersionError),
        ("create existing", lambda tx: tx.create(ROOT + "/a"), NodeExistsError),
        ("delete missing", lambda tx: tx.delete(ROOT + "/none"), NoNodeError),
        ("delete non-empty", lambda tx: tx.delete(ROOT), NotEmptyError),
        ("check missing", lambda tx: tx.check(ROOT + "/none", 0), NoNodeError),
    ]
    for name, failing, error in cases:
        tx = zk.transaction()
        tx.create(ROOT + "/b", b"b")
        tx.set_data(ROOT + "/a", b"changed")
        failing(tx)
        tx.create(ROOT + "/c")
        results = tx.commit()
        eq(kinds(results),
           [RolledBackError.__name__, RolledBackError.__name__, error.__name__,
            RuntimeInconsistency.__name__],
           "failed transaction (%s) results" % name)
    eq(zk.get(ROOT + "/a")[0], b"a", "failed transactions changed nothing")
    eq(sorted(zk.get_children(ROOT)), ["a", "seq-0000000002"], "failed transactions created nothing")
    eq(zk.get(ROOT)[1].version, 1, "failed transactions set nothing")

    # The exists watch on /b has not fired: the barrier's event comes first.
    zk.create(ROOT + "/barrier")
    zk.get(ROOT + "/barrier", watch=lambda e: events.put((e.type, e.path)))
    zk.set(ROOT + "/barrier", b"1")
    eq(next_item(events, "barrier"), ("CHANGED", ROOT + "/barrier"), "failed transactions fire no watch")

    # A transaction used as a context manager commits when the block ends.
    with zk.transaction() as tx:
        tx.create(ROOT + "/b", b"b")
        tx.check(ROOT + "/b", 0)
    eq(next_item(events, "exists watch"), ("CREATED", ROOT + "/b"), "committed transaction fires the watch")
    eq(zk.get(ROOT + "/b")[0], b"b", "context manager committed")

    # Read-only transactions: only checks.
    tx = zk.transaction()
    tx.check(ROOT + "/a", 0)
    tx.check(ROOT + "/b", 0)
    eq(kinds(tx.commit()), ["bool", "bool"], "transaction of checks")

    zk.delete(ROOT, recursive=True)
    zk.stop()
    zk.close()


run(main)
