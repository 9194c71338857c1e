package cache_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/recipe/cache"
)

// A configuration center: a service reads its configuration when it
// starts, and switches databases when an operator changes /config/db.
func Example() {
	// Any ZooKeeper-protocol ensemble will do: "zk1:2181,zk2:2181,zk3:2181".
	addr, stop := serve()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	operator, err := client.Dial(ctx, addr, client.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer operator.Close()
	if _, _, err := operator.Create(ctx, "/config", nil, client.ModePersistent, nil); err != nil {
		log.Fatal(err)
	}
	if _, _, err := operator.Create(ctx, "/config/db", []byte("db-1:5432"), client.ModePersistent, nil); err != nil {
		log.Fatal(err)
	}

	// The service, with a session of its own that it renews if it expires.
	service, err := client.Dial(ctx, addr, client.Config{RenewSession: true})
	if err != nil {
		log.Fatal(err)
	}
	defer service.Close()
	cfg := cache.New(service, "/config/db", cache.Single)
	if err := cfg.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer cfg.Close()
	for ev := range cfg.Events() {
		switch ev.Type {
		case cache.Created:
			fmt.Printf("starting with %s\n", ev.Node.Data)
		case cache.Initialized:
			// The configuration as it was at start has been read: the
			// operator switches databases.
			if _, err := operator.Set(ctx, "/config/db", []byte("db-2:5432"), client.AnyVersion); err != nil {
				log.Fatal(err)
			}
		case cache.Changed:
			fmt.Printf("switching from %s to %s\n", ev.Old.Data, ev.Node.Data)
			node, _ := cfg.Get("/config/db") // the copy, read without a request
			fmt.Printf("now using %s (version %d)\n", node.Data, node.Stat.Version)
			return
		}
	}

	// Output:
	// starting with db-1:5432
	// switching from db-1:5432 to db-2:5432
	// now using db-2:5432 (version 1)
}

// serve runs a Collie server on 127.0.0.1 until stop is called.
func serve() (addr string, stop func()) {
	addr, stop, err := collietest.Serve()
	if err != nil {
		log.Fatal(err)
	}
	return addr, stop
}
