"""Holders of python-kazoo's Lock and ReadLock, driven line by line from
standard input so that a test can interleave them with another
implementation on the same path. The only argument is the server's
host:port. Every holder has a name and a session of its own; a command that
takes a lock starts the taking in a thread and answers at once, and "await"
waits for it. Every command is answered with one line on standard output,
"error ..." when it fails:

lock NAME PATH DATA        a Lock on PATH with identifier DATA      ok
rlock NAME PATH DATA       a ReadLock on PATH                        ok
acquire NAME               start taking the lock                     ok
await NAME                 wait for the taking to end                acquired | timeout
state NAME                 whether it has ended                      acquired | waiting
release NAME               release the lock                          ok
contenders NAME            the identifiers of the contenders, in
                           line order, as the lock sees them         DATA ...
contend PATH COUNTER THREADS ROUNDS
                           start THREADS threads, each with a Lock
                           on PATH and a session of its own, that
                           each take the lock ROUNDS times and, while
                           holding it, add one to the integer in
                           COUNTER by a read and a versioned write   ok
finish                     wait for the contend threads to end       done ACQUISITIONS
quit                       close every session and exit

A versioned write refused with BadVersion means that someone else wrote
COUNTER while this thread held the lock: finish answers "error ..." then.
"""

import logging
import sys
import threading
import time

from kazoo.client import KazooClient

# Bounds every wait, so that a lost wakeup answers "timeout" or "error".
TIMEOUT = 15.0

clients = []
holders = {}
contenders = []


def connect():
    client = KazooClient(hosts=sys.argv[1], timeout=TIMEOUT)
    client.start(timeout=TIMEOUT)
    clients.append(client)
    return client


class Holder:
    def __init__(self, lock):
        self.lock = lock
        self.taking = None
        self.result = None

    def take(self):
        def run():
            try:
                self.result = self.lock.acquire(timeout=TIMEOUT)
            except Exception as e:
                self.result = e

        self.result = None
        self.taking = threading.Thread(target=run, daemon=True)
        self.taking.start()

    def state(self):
        if self.taking.is_alive():
            return "waiting"
        if self.result is True:
            return "acquired"
        return "error %r" % (self.result,)


class Contender(threading.Thread):
    def __init__(self, path, counter, rounds):
        super().__init__(daemon=True)
        self.path, self.counter, self.rounds = path, counter, rounds
        self.acquisitions = 0
        self.error = None

    def run(self):
        try:
            client = connect()
            lock = client.Lock(self.path, "kazoo")
            for _ in range(self.rounds):
                if not lock.acquire(timeout=TIMEOUT):
                    raise Exception("acquire timed out")
                self.acquisitions += 1
                try:
                    data, stat = client.get(self.counter)
                    value = str(int(data) + 1).encode()
                    client.set(self.counter, value, version=stat.version)
                finally:
                    lock.release()
        except Exception as e:
            self.error = e


def run(words):
    command = words[0]
    if command in ("lock", "rlock"):
        name, path, data = words[1:4]
        client = connect()
        make = client.Lock if command == "lock" else client.ReadLock
        holders[name] = Holder(make(path, data))
        return "ok"
    if command == "acquire":
        holders[words[1]].take()
        return "ok"
    if command == "await":
        holder = holders[words[1]]
        holder.taking.join(TIMEOUT)
        if holder.taking.is_alive():
            return "timeout"
        return holder.state()
    if command == "state":
        return holders[words[1]].state()
    if command == "release":
        holders[words[1]].lock.release()
        return "ok"
    if command == "contenders":
        return " ".join(holders[words[1]].lock.contenders())
    if command == "contend":
        path, counter = words[1:3]
        threads, rounds = int(words[3]), int(words[4])
        for _ in range(threads):
            contenders.append(Contender(path, counter, rounds))
        for c in contenders:
            c.start()
        return "ok"
    if command == "finish":
        deadline = time.monotonic() + TIMEOUT
        for c in contenders:
            c.join(max(0, deadline - time.monotonic()))
        if any(c.is_alive() for c in contenders):
            return "timeout"
        errors = [repr(c.error) for c in contenders if c.error is not None]
        if errors:
            return "error " + "; ".join(errors)
        done = sum(c.acquisitions for c in contenders)
        contenders.clear()
        return "done %d" % done
    return "error unknown command " + command


def main():
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        try:
            answer = run(words)
        except Exception as e:
            answer = "error %r" % (e,)
        print(answer, flush=True)
    for client in clients:
        client.stop()
        client.close()


if __name__ == "__main__":
    main()
