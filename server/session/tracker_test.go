package session

import (
	"slices"
	"testing"
	"time"
)

var origin = time.Date(2024, 6, 15, 9, 0, 0, 0, time.UTC)

// at is a time ms milliseconds after the tracker's origin.
func at(ms int64) time.Time { return origin.Add(time.Duration(ms) * time.Millisecond) }

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func expectExpired(t *testing.T, tr *Tracker, now time.Time, want ...ID) {
	t.Helper()
	if got := tr.Expired(now); !slices.Equal(got, want) {
		t.Fatalf("Expired(%v) = %v, want %v", now.Sub(origin), got, want)
	}
}

func expectNextExpiry(t *testing.T, tr *Tracker, want time.Time, wantOK bool) {
	t.Helper()
	got, ok := tr.NextExpiry()
	if ok != wantOK || !got.Equal(want) {
		t.Fatalf("NextExpiry() = %v, %v; want %v, %v", got.Sub(origin), ok, want.Sub(origin), wantOK)
	}
}

// The expected deadlines are worked out by hand from ZooKeeper's
// ExpiryQueue.roundToNextInterval, (time / expirationInterval + 1) *
// expirationInterval, with time = elapsed milliseconds + timeout, integer
// division, and expirationInterval = tickTime.
func TestDeadlineRounding(t *testing.T) {
	tests := []struct {
		name    string
		tick    time.Duration
		now     time.Duration // since origin
		timeout time.Duration
		want    time.Duration // deadline, since origin
	}{
		{"on a boundary goes to the next one", ms(2000), 0, ms(4000), ms(6000)},                  // 4000/2000+1 = 3
		{"just after a boundary", ms(2000), ms(1), ms(4000), ms(6000)},                           // 4001/2000+1 = 3
		{"just before a boundary", ms(2000), ms(1999), ms(4000), ms(6000)},                       // 5999/2000+1 = 3
		{"next tick", ms(2000), ms(2000), ms(4000), ms(8000)},                                    // 6000/2000+1 = 4
		{"timeout not a multiple of tick", ms(2000), ms(500), ms(3000), ms(4000)},                // 3500/2000+1 = 2
		{"zero timeout still waits for the next tick", ms(2000), 0, 0, ms(2000)},                 // 0/2000+1 = 1
		{"odd tick", ms(300), ms(1234), ms(1000), ms(2400)},                                      // 2234/300+1 = 8
		{"sub-millisecond now rounds like whole ms", ms(2000), ms(2000) - 1, ms(4000), ms(6000)}, // 5999/2000+1 = 3
		// Before the origin ZooKeeper has no counterpart (its elapsed time is
		// never negative); the grid simply extends backwards.
		{"before the origin", ms(2000), -ms(1), 0, 0},
		{"well before the origin", ms(2000), -ms(4500), ms(1000), -ms(2000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(tt.tick, origin)
			now := origin.Add(tt.now)
			tr.Add(1, tt.timeout, now)
			deadline := origin.Add(tt.want)
			expectNextExpiry(t, tr, deadline, true)
			expectExpired(t, tr, deadline.Add(-1))
			expectExpired(t, tr, deadline, 1)
		})
	}
}

func TestTouchExtends(t *testing.T) {
	tr := NewTracker(ms(2000), origin)
	tr.Add(1, ms(4000), at(0)) // deadline 6000
	tr.Add(2, ms(4000), at(0)) // deadline 6000, never touched

	if !tr.Touch(1, at(3000)) { // 7000/2000+1 = 4: deadline 8000
		t.Fatal("Touch(1) = false for a live session")
	}
	expectExpired(t, tr, at(6000), 2)
	expectExpired(t, tr, at(7999))
	if !tr.Touch(1, at(7999)) { // 11999/2000+1 = 6: deadline 12000
		t.Fatal("Touch(1) = false for a live session")
	}
	expectExpired(t, tr, at(11999))
	expectExpired(t, tr, at(12000), 1)
}

func TestTouchRefused(t *testing.T) {
	tests := []struct {
		name  string
		setup func(tr *Tracker)
	}{
		{"unknown session", func(tr *Tracker) {}},
		{"removed session", func(tr *Tracker) {
			tr.Add(1, ms(4000), at(0))
			tr.Remove(1)
		}},
		{"expired session", func(tr *Tracker) {
			tr.Add(1, ms(4000), at(0))
			tr.Expired(at(6000))
		}},
		{"session marked closing", func(tr *Tracker) {
			tr.Add(1, ms(4000), at(0))
			tr.MarkClosing(1)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(ms(2000), origin)
			tt.setup(tr)
			before := tr.Sessions()
			if tr.Touch(1, at(5000)) {
				t.Fatal("Touch = true, want false")
			}
			if after := tr.Sessions(); !slices.Equal(after, before) {
				t.Fatalf("refused Touch changed the sessions: %+v, was %+v", after, before)
			}
		})
	}
}

func TestClosingSessionKeepsItsDeadline(t *testing.T) {
	tr := NewTracker(ms(2000), origin)
	tr.Add(1, ms(4000), at(0))
	if !tr.MarkClosing(1) {
		t.Fatal("MarkClosing(1) = false for a tracked session")
	}
	if tr.MarkClosing(2) {
		t.Fatal("MarkClosing(2) = true for an unknown session")
	}
	tr.Touch(1, at(5000))
	expectExpired(t, tr, at(6000), 1)
}

