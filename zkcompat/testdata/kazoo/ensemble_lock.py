"""Checks Kazoo's Lock against an ensemble whose leader is killed: three
sessions, connected to the whole ensemble, take the lock in turn; after
"READY" the test kills the leader and answers with a line on standard
input; the lock goes on being taken, and never by two holders at once."""

import sys
import threading
import time

from common import TIMEOUT, check, clear, connect, run

ROOT = "/kazoo-ensemble"
LOCK = ROOT + "/lock"
BEFORE = 30  # acquisitions before the leader is killed
AFTER = 30   # and after


def main():
    clients = [connect() for _ in range(3)]
    clear(clients[0], ROOT)
    state = {"holders": 0, "overlaps": 0, "taken": 0}
    mu = threading.Lock()
    goal = [BEFORE]
    reached = threading.Event()
    stop = threading.Event()
    errors = []

    def contend(zk, name):
        lock = zk.Lock(LOCK, name)
        while not stop.is_set():
            try:
                if not lock.acquire(timeout=TIMEOUT * 3):
                    continue
            except Exception:
                # The connection broke while waiting (the leader was
                # killed): try again once Kazoo has reconnected.
                time.sleep(0.05)
                continue
            try:
                with mu:
                    state["holders"] += 1
                    if state["holders"] > 1:
                        state["overlaps"] += 1
                time.sleep(0.005)
                with mu:
                    state["holders"] -= 1
                    state["taken"] += 1
                    if state["taken"] >= goal[0]:
                        reached.set()
            finally:
                try:
                    lock.release()
                except Exception as e:
                    errors.append(repr(e))

    threads = [threading.Thread(target=contend, args=(zk, "c%d" % i), daemon=True)
               for i, zk in enumerate(clients)]
    for t in threads:
        t.start()
    check(reached.wait(TIMEOUT * 3), "%d acquisitions before the kill" % BEFORE)
    with mu:
        before = state["taken"]
        goal[0] = before + AFTER
        reached.clear()
    print("READY", flush=True)
    sys.stdin.readline()
    check(reached.wait(TIMEOUT * 6), "%d more acquisitions after the leader's kill" % AFTER)
    stop.set()
    for t in threads:
        t.join(TIMEOUT * 3)
    with mu:
        check(state["overlaps"] == 0, "never two holders at once")
    for zk in clients:
        zk.stop()


run(main)
