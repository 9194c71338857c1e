package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/election"
)

// assignment is the sources one collector is to read.
type assignment struct {
	collector string
	sources   []string
}

// coordinator is a candidate for coordinator: while elected, it assigns
// the log sources to the live collectors.
type coordinator struct {
	c     *client.Client
	sel   *election.Selector
	logf  func(format string, args ...any)
	plans chan<- map[string][]string // each set of assignments in force, for the demo
}

// run takes part in the election until ctx ends, and coordinates while
// elected.
func (co *coordinator) run(ctx context.Context) error {
	// Run queues for leadership, calls lead when its turn comes, and
	// queues again when lead returns or leadership is lost.
	err := co.sel.Run(ctx, co.lead)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// lead assigns the sources again whenever a collector comes or goes,
// until ctx ends: the Selector ends it as soon as leadership is lost.
func (co *coordinator) lead(ctx context.Context, term *election.Term) error {
	id := co.sel.ID()
	co.logf("%s: elected coordinator (fencing token %d)", id, term.Token())
	for ctx.Err() == nil {
		// ChildrenW sets a one-shot watch: changed fires at the next join
		// or leave, and the loop lists the collectors again.
		live, _, changed, err := co.c.ChildrenW(ctx, collectorsPath)
		if err != nil {
			return err
		}
		current, err := readAssignments(ctx, co.c)
		if err != nil {
			return err
		}
		next := plan(sources, live, current)
		if maps.EqualFunc(next, current, slices.Equal) {
			co.logf("%s: assignments are up to date: %s", id, describe(next))
		} else {
			err := co.write(ctx, term, current, next)
			if errors.Is(err, client.ErrNoNode) {
				// The check failed: the term's node is gone, and another
				// coordinator may be in charge.
				co.logf("%s: no longer coordinator; assignments left alone", id)
				return nil
			}
			if err != nil {
				return err
			}
			co.logf("%s: assigned %s", id, describe(next))
		}
		select {
		case co.plans <- next:
		case <-ctx.Done():
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
		}
	}
	return nil
}

// write replaces the assignments current by next in one transaction,
// which the server applies only while term's node exists: a
// coordinator that has lost its election without knowing it yet cannot
// undo what its successor assigned.
func (co *coordinator) write(ctx context.Context, term *election.Term, current, next map[string][]string) error {
	ops := []client.Op{client.CheckOp(term.Node(), client.AnyVersion)}
	for _, collector := range slices.Sorted(maps.Keys(next)) {
		p, data := assignmentsPath+"/"+collector, []byte(strings.Join(next[collector], ","))
		switch was, ok := current[collector]; {
		case !ok:
			ops = append(ops, client.CreateOp(p, data, client.ModePersistent, nil))
		case !slices.Equal(was, next[collector]):
			ops = append(ops, client.SetOp(p, data, client.AnyVersion))
		}
	}
	for collector := range current {
		if _, ok := next[collector]; !ok {
			ops = append(ops, client.DeleteOp(assignmentsPath+"/"+collector, client.AnyVersion))
		}
	}
	_, err := co.c.Multi(ctx, ops...)
	return err
}

// readAssignments returns the sources assigned to each collector.
func readAssignments(ctx context.Context, c *client.Client) (map[string][]string, error) {
	names, _, err := c.Children(ctx, assignmentsPath)
	if err != nil {
		return nil, err
	}
	all := map[string][]string{}
	for _, name := range names {
		data, _, err := c.Get(ctx, assignmentsPath+"/"+name)
		if err != nil {
			return nil, err
		}
		all[name] = split(data)
	}
	return all, nil
}

// plan assigns each source to one of the live collectors. A source stays
// with its collector while that one lives and has no more than its share
// (the sources divided among the collectors, rounded up); the others go,
// one by one, to the collector with the fewest.
func plan(sources, live []string, current map[string][]string) map[string][]string {
	next := map[string][]string{}
	if len(live) == 0 {
		return next
	}
	for _, collector := range live {
		next[collector] = []string{}
	}
	share := (len(sources) + len(live) - 1) / len(live)
	var moving []string
	for _, source := range sources {
		kept := false
		for collector, assigned := range current {
			if slices.Contains(assigned, source) && next[collector] != nil && len(next[collector]) < share {
				next[collector] = append(next[collector], source)
				kept = true
				break
			}
		}
		if !kept {
			moving = append(moving, source)
		}
	}
	for _, source := range moving {
		fewest := slices.MinFunc(slices.Sorted(maps.Keys(next)), func(a, b string) int {
			return cmp.Compare(len(next[a]), len(next[b]))
		})
		next[fewest] = append(next[fewest], source)
	}
	for _, assigned := range next {
		slices.Sort(assigned)
	}
	return next
}

// describe prints a plan as "collector-1: a, b; collector-2: c".
func describe(p map[string][]string) string {
	var parts []string
	for _, collector := range slices.Sorted(maps.Keys(p)) {
		parts = append(parts, fmt.Sprintf("%s: %s", collector, strings.Join(p[collector], ", ")))
	}
	return strings.Join(parts, "; ")
}

// split reads the sources of an assignment node.
func split(data []byte) []string {
	if len(data) == 0 {
		return []string{}
	}
	return strings.Split(string(data), ",")
}

// collect is a collector that has registered: it reads the sources
// assigned to it, and again whenever they change, and sends them on
// reports, until ctx ends.
func collect(ctx context.Context, c *client.Client, id string, logf func(string, ...any), reports chan<- assignment) error {
	mine := assignmentsPath + "/" + id
	var last []string
	for {
		data, _, changed, err := c.GetW(ctx, mine)
		if errors.Is(err, client.ErrNoNode) {
			// Nothing assigned yet: ExistsW watches for the node's
			// creation (GetW sets no watch on a missing node).
			var ok bool
			ok, _, changed, err = c.ExistsW(ctx, mine)
			if ok {
				continue // created meanwhile
			}
		}
		if err != nil {
			return err
		}
		if sources := split(data); last == nil || !slices.Equal(sources, last) {
			last = sources
			if len(sources) == 0 {
				logf("%s: nothing to collect", id)
			} else {
				logf("%s: collecting %s", id, strings.Join(sources, ", "))
			}
			select {
			case reports <- assignment{id, sources}:
			case <-ctx.Done():
				return nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		}
	}
}