func TestExpiredReturnsEachSessionOnce(t *testing.T) {
	tr := NewTracker(ms(1000), origin)
	// Negative ids (server ids >= 128) sort before positive ones.
	for _, id := range []ID{5, -3, 0x0100000000000001, 2} {
		tr.Add(id, ms(2500), at(0)) // 2500/1000+1 = 3: deadline 3000
	}
	tr.Add(9, ms(5000), at(0)) // deadline 6000

	expectExpired(t, tr, at(2999))
	// A late call collects every bucket that is due, not only one.
	expectExpired(t, tr, at(10_000), -3, 2, 5, 9, 0x0100000000000001)
	expectExpired(t, tr, at(10_000))
	expectExpired(t, tr, at(100_000))
	if got := tr.Len(); got != 5 {
		t.Fatalf("Len() = %d after expiry, want 5: expired sessions stay until Remove", got)
	}
	expectNextExpiry(t, tr, time.Time{}, false)
}

func TestRemovedSessionNeverExpires(t *testing.T) {
	tr := NewTracker(ms(2000), origin)
	tr.Add(1, ms(4000), at(0))
	tr.Add(2, ms(4000), at(0))
	tr.Add(3, ms(10_000), at(0))
	if !tr.Remove(1) {
		t.Fatal("Remove(1) = false for a tracked session")
	}
	if tr.Remove(1) {
		t.Fatal("second Remove(1) = true")
	}
	tr.MarkClosing(3)
	tr.Remove(3)
	expectExpired(t, tr, at(60_000), 2)
	tr.Remove(2)
	expectExpired(t, tr, at(120_000))
	if got := tr.Len(); got != 0 {
		t.Fatalf("Len() = %d, want 0", got)
	}
	if _, ok := tr.Timeout(2); ok {
		t.Fatal("Timeout(2) found a removed session")
	}
}

func TestAddExisting(t *testing.T) {
	tr := NewTracker(ms(2000), origin)
	if !tr.Add(1, ms(4000), at(0)) {
		t.Fatal("Add of a new session = false")
	}
	if tr.Add(1, ms(10_000), at(1000)) { // 11000/2000+1 = 6: deadline 12000
		t.Fatal("Add of a tracked session = true")
	}
	if got, _ := tr.Timeout(1); got != ms(10_000) {
		t.Fatalf("Timeout(1) = %v, want 10s", got)
	}
	expectExpired(t, tr, at(11_999))
	expectExpired(t, tr, at(12_000), 1)

	// Adding an expired session again schedules it once more, still closing.
	tr.Add(1, ms(4000), at(20_000)) // 24000/2000+1 = 13: deadline 26000
	if tr.Touch(1, at(21_000)) {
		t.Fatal("Touch revived a closing session")
	}
	expectExpired(t, tr, at(26_000), 1)
}

func TestResetAll(t *testing.T) {
	tr := NewTracker(ms(2000), origin)
	tr.Add(1, ms(4000), at(0))
	tr.Add(2, ms(6000), at(0))
	tr.Add(3, ms(20_000), at(0))
	tr.MarkClosing(3)
	expectExpired(t, tr, at(6000), 1)

	tr.ResetAll(at(100_500))
	for _, id := range []ID{1, 2, 3} {
		if !tr.Touch(id, at(100_500)) {
			t.Fatalf("Touch(%v) = false after ResetAll", id)
		}
	}
	// Deadlines from 100500: 104500 -> 106000, 106500 -> 108000,
	// 120500 -> 122000.
	expectNextExpiry(t, tr, at(106_000), true)
	expectExpired(t, tr, at(105_999))
	expectExpired(t, tr, at(106_000), 1)
	expectExpired(t, tr, at(121_999), 2)
	expectExpired(t, tr, at(122_000), 3)
}

func TestNextExpiry(t *testing.T) {
	tr := NewTracker(ms(2000), origin)
	expectNextExpiry(t, tr, time.Time{}, false)

	tr.Add(1, ms(4000), at(0))  // 6000
	tr.Add(2, ms(8000), at(0))  // 10000
	tr.Add(3, ms(12000), at(0)) // 14000
	expectNextExpiry(t, tr, at(6000), true)

	tr.Touch(1, at(5000)) // 9000/2000+1 = 5: 10000
	expectNextExpiry(t, tr, at(10_000), true)

	tr.MarkClosing(2) // still due at 10000
	expectNextExpiry(t, tr, at(10_000), true)

	expectExpired(t, tr, at(10_000), 1, 2)
	expectNextExpiry(t, tr, at(14_000), true)

	tr.Remove(3)
	expectNextExpiry(t, tr, time.Time{}, false)
}

func TestSessions(t *testing.T) {
	tr := NewTracker(ms(2000), origin)
	tr.Add(7, ms(4000), at(0))
	tr.Add(3, ms(30_000), at(1000))
	tr.Add(5, ms(6000), at(0))
	tr.MarkClosing(5)
	tr.Expired(at(6000))

	want := []Info{
		{ID: 3, Timeout: ms(30_000), Expires: at(32_000)},
		{ID: 5, Timeout: ms(6000), Expires: at(8000), Closing: true},
		{ID: 7, Timeout: ms(4000), Expires: at(6000), Closing: true},
	}
	got := tr.Sessions()
	if !slices.EqualFunc(got, want, func(a, b Info) bool {
		return a.ID == b.ID && a.Timeout == b.Timeout && a.Expires.Equal(b.Expires) && a.Closing == b.Closing
	}) {
		t.Fatalf("Sessions() = %+v\nwant %+v", got, want)
	}
}

func TestNewTrackerRejectsBadTick(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewTracker(0) did not panic")
		}
	}()
	NewTracker(0, origin)
}
