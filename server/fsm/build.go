package fsm

import (
	"fmt"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/tree"
)

// BuildState is the state of a database made outside Collie's log, such
// as a ZooKeeper ensemble's, for a new data directory to start from.
type BuildState struct {
	// Applied is the log index the state stands at; it is also the last
	// zxid, so that the zxids of the entries after it continue from it.
	Applied uint64
	// Secret is the session secret (SecretLen bytes), which names the
	// ensemble; nil leaves it for the first leader to choose.
	Secret   []byte
	Sessions []Session
}

// Build returns a state machine holding st and the nodes nodes gives to
// add, parents before children, each with its Stat as it is to be kept.
// The root and the system nodes may be given; they replace New's.
func Build(opts Options, st BuildState, nodes func(add func(path string, n *tree.Node, acl []proto.ACL) error) error) (*FSM, error) {
	if st.Secret != nil && len(st.Secret) != SecretLen {
		return nil, fmt.Errorf("fsm: session secret of %d bytes", len(st.Secret))
	}
	f := New(opts)
	f.applied, f.lastZxid = st.Applied, int64(st.Applied)
	if st.Secret != nil {
		f.secret = append([]byte(nil), st.Secret...)
	}
	for _, s := range st.Sessions {
		if _, dup := f.sessions[s.ID]; dup {
			return nil, fmt.Errorf("fsm: session %#x twice", s.ID)
		}
		f.sessions[s.ID] = &s
	}
	// Nodes given the same ACL slice share it; interning each by its
	// first element spares computing its key for every node.
	refs := make(map[*proto.ACL]tree.ACLRef)
	err := nodes(func(path string, n *tree.Node, acl []proto.ACL) error {
		if err := proto.ValidatePath(path); err != nil {
			return fmt.Errorf("fsm: node %q: %w", path, err)
		}
		var ref tree.ACLRef
		if len(acl) == 0 {
			ref = f.tree.InternACL(acl)
		} else if r, ok := refs[&acl[0]]; ok {
			ref = r
		} else {
			ref = f.tree.InternACL(acl)
			refs[&acl[0]] = ref
		}
		return f.tree.Restore(path, n, ref)
	})
	if err != nil {
		return nil, err
	}
	f.tree.Sweep()
	return f, nil
}
