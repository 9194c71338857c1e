package watch_test

import (
	"fmt"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/watch"
)

// A server registers the watches its reads ask for, passes every event the
// state machine returns to Trigger, and queues each notification on the
// watcher's connection before it answers the write.
func Example() {
	r := watch.New[int64]() // watchers named by session id

	r.Add(0x1, "/config", watch.Exist)               // exists("/config", watch=true) on a missing node
	r.Add(0x2, "/config", watch.PersistentRecursive) // addWatch("/config", persistentRecursive)
	r.Add(0x3, "/", watch.Child)                     // getChildren("/", watch=true)

	// create /config: the state machine reports two events.
	for _, ev := range []struct {
		typ  proto.EventType
		path string
	}{{proto.EventNodeCreated, "/config"}, {proto.EventNodeChildrenChanged, "/"}} {
		for _, d := range r.Trigger(ev.typ, ev.path) {
			fmt.Printf("session %#x: %v %s\n", d.Watcher, d.Event.Type, d.Event.Path)
		}
	}

	// A second change reaches only the persistent watch.
	for _, d := range r.Trigger(proto.EventNodeDataChanged, "/config") {
		fmt.Printf("session %#x: %v %s\n", d.Watcher, d.Event.Type, d.Event.Path)
	}

	r.RemoveWatcher(0x2) // its connection closed
	fmt.Println("watches left:", r.Count())
	// Output:
	// session 0x1: NodeCreated /config
	// session 0x2: NodeCreated /config
	// session 0x3: NodeChildrenChanged /
	// session 0x2: NodeDataChanged /config
	// watches left: 0
}
