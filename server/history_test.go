package server_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/server/config"
)

// regOp is one operation on a znode used as a register: setData with any
// version (a write), setData with an expected version (a compare-and-set),
// or getData.
type regOp struct {
	key     string
	kind    string // "write", "cas" or "read"
	value   string // written, or expected to be read
	version int32  // cas: the expected version; read: the version read
}

// regResult is what came back. unknown: the connection broke before the
// answer, so a write may or may not have happened.
type regResult struct {
	ok      bool // the write applied; false for a cas refused with BadVersion
	version int32
	unknown bool
}

type regState struct {
	value   string
	version int32
}

// registerModel is a znode's data and version. Writes of unknown outcome
// lead to both states.
var registerModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(regOp).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{regState{value: "", version: 0}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(regState), input.(regOp), output.(regResult)
		applied := regState{value: in.value, version: s.version + 1}
		switch in.kind {
		case "read":
			if s.value == in.value && s.version == in.version {
				return []any{s}
			}
			return nil
		case "write":
			if out.unknown {
				return []any{s, applied}
			}
			if out.version == applied.version {
				return []any{applied}
			}
			return nil
		case "cas":
			match := s.version == in.version
			switch {
			case out.unknown && match:
				return []any{s, applied}
			case out.unknown:
				return []any{s}
			case out.ok && match && out.version == applied.version:
				return []any{applied}
			case !out.ok && !match:
				return []any{s}
			}
			return nil
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regOp), output.(regResult)
		return fmt.Sprintf("%s %s %q v%d -> %+v", in.kind, in.key, in.value, in.version, out)
	},
}

// Clients write, compare-and-set and read a few znodes through every server
// of an ensemble while its leader is stopped twice and started again; the
// recorded history must be linearizable (reads included: the ensemble runs
// with linearizableReads), and no acknowledged write may be lost.
func TestEnsembleHistoryIsLinearizable(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 0, collietest.WithConfig(func(c *config.Config) { c.LinearizableReads = true }))
	ctx := t.Context()
	keys := []string{"/k0", "/k1"}
	setup, err := client.Dial(ctx, e.ConnectString(), client.Config{SessionTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, _, err := setup.Create(ctx, k, []byte(""), client.ModePersistent, nil); err != nil {
			t.Fatal(err)
		}
	}
	setup.Close()

	var (
		mu      sync.Mutex
		history []porcupine.Operation
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	record := func(id int, in regOp, out regResult, call, ret int64) {
		mu.Lock()
		defer mu.Unlock()
		history = append(history, porcupine.Operation{ClientId: id, Input: in, Output: out, Call: call, Return: ret})
	}
	for id := range 4 {
		wg.Go(func() {
			c, err := client.Dial(ctx, e.ConnectString(), client.Config{SessionTimeout: 2 * time.Second})
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			rng := rand.New(rand.NewPCG(uint64(id), 7))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key := keys[rng.IntN(len(keys))]
				opCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
				call := time.Now().UnixNano()
				switch rng.IntN(3) {
				case 0:
					data, st, err := c.Get(opCtx, key)
					ret := time.Now().UnixNano()
					if err == nil {
						record(id, regOp{key: key, kind: "read", value: string(data), version: st.Version}, regResult{}, call, ret)
					}
				case 1:
					v := fmt.Sprintf("c%d-%d", id, n)
					st, err := c.Set(opCtx, key, []byte(v), -1)
					ret := time.Now().UnixNano()
					in := regOp{key: key, kind: "write", value: v}
					if err == nil {
						record(id, in, regResult{ok: true, version: st.Version}, call, ret)
					} else {
						record(id, in, regResult{unknown: true}, call, math.MaxInt64)
					}
				case 2:
					_, st, err := c.Get(opCtx, key)
					if err != nil {
						cancel()
						continue
					}
					v := fmt.Sprintf("c%d-%d", id, n)
					call = time.Now().UnixNano()
					nst, err := c.Set(opCtx, key, []byte(v), st.Version)
					ret := time.Now().UnixNano()
					in := regOp{key: key, kind: "cas", value: v, version: st.Version}
					switch {
					case err == nil:
						record(id, in, regResult{ok: true, version: nst.Version}, call, ret)
					case errors.Is(err, client.ErrBadVersion):
						record(id, in, regResult{ok: false}, call, ret)
					default:
						record(id, in, regResult{unknown: true}, call, math.MaxInt64)
					}
				}
				cancel()
			}
		})
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(history) }
	waitFor(t, "300 operations", func() bool { return count() >= 300 })
	for range 2 {
		lead := e.Leader()
		lead.Stop()
		before := count()
		waitFor(t, "300 operations without the leader", func() bool { return count() >= before+300 })
		lead.Restart()
		before = count()
		waitFor(t, "300 operations with the old leader back", func() bool { return count() >= before+300 })
	}
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	res, _ := porcupine.CheckOperationsVerbose(registerModel.ToModel(), history, time.Minute)
	switch res {
	case porcupine.Illegal:
		t.Fatalf("the history of %d operations is not linearizable", len(history))
	case porcupine.Unknown:
		t.Fatalf("checking %d operations took longer than a minute", len(history))
	}
	t.Logf("%d operations, linearizable", len(history))
}
