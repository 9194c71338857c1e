package lock_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkref"
	rt "github.com/collie-io/collie/recipe/internal/recipetest"
	"github.com/collie-io/collie/recipe/lock"
)

// benchContenders are the contention levels measured: two contenders
// taking turns, and a crowd.
var benchContenders = []int{2, 8}

// BenchmarkMutex measures a Mutex on an in-process Collie server, each
// contender with a session of its own, taking and releasing the lock as
// fast as it can: ns/op is the time per acquisition, acq/s its inverse,
// and handoff-µs the mean time from a holder's Unlock to the next holder's
// Lock returning. When Java and Curator are installed, Curator's
// InterProcessMutex does the same on the same server, from a JVM with its
// full compilers warmed up first, so that the two read as a ratio:
//
//	go test -run '^$' -bench Mutex -benchtime 2000x ./recipe/lock/
func BenchmarkMutex(b *testing.B) {
	addr := rt.StartCollie(b)
	for _, n := range benchContenders {
		b.Run(fmt.Sprintf("go/contenders=%d", n), func(b *testing.B) { benchGo(b, addr, n) })
	}
	if _, err := zkref.Java(); err != nil {
		b.Skipf("no Curator to compare with: %v", err)
	}
	if _, err := zkref.CuratorClasspath(); err != nil {
		b.Skipf("no Curator to compare with: %v", err)
	}
	peer := rt.Java{Program: lockPeer, Args: []string{addr}, FullJIT: true}.Start(b)
	for _, n := range benchContenders {
		curatorBench(b, peer, "/bench-warmup", n, 2000)
	}
	for _, n := range benchContenders {
		b.Run(fmt.Sprintf("curator/contenders=%d", n), func(b *testing.B) {
			b.ResetTimer()
			handoffs := curatorBench(b, peer, fmt.Sprintf("/bench-curator-%d", n), n, b.N)
			b.StopTimer()
			report(b, handoffs)
		})
	}
}

// benchGo runs b.N acquisitions by n contenders.
func benchGo(b *testing.B, addr string, n int) {
	mutexes := make([]*lock.Mutex, n)
	path := fmt.Sprintf("/bench-go-%d", n)
	for i, c := range dialAll(b, addr, n) {
		mutexes[i] = lock.NewMutex(c, path)
	}
	ctx := rt.Context(b)
	var (
		left     atomic.Int64
		released atomic.Int64 // when the last Unlock began, in ns since start
		handoffs handoffs
		errs     rt.Errs
		wg       sync.WaitGroup
	)
	left.Store(int64(b.N))
	b.ResetTimer()
	start := time.Now()
	for _, m := range mutexes {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				lease, err := m.Lock(ctx)
				if err != nil {
					errs.Add("Lock", err)
					return
				}
				if at := released.Load(); at != 0 {
					handoffs.add(time.Since(start) - time.Duration(at))
				}
				released.Store(int64(time.Since(start)))
				if err := lease.Unlock(ctx); err != nil {
					errs.Add("Unlock", err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	errs.Report(b)
	report(b, &handoffs)
}

// handoffs sums the times from a release to the next acquisition.
type handoffs struct {
	mu    sync.Mutex
	n     int64
	total time.Duration
}

func (h *handoffs) add(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	h.total += d
}

func report(b *testing.B, h *handoffs) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acq/s")
	if h.n > 0 {
		b.ReportMetric(float64(h.total.Microseconds())/float64(h.n), "handoff-µs")
	}
}

// curatorBench has the peer run total acquisitions by n contenders on
// path, and returns its handoff times.
func curatorBench(b *testing.B, peer *rt.Peer, path string, n, total int) *handoffs {
	b.Helper()
	answer := peer.Ask(b, fmt.Sprintf("bench %s %d %d", path, n, total))
	fields := strings.Fields(answer)
	if len(fields) != 3 {
		b.Fatalf("bench answered %q", answer)
	}
	var nums [3]int64
	for i, f := range fields {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("bench answered %q: %v", answer, err)
		}
		nums[i] = v
	}
	return &handoffs{n: nums[2], total: time.Duration(nums[1])}
}
