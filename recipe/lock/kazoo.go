package lock

import (
	"regexp"

	"github.com/collie-io/collie/client"
)

// kazooName is what Kazoo's Lock puts before the sequence number of its
// nodes, after a uuid of its own where ours have the protection prefix.
const kazooName = "__lock__"

// kazooContender is how Kazoo 2.8's Lock tells contenders from the other
// children of its path (its _contenders_re, without extra_lock_patterns):
// it ignores every child that does not match, Kazoo's ReadLock nodes
// ("__rlock__") and Curator's among them, so a lock in its line must too,
// or it would wait for a node that Kazoo's holders never wait for.
var kazooContender = regexp.MustCompile(`__lock__-?\d{10}$`)

// NewKazooMutex returns a mutex on path laid out as Kazoo's Lock rather
// than Curator's InterProcessMutex, so that Python processes using Kazoo's
// Lock and Go processes on the same path exclude each other (see Layout in
// the package doc). A Mutex from NewMutex, or a Kazoo ReadLock, on the same
// path is another lock, which it ignores as Kazoo's Lock does.
func NewKazooMutex(c *client.Client, path string, opts ...Option) *Mutex {
	o := buildOptions(opts)
	return newMutex(line{
		c: c, path: path, name: kazooName, data: o.data,
		key: after(kazooName), blocker: predecessor, contends: kazooContender.MatchString,
	})
}
