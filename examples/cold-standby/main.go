// Cold-standby shows standbys that do not watch the active instance but
// look for it now and then, and take over when it is gone.
//
// The active instance holds an ephemeral znode, /reports/active, holding its
// id. Each standby reads that node every scanInterval, setting no watch;
// when it finds no node it creates it and, if the create succeeds, becomes
// the active instance and starts the service from cold. The create is the
// arbiter: when two standbys find the node missing in the same moment,
// only one create succeeds, and the other goes on scanning.
//
// Takeover then takes up to one scan interval after the active instance's
// session ends, against a round trip for a hot standby that watches
// (examples/hot-standby); in exchange the standbys cost the ensemble no
// watch, only a read per interval. recipe/election's Master is this same
// node with a watch instead of the scan, and with a fencing token.
//
// Start a server (go run ./cmd/collie server), then:
//
//	go run ./examples/cold-standby -server 127.0.0.1:2181
//
// The instances run in one process, each with a session of its own; closing
// an instance's session stands for killing it.
package main

import (
	"context"
	"errors"
	"io"
	"path"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/examples/internal/demo"
)

const (
	activePath   = "/reports/active"
	scanInterval = 250 * time.Millisecond
)

func main() { demo.Main(run) }

// found is what a scan of one instance found: the id of the active
// instance.
type found struct{ by, active string }

func run(ctx context.Context, server string, out io.Writer) error {
	g, ctx := demo.NewGroup(ctx, server, out)
	defer g.Stop()

	// Each instance reports on changes what its scan found when it differs
	// from the scan before, so that the demo can wait for what it expects.
	changes := make(chan found)
	await := func(done func(found) bool) error {
		for {
			select {
			case f := <-changes:
				if done(f) {
					return nil
				}
			case <-ctx.Done():
				return g.Err()
			}
		}
	}
	start := func(id string) error {
		c, err := g.Dial(ctx, id)
		if err != nil {
			return err
		}
		g.Go(id, func() error { return instance(ctx, c, id, g.Logf, changes) })
		return nil
	}

	// The first instance finds nobody active and takes over; the standbys
	// started next find it there.
	for _, id := range []string{"instance-1", "instance-2", "instance-3"} {
		if err := start(id); err != nil {
			return err
		}
		if err := await(func(f found) bool { return f.by == id && f.active == "instance-1" }); err != nil {
			return err
		}
	}

	died := time.Now()
	g.Kill("instance-1")
	// One standby takes over, and the other sees who at its next scan; the
	// second report may come first: the scan can find the node between the
	// winner's create and its report.
	var next string
	seen := map[string]string{} // standby -> who it found active
	err := await(func(f found) bool {
		seen[f.by] = f.active
		if f.by == f.active {
			next = f.by
			g.Logf("%s took over %v after instance-1 died (scanning every %v)", next, time.Since(died).Round(time.Millisecond), scanInterval)
		}
		other := map[string]string{"instance-2": "instance-3", "instance-3": "instance-2"}[next]
		return next != "" && seen[other] == next
	})
	if err != nil {
		return err
	}
	return g.Stop()
}

// instance scans for the active instance every scanInterval and takes
// over when there is none; it sends what it found on changes whenever
// that differs from the scan before. Once active, it scans no more.
func instance(ctx context.Context, c *client.Client, id string, logf func(string, ...any), changes chan<- found) error {
	// The parent is persistent; whoever comes first creates it.
	_, _, err := c.Create(ctx, path.Dir(activePath), nil, client.ModePersistent, nil)
	if err != nil && !errors.Is(err, client.ErrNodeExists) {
		return err
	}
	tick := time.NewTicker(scanInterval)
	defer tick.Stop()
	last := ""
	for {
		// A plain read: no watch is left behind on the server.
		data, _, err := c.Get(ctx, activePath)
		active := string(data)
		switch {
		case errors.Is(err, client.ErrNoNode):
			logf("%s: scan: no active instance; taking over", id)
			// The node is ephemeral: it goes when this instance's session
			// ends, and the standbys' scans find it missing.
			_, _, err = c.Create(ctx, activePath, []byte(id), client.ModeEphemeral, nil)
			if errors.Is(err, client.ErrNodeExists) {
				logf("%s: another standby took over first", id)
				continue // scan again at once, to see who
			}
			if err != nil {
				return err
			}
			logf("%s: active; starting the service from cold", id)
			active = id
		case err != nil:
			return err
		case active != last:
			logf("%s: scan: %s is active", id, active)
		}
		if active != last {
			last = active
			select {
			case changes <- found{by: id, active: active}:
			case <-ctx.Done():
				return nil
			}
		}
		if active == id {
			// A real active instance would serve until ctx ends, and stop
			// serving as soon as client.StateChanges says its session is
			// disconnected or expired: the standbys take over once its
			// node is gone, whether it knows or not.
			<-ctx.Done()
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
	}
}
