package zkcompat

import (
	"fmt"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
)

// TestCreateChecksAgainstZooKeeper sends creates of every opcode, mode and
// TTL, each failing one or two of ZooKeeper's checks (or none), alone and
// inside a multi, to ZooKeeper 3.8 and to Collie, with TTL nodes enabled
// and not, and compares the replies: which check fails first decides the
// error code. Then multis and multiReads of ops of every kind.
func TestCreateChecksAgainstZooKeeper(t *testing.T) {
	for _, extended := range []bool{false, true} {
		t.Run(fmt.Sprintf("extendedTypes=%v", extended), func(t *testing.T) {
			var opts []zkref.Option
			if extended {
				opts = append(opts, zkref.WithExtendedTypes())
			}
			ref := zkref.Start(t, opts...)
			col := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
				c.ExtendedTypesEnabled = extended
				c.MaxSessionTimeout = 40 * time.Second
			}))
			steps := append(createCheckSteps(), multiKindSteps()...)
			want := runSteps(t, ref.Addr(), steps, nil)
			got := runSteps(t, col.Addr(), steps, nil)
			compareSteps(t, want, got)
		})
	}
}

// createFault is a way for a create to fail: its path and ACL, given a
// fresh name.
type createFault struct {
	name string
	path func(fresh string) string
	acl  []proto.ACL
}

// createCheckSteps are the steps of TestCreateChecksAgainstZooKeeper.
func createCheckSteps() []step {
	invalidACL := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "ip", ID: "1.2.3"}}}
	// "auth" with no authenticated identity is invalid too.
	noIdentity := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "auth"}}}
	under := func(parent string) func(string) string {
		return func(fresh string) string { return parent + "/" + fresh }
	}
	fixed := func(path string) func(string) string { return func(string) string { return path } }
	faults := []createFault{
		{"none", under("/t"), open},
		{"invalid ACL", under("/t"), invalidACL},
		{"auth without identity", under("/t"), noIdentity},
		{"no create permission", under("/t/na"), open},
		{"exists", fixed("/t/ex"), open},
		{"exists, no create permission", fixed("/t/na/ex"), open},
		{"no parent", under("/t/missing"), open},
		{"ephemeral parent", under("/t/eph"), open},
		{"trailing slash", func(fresh string) string { return "/t/" + fresh + "/" }, open},
		{"no parent, invalid ACL", under("/t/missing"), invalidACL},
		{"no create permission, invalid ACL", under("/t/na"), invalidACL},
	}
	steps := []step{
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/t", ACL: open}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/t/na", ACL: open}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/t/na/ex", ACL: open}},
		{"a", 0, proto.OpSetACL, &proto.SetACLRequest{Path: "/t/na", Version: -1, ACL: []proto.ACL{
			{Perms: proto.PermAll &^ proto.PermCreate, ID: proto.ID{Scheme: "world", ID: "anyone"}}}}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/t/ex", ACL: open}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/t/eph", ACL: open, Flags: proto.ModeEphemeral}},
	}
	modes := []proto.CreateMode{-1, 0, 1, 2, 3, 4, 5, 6, 7}
	ttls := []int64{-1, 0, 600000, proto.MaxTTL + 1}
	n := 0
	fresh := func() string {
		n++
		return fmt.Sprintf("n%d", n)
	}
	for _, f := range faults {
		for _, mode := range modes {
			// Each create, made with a path.
			var creates []func(path string) proto.MultiOp
			for _, op := range []proto.OpCode{proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer} {
				creates = append(creates, func(path string) proto.MultiOp {
					return proto.MultiOp{Type: op, Req: &proto.CreateRequest{Path: path, ACL: f.acl, Flags: mode}}
				})
			}
			for _, ttl := range ttls {
				creates = append(creates, func(path string) proto.MultiOp {
					return proto.MultiOp{Type: proto.OpCreateTTL, Req: &proto.CreateTTLRequest{Path: path, ACL: f.acl, Flags: mode, TTL: ttl}}
				})
			}
			for _, create := range creates {
				op := create(f.path(fresh()))
				// A sequential create of an existing name makes a new one.
				passes := f.name == "none" || (f.name == "exists" && mode.Sequential())
				if r, ok := op.Req.(*proto.CreateTTLRequest); ok && passes && r.TTL < 0 && mode.Valid() && !mode.TTL() {
					// ZooKeeper lets this createTTL through every check
					// and then fails to apply it, which stops the server
					// ("ttl must be positive"). Inside a multi it is a
					// plain create, compared below.
				} else {
					steps = append(steps, step{"a", 0, op.Type, op.Req})
				}
				// Inside a multi, after an op that succeeds: the create
				// is rebuilt from its flags, and any failure undoes the
				// first op.
				ops := []proto.MultiOp{{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/t/" + fresh(), ACL: open}}, create(f.path(fresh()))}
				steps = append(steps, step{"a", 0, proto.OpMulti, &proto.MultiRequest{Ops: ops}})
			}
		}
	}
	// What was created, and what was undone.
	steps = append(steps, step{"a", 0, proto.OpGetChildren2, &proto.GetChildren2Request{Path: "/t"}})
	return steps
}

// multiKindSteps send multis and multiReads whose ops are reads, writes,
// both, or neither. ZooKeeper refuses a multi with a read in it, and a
// multiRead with a write, whole, with MarshallingError.
func multiKindSteps() []step {
	create := func(path string) proto.MultiOp {
		return proto.MultiOp{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: path, ACL: open}}
	}
	check := proto.MultiOp{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: "/t", Version: -1}}
	getData := proto.MultiOp{Type: proto.OpGetData, Req: &proto.GetDataRequest{Path: "/t"}}
	getChildren := proto.MultiOp{Type: proto.OpGetChildren, Req: &proto.GetChildrenRequest{Path: "/t/ex"}}
	deleteContainer := proto.MultiOp{Type: proto.OpDeleteContainer, Req: &proto.DeleteRequest{Path: "/t/ex", Version: -1}}
	lists := [][]proto.MultiOp{
		{getData}, {getChildren, getData}, {create("/t/k1"), getData}, {getData, create("/t/k2")},
		{deleteContainer}, {create("/t/k3"), deleteContainer}, {create("/t/k4"), check},
		{check, create("/t/k5")}, {},
	}
	var steps []step
	for _, ops := range lists {
		steps = append(steps,
			step{"a", 0, proto.OpMulti, &proto.MultiRequest{Ops: ops}},
			step{"a", 0, proto.OpMultiRead, &proto.MultiRequest{Ops: ops}})
	}
	return append(steps, step{"a", 0, proto.OpGetChildren2, &proto.GetChildren2Request{Path: "/t"}})
}
