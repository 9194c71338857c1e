package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/server/config"
)

// snapshotFiles counts the snapshot files in a server's data directory.
func snapshotFiles(t *testing.T, cfg config.Config) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(cfg.DataDir, "snap"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".snap") {
			n++
		}
	}
	return n
}

// writeSnapshots writes enough to take about ten snapshots of every ten
// entries.
func writeSnapshots(t *testing.T, addr string) {
	t.Helper()
	c, _ := connect(t, addr)
	for i := range 120 {
		if _, err := c.Create(fmt.Sprintf("/p%d", i), nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
}

// With autopurge.purgeInterval, snapshots and their log segments are
// purged on that schedule, down to autopurge.snapRetainCount, and only
// then; without it (0, the default), at every snapshot.
func TestAutopurge(t *testing.T) {
	start := func(interval time.Duration) *collietest.Server {
		return collietest.Start(t, collietest.WithConfig(func(c *config.Config) {
			c.SnapCount = 10
			c.AutopurgeSnapRetainCount = 3
			c.AutopurgePurgeInterval = interval
		}))
	}
	awaitRetained := func(t *testing.T, s *collietest.Server) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for snapshotFiles(t, s.Cfg()) != 3 {
			if time.Now().After(deadline) {
				t.Fatalf("%d snapshot files 20s after the writes, want the 3 retained", snapshotFiles(t, s.Cfg()))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Run("at every snapshot without an interval", func(t *testing.T) {
		s := start(0)
		writeSnapshots(t, s.Addr())
		// The snapshot being written is the one more there may be.
		awaitRetained(t, s)
	})
	t.Run("not before the interval", func(t *testing.T) {
		s := start(time.Hour)
		writeSnapshots(t, s.Addr())
		if n := snapshotFiles(t, s.Cfg()); n <= 3 {
			t.Errorf("%d snapshot files before the first purge, want more than the 3 retained", n)
		}
	})
	t.Run("every interval", func(t *testing.T) {
		s := start(20 * time.Millisecond)
		writeSnapshots(t, s.Addr())
		awaitRetained(t, s)
		// What is left starts a server with every write.
		s.Restart()
		c, _ := connect(t, s.Addr())
		if _, stat, err := c.Exists("/p119"); err != nil || stat == nil {
			t.Errorf("after a purge and a restart: /p119 %v %v", stat, err)
		}
	})
}
