"""Checks ZooKeeper watches through Kazoo: the DataWatch and ChildrenWatch
recipes, and one-shot data, exists and child watches, each fired by another
session."""

import queue

from common import clear, connect, eq, next_item, run

ROOT = "/kazoo-watches"


def main():
    zk = connect()
    other = connect()
    clear(zk, ROOT)
    zk.create(ROOT)

    # DataWatch calls back at once, then on every change, until it returns
    # False.
    changes = queue.Queue()

    @zk.DataWatch(ROOT + "/d")
    def data_watch(data, stat, event):
        changes.put((data, stat and stat.version, event and event.type))
        return data != b"stop"

    eq(next_item(changes, "DataWatch"), (None, None, None), "DataWatch on a missing node")
    other.create(ROOT + "/d", b"1")
    eq(next_item(changes, "DataWatch"), (b"1", 0, "CREATED"), "DataWatch sees the create")
    other.set(ROOT + "/d", b"2")
    eq(next_item(changes, "DataWatch"), (b"2", 1, "CHANGED"), "DataWatch sees the set")
    other.delete(ROOT + "/d")
    eq(next_item(changes, "DataWatch"), (None, None, "DELETED"), "DataWatch sees the delete")
    other.create(ROOT + "/d", b"stop")
    eq(next_item(changes, "DataWatch"), (b"stop", 0, "CREATED"), "DataWatch sees the re-create")

    # ChildrenWatch reports the whole list after each change.
    lists = queue.Queue()
    zk.create(ROOT + "/c")

    @zk.ChildrenWatch(ROOT + "/c")
    def children_watch(children):
        lists.put(sorted(children))

    eq(next_item(lists, "ChildrenWatch"), [], "ChildrenWatch initial list")
    other.create(ROOT + "/c/a")
    eq(next_item(lists, "ChildrenWatch"), ["a"], "ChildrenWatch after a create")
    other.create(ROOT + "/c/b", ephemeral=True)
    eq(next_item(lists, "ChildrenWatch"), ["a", "b"], "ChildrenWatch after an ephemeral create")
    other.delete(ROOT + "/c/a")
    eq(next_item(lists, "ChildrenWatch"), ["b"], "ChildrenWatch after a delete")
    other.set(ROOT + "/c", b"data")
    other.create(ROOT + "/c/x")
    eq(next_item(lists, "ChildrenWatch"), ["b", "x"], "ChildrenWatch ignores data changes")

    # One-shot watches fire once: the second set must not fire again. The
    # barrier's event arrives after any event fired before it, as events of
    # one session are delivered in order.
    events = queue.Queue()

    def record(event):
        events.put((event.type, event.path))

    zk.create(ROOT + "/once", b"0")
    zk.create(ROOT + "/barrier")
    zk.get(ROOT + "/once", watch=record)
    other.set(ROOT + "/once", b"1")
    other.set(ROOT + "/once", b"2")
    zk.get(ROOT + "/barrier", watch=record)
    other.set(ROOT + "/barrier", b"1")
    eq([next_item(events, "data watch"), next_item(events, "barrier")],
       [("CHANGED", ROOT + "/once"), ("CHANGED", ROOT + "/barrier")],
       "a data watch fires once")

    eq(zk.exists(ROOT + "/e", watch=record), None, "exists on a missing node")
    other.create(ROOT + "/e")
    eq(next_item(events, "exists watch"), ("CREATED", ROOT + "/e"), "exists watch sees the create")

    zk.get_children(ROOT + "/e", watch=record)
    other.create(ROOT + "/e/kid")
    eq(next_item(events, "child watch"), ("CHILD", ROOT + "/e"), "child watch sees a create")
    zk.get_children(ROOT + "/e", watch=record)
    other.delete(ROOT + "/e/kid")
    eq(next_item(events, "child watch"), ("CHILD", ROOT + "/e"), "child watch sees a delete")
    zk.get_children(ROOT + "/e", watch=record)
    zk.get(ROOT + "/e", watch=record)
    other.delete(ROOT + "/e")
    eq([next_item(events, "watches on a deleted node"), next_item(events, "watches on a deleted node")],
       [("DELETED", ROOT + "/e"), ("DELETED", ROOT + "/e")],
       "deleting a node fires its child and data watches")

    # A watch set by one session does not fire for another.
    other.get(ROOT + "/barrier", watch=record)
    zk.set(ROOT + "/barrier", b"2")
    eq(next_item(events, "other's watch"), ("CHANGED", ROOT + "/barrier"), "other session's watch")

    zk.delete(ROOT, recursive=True)
    for c in (zk, other):
        c.stop()
        c.close()


run(main)
