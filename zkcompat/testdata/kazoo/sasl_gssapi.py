"""SASL GSSAPI (Kerberos) with Kazoo: pure-sasl through MIT's GSSAPI
library, which logs in from the client keytab KRB5_CLIENT_KTNAME names.
The client creates a node only its sasl identity may use, reads it back,
and a client without SASL is refused it. Prints one line per outcome,
each starting with "> " (Kazoo logs to the same output), and exits with
status 2 on an error of its own. Arguments: the server's address and the
client's identity (bob@REALM)."""

import sys
import traceback

from kazoo.client import KazooClient
from kazoo.security import make_acl

from common import outcome, say

TIMEOUT = 10.0
ROOT = "/kazoo-krb"


def client(gssapi):
    kwargs = {}
    if gssapi:
        kwargs["sasl_options"] = {"mechanism": "GSSAPI", "service": "zookeeper"}
    c = KazooClient(hosts=sys.argv[1], timeout=TIMEOUT, connection_retry=dict(max_tries=0), **kwargs)
    c.start(timeout=TIMEOUT)
    return c


def main():
    me = sys.argv[2]
    krb = client(True)
    say("creates a node only %s may use" % me,
        outcome(krb.create, ROOT, b"k", acl=[make_acl("sasl", me, all=True)]))
    say("reads it", outcome(krb.get, ROOT))
    anonymous = client(False)
    say("a client without SASL reads it", outcome(anonymous.get, ROOT))
    say("deletes it", outcome(krb.delete, ROOT))
    for c in (krb, anonymous):
        c.stop()
        c.close()


try:
    main()
except Exception:
    traceback.print_exc()
    sys.exit(2)
print("DONE", flush=True)
