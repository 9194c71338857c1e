package session

import (
	"fmt"
	"testing"
	"time"
)

const benchSessions = 100_000

// benchTracker tracks benchSessions sessions with timeouts of 5 to 14 ticks,
// added at the origin, so about a tenth of them fall in each of ten buckets.
func benchTracker() (*Tracker, time.Duration) {
	const tick = 2 * time.Second
	tr := NewTracker(tick, origin)
	for i := range benchSessions {
		tr.Add(ID(i), time.Duration(5+i%10)*tick, origin)
	}
	return tr, tick
}

// BenchmarkTouch touches the sessions round robin while time advances one
// tick per round, so every touch moves a session to a later bucket, as pings
// do.
func BenchmarkTouch(b *testing.B) {
	tr, tick := benchTracker()
	step := tick / benchSessions
	now := origin
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(step)
		tr.Touch(ID(i), now)
		if i++; i == benchSessions {
			i = 0
		}
	}
}

// BenchmarkExpired measures Expired among benchSessions sessions: when
// nothing is due, and when one tick's bucket is (about a tenth of the
// sessions, which are then added back so the next iteration has as many).
func BenchmarkExpired(b *testing.B) {
	b.Run("none-due", func(b *testing.B) {
		tr, _ := benchTracker()
		b.ReportAllocs()
		for b.Loop() {
			if ids := tr.Expired(origin); len(ids) != 0 {
				b.Fatalf("%d sessions expired", len(ids))
			}
		}
	})
	b.Run(fmt.Sprintf("one-bucket-of-%d", benchSessions/10), func(b *testing.B) {
		tr, tick := benchTracker()
		now := origin.Add(5 * tick)
		expired := 0
		b.ReportAllocs()
		for b.Loop() {
			now = now.Add(tick)
			ids := tr.Expired(now)
			expired += len(ids)
			for _, id := range ids {
				tr.Add(id, 9*tick, now) // due again ten ticks on
			}
		}
		b.ReportMetric(float64(expired)/float64(b.N), "sessions/op")
	})
}
