// Batch-master shows a daily batch job that several instances are ready to
// run, run by exactly one of them each day, even when the one running it
// hangs and is replaced halfway.
//
// The instances elect a master with a recipe/election Latch on
// /batch/daily/leader. Each day the master runs the job, then records the
// run in a marker znode, /batch/daily/runs/<date>, holding who ran it and
// the master's fencing token; a master newly elected first looks for
// today's marker, and runs the job if there is none. The marker is written
// in one transaction with a check that the master's own latch node still
// exists (client.CheckOp on Term.Node()). A master that has lost its
// mastership without knowing it (its process hung, its session expired,
// another instance took over) has lost that node, so the server refuses
// its marker: the run recorded for a day is the only one that counts.
// recipe/lock's Lease.Do and Lease.Guard put the same check in front of
// writes made under a lock; Term.Token is the fence for resources outside
// the ensemble, which can refuse a token smaller than the largest they
// have seen.
//
// Start a server (go run ./cmd/collie server), then:
//
//	go run ./examples/batch-master -server 127.0.0.1:2181
//
// Three instances run in one process, each with a session of its own.
// The demo's days pass in a second or so; on the second day the master's
// job hangs, and the demo deletes its latch node, as the server would once
// its session expired.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/examples/internal/demo"
	"github.com/collie-io/collie/recipe/election"
)

const (
	jobPath      = "/batch/daily"
	electionPath = jobPath + "/leader"
	runsPath     = jobPath + "/runs"
)

// days are the demo's three days: today and the two after.
var days = func() []string {
	var d []string
	for i := range 3 {
		d = append(d, time.Now().AddDate(0, 0, i).Format(time.DateOnly))
	}
	return d
}()

// hangs is the instance whose job hangs on the second day.
const hangs = "batch-1"

func main() { demo.Main(run) }

// outcome is what one master did about one day's job, as reported to the demo.
type outcome struct {
	id, day  string
	recorded bool // the marker is the master's; false: the server refused it
}

func run(ctx context.Context, server string, out io.Writer) error {
	g, ctx := demo.NewGroup(ctx, server, out)
	defer g.Stop()

	operator, err := g.Dial(ctx, "operator")
	if err != nil {
		return err
	}
	if err := setUp(ctx, operator); err != nil {
		return err
	}

	var cal calendar
	outcomes := make(chan outcome)
	hung := make(chan struct{})    // the job that hangs has begun to
	release := make(chan struct{}) // closed to let it go on
	// job is the daily batch job. It does nothing here, except in hangs on
	// the second day, where it waits for release (think of a long garbage
	// collection, or a stuck disk), paying no heed to anything meanwhile.
	job := func(ctx context.Context, id, day string) error {
		if id == hangs && day == days[1] {
			g.Logf("%s: the job hangs", id)
			select {
			case hung <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	latches := map[string]*election.Latch{}
	for _, id := range []string{"batch-1", "batch-2", "batch-3"} {
		c, err := g.Dial(ctx, id)
		if err != nil {
			return err
		}
		latch := election.NewLatch(c, electionPath, id)
		if err := latch.Start(ctx); err != nil {
			return err
		}
		latches[id] = latch
		in := &instance{c: c, latch: latch, cal: &cal, job: job, logf: g.Logf, outcomes: outcomes}
		g.Go(id, func() error { return in.run(ctx) })
	}

	await := func(want outcome) error {
		select {
		case got := <-outcomes:
			if got != want {
				return fmt.Errorf("%+v, want %+v", got, want)
			}
			return nil
		case <-ctx.Done():
			return g.Err()
		}
	}
	next := func(day string) {
		g.Logf("--- %s ---", day)
		cal.advance(day)
	}

	next(days[0])
	if err := await(outcome{"batch-1", days[0], true}); err != nil {
		return err
	}

	next(days[1])
	select {
	case <-hung:
	case <-ctx.Done():
		return g.Err()
	}
	g.Logf("%s: its session expires while the job hangs (the demo deletes its latch node, as the server would)", hangs)
	if err := operator.Delete(ctx, latches[hangs].Node(), client.AnyVersion); err != nil {
		return err
	}
	if err := await(outcome{"batch-2", days[1], true}); err != nil {
		return err
	}
	close(release)
	if err := await(outcome{hangs, days[1], false}); err != nil {
		return err
	}

	next(days[2])
	if err := await(outcome{"batch-2", days[2], true}); err != nil {
		return err
	}

	// What anyone reads: one run per day.
	for _, day := range days {
		data, _, err := operator.Get(ctx, runsPath+"/"+day)
		if err != nil {
			return err
		}
		g.Logf("marker %s: run by %s", day, data)
	}
	return g.Stop()
}

// setUp creates the job's znodes, and deletes the markers of earlier runs
// of the demo, whose days are the same when it runs again on the same day.
func setUp(ctx context.Context, c *client.Client) error {
	for _, p := range []string{"/batch", jobPath, runsPath} {
		_, _, err := c.Create(ctx, p, nil, client.ModePersistent, nil)
		if err != nil && !errors.Is(err, client.ErrNodeExists) {
			return err
		}
	}
	old, _, err := c.Children(ctx, runsPath)
	if err != nil {
		return err
	}
	for _, name := range old {
		err := c.Delete(ctx, runsPath+"/"+name, client.AnyVersion)
		if err != nil && !errors.Is(err, client.ErrNoNode) {
			return err
		}
	}
	return nil
}
