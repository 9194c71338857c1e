"""SASL DIGEST-MD5 with Kazoo: the users of the JAAS file's Server section
authenticate with sasl_options; sasl ACLs let in their own user, the super
user "super" of the sasl scheme and the superUser; a wrong password and an
unknown user are refused. Prints one line per outcome, the same against
every server that follows ZooKeeper, each starting with "> " (Kazoo logs
to the same output), and exits with status 2 on an error of its own."""

import sys
import threading
import traceback

from kazoo.client import KazooClient
from kazoo.security import ACL, Id, Permissions, make_acl

from common import outcome, say

TIMEOUT = 10.0
ROOT = "/kazoo-sasl"


def client(user=None, password=None, timeout=TIMEOUT):
    kwargs = {}
    if user is not None:
        kwargs["sasl_options"] = {"mechanism": "DIGEST-MD5", "username": user, "password": password}
    c = KazooClient(hosts=sys.argv[1], timeout=timeout, connection_retry=dict(max_tries=0), **kwargs)
    c.start(timeout=timeout)
    return c


def refused(user, password):
    """What a client whose SASL authentication fails sees: Kazoo reports
    the session as connected before it authenticates, so start returns."""
    states = []
    lost = threading.Event()

    def listen(state):
        states.append(str(state))
        if str(state) == "LOST":
            lost.set()
    try:
        c = KazooClient(hosts=sys.argv[1], timeout=5.0, connection_retry=dict(max_tries=0),
                        sasl_options={"mechanism": "DIGEST-MD5", "username": user, "password": password})
        c.add_listener(listen)
        c.start(timeout=5.0)
    except Exception as e:
        return "start: %s" % type(e).__name__
    # The refusal comes after start returned. What the client does with
    # its requests meanwhile and after is a race within Kazoo.
    lost.wait(TIMEOUT)
    c.stop()
    c.close()
    # Kazoo may pass through SUSPENDED on the way, or not.
    return "start: ok, then %s" % ("LOST" if "LOST" in states else states)


def sasl_acl(user, **perms):
    return make_acl("sasl", user, **(perms or {"all": True}))


def main():
    bob = client("bob", "bobsecret")
    bob.delete(ROOT, recursive=True)
    bob.create(ROOT)
    say("bob creates a node only bob may use", outcome(bob.create, ROOT + "/bob", b"b", acl=[sasl_acl("bob")]))
    say("bob reads it", outcome(bob.get, ROOT + "/bob"))
    say("bob's ACL", outcome(lambda: bob.get_acls(ROOT + "/bob")[0]))

    anonymous = client()
    say("a client without SASL reads it", outcome(anonymous.get, ROOT + "/bob"))
    carol = client("carol", "carolsecret")
    say("carol reads it", outcome(carol.get, ROOT + "/bob"))
    say("carol writes it", outcome(carol.set, ROOT + "/bob", b"c"))
    alice = client("alice", "alicesecret")  # zookeeper.superUser
    say("alice, a superUser, writes it", outcome(alice.set, ROOT + "/bob", b"a"))
    say("alice creates under a node only bob may change", outcome(alice.create, ROOT + "/bob/a"))
    super_ = client("super", "supersecret")  # the sasl id "super"
    say("the sasl user super reads it", outcome(super_.get, ROOT + "/bob"))
    say("bob creates a node only digest u may use",
        outcome(bob.create, ROOT + "/digest", acl=[make_acl("digest", "u:x", all=True)]))
    say("the sasl user super reads that", outcome(super_.get, ROOT + "/digest"))
    say("alice reads that", outcome(alice.get, ROOT + "/digest"))

    # "auth" stands for the caller's authenticated identities.
    auth = [ACL(Permissions.ALL, Id("auth", ""))]
    say("carol creates with auth", outcome(carol.create, ROOT + "/carol", acl=auth))
    say("the ACL auth made", outcome(lambda: carol.get_acls(ROOT + "/carol")[0]))
    carol.add_auth("digest", "carol:pw")
    say("carol adds digest and creates with auth", outcome(carol.create, ROOT + "/carol2", acl=auth))
    say("the ACL auth made with two identities", outcome(lambda: carol.get_acls(ROOT + "/carol2")[0]))
    say("the anonymous client creates with auth", outcome(anonymous.create, ROOT + "/anon", acl=auth))

    # Kazoo writes an empty string as a null one, which ZooKeeper fails
    # on: no empty id here.
    for ident in ["bob/host@EXAMPLE.COM", "bob@EXAMPLE.COM", "x", "a/b/c@R", "a@b@c", "a@R/x"]:
        say("an ACL of sasl:%s" % ident, outcome(bob.create, ROOT + "/id-" + str(len(ident)) + ident.replace("/", "_"),
                                                  acl=[sasl_acl(ident, read=True)]))
    say("read permission only", outcome(bob.create, ROOT + "/readonly", acl=[sasl_acl("bob", read=True), sasl_acl("carol", all=True)]))
    say("bob writes it", outcome(bob.set, ROOT + "/readonly", b"x"))
    say("carol writes it", outcome(carol.set, ROOT + "/readonly", b"x"))

    say("bob again, with a wrong password", refused("bob", "wrong"))
    say("an unknown user", refused("mallory", "bobsecret"))

    for c in (bob, anonymous, carol, alice, super_):
        c.stop()
        c.close()


try:
    main()
except Exception:
    traceback.print_exc()
    sys.exit(2)
print("DONE", flush=True)
