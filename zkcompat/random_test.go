package zkcompat

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
)

// Environment of TestRandomAgainstZooKeeper: how many requests it sends
// (a few hundred by default; 10000 makes a long run) and the seed of their
// sequence.
const (
	randomStepsEnv = "COLLIE_RANDOM_STEPS"
	randomSeedEnv  = "COLLIE_RANDOM_SEED"
)

// TestRandomAgainstZooKeeper sends one seeded random sequence of requests
// to ZooKeeper 3.8 and to Collie in lockstep, one request at a time, each
// through one of a few connections with digest identities of their own
// (the super user's among them, now and then): creates of every opcode and
// mode with ACLs mixing world, auth, digest and ip ids, multis mixing
// creates (createTTL too), deletes, setData and checks, setACL and getACL
// with versions, reads and multiReads, addauth, whoAmI and session ends. It
// stops at the first reply that differs.
func TestRandomAgainstZooKeeper(t *testing.T) {
	n := envInt(t, randomStepsEnv, 1000)
	seed := envInt(t, randomSeedEnv, 1)
	superDigest := digest(superPassword)
	// Sessions outlive a long run without pings; containers and TTL nodes
	// are never swept while it runs, on either server.
	ref := zkref.Start(t, zkref.WithExtendedTypes(),
		zkref.WithConfig("maxSessionTimeout", "3600000"),
		zkref.WithJVMArgs(
			"-Dzookeeper.DigestAuthenticationProvider.superDigest="+superDigest,
			"-Dznode.container.checkIntervalMs=3600000",
			"-Dfile.encoding=UTF-8"))
	col := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
		c.SuperDigest = superDigest
		c.MaxSessionTimeout = time.Hour
		c.ContainerCheckInterval = time.Hour
	}))
	const timeoutMs = 3600000
	randomLockstep(t, seed, n, newWireRunner(t, ref.Addr(), timeoutMs), newWireRunner(t, col.Addr(), timeoutMs), nil)
}

// randomLockstep sends n requests of the random sequence seed makes to zk
// and to co, one at a time, leaving out those skip names, and fails at
// the first reply that differs.
func randomLockstep(t *testing.T, seed, n int, zk, co *wireRunner, skip func(step) bool) {
	t.Helper()
	g := newRandomRequests(uint64(seed))
	var recent []string
	for i, sent := 0, 0; sent < n; i++ {
		s := g.next()
		if skip != nil && skip(s) {
			continue
		}
		sent++
		want, got := zk.run(i, s), co.run(i, s)
		if want != got {
			t.Fatalf("seed %d, step %d differs:\nZooKeeper: %s\nCollie:    %s\nsteps before:\n%s",
				seed, i, want, got, strings.Join(recent, "\n"))
		}
		if recent = append(recent, want); len(recent) > 12 {
			recent = recent[1:]
		}
	}
	t.Logf("seed %d: %d requests, same replies", seed, n)
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// randomRequests generates the steps of TestRandomAgainstZooKeeper. It
// keeps no model of the servers: the namespace is small enough that
// random requests meet the nodes that random creates made.
type randomRequests struct {
	rng *rand.Rand
	// fresh holds the connections that have sent nothing since they
	// opened: their first requests are addauths.
	fresh map[string]bool
}

// randomConns are the connections requests go through.
var randomConns = []string{"c0", "c1", "c2", "c3"}

func newRandomRequests(seed uint64) *randomRequests {
	g := &randomRequests{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), fresh: map[string]bool{}}
	for _, c := range randomConns {
		g.fresh[c] = true
	}
	return g
}

func (g *randomRequests) pick(n int) int { return g.rng.IntN(n) }

func (g *randomRequests) one(s ...string) string { return s[g.pick(len(s))] }

