package session

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"time"
)

// Info describes one tracked session.
type Info struct {
	ID      ID
	Timeout time.Duration
	// Expires is the end of the tick in which the session expires, or
	// expired if Expired has already returned it.
	Expires time.Time
	// Closing is set once the session is being closed: by MarkClosing or
	// because Expired returned it.
	Closing bool
}

// Tracker decides when sessions expire. Deadlines fall on a grid of
// tickTime-wide buckets anchored at the origin given to NewTracker; a
// session belongs to the bucket of its deadline, and Expired empties the
// buckets that are due, earliest first, without looking at other sessions.
//
// Time is measured as now.Sub(origin). Given now values from time.Now, that
// difference uses the monotonic clock, so stepping the wall clock neither
// expires sessions early nor keeps them alive, which is why ZooKeeper uses
// elapsed time here too.
//
// The zero value is not usable; call NewTracker.
type Tracker struct {
	tick   time.Duration
	origin time.Time

	// sessions holds every tracked session, closing ones included, until
	// Remove.
	sessions map[ID]*entry
	// buckets maps a bucket number n, the bucket that expires at
	// origin + n*tick, to its sessions.
	// Invariant: every bucket in it is non-empty and sits in due.
	buckets map[int64]*bucket
	// due orders the buckets by number, so due[0] is the next to expire.
	due bucketHeap
}

// entry is a tracked session. It sits in the list of its bucket until
// Expired returns it.
type entry struct {
	id      ID
	timeout time.Duration
	closing bool
	// n is the number of the bucket of the session's deadline; it stays
	// set after Expired so that Sessions can say when the session expired.
	n int64
	// b is the bucket whose list holds the entry; nil once expired.
	b          *bucket
	prev, next *entry
}

type bucket struct {
	n     int64
	head  *entry
	size  int
	index int // position in Tracker.due
}

// NewTracker returns an empty Tracker whose buckets are tick wide
// (ZooKeeper's tickTime) and whose grid of bucket boundaries starts at
// origin. It panics if tick is not positive.
func NewTracker(tick time.Duration, origin time.Time) *Tracker {
	if tick <= 0 {
		panic(fmt.Sprintf("session: tick %v is not positive", tick))
	}
	return &Tracker{
		tick:     tick,
		origin:   origin,
		sessions: make(map[ID]*entry),
		buckets:  make(map[int64]*bucket),
	}
}

// Add tracks session id with the given timeout; it expires at the end of the
// tick in which now+timeout falls unless it is touched. Add reports whether
// id is new. For a session already tracked Add replaces the timeout and
// reschedules it from now, as ZooKeeper's trackSession does; a closing
// session stays closing but will be returned by Expired again, which gives
// the caller a way to retry a close that could not be committed.
func (t *Tracker) Add(id ID, timeout time.Duration, now time.Time) bool {
	e, ok := t.sessions[id]
	if !ok {
		e = &entry{id: id}
		t.sessions[id] = e
	}
	e.timeout = timeout
	t.schedule(e, now)
	return !ok
}

// Touch records activity of session id at now: it now expires a full timeout
// after now. Touch reports false, and changes nothing, if id is not tracked
// or is closing.
func (t *Tracker) Touch(id ID, now time.Time) bool {
	e, ok := t.sessions[id]
	if !ok || e.closing {
		return false
	}
	t.schedule(e, now)
	return true
}

// MarkClosing marks session id closing, as ZooKeeper does when the client
// asks to close it: activity no longer extends it, but it keeps its deadline,
// so Expired still returns it if the close is never committed. MarkClosing
// reports whether id is tracked.
func (t *Tracker) MarkClosing(id ID) bool {
	e, ok := t.sessions[id]
	if ok {
		e.closing = true
	}
	return ok
}

// Remove stops tracking session id, typically once its close is committed.
// It reports whether id was tracked.
func (t *Tracker) Remove(id ID) bool {
	e, ok := t.sessions[id]
	if !ok {
		return false
	}
	t.unlink(e)
	delete(t.sessions, id)
	return true
}

