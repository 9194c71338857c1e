"""Helpers shared by the Kazoo interoperability scripts.

Every script takes the server's host:port as its only argument, works under
its own root znode, prints one line per check and exits with status 1 on the
first failed check (status 2 on any other error).
"""

import queue
import sys
import traceback

from kazoo.client import KazooClient
from kazoo.security import ACL

# How long any single wait for the server or for an event may take.
TIMEOUT = 10.0


def connect(**kwargs):
    """Returns a started client of the server named on the command line."""
    client = KazooClient(
        hosts=sys.argv[1],
        timeout=TIMEOUT,
        # Recipes retry on BadVersion and similar races; retry until the
        # deadline, quickly, as contention is expected in these scripts.
        command_retry=dict(max_tries=-1, delay=0.005, backoff=1.5,
                           max_delay=0.1, deadline=TIMEOUT * 3),
        **kwargs)
    client.start(timeout=TIMEOUT)
    return client


def clear(client, root):
    """Deletes root and everything below it, if it exists, so that a script
    can run again against the same server."""
    client.delete(root, recursive=True)


class CheckFailed(Exception):
    pass


def check(cond, what):
    """Fails the script when cond is false."""
    if not cond:
        raise CheckFailed(what)
    print("ok:", what, flush=True)


def eq(got, want, what):
    """Fails the script when got != want, showing both."""
    if got != want:
        raise CheckFailed("%s: got %r, want %r" % (what, got, want))
    print("ok: %s = %r" % (what, got), flush=True)


def each_once(got, want, what):
    """Fails the script unless got holds every element of want exactly once
    and nothing else, in any order."""
    counts = {}
    for x in got:
        counts[x] = counts.get(x, 0) + 1
    missing = [x for x in want if x not in counts]
    repeated = sorted(x for x, n in counts.items() if n > 1)
    unexpected = sorted(set(counts) - set(want))
    if missing or repeated or unexpected:
        raise CheckFailed("%s: missing %r, repeated %r, unexpected %r" % (what, missing, repeated, unexpected))
    print("ok: %s (%d items)" % (what, len(want)), flush=True)


def raises(exc_type, what, fn, *args, **kwargs):
    """Fails the script unless fn(*args, **kwargs) raises exc_type."""
    try:
        result = fn(*args, **kwargs)
    except exc_type:
        print("ok: %s raises %s" % (what, exc_type.__name__), flush=True)
        return
    except Exception as e:
        raise CheckFailed("%s: raised %r, want %s" % (what, e, exc_type.__name__))
    raise CheckFailed("%s: returned %r, want %s" % (what, result, exc_type.__name__))


def next_item(q, what):
    """Returns the next item of the queue q, failing after TIMEOUT."""
    try:
        return q.get(timeout=TIMEOUT)
    except queue.Empty:
        raise CheckFailed("%s: nothing within %.0fs" % (what, TIMEOUT))


def run(main):
    """Runs main() and exits with 0 when it returns, 1 when a check fails
    and 2 on any other exception."""
    try:
        main()
    except CheckFailed as e:
        print("FAIL:", e, file=sys.stderr, flush=True)
        sys.exit(1)
    except Exception:
        traceback.print_exc()
        sys.exit(2)
    print("PASS", flush=True)
    sys.exit(0)


def outcome(fn, *args, **kwargs):
    """What a call gave, for scripts that print outcomes rather than
    check them: "ok <result>" or the exception's name."""
    try:
        result = fn(*args, **kwargs)
    except Exception as e:
        return type(e).__name__
    if isinstance(result, tuple) and len(result) == 2 and hasattr(result[1], "version"):
        result = result[0]  # data and Stat: the Stat's times differ
    if hasattr(result, "mzxid"):
        result = "version %d" % result.version
    if isinstance(result, list):
        result = [(a.perms, a.id.scheme, a.id.id) for a in result] if result and isinstance(result[0], ACL) else result
    return "ok %r" % (result,)


def say(what, result):
    """Prints an outcome as a line starting with "> ", which the tests
    keep and compare (Kazoo logs to the same output)."""
    print("> %s: %s" % (what, result), flush=True)
