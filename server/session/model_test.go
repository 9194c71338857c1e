package session

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// model is an obviously correct, slow tracker: a map from id to deadline,
// scanned in full on every question.
type model struct {
	tick     time.Duration
	origin   time.Time
	sessions map[ID]*modelSession
}

type modelSession struct {
	timeout  time.Duration
	deadline time.Time
	pending  bool // not yet returned by Expired since last scheduled
	closing  bool
}

// schedule applies ExpiryQueue.roundToNextInterval literally; the test never
// lets time go before the origin, so truncating division is the formula.
func (m *model) schedule(s *modelSession, now time.Time) {
	elapsed := now.Sub(m.origin) + s.timeout
	s.deadline = m.origin.Add((elapsed/m.tick + 1) * m.tick)
	s.pending = true
}

func (m *model) add(id ID, timeout time.Duration, now time.Time) bool {
	s, ok := m.sessions[id]
	if !ok {
		s = &modelSession{}
		m.sessions[id] = s
	}
	s.timeout = timeout
	m.schedule(s, now)
	return !ok
}

func (m *model) touch(id ID, now time.Time) bool {
	s, ok := m.sessions[id]
	if !ok || s.closing {
		return false
	}
	m.schedule(s, now)
	return true
}

func (m *model) expired(now time.Time) []ID {
	var ids []ID
	for id, s := range m.sessions {
		if s.pending && !s.deadline.After(now) {
			s.pending, s.closing = false, true
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (m *model) nextExpiry() (time.Time, bool) {
	var next time.Time
	found := false
	for _, s := range m.sessions {
		if s.pending && (!found || s.deadline.Before(next)) {
			next, found = s.deadline, true
		}
	}
	return next, found
}

func (m *model) sessionInfo() []Info {
	var out []Info
	for id, s := range m.sessions {
		out = append(out, Info{ID: id, Timeout: s.timeout, Expires: s.deadline, Closing: s.closing})
	}
	slices.SortFunc(out, func(a, b Info) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func TestTrackerMatchesModel(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x5e55))
			tick := time.Duration(1+rng.IntN(3000)) * time.Millisecond
			tr := NewTracker(tick, origin)
			m := &model{tick: tick, origin: origin, sessions: make(map[ID]*modelSession)}
			now := origin
			// A small id pool makes re-adds, touches of closing sessions and
			// removals of unknown ids common.
			randID := func() ID { return ID(rng.IntN(40) - 5) }

			for step := range 3000 {
				var op string
				switch r := rng.IntN(100); {
				case r < 25:
					// Advance by up to two ticks, not always in whole ms.
					now = now.Add(time.Duration(rng.Int64N(int64(2 * tick))))
					op = "advance"
				case r < 40:
					id, timeout := randID(), time.Duration(rng.Int64N(int64(10*tick)))
					op = fmt.Sprintf("Add(%v, %v)", id, timeout)
					if got, want := tr.Add(id, timeout, now), m.add(id, timeout, now); got != want {
						t.Fatalf("step %d: %s = %v, model %v", step, op, got, want)
					}
				case r < 70:
					id := randID()
					op = fmt.Sprintf("Touch(%v)", id)
					if got, want := tr.Touch(id, now), m.touch(id, now); got != want {
						t.Fatalf("step %d: %s = %v, model %v", step, op, got, want)
					}
				case r < 75:
					id := randID()
					op = fmt.Sprintf("MarkClosing(%v)", id)
					_, known := m.sessions[id]
					if known {
						m.sessions[id].closing = true
					}
					if got := tr.MarkClosing(id); got != known {
						t.Fatalf("step %d: %s = %v, model %v", step, op, got, known)
					}
				case r < 82:
					id := randID()
					op = fmt.Sprintf("Remove(%v)", id)
					_, known := m.sessions[id]
					delete(m.sessions, id)
					if got := tr.Remove(id); got != known {
						t.Fatalf("step %d: %s = %v, model %v", step, op, got, known)
					}
				case r < 83:
					op = "ResetAll"
					tr.ResetAll(now)
					for _, s := range m.sessions {
						s.closing = false
						m.schedule(s, now)
					}
				default:
					op = "Expired"
					if got, want := tr.Expired(now), m.expired(now); !slices.Equal(got, want) {
						t.Fatalf("step %d at %v: Expired = %v, model %v", step, now.Sub(origin), got, want)
					}
				}

				if got, want := tr.Len(), len(m.sessions); got != want {
					t.Fatalf("step %d after %s: Len = %d, model %d", step, op, got, want)
				}
				gotNext, gotOK := tr.NextExpiry()
				wantNext, wantOK := m.nextExpiry()
				if gotOK != wantOK || !gotNext.Equal(wantNext) {
					t.Fatalf("step %d after %s: NextExpiry = %v %v, model %v %v",
						step, op, gotNext.Sub(origin), gotOK, wantNext.Sub(origin), wantOK)
				}
				if step%50 == 0 {
					if got, want := tr.Sessions(), m.sessionInfo(); !slices.Equal(got, want) {
						t.Fatalf("step %d after %s: Sessions = %+v\nmodel %+v", step, op, got, want)
					}
				}
			}
		})
	}
}