// Expired returns, in increasing order, the sessions whose deadline is at or
// before now and that it has not returned since they were last scheduled.
// They become closing and stay tracked until Remove. The caller should
// propose closing each of them.
//
// Its cost is proportional to the number of sessions returned, plus a
// logarithm of the number of buckets.
func (t *Tracker) Expired(now time.Time) []ID {
	last := floorDiv(now.Sub(t.origin), t.tick)
	var ids []ID
	for len(t.due) > 0 && t.due[0].n <= last {
		b := heap.Pop(&t.due).(*bucket)
		delete(t.buckets, b.n)
		for e := b.head; e != nil; {
			next := e.next
			ids = append(ids, e.id)
			e.closing = true
			e.b, e.prev, e.next = nil, nil, nil
			e = next
		}
	}
	slices.Sort(ids)
	return ids
}

// NextExpiry returns the earliest deadline among the sessions that Expired
// has yet to return: the time at which the caller should next call Expired.
// It reports false if there is none.
func (t *Tracker) NextExpiry() (time.Time, bool) {
	if len(t.due) == 0 {
		return time.Time{}, false
	}
	return t.bucketTime(t.due[0].n), true
}

// ResetAll gives every tracked session a full timeout from now and clears
// every closing mark, as a new ZooKeeper leader does when it builds its
// session tracker from the session table: it has heard from no client yet,
// and any close that is still pending will come back through Remove.
func (t *Tracker) ResetAll(now time.Time) {
	for _, e := range t.sessions {
		e.closing = false
		t.schedule(e, now)
	}
}

// Len returns the number of tracked sessions, closing ones included.
func (t *Tracker) Len() int { return len(t.sessions) }

// Timeout returns the timeout of session id and whether id is tracked.
func (t *Tracker) Timeout(id ID) (time.Duration, bool) {
	e, ok := t.sessions[id]
	if !ok {
		return 0, false
	}
	return e.timeout, true
}

// Sessions describes every tracked session, in increasing order of id.
func (t *Tracker) Sessions() []Info {
	out := make([]Info, 0, len(t.sessions))
	for _, e := range t.sessions {
		out = append(out, Info{ID: e.id, Timeout: e.timeout, Expires: t.bucketTime(e.n), Closing: e.closing})
	}
	slices.SortFunc(out, func(a, b Info) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// schedule moves e into the bucket of now+timeout, rounded up to the next
// tick boundary exactly as ExpiryQueue.roundToNextInterval rounds:
// (time/tick + 1) * tick. The deadline is therefore always after
// now+timeout, by up to one tick.
func (t *Tracker) schedule(e *entry, now time.Time) {
	n := floorDiv(now.Sub(t.origin)+e.timeout, t.tick) + 1
	if e.b != nil && e.n == n {
		return
	}
	t.unlink(e)
	e.n = n
	b, ok := t.buckets[n]
	if !ok {
		b = &bucket{n: n}
		t.buckets[n] = b
		heap.Push(&t.due, b)
	}
	e.b = b
	e.next = b.head
	if b.head != nil {
		b.head.prev = e
	}
	b.head = e
	b.size++
}

// unlink takes e out of its bucket, if it is in one, and drops the bucket if
// that leaves it empty.
func (t *Tracker) unlink(e *entry) {
	b := e.b
	if b == nil {
		return
	}
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		b.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	}
	e.b, e.prev, e.next = nil, nil, nil
	b.size--
	if b.size == 0 {
		heap.Remove(&t.due, b.index)
		delete(t.buckets, b.n)
	}
}

func (t *Tracker) bucketTime(n int64) time.Time {
	return t.origin.Add(time.Duration(n) * t.tick)
}

// floorDiv divides rounding toward negative infinity, so that times before
// the origin fall on the same grid as times after it. d must be positive.
func floorDiv(x, d time.Duration) int64 {
	q := x / d
	if x%d < 0 {
		q--
	}
	return int64(q)
}

// bucketHeap is a min-heap of buckets by number for container/heap.
type bucketHeap []*bucket

func (h bucketHeap) Len() int           { return len(h) }
func (h bucketHeap) Less(i, j int) bool { return h[i].n < h[j].n }
func (h bucketHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *bucketHeap) Push(x any) {
	b := x.(*bucket)
	b.index = len(*h)
	*h = append(*h, b)
}
func (h *bucketHeap) Pop() any {
	old := *h
	b := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return b
}
