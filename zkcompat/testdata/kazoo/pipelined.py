"""Checks ZooKeeper's first guarantee through Kazoo's asynchronous API: the
requests of one session take effect in the order they were sent, however
many are in flight, and watch events take their place among the replies.

Each round sends a dozen requests on one session without waiting (create,
reads that set watches, writes that fire them, a write with a wrong
version, sync, a transaction, delete) and records every reply and the
watch events that fire. Every round must give exactly ZooKeeper's record:
each read shows the session's earlier writes and none of its later ones, so
the watches it sets are the ones the later writes fire. (Kazoo completes
some calls, such as create and sync, through an extra callback, and
delivers events on a thread of their own, so the order in which its
callbacks run is not the order on the wire; that order is checked by the Go
tests, on the wire.)"""

import threading

from kazoo.exceptions import BadVersionError, NoNodeError

from common import TIMEOUT, CheckFailed, clear, connect, eq, run

ROOT = "/kazoo-pipelined"
ROUNDS = 200
# EVENTS is how many watches each round fires.
EVENTS = 3


def describe(result):
    """A reply as a short, comparable value."""
    try:
        value = result.get_nowait()
    except NoNodeError:
        return "NoNode"
    except BadVersionError:
        return "BadVersion"
    except Exception as e:  # anything else is shown as it is
        return type(e).__name__
    if value is None or isinstance(value, (bool, str)):
        return value
    if hasattr(value, "mzxid"):  # a stat
        return "version %d" % value.version
    if isinstance(value, list):
        if value and not isinstance(value[0], str):  # transaction results
            return [type(v).__name__ if isinstance(v, Exception)
                    else "version %d" % v.version if hasattr(v, "mzxid") else v for v in value]
        return sorted(value)
    data, stat = value  # of a get
    return (data, stat.version)


def round_record(client, n):
    parent = "%s/r%d" % (ROOT, n)
    q = parent + "/q"
    client.create(parent, makepath=True)
    record, events = [], []
    lock = threading.Lock()
    fired_cond = threading.Condition(lock)
    done = threading.Event()
    pending = [0]

    def note(entry):
        with lock:
            record.append(entry)

    def watcher(label):
        def fired(event):
            with lock:
                events.append((label, event.type))
                fired_cond.notify_all()
        return fired

    labels = []

    def send(label, result):
        labels.append(label)
        with lock:
            pending[0] += 1

        def reply(r):
            note((label, describe(r)))
            with lock:
                pending[0] -= 1
                if pending[0] == 0:
                    done.set()
        result.rawlink(reply)

    send("exists", client.exists_async(q, watch=watcher("exists")))
    send("create", client.create_async(q, b"x"))
    send("get", client.get_async(q, watch=watcher("get")))
    send("children", client.get_children_async(parent, watch=watcher("children")))
    send("set", client.set_async(q, b"y"))
    send("set v0", client.set_async(q, b"z", version=0))
    send("exists again", client.exists_async(q))
    send("sync", client.sync_async(q))
    txn = client.transaction()
    txn.check(q, 1)
    txn.set_data(q, b"t")
    send("transaction", txn.commit_async())
    send("get again", client.get_async(q))
    send("delete", client.delete_async(q))
    send("exists at last", client.exists_async(q))
    if not done.wait(TIMEOUT):
        raise CheckFailed("round %d: replies missing, got %r" % (n, record))
    # Every event was sent before the reply to the write that fired it,
    # but Kazoo runs watchers on a thread of its own: wait for them.
    with fired_cond:
        fired_cond.wait_for(lambda: len(events) >= EVENTS, TIMEOUT)
    client.delete(parent, recursive=True)
    with lock:
        return sorted(record, key=lambda e: labels.index(e[0])), sorted(events)


def main():
    client = connect()
    clear(client, ROOT)
    first, events = round_record(client, 0)
    eq(first, [
        ("exists", None),
        ("create", "/kazoo-pipelined/r0/q"),
        ("get", (b"x", 0)),
        ("children", ["q"]),
        ("set", "version 1"),
        ("set v0", "BadVersion"),
        ("exists again", "version 1"),
        ("sync", "/kazoo-pipelined/r0/q"),
        ("transaction", [True, "version 2"]),
        ("get again", (b"t", 2)),
        ("delete", True),
        ("exists at last", None),
    ], "replies of a pipelined round")
    eq(events, [("children", "CHILD"), ("exists", "CREATED"), ("get", "CHANGED")],
       "watches set and fired within the round")
    for n in range(1, ROUNDS):
        record, got = round_record(client, n)
        want = [tuple(x.replace("/r0/", "/r%d/" % n) if isinstance(x, str) else x for x in e) for e in first]
        if record != want or got != events:
            raise CheckFailed("round %d differs from round 0:\n got %r %r\nwant %r %r" % (n, record, got, want, events))
    print("ok: %d pipelined rounds gave the same record" % ROUNDS, flush=True)
    client.delete(ROOT, recursive=True)
    client.stop()
    client.close()


run(main)
