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
				return fmt.Errorf("%s %s: %w", call.op, path, err)
			}
			if code != proto.OK {
				return fmt.Errorf("%s %s: %w", call.op, path, code)
			}
		}
		out[path] = NodeLine(data.Data, acl.ACL, data.Stat)
		slices.Sort(kids.Children)
		for _, k := range kids.Children {
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
