package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server serves a handler on the admin port. It runs one goroutine that
// accepts connections and one per open connection, as net/http does; Close
// ends them all before it returns.
type Server struct {
	http *http.Server
	ln   net.Listener
	log  *slog.Logger
	// cancel ends the context of every request, so a long profile stops
	// when the server does.
	cancel context.CancelFunc

	serving   sync.WaitGroup // the accepting goroutine
	conns     sync.WaitGroup // one count per open connection, from ConnState
	closeOnce sync.Once
}

// The limits of one connection. ZooKeeper's Jetty closes an idle admin
// connection after 30 s (admin.idleTimeout) and refuses request headers
// over 8 KiB.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 30 * time.Second
	maxHeaderBytes    = 8 << 10
)

// Listen binds addr (host:port) and serves h there until Close: over
// HTTPS as https says, or over plain HTTP when https is nil.
func Listen(addr string, h http.Handler, https *HTTPS, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{ln: ln, log: logger, cancel: cancel}
	s.http = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnState:         s.track,
	}
	served := ln
	if https != nil {
		served = s.secure(ln, https)
	}
	s.serving.Go(func() {
		if err := s.http.Serve(served); !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("admin server stopped", "addr", ln.Addr().String(), "err", err)
		}
	})
	return s, nil
}

// track counts open connections, so Close can wait for their goroutines.
func (s *Server) track(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		s.conns.Add(1)
	case http.StateClosed, http.StateHijacked:
		s.conns.Done()
	}
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops accepting, closes every connection, cutting answers short,
// and returns once the server's goroutines have ended and the port is
// free. Calling it again does nothing.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.cancel()
		err = s.http.Close()
		// Serve must have returned before waiting on conns: it is what
		// counts new connections in.
		s.serving.Wait()
		s.conns.Wait()
	})
	return err
}