func (g *randomRequests) next() step {
	conn := randomConns[g.pick(len(randomConns))]
	if g.fresh[conn] {
		// A new session first authenticates as a few identities, or
		// none; the first request tells which.
		if g.pick(3) > 0 {
			return g.addAuth(conn)
		}
		delete(g.fresh, conn)
	}
	switch r := g.pick(100); {
	case r < 24:
		op := g.create(false)
		return step{conn, 0, op.Type, op.Req}
	case r < 32:
		return step{conn, 0, proto.OpDelete, &proto.DeleteRequest{Path: g.path(), Version: g.version()}}
	case r < 41:
		return step{conn, 0, proto.OpSetData, &proto.SetDataRequest{Path: g.path(), Data: g.data(), Version: g.version()}}
	case r < 47:
		return step{conn, 0, proto.OpGetData, &proto.GetDataRequest{Path: g.path()}}
	case r < 50:
		return step{conn, 0, proto.OpExists, &proto.ExistsRequest{Path: g.path()}}
	case r < 54:
		return step{conn, 0, proto.OpGetChildren2, &proto.GetChildren2Request{Path: g.path()}}
	case r < 62:
		return step{conn, 0, proto.OpGetACL, &proto.GetACLRequest{Path: g.path()}}
	case r < 70:
		return step{conn, 0, proto.OpSetACL, &proto.SetACLRequest{Path: g.path(), ACL: g.acl(), Version: g.version()}}
	case r < 84:
		m := &proto.MultiRequest{}
		for range 1 + g.pick(4) {
			m.Ops = append(m.Ops, g.multiOp())
		}
		return step{conn, 0, proto.OpMulti, m}
	case r < 87:
		// A check on its own that passes gets no reply from ZooKeeper
		// (it fails to write one), and Collie closes the connection:
		// this one never passes.
		return step{conn, 0, proto.OpCheck, &proto.CheckVersionRequest{Path: g.path(), Version: 1000}}
	case r < 91:
		return g.addAuth(conn)
	case r < 95:
		return step{conn, 0, proto.OpWhoAmI, nil}
	case r < 96:
		return step{conn, 0, proto.OpGetChildren, &proto.GetChildrenRequest{Path: "/"}}
	case r < 98:
		m := &proto.MultiRequest{}
		for range 1 + g.pick(3) {
			if g.pick(8) == 0 {
				m.Ops = append(m.Ops, g.multiOp())
			} else {
				m.Ops = append(m.Ops, g.readOp())
			}
		}
		return step{conn, 0, proto.OpMultiRead, m}
	default:
		// The session ends, its ephemerals with it; the next request
		// of the connection opens a new one.
		g.fresh[conn] = true
		return step{conn, 0, proto.OpCloseSession, nil}
	}
}

// randomUsers are the inputs of the digest auths that connections make.
var randomUsers = []string{"u0:pw", "u1:pw", "u2:pw", "u3:pw", "u4:pw", "blah", "", "a:b:c", "x\xff:y"}

func (g *randomRequests) addAuth(conn string) step {
	in := randomUsers[g.pick(len(randomUsers))]
	if g.pick(25) == 0 {
		in = superPassword
	}
	return step{conn, proto.XidAuth, proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte(in)}}
}

// path returns a path under the namespace, now and then not a valid one.
func (g *randomRequests) path() string {
	if g.pick(40) == 0 {
		return g.one("/a/", "a", "/a//b", "/", "/zookeeper", "/zookeeper/config", "/zookeeper/quota")
	}
	return g.one("/a", "/b", "/c", "/a/x", "/a/y", "/b/x", "/a/x/z", "/s-", "/a/s-", "/c/t", "/b/x/y")
}

func (g *randomRequests) data() []byte {
	if g.pick(5) == 0 {
		return nil
	}
	return []byte(fmt.Sprintf("d%d", g.pick(4)))
}

func (g *randomRequests) version() int32 { return int32(g.pick(4)) - 1 }

var randomPerms = []int32{proto.PermAll, proto.PermAll, proto.PermRead, proto.PermRead | proto.PermWrite,
	proto.PermCreate | proto.PermDelete, proto.PermAdmin, proto.PermAll &^ proto.PermCreate, 0}

