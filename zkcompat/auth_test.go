package zkcompat

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
)

// superPassword is the super user's password in TestAuthAgainstZooKeeper.
const superPassword = "super:pw"

// TestAuthAgainstZooKeeper compares what a connection's identities become on
// ZooKeeper 3.8 and on Collie: the identity that digest auth derives from
// any input, the order in which whoAmI lists a connection's identities, and
// the ACL a create with the "auth" scheme gets from them.
func TestAuthAgainstZooKeeper(t *testing.T) {
	superDigest := digest(superPassword)
	ref := zkref.Start(t, zkref.WithJVMArgs(
		"-Dzookeeper.DigestAuthenticationProvider.superDigest="+superDigest,
		// Digest auth decodes its bytes with the JVM's default charset:
		// UTF-8, as on any UTF-8 locale and on every JDK from 18 on.
		"-Dfile.encoding=UTF-8"))
	col := collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
		c.SuperDigest = superDigest
		c.MaxSessionTimeout = 40 * time.Second
	}))
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"digest", digestSteps()},
		{"order", authOrderSteps()},
		{"ids", aclIDSteps()},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := runSteps(t, ref.Addr(), c.steps, nil)
			got := runSteps(t, col.Addr(), c.steps, nil)
			compareSteps(t, want, got)
		})
	}
}

// TestIPv6IdentityAgainstZooKeeper compares, on ZooKeeper 3.8 and on
// Collie, the identity of a client connected over the IPv6 loopback: whoAmI
// shows its address as Java writes it (0:0:0:0:0:0:0:1), an "ip" auth
// packet adds that same identity, and ip ids, IPv4 only, neither name nor
// match it.
func TestIPv6IdentityAgainstZooKeeper(t *testing.T) {
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	l.Close()
	// ZooKeeper listens on every address: zkref waits for it on 127.0.0.1.
	ref := zkref.Start(t, zkref.WithConfig("clientPortAddress", "::"))
	col := collietest.Start(t, collietest.WithConfig(func(c *config.Config) { c.ClientPortAddress = "::1" }))
	loopback := func(addr string) string {
		_, port, _ := net.SplitHostPort(addr)
		return net.JoinHostPort("::1", port)
	}
	ipACL := func(id string) []proto.ACL {
		return []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "ip", ID: id}}}
	}
	steps := []step{
		whoAmI("a"),
		{"a", proto.XidAuth, proto.OpAuth, &proto.AuthPacket{Scheme: "ip"}},
		whoAmI("a"),
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/v6", ACL: ipACL("0:0:0:0:0:0:0:1")}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/v6", ACL: ipACL("::1")}},
		{"a", 0, proto.OpCreate, &proto.CreateRequest{Path: "/v4", ACL: ipACL("0.0.0.0/0")}},
		{"a", 0, proto.OpGetData, &proto.GetDataRequest{Path: "/v4"}},
	}
	want := runSteps(t, loopback(ref.Addr()), steps, nil)
	got := runSteps(t, loopback(col.Addr()), steps, nil)
	compareSteps(t, want, got)
}

func addAuth(conn, userPassword string) step {
	return step{conn, proto.XidAuth, proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte(userPassword)}}
}

func whoAmI(conn string) step { return step{conn, 0, proto.OpWhoAmI, nil} }

// createGetACL creates path from conn with acl and reads the ACL back.
func createGetACL(conn, path string, acl ...proto.ACL) []step {
	return []step{
		{conn, 0, proto.OpCreate, &proto.CreateRequest{Path: path, ACL: acl}},
		{conn, 0, proto.OpGetACL, &proto.GetACLRequest{Path: path}},
	}
}

var authACL = proto.ACL{Perms: proto.PermAll, ID: proto.ID{Scheme: "auth"}}

// digestSteps authenticate with digest inputs of every shape: without a
// colon, empty, with several colons, not UTF-8. ZooKeeper takes them all;
// the identity (shown whole by getACL) is the part before the first colon
// and the SHA-1 of the whole input as Java decoded it.
func digestSteps() []step {
	inputs := []string{
		"blah", "", ":", "::", "u:", ":p", "a:b:c", "u:p",
		"caf\xc3\xa9:p", "\xff\xfe:x", "\xe2\x82:y", "\xf0\x90\x80", "\xed\xa0\x80:s",
		"a\x00b:c", "tab\tuser:p", superPassword,
	}
	var steps []step
	for i, in := range inputs {
		conn := fmt.Sprintf("d%d", i)
		steps = append(steps, addAuth(conn, in), whoAmI(conn))
		steps = append(steps, createGetACL(conn, fmt.Sprintf("/digest%d", i), authACL)...)
		// The same input on another connection is the same identity.
		again := fmt.Sprintf("e%d", i)
		steps = append(steps, addAuth(again, in),
			step{again, 0, proto.OpGetData, &proto.GetDataRequest{Path: fmt.Sprintf("/digest%d", i)}})
	}
	return steps
}

