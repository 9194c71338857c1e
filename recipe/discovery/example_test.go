package discovery_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/discovery"
)

// A service instance registers itself; a client finds one to call.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, "127.0.0.1:2181", client.Config{RenewSession: true})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	d := discovery.New(c, "/services")
	defer d.Close()
	err = d.Register(ctx, discovery.Instance{
		Name: "orders", ID: "orders-1", Address: "10.0.0.7", Port: discovery.Port(8080),
		URISpec: discovery.ParseURISpec("{scheme}://{address}:{port}"),
	})
	if err != nil {
		log.Fatal(err)
	}

	live, err := d.Cache(ctx, "orders")
	if err != nil {
		log.Fatal(err)
	}
	defer live.Close()
	inst, err := discovery.NewProvider(live, discovery.RoundRobin).Instance()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("calling", inst.URI(nil))
}
