"""Checks Kazoo's Counter recipe: concurrent increments from two sessions
and several threads each lose nothing, as every change is a versioned set
retried on BadVersion."""

import queue
import threading

from common import TIMEOUT, check, clear, connect, each_once, eq, run

ROOT = "/kazoo-counter"


def main():
    clients = [connect(), connect()]
    zk = clients[0]
    clear(zk, ROOT)

    counter = zk.Counter(ROOT + "/int")
    eq(counter.value, 0, "a new counter starts at its default")
    counter += 5
    counter -= 2
    eq((counter.pre_value, counter.post_value, counter.value), (5, 3, 3), "sequential changes")

    floats = zk.Counter(ROOT + "/float", default=1.5)
    floats += 2.25
    eq(clients[1].Counter(ROOT + "/float", default=0.0).value, 3.75, "float counter seen by another session")

    threads, rounds = 4, 25
    errors = queue.Queue()
    finals = queue.Queue()

    def worker(client):
        try:
            c = client.Counter(ROOT + "/int")
            for _ in range(rounds):
                c += 1
                finals.put(c.post_value)
        except Exception as e:  # reported by the main thread
            errors.put(e)

    workers = [threading.Thread(target=worker, args=(c,), name="worker %d-%d" % (i, j), daemon=True)
               for i, c in enumerate(clients) for j in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(TIMEOUT * 3)
        check(not w.is_alive(), "%s finished" % w.name)
    check(errors.empty(), "no increment failed: %r" % (None if errors.empty() else errors.get()))
    total = len(workers) * rounds
    eq(clients[1].Counter(ROOT + "/int").value, 3 + total, "concurrent increments all counted")
    each_once([finals.get() for _ in range(total)], list(range(4, 4 + total)),
              "every increment saw its own value")
    eq(zk.get(ROOT + "/int")[1].version, 2 + total, "one set per increment")

    zk.delete(ROOT, recursive=True)
    for c in clients:
        c.stop()
        c.close()


run(main)
