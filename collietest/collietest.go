// Package collietest runs real Collie servers inside a test process, for
// Collie's own tests and for the tests of programs that use ZooKeeper, as
// Curator's TestingServer does: each server gets its own data directory and
// a free port on 127.0.0.1, logs to the test's output, and is shut down when
// the test ends.
package collietest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/freeport"
	"github.com/collie-io/collie/server"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/tlsconfig"
)

// Server is a running in-process server.
type Server struct {
	tb     testing.TB
	cfg    config.Config
	srv    *server.Server
	cancel context.CancelFunc
	done   chan error
}

// Option changes the configuration of a test server.
type Option func(*config.Config)

// WithConfig lets a test change any setting.
func WithConfig(f func(*config.Config)) Option { return Option(f) }

// Config returns the default configuration of a test server: a fresh data
// directory, a free port on 127.0.0.1, a short tick (so sessions expire in
// well under a second when asked to), every four-letter word allowed,
// extended types enabled, 1 MiB log files, and no admin server
// (WithAdminServer starts one).
func Config(tb testing.TB) config.Config {
	cfg := config.Default()
	cfg.DataDir = tb.TempDir()
	cfg.DataLogDir = cfg.DataDir
	cfg.ClientPortAddress = "127.0.0.1"
	cfg.ClientPort = FreePort(tb)
	cfg.TickTime = 100 * time.Millisecond
	cfg.MinSessionTimeout = 2 * cfg.TickTime
	cfg.MaxSessionTimeout = 20 * cfg.TickTime
	cfg.FourLetterWhitelist = map[string]bool{"*": true}
	cfg.ExtendedTypesEnabled = true
	cfg.ContainerCheckInterval = 100 * time.Millisecond
	// Log files are written with zeros ahead of use: keep them small, as
	// ZooKeeper's own test servers do with preAllocSize.
	cfg.PreAllocSize = 1 << 20
	// ZooKeeper's admin port is 8080 for every server: test servers would
	// take it from each other and from the machine.
	cfg.AdminServerEnabled = false
	return cfg
}

// WithAdminServer starts the server's admin HTTP server on a free port on
// 127.0.0.1; AdminAddr returns its address.
func WithAdminServer() Option {
	return func(cfg *config.Config) {
		cfg.AdminServerEnabled = true
		cfg.AdminServerAddress = "127.0.0.1"
		cfg.AdminServerPort = 0 // chosen by StartConfig
	}
}

// WithTLS adds a secure client port (secureClientPort) on a free port of
// 127.0.0.1 with the given TLS settings; SecureAddr returns its address.
func WithTLS(ssl tlsconfig.Settings) Option {
	return func(cfg *config.Config) {
		cfg.SecureClientPortAddress = "127.0.0.1"
		cfg.SecureClientPort = -1 // chosen by StartConfig
		cfg.SSL = ssl
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and
// that no other caller in this process was given: for the peer or admin
// ports of servers a test configures itself.
func FreePort(tb testing.TB) int {
	port, err := freeport.Take()
	if err != nil {
		tb.Fatalf("collietest: %v", err)
	}
	return port
}

// Start starts a server and waits until it accepts clients.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	cfg := Config(tb)
	for _, o := range opts {
		o(&cfg)
	}
	return StartConfig(tb, cfg)
}

// StartConfig starts a server with exactly cfg.
func StartConfig(tb testing.TB, cfg config.Config) *Server {
	tb.Helper()
	if cfg.AdminServerEnabled && cfg.AdminServerPort == 0 {
		cfg.AdminServerPort = FreePort(tb)
	}
	if cfg.SecureClientPort == -1 {
		cfg.SecureClientPort = FreePort(tb)
	}
	s := &Server{tb: tb, cfg: cfg}
	s.start()
	tb.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.tb.Helper()
	s.launch()
	s.awaitReady()
}

// launch creates the server and runs it, without waiting for it to serve:
// the servers of an ensemble serve only once they have a leader.
func (s *Server) launch() {
	s.tb.Helper()
	logger := slog.New(slog.NewTextHandler(s.tb.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := server.New(s.cfg, logger)
	if err != nil {
		s.tb.Fatalf("collietest: start server: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.srv, s.cancel, s.done = srv, cancel, make(chan error, 1)
	go func() { s.done <- srv.Run(ctx) }()
}

func (s *Server) awaitReady() {
	s.tb.Helper()
	select {
	case <-s.srv.Ready():
	case err := <-s.done:
		s.cancel()
		s.srv = nil
		s.tb.Fatalf("collietest: server stopped before serving: %v", err)
	case <-time.After(30 * time.Second):
		s.cancel()
		s.tb.Fatalf("collietest: server not serving after 30s")
	}
}

// Addr returns the client address, host:port.
func (s *Server) Addr() string {
	return net.JoinHostPort(s.cfg.ClientPortAddress, strconv.Itoa(s.cfg.ClientPort))
}

// SecureAddr returns the TLS client address (see WithTLS), host:port, or ""
// when the server has none.
func (s *Server) SecureAddr() string {
	if s.cfg.SecureClientPort == 0 {
		return ""
	}
	return net.JoinHostPort(cmp.Or(s.cfg.SecureClientPortAddress, "127.0.0.1"), strconv.Itoa(s.cfg.SecureClientPort))
}

// AdminAddr returns the admin server's address, host:port, or "" when the
// server has none.
func (s *Server) AdminAddr() string {
	if !s.cfg.AdminServerEnabled {
		return ""
	}
	return net.JoinHostPort(s.cfg.AdminServerAddress, strconv.Itoa(s.cfg.AdminServerPort))
}

// Cfg returns the server's configuration.
func (s *Server) Cfg() config.Config { return s.cfg }

// Server returns the running server.
func (s *Server) Server() *server.Server { return s.srv }

// Stop shuts the server down; its data stays for Restart. Safe to call
// more than once.
func (s *Server) Stop() {
	if s.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.tb.Errorf("collietest: shutdown: %v", err)
	}
	s.cancel()
	if err := <-s.done; err != nil && !errors.Is(err, server.ErrServerClosed) && !errors.Is(err, context.Canceled) {
		s.tb.Errorf("collietest: server: %v", err)
	}
	s.srv = nil
}

// Restart stops the server and starts it again on the same data directory
// and port.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	s.start()
}

// Serve runs a standalone server with ZooKeeper's defaults on a free port
// of 127.0.0.1, with its data in a new temporary directory, outside any
// test: for runnable examples and programs that need a server for a
// while. stop shuts it down and removes its data.
func Serve() (addr string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "collie-serve")
	if err != nil {
		return "", nil, err
	}
	fail := func(err error) (string, func(), error) {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("collietest: serve: %w", err)
	}
	port, err := freeport.Take()
	if err != nil {
		return fail(err)
	}
	cfg := config.Default()
	cfg.DataDir, cfg.DataLogDir, cfg.AdminServerEnabled = dir, dir, false
	cfg.ClientPortAddress, cfg.ClientPort = "127.0.0.1", port
	srv, err := server.New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	go func() { exited <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-exited:
		cancel()
		return fail(err)
	}
	return net.JoinHostPort(cfg.ClientPortAddress, strconv.Itoa(cfg.ClientPort)), func() {
		cancel()
		<-exited
		os.RemoveAll(dir)
	}, nil
}