// acl returns one to three entries of every scheme, most often one that
// lets everyone do everything, so the tree grows.
func (g *randomRequests) acl() []proto.ACL {
	if g.pick(3) == 0 {
		return open
	}
	var acl []proto.ACL
	for range 1 + g.pick(3) {
		perms := randomPerms[g.pick(len(randomPerms))]
		var id proto.ID
		switch g.pick(7) {
		case 0, 1:
			id = proto.ID{Scheme: "world", ID: "anyone"}
		case 2, 3:
			id = proto.ID{Scheme: "auth"}
		case 4:
			id = proto.ID{Scheme: "digest", ID: digest(randomUsers[g.pick(len(randomUsers))])}
		case 5:
			id = proto.ID{Scheme: "ip", ID: g.one("127.0.0.1", "127.0.0.0/8", "10.0.0.0/8", "127.000.0.1", "1.2.3", "::1")}
		default:
			id = g.oddID()
		}
		acl = append(acl, proto.ACL{Perms: perms, ID: id})
	}
	return acl
}

// oddID returns an id ZooKeeper may or may not take.
func (g *randomRequests) oddID() proto.ID {
	ids := []proto.ID{
		{Scheme: "digest", ID: "u:h:"},
		{Scheme: "digest", ID: "u:"},
		{Scheme: "digest", ID: "u:a\nb"},
		{Scheme: "digest", ID: "\xff:x"},
		{Scheme: "world", ID: "someone"},
		{Scheme: "nope", ID: "x"},
		{Scheme: "super", ID: ""},
	}
	return ids[g.pick(len(ids))]
}

var randomModes = []proto.CreateMode{0, 0, 0, 1, 2, 3, 4, 5, 6}

// create returns a create of any opcode and mode. Outside a multi, a
// createTTL whose mode is not a TTL mode gets no negative TTL: ZooKeeper
// would let it through every check and then stop on applying it.
func (g *randomRequests) create(inMulti bool) proto.MultiOp {
	mode := randomModes[g.pick(len(randomModes))]
	if g.pick(50) == 0 {
		mode = []proto.CreateMode{7, -1}[g.pick(2)]
	}
	path, data, acl := g.path(), g.data(), g.acl()
	switch op := []proto.OpCode{proto.OpCreate, proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL}[g.pick(5)]; op {
	case proto.OpCreateTTL:
		ttl := []int64{3600000, 3600000, 0, -1, proto.MaxTTL + 1}[g.pick(5)]
		if ttl < 0 && !inMulti && !mode.TTL() {
			ttl = 0
		}
		return proto.MultiOp{Type: op, Req: &proto.CreateTTLRequest{Path: path, Data: data, ACL: acl, Flags: mode, TTL: ttl}}
	default:
		return proto.MultiOp{Type: op, Req: &proto.CreateRequest{Path: path, Data: data, ACL: acl, Flags: mode}}
	}
}

// readOp returns an op of a multiRead.
func (g *randomRequests) readOp() proto.MultiOp {
	if g.pick(2) == 0 {
		return proto.MultiOp{Type: proto.OpGetData, Req: &proto.GetDataRequest{Path: g.path()}}
	}
	return proto.MultiOp{Type: proto.OpGetChildren, Req: &proto.GetChildrenRequest{Path: g.path()}}
}

// multiOp returns an op of a multi, now and then one that has no place
// there.
func (g *randomRequests) multiOp() proto.MultiOp {
	if g.pick(40) == 0 {
		return g.readOp()
	}
	switch g.pick(5) {
	case 0, 1:
		return g.create(true)
	case 2:
		return proto.MultiOp{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: g.path(), Version: g.version()}}
	case 3:
		return proto.MultiOp{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: g.path(), Data: g.data(), Version: g.version()}}
	}
	return proto.MultiOp{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: g.path(), Version: g.version()}}
}
