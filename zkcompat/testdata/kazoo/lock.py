"""Checks Kazoo's Lock recipe: two sessions contend, the lock is exclusive,
passes to the next waiter on release and on the holder's session closing,
and guards a read-modify-write so that no increment is lost."""

import queue
import threading

from common import TIMEOUT, check, clear, connect, eq, next_item, run

ROOT = "/kazoo-lock"
LOCK = ROOT + "/lock"


def wait_for_contenders(zk, n):
    """Returns once the lock has n contender nodes, as a ChildrenWatch
    reports them."""
    counts = queue.Queue()

    @zk.ChildrenWatch(LOCK)
    def watch(children):
        counts.put(len(children))
        return len(children) != n

    while next_item(counts, "%d contenders" % n) != n:
        pass


def main():
    a = connect()
    b = connect()
    clear(a, ROOT)
    a.ensure_path(LOCK)

    lock_a = a.Lock(LOCK, "a")
    lock_b = b.Lock(LOCK, "b")
    check(lock_a.acquire(timeout=TIMEOUT), "a acquires the free lock")
    check(not lock_b.acquire(blocking=False), "b cannot acquire a held lock")
    eq(lock_a.contenders(), ["a"], "a non-blocking attempt leaves no contender")

    # b waits; a's release hands the lock to b.
    acquired = queue.Queue()
    waiter = threading.Thread(target=lambda: acquired.put(lock_b.acquire(timeout=TIMEOUT)), daemon=True)
    waiter.start()
    wait_for_contenders(a, 2)
    eq(lock_a.contenders(), ["a", "b"], "contenders in order")
    check(acquired.empty(), "b still waits while a holds the lock")
    lock_a.release()
    eq(next_item(acquired, "b's acquire"), True, "release hands the lock to b")
    waiter.join(TIMEOUT)
    eq(lock_b.contenders(), ["b"], "b holds the lock alone")

    # a waits; b's session closing hands the lock to a.
    waiter = threading.Thread(target=lambda: acquired.put(lock_a.acquire(timeout=TIMEOUT)), daemon=True)
    waiter.start()
    wait_for_contenders(a, 2)
    b.stop()
    b.close()
    eq(next_item(acquired, "a's acquire"), True, "the holder's session closing hands the lock to a")
    waiter.join(TIMEOUT)
    lock_a.release()
    eq(a.get_children(LOCK), [], "no contender left")

    # Mutual exclusion: each increment reads, then writes without a version,
    # so overlapping critical sections would lose increments.
    clients = [a, connect()]
    counter = ROOT + "/counter"
    a.create(counter, b"0")
    threads, rounds = 3, 5
    errors = queue.Queue()

    def worker(client, name):
        try:
            lock = client.Lock(LOCK, name)
            for _ in range(rounds):
                with lock:
                    value = int(client.get(counter)[0])
                    client.set(counter, str(value + 1).encode())
        except Exception as e:  # reported by the main thread
            errors.put(e)

    workers = [threading.Thread(target=worker, args=(c, "w%d-%d" % (i, j)), name="worker %d-%d" % (i, j), daemon=True)
               for i, c in enumerate(clients) for j in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(TIMEOUT * 3)
        check(not w.is_alive(), "%s finished" % w.name)
    check(errors.empty(), "no worker failed: %r" % (None if errors.empty() else errors.get()))
    eq(int(a.get(counter)[0]), len(workers) * rounds, "no increment lost under the lock")

    a.delete(ROOT, recursive=True)
    for c in clients:
        c.stop()
        c.close()


run(main)
