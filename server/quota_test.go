package server_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/server/config"
)

// Quota stats are replicated state: written through every member of an
// ensemble enforcing quotas, with snapshots taken every few entries and a
// member restarted from its own, every member holds the same stats node,
// data and Stat, and refuses the same write past a hard limit.
func TestEnsembleQuotaStats(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0, collietest.WithConfig(func(c *config.Config) {
		c.EnforceQuota = true
		c.SnapCount = 4
	}))
	servers := e.Servers()
	acl := zk.WorldACL(zk.PermAll)
	// create and set write through server i, again after a lost connection
	// (an ensemble just started may still change its leader): a create
	// then found done is done.
	create := func(i int, path, data string) {
		t.Helper()
		for attempt := 0; ; attempt++ {
			c, _ := connect(t, servers[i].Addr())
			_, err := c.Create(path, []byte(data), 0, acl)
			switch {
			case err == nil, attempt > 0 && errors.Is(err, zk.ErrNodeExists):
				return
			case errors.Is(err, zk.ErrConnectionClosed) && attempt < 3:
				continue
			}
			t.Fatalf("create %s through server %d: %v", path, i+1, err)
		}
	}
	set := func(i int, path, data string) {
		t.Helper()
		for attempt := 0; ; attempt++ {
			c, _ := connect(t, servers[i].Addr())
			_, err := c.Set(path, []byte(data), -1)
			switch {
			case err == nil:
				return
			case errors.Is(err, zk.ErrConnectionClosed) && attempt < 3:
				continue
			}
			t.Fatalf("set %s through server %d: %v", path, i+1, err)
		}
	}
	create(0, "/q", "")
	create(0, "/zookeeper/quota/q", "")
	create(0, "/zookeeper/quota/q/zookeeper_limits", "count=-1,bytes=-1=;countHardLimit=6")
	create(0, "/zookeeper/quota/q/zookeeper_stats", "count=0,bytes=0")
	for i := range servers {
		create(i, fmt.Sprintf("/q/n%d", i), "abc")
		set(i, fmt.Sprintf("/q/n%d", i), "abcdef")
	}
	servers[1].Stop()
	create(2, "/q/x", "z")
	create(2, "/q/y", "z")
	c2, _ := connect(t, servers[2].Addr())
	// /q and seven nodes under it would be eight.
	if _, err := c2.Create("/q/over", nil, 0, acl); err == nil || !bytes.Contains([]byte(err.Error()), []byte("-125")) {
		t.Fatalf("create past the hard limit: %v, want QuotaExceeded (-125)", err)
	}
	servers[1].Restart()

	want := "count=6,bytes=20"
	var first *zk.Stat
	for i, s := range servers {
		c, _ := connect(t, s.Addr())
		if _, err := c.Sync("/"); err != nil {
			t.Fatalf("sync on server %d: %v", i+1, err)
		}
		data, st, err := c.Get("/zookeeper/quota/q/zookeeper_stats")
		if err != nil {
			t.Fatalf("stats on server %d: %v", i+1, err)
		}
		if string(data) != want {
			t.Errorf("stats on server %d: %q, want %q", i+1, data, want)
		}
		if first == nil {
			first = st
		} else if *st != *first {
			t.Errorf("stats node's Stat on server %d: %+v, on server 1: %+v", i+1, *st, *first)
		}
		if _, err := c.Create("/q/over", nil, 0, acl); err == nil {
			t.Errorf("server %d let a create past the hard limit through", i+1)
		}
	}
}
