// Package znode holds the znode operations the recipes share: creating
// nodes below ancestors that may not exist yet, as Curator's
// creatingParentContainersIfNeeded does.
package znode

import (
	"context"
	"errors"

	"github.com/collie-io/collie/client"
)

// maxParentAttempts bounds how often Create makes a node's ancestors:
// more than once only when the server reaps an empty container meanwhile,
// and never for a chroot that does not exist.
const maxParentAttempts = 3

// Create creates a node at path with mode and data, creating its missing
// ancestors as containers, which the server removes once they are empty.
// An ancestor reaped before the node is created is made again.
func Create(ctx context.Context, c *client.Client, path string, data []byte, mode client.CreateMode) error {
	for attempt := 1; ; attempt++ {
		_, _, err := c.Create(ctx, path, data, mode, nil)
		if !errors.Is(err, client.ErrNoNode) || attempt == maxParentAttempts {
			return err
		}
		if err := createAncestors(ctx, c, path); err != nil {
			return err
		}
	}
}

// CreateContainers creates path and its missing ancestors as containers.
func CreateContainers(ctx context.Context, c *client.Client, path string) error {
	if err := createAncestors(ctx, c, path); err != nil {
		return err
	}
	_, _, err := c.Create(ctx, path, nil, client.ModeContainer, nil)
	if err != nil && !errors.Is(err, client.ErrNodeExists) {
		return err
	}
	return nil
}

// createAncestors creates the missing ancestors of path as containers.
func createAncestors(ctx context.Context, c *client.Client, path string) error {
	for i := 1; i < len(path); i++ {
		if path[i] != '/' {
			continue
		}
		_, _, err := c.Create(ctx, path[:i], nil, client.ModeContainer, nil)
		if err != nil && !errors.Is(err, client.ErrNodeExists) {
			return err
		}
	}
	return nil
}
