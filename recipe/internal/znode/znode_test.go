package znode_test

import (
	"errors"
	"testing"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/internal/recipetest"
	"github.com/collie-io/collie/recipe/internal/znode"
)

// Create makes the missing ancestors as containers and the node with its
// own mode; CreateContainers is idempotent.
func TestCreate(t *testing.T) {
	for _, srv := range recipetest.Servers {
		t.Run("server="+srv.Name, func(t *testing.T) {
			addr := srv.Start(t)
			ctx := recipetest.Context(t)
			c := recipetest.Dial(t, addr, client.Config{})
			if err := znode.Create(ctx, c, "/a/b/c", []byte("x"), client.ModeEphemeral); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"/a", "/a/b"} {
				if _, st, err := c.Get(ctx, p); err != nil || st.EphemeralOwner != 0 {
					t.Errorf("ancestor %s: %+v, %v", p, st, err)
				}
			}
			if data, st, err := c.Get(ctx, "/a/b/c"); err != nil || string(data) != "x" || st.EphemeralOwner != c.SessionID() {
				t.Errorf("node: %q %+v, %v", data, st, err)
			}
			if err := znode.Create(ctx, c, "/a/b/c", nil, client.ModePersistent); !errors.Is(err, client.ErrNodeExists) {
				t.Errorf("Create of an existing node: %v", err)
			}
			for range 2 {
				if err := znode.CreateContainers(ctx, c, "/x/y"); err != nil {
					t.Fatal(err)
				}
			}
			if ok, _, err := c.Exists(ctx, "/x/y"); !ok || err != nil {
				t.Errorf("container /x/y: %v, %v", ok, err)
			}
		})
	}
}
