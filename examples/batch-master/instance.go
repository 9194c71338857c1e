package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/election"
)

// instance is one instance of the service that runs the daily job.
type instance struct {
	c        *client.Client
	latch    *election.Latch // started
	cal      *calendar
	job      func(ctx context.Context, id, day string) error
	logf     func(format string, args ...any)
	outcomes chan<- outcome // what became of each run, for the demo
}

// run takes part in the election until ctx ends, and runs the job every
// day while it is master.
func (in *instance) run(ctx context.Context) error {
	for ctx.Err() == nil {
		term, err := in.latch.Await(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		in.logf("%s: elected master (fencing token %d)", in.latch.ID(), term.Token())
		if err := in.lead(ctx, term); err != nil {
			return err
		}
	}
	return nil
}

// lead runs the job of today, and of each day that begins, until term
// ends.
func (in *instance) lead(ctx context.Context, term *election.Term) error {
	for {
		// A new day and the end of the term may come together: the end
		// comes first.
		select {
		case <-term.Lost():
			in.logf("%s: no longer master", in.latch.ID())
			return nil
		default:
		}
		day, next := in.cal.today()
		if day != "" {
			if err := in.runDay(ctx, term, day); err != nil {
				return err
			}
		}
		select {
		case <-next:
		case <-term.Lost():
		case <-ctx.Done():
			return nil
		}
	}
}

// runDay runs day's job unless its marker says it has run, and records
// the run, provided that term still holds.
func (in *instance) runDay(ctx context.Context, term *election.Term, day string) error {
	id, marker := in.latch.ID(), runsPath+"/"+day
	ran, _, err := in.c.Exists(ctx, marker)
	if err != nil || ran {
		return err
	}
	in.logf("%s: running the job of %s", id, day)
	// A job that can tell it has lost mastership should stop: give it
	// term.Context(ctx). This one hangs without looking.
	if err := in.job(ctx, id, day); err != nil {
		return err
	}
	// The check and the create are one transaction: the server creates
	// the marker only if the master's latch node is still there, that is,
	// only if nobody else can have been elected since this term began.
	record := fmt.Sprintf("%s (fencing token %d)", id, term.Token())
	_, err = in.c.Multi(ctx,
		client.CheckOp(term.Node(), client.AnyVersion),
		client.CreateOp(marker, []byte(record), client.ModePersistent, nil),
	)
	switch {
	case err == nil:
		in.logf("%s: recorded the run of %s", id, day)
	case errors.Is(err, client.ErrNoNode):
		// The check failed: the latch node is gone.
		in.logf("%s: the server refused the run of %s: no longer master", id, day)
	default:
		return err
	}
	select {
	case in.outcomes <- outcome{id: id, day: day, recorded: err == nil}:
	case <-ctx.Done():
	}
	return nil
}

// calendar is the demo's clock: it says what day it is and when the next
// one begins. A real instance would read its own clock, at the hour the
// job is due.
type calendar struct {
	mu   sync.Mutex
	day  string        // "" before the first day
	next chan struct{} // closed when the day changes
}

// today returns the day and a channel closed when it ends.
func (c *calendar) today() (string, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = make(chan struct{})
	}
	return c.day, c.next
}

// advance begins day.
func (c *calendar) advance(day string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next != nil {
		close(c.next)
	}
	c.day, c.next = day, make(chan struct{})
}
