package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{2 * mib, 64 * mib, 3100},  // goal 2 MiB * 32 = 64 MiB
		{0, 64 * mib, 6300},        // counted as 1 MiB
		{32 * mib, 64 * mib, 100},  // the default already reaches the floor
		{500 * mib, 64 * mib, 100}, // a large heap keeps the default
		{16 * mib, 64 * mib, 300},
	} {
		got := Percent(c.live, c.floor)
		if got != c.want {
			t.Errorf("Percent(%d MiB, %d MiB) = %d, want %d", c.live/mib, c.floor/mib, got, c.want)
		}
		if goal := max(c.live, mib) * uint64(100+got) / 100; goal < c.floor && got != 100 {
			t.Errorf("Percent(%d MiB, %d MiB) = %d: goal %d MiB is below the floor", c.live/mib, c.floor/mib, got, goal/mib)
		}
	}
}

func TestStartRaisesTheGoalOfASmallHeap(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: Start leaves the collector alone")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(defaultPercent))
	Start(256 << 20)
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		// SetGCPercent returns the setting it replaces; put it back.
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		if p > defaultPercent {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d after collections of a small heap", p)
		}
		time.Sleep(time.Millisecond) // lets the finalizer goroutine run
	}
}
