// Config-center shows a configuration center pushing a database switch to
// every service that uses the database. A publisher keeps the database's
// address in one znode, /config/db; each subscriber reads it when it starts,
// is told of every change, reads it again and switches to the new database.
//
// The subscribers follow the znode with a recipe/cache Cache, which keeps a
// persistent watch on it: no change is missed between a notification and
// the next read (a one-shot watch must be set again after each one), and
// after a connection loss the cache reads the node again by itself.
//
// Start a server (go run ./cmd/collie server), then:
//
//	go run ./examples/config-center -server 127.0.0.1:2181
//
// The publisher and three subscribers run in one process, each with a
// session of its own, as separate processes would.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/examples/internal/demo"
	"github.com/collie-io/collie/recipe/cache"
)

// configPath is the znode that holds the database configuration, as JSON.
const configPath = "/config/db"

// dbConfig is what configPath holds.
type dbConfig struct {
	DSN string `json:"dsn"`
}

// dsns are the databases the publisher switches between: the first one is
// in place before the subscribers start.
var dsns = []string{
	"postgres://db-primary.internal:5432/orders",
	"postgres://db-replica.internal:5432/orders",
	"postgres://db-new-primary.internal:5432/orders",
}

const subscribers = 3

func main() { demo.Main(run) }

func run(ctx context.Context, server string, out io.Writer) error {
	g, ctx := demo.NewGroup(ctx, server, out)
	defer g.Stop()

	publisher, err := g.Dial(ctx, "publisher")
	if err != nil {
		return err
	}
	if err := publish(ctx, publisher, dsns[0]); err != nil {
		return err
	}
	g.Logf("publisher: %s holds %s", configPath, dsns[0])

	// Each subscriber reports on using the database it has switched to,
	// so that the publisher switches again only once every subscriber has
	// seen the last switch.
	using := make(chan string)
	for i := range subscribers {
		name := fmt.Sprintf("subscriber-%d", i+1)
		c, err := g.Dial(ctx, name)
		if err != nil {
			return err
		}
		g.Go(name, func() error { return subscribe(ctx, c, name, g.Logf, using) })
	}
	for i, dsn := range dsns {
		if i > 0 {
			g.Logf("publisher: switching to %s", dsn)
			if err := publish(ctx, publisher, dsn); err != nil {
				return err
			}
		}
		for range subscribers {
			select {
			case got := <-using:
				if got != dsn {
					return fmt.Errorf("a subscriber uses %s, want %s", got, dsn)
				}
			case <-ctx.Done():
				return g.Err()
			}
		}
	}
	g.Logf("publisher: every subscriber uses %s", dsns[len(dsns)-1])
	return g.Stop()
}

// publish writes dsn to configPath, creating the node (and /config) the
// first time. Set with client.AnyVersion overwrites whatever is there: the
// publisher is the only writer.
func publish(ctx context.Context, c *client.Client, dsn string) error {
	data, err := json.Marshal(dbConfig{DSN: dsn})
	if err != nil {
		return err
	}
	_, err = c.Set(ctx, configPath, data, client.AnyVersion)
	if !errors.Is(err, client.ErrNoNode) {
		return err
	}
	_, _, err = c.Create(ctx, "/config", nil, client.ModePersistent, nil)
	if err != nil && !errors.Is(err, client.ErrNodeExists) {
		return err
	}
	_, _, err = c.Create(ctx, configPath, data, client.ModePersistent, nil)
	return err
}

// subscribe is one service instance: it reads the configuration when it
// starts, then switches databases whenever the configuration changes, and
// sends the address of each database it uses on using, until ctx ends.
func subscribe(ctx context.Context, c *client.Client, name string, logf func(string, ...any), using chan<- string) error {
	// Start reads the node and sets the watch; Events then says Created
	// for the node as read, and Changed, with the node read again, after
	// every write.
	cfg := cache.New(c, configPath, cache.Single)
	if err := cfg.Start(ctx); err != nil {
		return err
	}
	defer cfg.Close()
	for {
		var ev cache.Event
		select {
		case ev = <-cfg.Events():
		case <-ctx.Done():
			return nil
		}
		switch ev.Type {
		case cache.Created, cache.Changed:
			var db dbConfig
			if err := json.Unmarshal(ev.Node.Data, &db); err != nil {
				logf("%s: ignoring a configuration that is not JSON: %v", name, err)
				continue
			}
			if ev.Type == cache.Created {
				logf("%s: started with %s", name, db.DSN)
			} else {
				// A real service would open a new connection pool here,
				// then close the old one.
				logf("%s: switched to %s", name, db.DSN)
			}
			select {
			case using <- db.DSN:
			case <-ctx.Done():
				return nil
			}
		case cache.Deleted:
			logf("%s: %s was deleted; staying on the database in use", name, configPath)
		}
	}
}