// authOrderSteps add digest identities to connections in several orders,
// with repeats and the super user, and look at the order whoAmI lists them
// in and the ACL "auth" expands to, alone and mixed with other schemes.
// ZooKeeper keeps a connection's identities in a hash set, so the order is
// neither the order of addauth nor sorted.
func authOrderSteps() []step {
	u := func(i int) string { return fmt.Sprintf("user%d:pw", i) }
	id := func(i int) proto.ID { return proto.ID{Scheme: "digest", ID: digest(u(i))} }
	var steps []step
	orders := [][]int{{1, 2, 3}, {3, 2, 1}, {2, 3, 1}, {1, 1, 2, 1, 3, 2}, {4, 5, 6, 7, 8, 9, 10}}
	for i, order := range orders {
		conn := fmt.Sprintf("o%d", i)
		for _, n := range order {
			steps = append(steps, addAuth(conn, u(n)))
		}
		steps = append(steps, whoAmI(conn))
		steps = append(steps, createGetACL(conn, fmt.Sprintf("/order%d", i), authACL)...)
	}
	mixed := []proto.ACL{
		{Perms: proto.PermRead, ID: proto.ID{Scheme: "world", ID: "anyone"}},
		authACL,
		{Perms: proto.PermAll, ID: id(2)},
		{Perms: proto.PermAll, ID: proto.ID{Scheme: "ip", ID: "127.0.0.1"}},
		{Perms: proto.PermRead | proto.PermWrite, ID: proto.ID{Scheme: "auth", ID: "ignored"}},
		{Perms: proto.PermAll, ID: id(9)},
	}
	steps = append(steps, createGetACL("o0", "/mixed", mixed...)...)
	// An identity given before "auth" that auth then repeats, and the same
	// ACL entry twice.
	steps = append(steps, createGetACL("o1", "/repeated", proto.ACL{Perms: proto.PermAll, ID: id(1)}, authACL, authACL)...)
	// The super user is an identity of the connection, but not one "auth"
	// expands to.
	steps = append(steps, addAuth("s", u(1)), addAuth("s", superPassword), addAuth("s", u(2)), whoAmI("s"))
	steps = append(steps, createGetACL("s", "/super", authACL)...)
	steps = append(steps, addAuth("t", superPassword), whoAmI("t"),
		step{"t", 0, proto.OpCreate, &proto.CreateRequest{Path: "/superonly", ACL: []proto.ACL{authACL}}})
	// Enough identities to grow the set's table twice over.
	for n := 11; n < 51; n++ {
		steps = append(steps, addAuth("many", u(n)))
		if n%7 == 0 {
			steps = append(steps, whoAmI("many"))
		}
	}
	steps = append(steps, whoAmI("many"))
	steps = append(steps, createGetACL("many", "/many", authACL)...)
	// Identities that fall into one bucket of the set's table: so many
	// that the bucket becomes a tree, which lists its newest entries first.
	for _, in := range collidingInputs(14, 127) {
		steps = append(steps, addAuth("same", in))
	}
	steps = append(steps, whoAmI("same"))
	steps = append(steps, createGetACL("same", "/same", authACL)...)
	// Identities added again where that changes the order: the set
	// restructures when it finds the identity eighth or deeper in its
	// bucket. Eight in a bucket of the first table of 16, the eighth again:
	// the table grows, which reorders the bucket. Nine in a bucket of a
	// table of 128, the ninth again, then a tenth: the bucket has become a
	// tree, which lists the tenth first.
	low := collidingInputs(8, 15)
	for _, in := range append(low, low[7], low[7]) {
		steps = append(steps, addAuth("again", in))
	}
	steps = append(steps, whoAmI("again"))
	steps = append(steps, createGetACL("again", "/again", authACL)...)
	deep := collidingInputs(10, 127)
	for _, in := range append(deep[:9:9], deep[8], deep[0], deep[9]) {
		steps = append(steps, addAuth("deep", in))
	}
	steps = append(steps, whoAmI("deep"))
	steps = append(steps, createGetACL("deep", "/deep", authACL)...)
	return steps
}

