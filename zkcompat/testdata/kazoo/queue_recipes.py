"""Checks Kazoo's Queue and LockingQueue recipes: items come out in
priority order, and with two sessions producing and consuming concurrently
every item is delivered exactly once. A LockingQueue item that is released,
or whose consumer's session closes, is delivered again."""

import queue
import threading

from common import TIMEOUT, check, clear, connect, each_once, eq, run

ROOT = "/kazoo-queue"
ITEMS = 40


def drain(consume, name, out, errors):
    """Calls consume until it returns None, putting every item in out."""
    try:
        while True:
            item = consume()
            if item is None:
                return
            out.put((name, item))
    except Exception as e:  # reported by the main thread
        errors.put(e)


def run_consumers(consumers):
    """Runs each (name, consume) pair in its own thread until its queue is
    empty and returns every item consumed."""
    out, errors = queue.Queue(), queue.Queue()
    threads = [threading.Thread(target=drain, args=(fn, name, out, errors), name=name, daemon=True)
               for name, fn in consumers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 3)
        check(not t.is_alive(), "consumer %s finished" % t.name)
    check(errors.empty(), "no consumer failed: %r" % (None if errors.empty() else errors.get()))
    items = []
    while not out.empty():
        items.append(out.get())
    return items


def main():
    a = connect()
    b = connect()
    clear(a, ROOT)

    # Queue: priority first, then insertion order.
    q = a.Queue(ROOT + "/ordered")
    for value, priority in [(b"low-1", 200), (b"mid-1", 100), (b"high", 10), (b"mid-2", 100), (b"low-2", 200)]:
        q.put(value, priority=priority)
    eq(len(q), 5, "queue length")
    eq([q.get() for _ in range(6)], [b"high", b"mid-1", b"mid-2", b"low-1", b"low-2", None],
       "items by priority, then in order")

    # Queue: two sessions put, two consume concurrently; each item once.
    qa, qb = a.Queue(ROOT + "/shared"), b.Queue(ROOT + "/shared")
    for i in range(ITEMS):
        (qa if i % 2 else qb).put(b"item-%02d" % i)
    items = run_consumers([("a", qa.get), ("b", qb.get)])
    each_once([item for _, item in items], [b"item-%02d" % i for i in range(ITEMS)],
              "Queue delivers every item exactly once")

    # LockingQueue: an item stays until consumed; a released item comes back.
    la, lb = a.LockingQueue(ROOT + "/locking"), b.LockingQueue(ROOT + "/locking")
    la.put_all([b"first", b"second"])
    lb.put(b"urgent", priority=1)
    eq(la.get(TIMEOUT), b"urgent", "LockingQueue serves priority first")
    eq(len(la), 3, "a taken item stays in the queue")
    check(la.holds_lock(), "the taker holds the item's lock")
    eq(lb.get(TIMEOUT), b"first", "another consumer skips the taken item")
    check(la.release(), "release the taken item")
    eq(la.get(TIMEOUT), b"urgent", "a released item is served again")
    check(la.consume(), "consume")
    check(lb.consume(), "consume")
    eq(len(la), 1, "consumed items are gone")

    # The taker's session closes: its ephemeral lock goes, the item returns.
    c = connect()
    lc = c.LockingQueue(ROOT + "/locking")
    eq(lc.get(TIMEOUT), b"second", "c takes the last item")
    eq(la.get(0.2), None, "nothing left to take while c holds it")
    c.stop()
    c.close()
    eq(la.get(TIMEOUT), b"second", "the item returns when its taker's session closes")
    check(la.consume(), "consume")

    # LockingQueue: concurrent consumers take every item exactly once.
    for i in range(ITEMS):
        (la if i % 2 else lb).put(b"item-%02d" % i)

    def consumer(lq):
        def take():
            item = lq.get(0.5)
            if item is not None and not lq.consume():
                raise RuntimeError("lost the lock of %r before consuming it" % item)
            return item
        return take

    items = run_consumers([("a", consumer(la)), ("b", consumer(lb))])
    each_once([item for _, item in items], [b"item-%02d" % i for i in range(ITEMS)],
              "LockingQueue delivers every item exactly once")
    eq(len(la), 0, "LockingQueue is empty")

    a.delete(ROOT, recursive=True)
    for client in (a, b):
        client.stop()
        client.close()


run(main)
