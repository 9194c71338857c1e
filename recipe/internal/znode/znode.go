// Package znode holds the small znode operations the recipes share.
package znode

import (
	"context"
	"errors"

	"github.com/collie-io/collie/client"
)

// CreateParents creates path and its missing ancestors as containers,
// which the server removes once they are empty, as Curator's
// creatingParentContainersIfNeeded does.
func CreateParents(ctx context.Context, c *client.Client, path string) error {
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		_, _, err := c.Create(ctx, path[:i], nil, client.ModeContainer, nil)
		if err != nil && !errors.Is(err, client.ErrNodeExists) {
			return err
		}
	}
	return nil
}
