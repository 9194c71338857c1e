package cache_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/cache"
)

// A configuration center: a subscriber reads its configuration at start
// and switches databases when an operator changes /config/db.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, "127.0.0.1:2181", client.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	cfg := cache.New(c, "/config/db", cache.Single)
	if err := cfg.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer cfg.Close()
	for ev := range cfg.Events() {
		switch ev.Type {
		case cache.Created, cache.Changed:
			fmt.Printf("using database %s\n", ev.Node.Data)
		case cache.Deleted:
			fmt.Println("no database configured")
		}
	}
}