// collidingInputs returns n digest inputs whose identities have hashes equal
// in the bits of mask once spread as java.util.concurrent.
// ConcurrentHashMap spreads them, so they share a bucket of its table up
// to mask+1 buckets.
func collidingInputs(n int, mask int32) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		in := fmt.Sprintf("c%d:pw", i)
		h := javaIDHash("digest", digest(in))
		if (h^int32(uint32(h)>>16))&mask == 0 {
			out = append(out, in)
		}
	}
	return out
}

// javaIDHash is the hashCode of a ZooKeeper Id (generated by jute) with
// the given scheme and id, for ASCII strings.
func javaIDHash(scheme, id string) int32 {
	str := func(s string) int32 {
		var h int32
		for i := range len(s) {
			h = 31*h + int32(s[i])
		}
		return h
	}
	return 37*(37*17+str(scheme)) + str(id)
}

// aclIDSteps create nodes with ip and digest ids of every shape, read their
// ACLs back, masked or not, and read nodes whose ip ids may match the
// client's 127.0.0.1.
// ZooKeeper 3.8 knows IPv4 ids only, and reads their numbers as Java's
// Integer.parseInt; a digest id is two parts around colons, empty parts at
// the end not counted.
func aclIDSteps() []step {
	ids := []proto.ID{}
	for _, ip := range []string{
		"127.0.0.1", "010.0.0.1", "1.2.3.4/+8", "1.2.3.4/08", "1.2.3.4/-0", "1.2.3.4/33",
		"1.2.3.4/0", "1.2.3.4/", "1.2.3.4/8/8", "+1.2.3.4", "-0.0.0.0", "1.2.3", "1.2.3.4.5",
		"1..2.3", "::1", "0:0:0:0:0:0:0:1", "fe80::/10", "\u0661.2.3.4", "\uff11.2.3.4",
		"\U0001d7cf.2.3.4", "256.1.1.1", "00000000000000000001.2.3.4", "2147483648.1.1.1",
		" 1.2.3.4", "1.2.3.4 ",
	} {
		ids = append(ids, proto.ID{Scheme: "ip", ID: ip})
	}
	for _, d := range []string{
		"u:h", "u:", "u:h:", ":h", "u::", "u:h::", "::", ":", "", "nocolon", "a:b:c",
		"\xff:x", "u:\xe2\x82", "\xf0\x90\x80:h",
	} {
		ids = append(ids, proto.ID{Scheme: "digest", ID: d})
	}
	ids = append(ids, proto.ID{Scheme: "dig\xffest", ID: "u:h"}, proto.ID{Scheme: "world", ID: "Anyone"},
		proto.ID{Scheme: "world", ID: "anyone\xff"})
	var steps []step
	for i, id := range ids {
		// Anyone may read the ACL back as stored: with the admin
		// permission, digest ids are not masked.
		steps = append(steps, createGetACL("a", fmt.Sprintf("/id%d", i), proto.ACL{Perms: proto.PermAll, ID: id},
			proto.ACL{Perms: proto.PermRead | proto.PermAdmin, ID: proto.ID{Scheme: "world", ID: "anyone"}})...)
	}
	// Digest ids are masked for a reader without the admin permission:
	// ZooKeeper replaces ":.*" with ":x", and "." stops at a line end.
	for i, d := range []string{"u:a\nb", "u:\nb", "u:a\rb", "u:a\r\nb", "u:a\u0085b", "u:a\u2028b", "u:a\u2029b", "u:a\tb"} {
		path := fmt.Sprintf("/masked%d", i)
		steps = append(steps, createGetACL("a", path, proto.ACL{Perms: proto.PermAll, ID: proto.ID{Scheme: "digest", ID: d}},
			proto.ACL{Perms: proto.PermRead, ID: proto.ID{Scheme: "world", ID: "anyone"}})...)
	}
	for i, ip := range []string{
		"127.0.0.1", "127.000.000.001", "127.0.0.0/8", "127.1.1.1/+8", "128.0.0.0/0",
		"126.0.0.0/7", "126.0.0.0/8", "127.0.0.2", "127.0.0.3/31", "127.0.0.3/30",
	} {
		path := fmt.Sprintf("/ipmatch%d", i)
		steps = append(steps,
			step{"b", 0, proto.OpCreate, &proto.CreateRequest{Path: path, ACL: []proto.ACL{
				{Perms: proto.PermRead, ID: proto.ID{Scheme: "ip", ID: ip}},
				{Perms: proto.PermAdmin, ID: proto.ID{Scheme: "world", ID: "anyone"}},
			}}},
			step{"a", 0, proto.OpGetData, &proto.GetDataRequest{Path: path}})
	}
	return steps
}
