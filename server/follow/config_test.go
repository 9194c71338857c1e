package follow_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

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

func TestNewRefusesWhatItCannotFollowOrServe(t *testing.T) {
	ensemble := []string{"server.1=127.0.0.1:1:2", "server.2=127.0.0.1:3:4", "server.3=127.0.0.1:5:6"}
	observed := append(slices.Clone(ensemble), "server.4=127.0.0.1:7:8:observer")
	for _, tt := range []struct {
		name string
		cfg  config.Config
		want string
	}{
		{"a voting member", parse(t, 1, ensemble...), "must be an observer"},
		{"no ZooKeeper server", parse(t, 4, "server.4=127.0.0.1:7:8:observer"), "no ZooKeeper server"},
		{"TLS asked for", parse(t, 4, append(observed, "secureClientPort=2281")...), "TLS for clients"},
		{"auth enforced", parse(t, 4, append(observed, "enforce.auth.enabled=true", "enforce.auth.schemes=digest")...), "enforce.auth.schemes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := follow.New(tt.cfg, follow.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// downEnsemble is the zoo.cfg lines of an observer of an ensemble none of
// whose servers answers.
func downEnsemble(t *testing.T) []string {
	t.Helper()
	// The port of a listener closed again: nothing answers there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	return []string{"server.1=" + down + ":1", "server.2=" + down + ":1", "server.3=" + down + ":1", "server.4=127.0.0.1:7:8:observer"}
}

// run runs f until the test ends.
func run(t *testing.T, f *follow.Server) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	})
}

// TestNoLeaderNoSessions runs a follower whose ensemble is down: it serves
// no session, not even a read-only one, and its four-letter words say it
// does not serve, as a ZooKeeper server's without a leader.
func TestNoLeaderNoSessions(t *testing.T) {
	f, err := follow.New(parse(t, 4, downEnsemble(t)...), follow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run(t, f)
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

// TestMaxClientCnxns closes a connection past maxClientCnxns from one
// address at once, keeping the others.
func TestMaxClientCnxns(t *testing.T) {
	f, err := follow.New(parse(t, 4, append(downEnsemble(t), "maxClientCnxns=1")...), follow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run(t, f)
	first, err := net.Dial("tcp", f.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := net.Dial("tcp", f.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	second.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := second.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the second connection from one address: %v, want it closed", err)
	}
	// The first is still open: it is closed only by its handshake timeout.
	first.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := first.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the first connection: %v, want it open", err)
	}
}
