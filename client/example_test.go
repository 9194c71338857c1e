package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
)

func Example() {
	// Any ZooKeeper-protocol ensemble will do: "zk1:2181,zk2:2181,zk3:2181".
	addr, stop := startExampleServer()
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Config{SessionTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// Write, read with a watch, and change under the watch.
	if _, _, err := c.Create(ctx, "/config", []byte("v1"), client.ModePersistent, nil); err != nil {
		log.Fatal(err)
	}
	data, stat, changed, err := c.GetW(ctx, "/config")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("read %s at version %d\n", data, stat.Version)
	if _, err := c.Set(ctx, "/config", []byte("v2"), stat.Version); err != nil {
		log.Fatal(err)
	}
	fmt.Println("event:", <-changed)

	// Optimistic concurrency: a write based on a stale read is refused.
	_, err = c.Set(ctx, "/config", []byte("v3"), stat.Version)
	fmt.Println("stale write refused:", errors.Is(err, client.ErrBadVersion))

	// A sequential ephemeral node that survives a lost reply, as locks use.
	c.Create(ctx, "/workers", nil, client.ModePersistent, nil)
	path, _, err := c.CreateProtected(ctx, "/workers/w-", nil, client.ModeEphemeralSequential, nil)
	if err != nil {
		log.Fatal(err)
	}
	name, _ := client.IsProtected(strings.TrimPrefix(path, "/workers/"))
	fmt.Println("registered as", name)

	// A transaction: all or nothing.
	_, err = c.Multi(ctx,
		client.CheckOp("/config", 1),
		client.SetOp("/config", []byte("v3"), 1),
		client.DeleteOp("/missing", client.AnyVersion),
	)
	fmt.Println("transaction failed:", errors.Is(err, client.ErrNoNode))
	data, _, _ = c.Get(ctx, "/config")
	fmt.Printf("still %s\n", data)

	// Output:
	// read v1 at version 0
	// event: NodeDataChanged /config
	// stale write refused: true
	// registered as w-0000000000
	// transaction failed: true
	// still v2
}

// startExampleServer runs a Collie server on 127.0.0.1 until stop is called.
func startExampleServer() (addr string, stop func()) {
	addr, stop, err := collietest.Serve()
	if err != nil {
		log.Fatal(err)
	}
	return addr, stop
}
