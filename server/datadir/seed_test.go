package datadir_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/datadir"
	"github.com/collie-io/collie/server/fsm"
)

// zkSizedIndex is a zxid as ZooKeeper's ensembles have them: epoch 5,
// counter 7.
const zkSizedIndex = 0x500000007

// sourceState runs a standalone server, writes nodes to it, stops it and
// returns its state, read from its data directory as a start would.
func sourceState(t *testing.T) *fsm.FSM {
	t.Helper()
	srv := collietest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, srv.Addr(), client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, _, err := c.Create(ctx, fmt.Sprintf("/seeded%d", i), []byte(fmt.Sprint(i)), client.ModePersistent, nil); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	srv.Stop()
	d, err := datadir.Open(srv.Cfg().DataDir, "", fsm.Options{ExtendedTypes: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, err := d.Load(true)
	if err != nil {
		t.Fatal(err)
	}
	return st.FSM
}

// checkSeeded checks, through a server, that the seeded nodes are there
// and that a new write's zxid is above the seeded index.
func checkSeeded(t *testing.T, addr, write string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Sync(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		data, stat, err := c.Get(ctx, fmt.Sprintf("/seeded%d", i))
		if err != nil || string(data) != fmt.Sprint(i) || stat.Czxid > zkSizedIndex {
			t.Fatalf("/seeded%d through %s: %q, czxid %#x, %v", i, addr, data, stat.Czxid, err)
		}
	}
	_, stat, err := c.Create(ctx, write, nil, client.ModePersistent, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stat.Czxid <= zkSizedIndex {
		t.Fatalf("a write after the start got zxid %#x, not above the seeded %#x", stat.Czxid, zkSizedIndex)
	}
}

func TestSeedStandaloneAtLargeIndex(t *testing.T) {
	state := sourceState(t)
	cfg := collietest.Config(t)
	seeded, err := datadir.Seed(datadir.SeedConfig{
		DataDir: cfg.DataDir, Standalone: true, Options: fsm.Options{ExtendedTypes: true},
		Index: zkSizedIndex, Term: 3, WriteState: state.Save,
	})
	if err != nil {
		t.Fatal(err)
	}
	if seeded.Ensemble != state.EnsembleID() || seeded.Nodes != state.Tree().Len() {
		t.Fatalf("seeded %+v, from a state of ensemble %016x with %d nodes", seeded, state.EnsembleID(), state.Tree().Len())
	}
	srv := collietest.StartConfig(t, cfg)
	checkSeeded(t, srv.Addr(), "/after-start")
	// A restart goes on from the seeded directory and what followed.
	srv.Restart()
	checkSeeded(t, srv.Addr(), "/after-restart")
}

func TestSeedEnsembleAtLargeIndex(t *testing.T) {
	state := sourceState(t)
	e := collietest.StartEnsembleFrom(t, 3, 0, func(cfg config.Config) {
		var voters []uint64
		for _, m := range cfg.Servers {
			voters = append(voters, m.ID)
		}
		if _, err := datadir.Seed(datadir.SeedConfig{
			DataDir: cfg.DataDir, ID: cfg.ServerID, Voters: voters, Options: fsm.Options{ExtendedTypes: true},
			Index: zkSizedIndex, Term: 3, WriteState: state.Save,
			// One member is left for its start to read back.
			NoReadBack: cfg.ServerID == 3,
		}); err != nil {
			t.Fatal(err)
		}
	})
	for i, s := range e.Servers() {
		checkSeeded(t, s.Addr(), fmt.Sprintf("/after-%d", i+1))
	}
}

func TestSeedRefusesNonEmptyTargetAndBadMembership(t *testing.T) {
	state := fsm.New(fsm.Options{})
	dir := t.TempDir()
	good := datadir.SeedConfig{DataDir: dir, Standalone: true, Index: 10, WriteState: state.Save}
	if err := datadir.CheckSeedTarget(dir, ""); err != nil {
		t.Fatalf("CheckSeedTarget of an empty directory: %v", err)
	}
	if _, err := datadir.Seed(good); err != nil {
		t.Fatal(err)
	}
	if err := datadir.CheckSeedTarget(dir, ""); !errors.Is(err, datadir.ErrTargetNotEmpty) {
		t.Fatalf("CheckSeedTarget of a seeded directory: %v, want ErrTargetNotEmpty", err)
	}
	if _, err := datadir.Seed(good); !errors.Is(err, datadir.ErrTargetNotEmpty) {
		t.Fatalf("seeding a seeded directory again: %v, want ErrTargetNotEmpty", err)
	}
	for name, cfg := range map[string]datadir.SeedConfig{
		"not a member":   {DataDir: t.TempDir(), ID: 4, Voters: []uint64{1, 2, 3}, Index: 10, WriteState: state.Save},
		"no id":          {DataDir: t.TempDir(), Voters: []uint64{1, 2, 3}, Index: 10, WriteState: state.Save},
		"index zero":     {DataDir: t.TempDir(), Standalone: true, WriteState: state.Save},
		"no state":       {DataDir: t.TempDir(), Standalone: true, Index: 10},
		"state is ahead": {DataDir: t.TempDir(), Standalone: true, Index: 1, WriteState: aheadState(t).Save},
	} {
		if _, err := datadir.Seed(cfg); err == nil {
			t.Errorf("%s: seeded", name)
		}
	}
	// A myid of another server is refused before anything is written.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "myid"), []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := datadir.Seed(datadir.SeedConfig{DataDir: other, ID: 1, Voters: []uint64{1, 2, 3}, Index: 10, WriteState: state.Save}); err == nil {
		t.Fatal("seeded over the myid of another server")
	}
	if _, err := os.Stat(filepath.Join(other, "snap")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused seed wrote %s/snap: %v", other, err)
	}
}

// aheadState is a state applied up to index 5.
func aheadState(t *testing.T) *fsm.FSM {
	f := fsm.New(fsm.Options{})
	f.Skip(5)
	return f
}
