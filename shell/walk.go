package shell

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
)

// treeNode is a node of a subtree read by fetchTree.
type treeNode struct {
	path     string
	children []*treeNode // in the order the server listed them
	err      error       // why its children could not be listed
}

// maxListsInFlight bounds the requests fetchTree has in flight: enough to
// fill the pipeline of one connection, few enough not to crowd out others.
const maxListsInFlight = 32

// fetchTree lists the subtree under root, level by level with many
// requests in flight, so that listing a wide tree is bound by the server's
// throughput rather than by a round trip per node. A node whose children
// cannot be listed keeps the error. The result is incomplete when ctx ends.
func fetchTree(ctx context.Context, root string, list func(ctx context.Context, path string) ([]string, error)) *treeNode {
	top := &treeNode{path: root}
	level := []*treeNode{top}
	slots := make(chan struct{}, maxListsInFlight)
	for len(level) > 0 && ctx.Err() == nil {
		var wg sync.WaitGroup
		for _, n := range level {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				names, err := list(ctx, n.path)
				n.err = err
				for _, name := range names {
					n.children = append(n.children, &treeNode{path: proto.Join(n.path, name)})
				}
			})
		}
		wg.Wait()
		var next []*treeNode
		for _, n := range level {
			next = append(next, n.children...)
		}
		level = next
	}
	return top
}

// sortedChildren returns n's children sorted by name.
func (n *treeNode) sortedChildren() []*treeNode {
	kids := slices.Clone(n.children)
	slices.SortFunc(kids, func(a, b *treeNode) int { return strings.Compare(a.path, b.path) })
	return kids
}

// visitSubtree calls visit for the descendants of root in the order of
// ZooKeeper's ZKUtil.visitSubTreeDFS, which zkCli.sh's ls -R prints: a
// node's children sorted by name, then the subtree of each in turn. A node
// gone before its children were listed is skipped; any other failure ends
// the walk.
func visitSubtree(root string, children func(path string) ([]string, error), visit func(path string)) error {
	names, err := children(root)
	if errors.Is(err, client.ErrNoNode) {
		return nil
	}
	if err != nil {
		return failure(err, root)
	}
	slices.Sort(names)
	for _, name := range names {
		visit(proto.Join(root, name))
	}
	for _, name := range names {
		if err := visitSubtree(proto.Join(root, name), children, visit); err != nil {
			return err
		}
	}
	return nil
}

// lister returns the function that lists children for fetchTree, setting
// a child watch on every node when watch is set.
func (sh *Shell) lister(watch bool) func(ctx context.Context, path string) ([]string, error) {
	return func(ctx context.Context, path string) ([]string, error) {
		names, _, err := sh.children(ctx, path, watch)
		return names, err
	}
}

// listRecursive is ls -R: the paths of the subtree, the root first.
func listRecursive(ctx context.Context, sh *Shell, root string, watch bool, res *result) error {
	// zkCli.sh reads the root's data first, so a missing root fails.
	if _, _, err := sh.get(ctx, root, watch); err != nil {
		return failure(err, root)
	}
	top := fetchTree(ctx, root, sh.lister(watch))
	if err := ctx.Err(); err != nil {
		return err
	}
	nodes := map[string]*treeNode{}
	var index func(n *treeNode)
	index = func(n *treeNode) {
		nodes[n.path] = n
		for _, k := range n.children {
			index(k)
		}
	}
	index(top)
	paths := []string{root}
	res.print(root)
	err := visitSubtree(root, func(path string) ([]string, error) {
		n := nodes[path]
		names := make([]string, 0, len(n.children))
		for _, k := range n.children {
			names = append(names, proto.Base(k.path))
		}
		return names, n.err
	}, func(path string) {
		res.print(path)
		paths = append(paths, path)
	})
	res.value = jsonPaths{Paths: paths}
	return err
}

type jsonTree struct {
	Path     string      `json:"path"`
	Children []*jsonTree `json:"children,omitempty"`
	// Error says why the node's children could not be listed.
	Error string `json:"error,omitempty"`
}

// runTree is tree: the subtree drawn with its branches, children sorted by
// name. A node whose children cannot be listed (no permission) is drawn
// with the reason, and the rest of the tree still is.
func runTree(ctx context.Context, sh *Shell, o options, res *result) error {
	root := "/"
	if len(o.args) > 1 {
		root = o.args[1]
	}
	top := fetchTree(ctx, root, sh.lister(false))
	if err := ctx.Err(); err != nil {
		return err
	}
	if top.err != nil {
		return failure(top.err, root)
	}
	var lines []string
	var draw func(n *treeNode, name, branch, indent string) *jsonTree
	draw = func(n *treeNode, name, branch, indent string) *jsonTree {
		v := &jsonTree{Path: n.path}
		// A node deleted while the tree was read is drawn without children.
		if n.err != nil && !errors.Is(n.err, client.ErrNoNode) {
			v.Error = failure(n.err, n.path).Error()
			name += " (" + v.Error + ")"
		}
		lines = append(lines, branch+name)
		kids := n.sortedChildren()
		for i, k := range kids {
			branch, below := "├── ", "│   "
			if i == len(kids)-1 {
				branch, below = "└── ", "    "
			}
			v.Children = append(v.Children, draw(k, proto.Base(k.path), indent+branch, indent+below))
		}
		return v
	}
	v := draw(top, root, "", "")
	res.print(lines...)
	res.value = v
	return nil
}

// runDeleteAll is deleteall, as ZooKeeper's ZKUtil.deleteRecursive: the
// subtree listed breadth first, then deleted from the last node listed
// back to the root, in transactions of at most the batch size.
func runDeleteAll(ctx context.Context, sh *Shell, o options, res *result) error {
	batch := 1000
	if b, ok := o.flags['b']; ok {
		n, err := strconv.Atoi(b)
		if err != nil {
			return usageError("-b argument must be an int value")
		}
		batch = n
	}
	root := o.args[1]
	top := fetchTree(ctx, root, sh.lister(false))
	if err := ctx.Err(); err != nil {
		return err
	}
	order := []*treeNode{top}
	for i := 0; i < len(order); i++ {
		if n := order[i]; n.err != nil {
			return failure(n.err, n.path)
		}
		order = append(order, order[i].children...)
	}
	var ops []client.Op
	for i := len(order) - 1; i >= 0; i-- {
		ops = append(ops, client.DeleteOp(order[i].path, client.AnyVersion))
		if len(ops) != batch && i > 0 {
			continue
		}
		if _, err := sh.client.Multi(ctx, ops...); err != nil {
			var code proto.Code
			if !errors.As(err, &code) {
				return err
			}
			return &serverError{code: code, path: root, msg: "Failed to delete some node(s) in the subtree!"}
		}
		ops = ops[:0]
	}
	res.value = struct {
		Path    string `json:"path"`
		Deleted int    `json:"deleted"`
	}{root, len(order)}
	return nil
}
