package main

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/collie-io/collie/examples/internal/exampletest"
)

// Every worker gets its ids with its own prefix, each larger than its last;
// no id is handed out twice across the workers.
func TestRun(t *testing.T) {
	exampletest.Run(t, run, func(t *testing.T, out exampletest.Output) {
		byWorker := map[string][]int64{}
		seen := map[int64]string{}
		for _, m := range out.Match(`^(worker-\d): (\w+)-(\d{8})$`) {
			worker, prefix := m[1], m[2]
			id, _ := strconv.ParseInt(m[3], 10, 64)
			if want := workers[worker[len(worker)-1]-'1']; prefix != want {
				t.Errorf("%s got a %s id, want %s", worker, prefix, want)
			}
			if other, ok := seen[id]; ok {
				t.Errorf("id %d handed out to %s and %s", id, other, worker)
			}
			seen[id] = worker
			byWorker[worker] = append(byWorker[worker], id)
		}
		if len(seen) != len(workers)*idsPerWorker {
			t.Errorf("%d ids, want %d", len(seen), len(workers)*idsPerWorker)
		}
		for worker, ids := range byWorker {
			if !slices.IsSorted(ids) {
				t.Errorf("%s got %v, want each id larger than the last", worker, ids)
			}
		}
		if n := out.Count(fmt.Sprintf("%d ids from %d sessions, all different", len(seen), len(workers))); n != 1 {
			t.Errorf("the summary is printed %d times, want once", n)
		}
	})
}
