package tlsconfig

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Reloader holds a server's TLS configuration and, while Watch runs, reads
// its key and trust stores again when their files change, as ZooKeeper
// 3.8.6 and 3.9 do with client.certReload=true: a connection's handshake
// uses the configuration current when it starts, so connections made
// before a change keep their certificates and new ones get the new.
type Reloader struct {
	settings Settings
	log      *slog.Logger
	current  atomic.Pointer[tls.Config]
	// mu serializes reloads, so that an older read never replaces a newer.
	mu sync.Mutex
}

// NewReloader reads the stores of a server with settings s.
func NewReloader(s Settings, logger *slog.Logger) (*Reloader, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c, err := s.ServerConfig()
	if err != nil {
		return nil, err
	}
	r := &Reloader{settings: s, log: logger}
	r.current.Store(c)
	return r, nil
}

// Config returns a server configuration that hands each handshake the
// current one.
func (r *Reloader) Config() *tls.Config {
	return &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return r.current.Load(), nil },
	}
}

// Current returns the configuration handshakes get now.
func (r *Reloader) Current() *tls.Config { return r.current.Load() }

// Reload reads the stores again. When they cannot be read, the previous
// configuration stays in force and the error is returned.
func (r *Reloader) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.settings.ServerConfig()
	if err != nil {
		return err
	}
	r.current.Store(c)
	return nil
}

// settleDelay is how long Watch waits after a change before reading the
// files: copying a file into place writes it in several steps, and reading
// between them would see part of it.
const settleDelay = 200 * time.Millisecond

// Watch reloads the stores whenever their files are created, written or
// replaced (a rename onto the name counts), until ctx ends. Like ZooKeeper's
// FileChangeWatcher, it watches the directories holding the files, so a
// file replaced by another keeps being watched. A reload that fails keeps
// the previous configuration and is logged; the next change tries again.
func (r *Reloader) Watch(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch the TLS stores: %w", err)
	}
	defer w.Close()
	watched := map[string]bool{}
	for _, s := range []Store{r.settings.KeyStore, r.settings.TrustStore} {
		if s.Location == "" {
			continue
		}
		path, err := filepath.Abs(s.Location)
		if err != nil {
			return fmt.Errorf("watch the TLS stores: %w", err)
		}
		watched[path] = true
		if err := w.Add(filepath.Dir(path)); err != nil {
			return fmt.Errorf("watch the TLS stores: %s: %w", filepath.Dir(path), err)
		}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if watched[ev.Name] && ev.Has(fsnotify.Create|fsnotify.Write|fsnotify.Chmod) {
				timer.Reset(settleDelay)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Changes may have been missed.
				timer.Reset(settleDelay)
				continue
			}
			r.log.Warn("watching the TLS key and trust stores", "err", err)
		case <-timer.C:
			if err := r.Reload(); err != nil {
				r.log.Warn("cannot reload the TLS key and trust stores; keeping the previous ones", "err", err)
				continue
			}
			r.log.Info("reloaded the TLS key and trust stores")
			if testHookReloaded != nil {
				testHookReloaded()
			}
		}
	}
}

// testHookReloaded, when set, is called after each reload Watch makes.
var testHookReloaded func()
