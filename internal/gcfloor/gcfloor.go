// Package gcfloor keeps the Go garbage collector from running too often
// while the live heap is small. The collector's goal is the live heap times
// (1 + GOGC/100): a server holding a few megabytes collects dozens of times
// a second under load, and every cycle's pauses land in some request's
// latency. Below a floor, gcfloor raises GOGC after each cycle so that the
// goal is the floor instead; above it, GOGC stays at the default, so a large
// tree costs no more memory than before.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// defaultPercent is GOGC's default.
const defaultPercent = 100

// Start keeps the collector's goal at floor bytes or more for the life of
// the process. It does nothing when the GOGC environment variable is set:
// the operator has chosen. Call it once, from main.
func Start(floor uint64) {
	if os.Getenv("GOGC") != "" || floor == 0 {
		return
	}
	t := &tuner{floor: floor, percent: defaultPercent, sample: []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}}
	t.arm()
}

type tuner struct {
	floor   uint64
	percent int // the GOGC in force
	sample  []metrics.Sample
}

// arm asks for a call after the next collection: the finalizer of an
// object that only that collection finds unreachable.
func (t *tuner) arm() {
	runtime.SetFinalizer(new([16]byte), func(*[16]byte) { t.tune() })
}

// tune sets GOGC from the goal the collector has just set itself: the
// goal is the heap it counts live, times 1 + GOGC/100.
func (t *tuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live := t.sample[0].Value.Uint64() * 100 / uint64(100+t.percent)
		t.percent = Percent(live, t.floor)
		debug.SetGCPercent(t.percent)
	}
	t.arm()
}

// Percent returns the GOGC that makes the goal of a collection with live
// bytes live at least floor: the default, or more while live is small.
func Percent(live, floor uint64) int {
	live = max(live, 1<<20)
	if live*(100+defaultPercent)/100 >= floor {
		return defaultPercent
	}
	return int((floor - live) * 100 / live)
}
