package server

import (
	"log/slog"
	"time"
)

// quotaLogInterval is how often a message repeated without pause is
// logged again, with how many times it came meanwhile. ZooKeeper's
// RateLogger waits 100 ms; a client writing past a quota in a loop would
// then still fill a log with ten lines a second.
const quotaLogInterval = time.Second

// quotaLog logs the quota limits that writes this server proposed went
// past, as ZooKeeper's leader does with its RateLogger: a message at once
// when it is not the last one, and the same message again only counted
// until quotaLogInterval has passed or another comes. Only the apply
// goroutine uses it.
type quotaLog struct {
	log     *slog.Logger
	last    string
	since   time.Time
	repeats int
}

func (q *quotaLog) report(msg string, now time.Time) {
	if msg == q.last {
		q.repeats++
		if now.Sub(q.since) >= quotaLogInterval {
			q.log.Warn(msg, "repeated", q.repeats)
			q.since, q.repeats = now, 0
		}
		return
	}
	if q.repeats > 0 {
		q.log.Warn(q.last, "repeated", q.repeats)
	}
	q.log.Warn(msg)
	q.last, q.since, q.repeats = msg, now, 0
}
