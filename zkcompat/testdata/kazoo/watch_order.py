"""Checks ZooKeeper's ordering guarantee through Kazoo: a client receives
the reply to a read that sets a watch before any event of that watch, so a
watch set by a read that saw the old data always fires for the change.

A server that queues the change's event ahead of the read's reply breaks
this: Kazoo, like ZooKeeper's Java client, registers a watch when the reply
arrives and drops an event for a watch it does not know yet. The window is
narrow, so the script races a read with a write of another session many
times."""

import threading

from common import TIMEOUT, CheckFailed, clear, connect, eq, run

ROOT = "/kazoo-watch-order"
ROUNDS = 1000


def main():
    reader = connect()
    writer = connect()
    clear(reader, ROOT)
    node = ROOT + "/n"
    reader.create(node, b"-1", makepath=True)

    raced = 0
    for i in range(ROUNDS):
        value = b"%d" % i
        fired = threading.Event()
        write = writer.set_async(node, value)
        data, _ = reader.get(node, watch=lambda event: fired.set())
        write.get(timeout=TIMEOUT)
        if data == value:
            continue  # the read came after the write: nothing to wait for
        raced += 1
        if not fired.wait(TIMEOUT):
            raise CheckFailed("round %d: read %r before the write of %r, and its watch never fired"
                              % (i, data, value))
    print("ok: %d watches set just before a write fired" % raced, flush=True)
    eq(reader.get(node)[0], b"%d" % (ROUNDS - 1), "last write")

    reader.delete(ROOT, recursive=True)
    for c in (reader, writer):
        c.stop()
        c.close()


run(main)
