"""Creates, reads, updates and deletes znodes with Kazoo and checks every
result, error and Stat field a Kazoo user relies on, ACLs included."""

from kazoo.exceptions import (BadArgumentsError, BadVersionError, InvalidACLError,
                              NoAuthError, NoChildrenForEphemeralsError,
                              NodeExistsError, NoNodeError, NotEmptyError)
from kazoo.security import (OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, make_acl,
                            make_digest_acl)

from common import check, clear, connect, eq, raises, run

ROOT = "/kazoo-crud"


def main():
    zk = connect()
    other = connect()
    clear(zk, ROOT)

    eq(zk.create(ROOT, b"root"), ROOT, "create returns the path")
    raises(NodeExistsError, "create existing", zk.create, ROOT)
    raises(NoNodeError, "create without parent", zk.create, ROOT + "/x/y")
    raises(BadArgumentsError, "create with a bad path", zk.create, ROOT + "/bad\x01")
    eq(zk.create(ROOT + "/x/y/z", b"deep", makepath=True), ROOT + "/x/y/z",
       "create with makepath")
    zk.ensure_path(ROOT + "/x/y/z")
    eq(zk.exists(ROOT + "/x/y").numChildren, 1, "ensure_path on an existing path changes nothing")

    data, stat = zk.get(ROOT)
    eq(data, b"root", "get data")
    eq((stat.version, stat.cversion, stat.aversion), (0, 1, 0), "versions after one child")
    eq((stat.dataLength, stat.numChildren, stat.ephemeralOwner), (4, 1, 0), "stat of a persistent node")
    check(stat.czxid == stat.mzxid and stat.pzxid > stat.czxid, "czxid = mzxid < pzxid")
    check(stat.ctime == stat.mtime and stat.ctime > 0, "ctime = mtime")

    path, stat = zk.create(ROOT + "/with-stat", b"v", include_data=True)
    eq((path, stat.version, stat.dataLength), (ROOT + "/with-stat", 0, 1), "create2 returns the stat")

    # Ephemeral nodes belong to the session that created them.
    eph = zk.create(ROOT + "/eph", b"e", ephemeral=True)
    check(zk.exists(eph).ephemeralOwner == zk.client_id[0], "ephemeral owner is the session")
    raises(NoChildrenForEphemeralsError, "child of an ephemeral", zk.create, eph + "/child")

    # Sequence numbers come from the parent's cversion, whoever creates.
    seqs = [zk.create(ROOT + "/seq-", sequence=True),
            other.create(ROOT + "/seq-", sequence=True),
            zk.create(ROOT + "/eseq-", ephemeral=True, sequence=True)]
    eq(seqs, [ROOT + "/seq-0000000003", ROOT + "/seq-0000000004",
              ROOT + "/eseq-0000000005"], "sequential names")

    eq(sorted(zk.get_children(ROOT)),
       ["eph", "eseq-0000000005", "seq-0000000003", "seq-0000000004", "with-stat", "x"],
       "children")
    kids, stat = zk.get_children(ROOT, include_data=True)
    eq((len(kids), stat.numChildren, stat.cversion), (6, 6, 6), "children with stat")

    # Set with and without a version.
    raises(BadVersionError, "set with a stale version", zk.set, ROOT, b"no", version=3)
    eq(zk.set(ROOT, b"one", version=0).version, 1, "set with the current version")
    eq(zk.set(ROOT, b"two").version, 2, "set with any version")
    data, stat = other.get(ROOT)
    eq((data, stat.version, stat.dataLength), (b"two", 2, 3), "another session reads the write")
    raises(NoNodeError, "set a missing node", zk.set, ROOT + "/none", b"x")
    eq(zk.set(ROOT, b"").dataLength, 0, "set empty data")
    eq(zk.get(ROOT)[0], b"", "get empty data")

    # Delete: versions, children, recursion.
    raises(NotEmptyError, "delete a node with children", zk.delete, ROOT + "/x")
    raises(BadVersionError, "delete with a stale version", zk.delete, ROOT + "/with-stat", version=5)
    zk.delete(ROOT + "/with-stat", version=0)
    eq(zk.exists(ROOT + "/with-stat"), None, "deleted node is gone")
    raises(NoNodeError, "delete a missing node", zk.delete, ROOT + "/with-stat")
    zk.delete(ROOT + "/x", recursive=True)
    eq(zk.exists(ROOT + "/x/y"), None, "recursive delete removes descendants")

    # Closing a session deletes its ephemerals.
    other_eph = other.create(ROOT + "/other-eph", ephemeral=True)
    check(zk.exists(other_eph).ephemeralOwner == other.client_id[0], "ephemeral owner is the other session")
    other.stop()
    other.close()
    eq(zk.exists(other_eph), None, "ephemeral gone with its session")

    # ACLs: world, digest and auth.
    acls, stat = zk.get_acls(ROOT)
    eq(acls, OPEN_ACL_UNSAFE, "default ACL is world:anyone:cdrwa")
    eq(stat.aversion, 0, "aversion before setAcl")
    raises(BadVersionError, "set_acls with a stale version", zk.set_acls, ROOT, READ_ACL_UNSAFE, version=2)
    eq(zk.set_acls(ROOT + "/seq-0000000003", READ_ACL_UNSAFE, version=0).aversion, 1, "set_acls bumps aversion")
    raises(NoAuthError, "write to a read-only node", zk.set, ROOT + "/seq-0000000003", b"x")
    eq(zk.get(ROOT + "/seq-0000000003")[0], b"", "read a read-only node")

    alice = connect(auth_data=[("digest", "alice:secret")])
    bob = connect(auth_data=[("digest", "bob:secret")])
    acl = make_digest_acl("alice", "secret", all=True)
    alice.create(ROOT + "/alice", b"private", acl=[acl])
    eq(alice.get(ROOT + "/alice")[0], b"private", "owner reads a digest node")
    raises(NoAuthError, "another identity reads a digest node", bob.get, ROOT + "/alice")
    raises(NoAuthError, "no identity reads a digest node", zk.get, ROOT + "/alice")
    raises(NoAuthError, "getAcl needs read or admin permission", zk.get_acls, ROOT + "/alice")
    eq(alice.get_acls(ROOT + "/alice")[0], [acl], "digest ACL as stored")
    # "auth" stands for every identity the creator has authenticated as.
    alice.create(ROOT + "/alice-auth", b"", acl=[make_acl("auth", "", all=True)])
    eq(alice.get_acls(ROOT + "/alice-auth")[0], [acl], "auth ACL becomes the digest of the creator")
    raises(InvalidACLError, "auth ACL without an identity",
           zk.create, ROOT + "/noauth", acl=[make_acl("auth", "", all=True)])
    zk.add_auth("digest", "alice:secret")
    eq(zk.get(ROOT + "/alice")[0], b"private", "add_auth grants access")
    for c in (alice, bob):
        c.stop()
        c.close()

    zk.delete(ROOT, recursive=True)
    eq(zk.exists(ROOT), None, "all gone")
    zk.stop()
    zk.close()


run(main)
