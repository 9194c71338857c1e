package follow_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/follow"
)

// parse is a zoo.cfg of this server, server.<myid>, with the lines given.
func parse(t *testing.T, myid uint64, lines ...string) config.Config {
	t.Helper()
	text := "tickTime=1000\ninitLimit=10\nsyncLimit=5\ndataDir=" + t.TempDir() + "\nclientPort=2181\nclientPortAddress=127.0.0.1\n" +
		"4lw.commands.whitelist=*\n" + strings.Join(lines, "\n") + "\n"
	cfg, err := config.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = cfg.ForServer(myid); err != nil {
		t.Fatal(err)
	}
	cfg.ClientPort = 0
	return cfg
}

func TestNewRefusesWhatIsNotAnObserver(t *testing.T) {
	ensemble := []string{"server.1=127.0.0.1:1:2", "server.2=127.0.0.1:3:4", "server.3=127.0.0.1:5:6"}
	for _, tt := range []struct {
		name string
		cfg  config.Config
		want string
	}{
		{"a voting member", parse(t, 1, ensemble...), "must be an observer"},
		{"no ZooKeeper server", parse(t, 4, "server.4=127.0.0.1:7:8:observer"), "no ZooKeeper server"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := follow.New(tt.cfg, follow.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestNoLeaderNoSessions runs a follower whose ensemble is down: it serves
// no session, not even a read-only one, and its four-letter words say it
// does not serve, as a ZooKeeper server's without a leader.
func TestNoLeaderNoSessions(t *testing.T) {
	// The port of a listener closed again: nothing answers there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	cfg := parse(t, 4, "server.1="+down+":1", "server.2="+down+":1", "server.3="+down+":1", "server.4=127.0.0.1:7:8:observer")
	f, err := follow.New(cfg, follow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}()
	addr := f.Addr().String()
	if _, err := zkwire.Handshake(addr, &proto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, proto.PasswordLen), ReadOnly: true}); err == nil {
		t.Error("a follower without a leader answered a connect request")
	}
	for word, want := range map[string]string{
		"ruok": "imok",
		"isro": "null",
		"srvr": "This ZooKeeper instance is not currently serving requests\n",
		"mntr": "This ZooKeeper instance is not currently serving requests\n",
	} {
		if out, err := zkref.FourLetter(addr, word); err != nil || out != want {
			t.Errorf("%s: %q %v, want %q", word, out, err, want)
		}
	}
}
