"""Checks Kazoo's Election recipe with two sessions: one leader at a time,
leadership passes when the leader resigns or its session closes, and a
cancelled contender never leads."""

import queue
import threading

from common import TIMEOUT, check, clear, connect, eq, next_item, run

ROOT = "/kazoo-election"
ELECTION = ROOT + "/election"


def wait_for_contenders(zk, n):
    """Returns once the election has n contender nodes."""
    counts = queue.Queue()

    @zk.ChildrenWatch(ELECTION)
    def watch(children):
        counts.put(len(children))
        return len(children) != n

    while next_item(counts, "%d contenders" % n) != n:
        pass


def main():
    a = connect()
    b = connect()
    c = connect()
    clear(a, ROOT)
    a.ensure_path(ELECTION)

    leaders = queue.Queue()
    resign = {name: threading.Event() for name in "abc"}

    def lead(name):
        leaders.put(name)
        resign[name].wait(TIMEOUT * 3)

    def contend(client, name):
        election = client.Election(ELECTION, name)
        thread = threading.Thread(target=election.run, args=(lead, name), name=name, daemon=True)
        thread.start()
        return election, thread

    election_a, thread_a = contend(a, "a")
    eq(next_item(leaders, "first leader"), "a", "the only contender leads")
    election_b, thread_b = contend(b, "b")
    wait_for_contenders(a, 2)
    election_c, thread_c = contend(c, "c")
    wait_for_contenders(a, 3)
    eq(election_a.contenders(), ["a", "b", "c"], "contenders in order")
    check(leaders.empty(), "nobody else leads while a leads")

    resign["a"].set()
    eq(next_item(leaders, "second leader"), "b", "a resigns: the next contender leads")
    thread_a.join(TIMEOUT)
    check(not thread_a.is_alive(), "a's run returns after its term")
    eq(election_b.contenders(), ["b", "c"], "contenders after a resigned")

    # c withdraws: its run returns without leading.
    election_c.cancel()
    thread_c.join(TIMEOUT)
    check(not thread_c.is_alive(), "a cancelled contender's run returns")
    election_a, thread_a = contend(a, "a")
    wait_for_contenders(a, 2)
    eq(election_a.contenders(), ["b", "a"], "contenders after c withdrew and a rejoined")

    # The leader's session closes: its node goes, and a leads.
    b.stop()
    b.close()
    eq(next_item(leaders, "third leader"), "a", "the leader's session closes: the next contender leads")
    resign["a"].set()
    thread_a.join(TIMEOUT)
    check(leaders.empty(), "c never led")

    a.delete(ROOT, recursive=True)
    for client in (a, c):
        client.stop()
        client.close()


run(main)
