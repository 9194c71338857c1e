package election_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/recipe/election"
)

func ExampleLatch() {
	// Any ZooKeeper-protocol ensemble will do: "zk1:2181,zk2:2181,zk3:2181".
	addr, stop := runServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Two processes, each with its own session, join the election.
	var latches []*election.Latch
	for _, id := range []string{"host-1", "host-2"} {
		c, err := client.Dial(ctx, addr, client.Config{RenewSession: true})
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		latch := election.NewLatch(c, "/app/leader", id)
		if err := latch.Start(ctx); err != nil {
			log.Fatal(err)
		}
		latches = append(latches, latch)
	}

	term, err := latches[0].Await(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("host-1 leads:", latches[0].IsLeader(), "host-2 leads:", latches[1].IsLeader())
	all, err := latches[1].Participants(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range all {
		fmt.Printf("participant %s leader=%v\n", p.ID, p.Leader)
	}

	// The leader leaves: its term ends, and the next in line leads.
	if err := latches[0].Close(ctx); err != nil {
		log.Fatal(err)
	}
	<-term.Lost()
	next, err := latches[1].Await(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("host-2 leads with a larger token:", next.Token() > term.Token())
	latches[1].Close(ctx)

	// Output:
	// host-1 leads: true host-2 leads: false
	// participant host-1 leader=true
	// participant host-2 leader=false
	// host-2 leads with a larger token: true
}

func ExampleMaster() {
	addr, stop := runServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// The instance that creates the node runs the daily job.
	m := election.NewMaster(c, "/jobs/daily/master", []byte("10.0.0.7:8080"))
	if _, err := m.Campaign(ctx); err != nil {
		log.Fatal(err)
	}
	// Anyone can read who it is.
	info, ok, err := election.NewMaster(c, "/jobs/daily/master", nil).Current(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("master: %s (%v)\n", info.Data, ok)
	if err := m.Resign(ctx); err != nil {
		log.Fatal(err)
	}
	_, ok, _ = m.Current(ctx)
	fmt.Println("master after resigning:", ok)

	// Output:
	// master: 10.0.0.7:8080 (true)
	// master after resigning: false
}

// runServer runs a Collie server on 127.0.0.1 until stop is called.
func runServer() (addr string, stop func()) {
	addr, stop, err := collietest.Serve()
	if err != nil {
		log.Fatal(err)
	}
	return addr, stop
}
