package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/collie-io/collie/server"
	"github.com/collie-io/collie/server/config"
)

// Ports of a dev ensemble's server i (from 0), from the first client port
// p: clients on p+i and, as ZooKeeper's customary 2181, 2888 and 3888,
// peers on p+707+i and (unused) elections on p+1707+i.
const (
	devPeerOffset     = 707
	devElectionOffset = 1707
	maxDevEnsemble    = 9
)

// devEnsembleConfigs returns the configurations of a local ensemble of n
// servers derived from base: one data directory each under base's, ports
// as above, every four-letter word allowed and no admin server (every one
// would want port 8080).
func devEnsembleConfigs(base config.Config, n int) ([]config.Config, error) {
	if n < 2 || n > maxDevEnsemble {
		return nil, fmt.Errorf("-dev-ensemble %d: give from 2 to %d servers (3, 5 or 7 tolerate the loss of 1, 2 or 3)", n, maxDevEnsemble)
	}
	first := base.ClientPort
	if first+devElectionOffset+n-1 > 65535 {
		return nil, fmt.Errorf("-dev-ensemble: client port %d leaves no room for the peer ports (client port + %d)", first, devPeerOffset)
	}
	members := make([]config.Server, n)
	for i := range members {
		members[i] = config.Server{
			ID:            uint64(i + 1),
			Host:          "127.0.0.1",
			PeerPort:      first + devPeerOffset + i,
			ElectionPort:  first + devElectionOffset + i,
			ClientAddress: "127.0.0.1",
			ClientPort:    first + i,
		}
	}
	cfgs := make([]config.Config, n)
	for i := range cfgs {
		c := base
		c.ServerID = uint64(i + 1)
		c.Servers = members
		c.Standalone = false
		c.ClientPort = first + i
		c.ClientPortAddress = "127.0.0.1"
		c.DataDir = filepath.Join(base.DataDir, "dev-ensemble", "server"+strconv.Itoa(i+1))
		c.DataLogDir = c.DataDir
		c.AdminServerEnabled = false
		c.FourLetterWhitelist = map[string]bool{"*": true}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("-dev-ensemble: server %d: %w", i+1, err)
		}
		cfgs[i] = c
	}
	return cfgs, nil
}

// runDevEnsemble runs the servers of cfgs in this process until ctx ends,
// printing the connect string to stdout once every one serves.
func runDevEnsemble(ctx context.Context, cfgs []config.Config, logger *slog.Logger, stdout io.Writer) error {
	servers := make([]*server.Server, 0, len(cfgs))
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, s := range servers {
			if err := s.Shutdown(sctx); err != nil {
				logger.Error("shutdown", "err", err)
			}
		}
	}()
	for _, c := range cfgs {
		s, err := server.New(c, logger.With("server", c.ServerID))
		if err != nil {
			return fmt.Errorf("server %d: %w", c.ServerID, err)
		}
		servers = append(servers, s)
	}
	errc := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errc <- s.Run(ctx) }()
	}
	addrs := make([]string, len(cfgs))
	for i, s := range servers {
		select {
		case <-s.Ready():
		case err := <-errc:
			return err
		case <-ctx.Done():
			return nil
		}
		addrs[i] = net.JoinHostPort(cfgs[i].ClientPortAddress, strconv.Itoa(cfgs[i].ClientPort))
	}
	fmt.Fprintf(stdout, "dev ensemble of %d servers serving; connect string: %s\n", len(servers), strings.Join(addrs, ","))
	select {
	case err := <-errc:
		if errors.Is(err, server.ErrServerClosed) || errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	case <-ctx.Done():
		return nil
	}
}
