package zkwire

import (
	"fmt"
	"slices"
	"strings"

	"github.com/collie-io/collie/proto"
)

// NodeLine is how Tree lists one node: its data, ACL and whole Stat.
func NodeLine(data []byte, acl []proto.ACL, st proto.Stat) string {
	return fmt.Sprintf("data=%q acl=%v stat=%+v", data, acl, st)
}

// Tree reads every node c's session may read, from the root down, and
// returns one NodeLine per node, by path. skip names paths left out, with
// their subtrees. A session that is to see every node authenticates as
// the super user first.
func (c *Conn) Tree(skip ...string) (map[string]string, error) {
	out := map[string]string{}
	var walk func(path string) error
	walk = func(path string) error {
		if slices.Contains(skip, path) {
			return nil
		}
		line, kids, err := c.node(path)
		if err != nil {
			return err
		}
		out[path] = line
		slices.Sort(kids)
		for _, k := range kids {
			if err := walk(strings.TrimSuffix(path, "/") + "/" + k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk("/"); err != nil {
		return nil, err
	}
	return out, nil
}

// Nodes reads the given nodes and returns one NodeLine per node, by path,
// as Tree does: a sample of a tree too large to read whole.
func (c *Conn) Nodes(paths ...string) (map[string]string, error) {
	out := make(map[string]string, len(paths))
	for _, path := range paths {
		line, _, err := c.node(path)
		if err != nil {
			return nil, err
		}
		out[path] = line
	}
	return out, nil
}

// node reads one node's NodeLine and the names of its children.
func (c *Conn) node(path string) (line string, children []string, err error) {
	var data proto.GetDataResponse
	var acl proto.GetACLResponse
	var kids proto.GetChildren2Response
	for _, call := range []struct {
		op   proto.OpCode
		req  proto.Record
		resp proto.Record
	}{
		{proto.OpGetData, &proto.GetDataRequest{Path: path}, &data},
		{proto.OpGetACL, &proto.GetACLRequest{Path: path}, &acl},
		{proto.OpGetChildren2, &proto.GetChildren2Request{Path: path}, &kids},
	} {
		code, err := c.Do(call.op, call.req, call.resp)
		if err != nil {
			return "", nil, fmt.Errorf("%s %s: %w", call.op, path, err)
		}
		if code != proto.OK {
			return "", nil, fmt.Errorf("%s %s: %w", call.op, path, code)
		}
	}
	return NodeLine(data.Data, acl.ACL, data.Stat), kids.Children, nil
}

// DiffTrees describes the nodes in which got, a Tree, differs from want,
// at most a few; "" when there are none.
func DiffTrees(want, got map[string]string) string {
	var bad []string
	for p, w := range want {
		if g, ok := got[p]; !ok {
			bad = append(bad, fmt.Sprintf("%s missing; ZooKeeper has %s", p, w))
		} else if g != w {
			bad = append(bad, fmt.Sprintf("%s differs:\n  ZooKeeper: %s\n  Collie:    %s", p, w, g))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			bad = append(bad, fmt.Sprintf("%s is extra: %s", p, g))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	slices.Sort(bad)
	return fmt.Sprintf("%d of %d nodes differ:\n%s", len(bad), len(want), strings.Join(bad[:min(len(bad), 8)], "\n"))
}
