package loadgen

import (
	"context"
	"errors"
	"path"
	"strings"
	"sync"

	"github.com/collie-io/collie/client"
)

const (
	// maxMultiOps and maxMultiBytes bound a transaction of setup, cleanup
	// or fill: ZooKeeper refuses requests over jute.maxbuffer (1 MiB by
	// default).
	maxMultiOps   = 1000
	maxMultiBytes = 512 << 10
	// multiOverhead is an op's encoding besides its path and data: the
	// header, lengths, mode, and a world ACL.
	multiOverhead = 64
	// treeParallelism is how many transactions setup and cleanup keep
	// in flight on their one session.
	treeParallelism = 8
)

// multiLen returns how many ops of a transaction fit the bounds when
// each carries pathLen bytes of path and dataLen of data.
func multiLen(pathLen, dataLen int) int {
	return min(max(maxMultiBytes/(pathLen+dataLen+multiOverhead), 1), maxMultiOps)
}

// ensurePath creates p and its missing ancestors as empty persistent nodes.
func ensurePath(ctx context.Context, c *client.Client, p string) error {
	if p == "/" {
		return nil
	}
	if err := ensurePath(ctx, c, path.Dir(p)); err != nil {
		return err
	}
	_, _, err := c.Create(ctx, p, nil, client.ModePersistent, nil)
	if errors.Is(err, client.ErrNodeExists) {
		return nil
	}
	return err
}

// inBatches calls fn for consecutive slices of items, each at most size
// long, with up to treeParallelism calls at once, and returns the first
// error.
func inBatches[T any](items []T, size int, fn func(batch []T) error) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	sem := make(chan struct{}, treeParallelism)
	for len(items) > 0 {
		n := min(size, len(items))
		batch := items[:n]
		items = items[n:]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(batch); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// createAll creates a persistent node holding data at each path, many to a
// transaction.
func createAll(ctx context.Context, c *client.Client, paths []string, data []byte) error {
	if len(paths) == 0 {
		return nil
	}
	return inBatches(paths, multiLen(len(paths[0]), len(data)), func(batch []string) error {
		ops := make([]client.Op, len(batch))
		for i, p := range batch {
			ops[i] = client.CreateOp(p, data, client.ModePersistent, nil)
		}
		_, err := c.Multi(ctx, ops...)
		return err
	})
}

// deleteTree deletes p and everything below it; a node that is already
// gone is no error.
func deleteTree(ctx context.Context, c *client.Client, p string) error {
	children, _, err := c.Children(ctx, p)
	if errors.Is(err, client.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for i, name := range children {
		children[i] = strings.TrimSuffix(p, "/") + "/" + name
	}
	// Leaves go many to a transaction. A transaction fails as a whole when
	// one of its nodes has children (or vanished meanwhile), and its nodes
	// are then deleted one by one, descending where needed.
	size := 1
	if len(children) > 0 {
		size = multiLen(len(children[0]), 0)
	}
	err = inBatches(children, size, func(batch []string) error {
		ops := make([]client.Op, len(batch))
		for i, child := range batch {
			ops[i] = client.DeleteOp(child, client.AnyVersion)
		}
		if _, err := c.Multi(ctx, ops...); err == nil {
			return nil
		}
		for _, child := range batch {
			if err := deleteNode(ctx, c, child); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return deleteNode(ctx, c, p)
}

// deleteNode deletes p, and what is below it when it has children.
func deleteNode(ctx context.Context, c *client.Client, p string) error {
	err := c.Delete(ctx, p, client.AnyVersion)
	switch {
	case errors.Is(err, client.ErrNotEmpty):
		return deleteTree(ctx, c, p)
	case errors.Is(err, client.ErrNoNode):
		return nil
	}
	return err
}
