package server

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/sasl"
)

// kerberos accepts the Kerberos tickets of SASL clients with the keys of
// the keytab file, which it reads again when the file changes: Java reads
// a keytab each time it needs keys, so in ZooKeeper a keytab rewritten
// with new keys (a rotation) takes effect without a restart, and so it
// does here.
type kerberos struct {
	acceptor *sasl.Acceptor
	path     string
	log      *slog.Logger

	// mu guards what the file was when last read.
	mu      sync.Mutex
	modTime time.Time
	size    int64
}

func newKerberos(k *config.SASLKerberos, logger *slog.Logger) (*kerberos, error) {
	info, err := os.Stat(k.KeytabFile)
	if err != nil {
		return nil, fmt.Errorf("server: Kerberos for SASL clients: %w", err)
	}
	a, err := sasl.NewAcceptor(k.Principal, k.Keytab, k.ClockSkew, time.Now, rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("server: Kerberos for SASL clients: %w", err)
	}
	return &kerberos{acceptor: a, path: k.KeytabFile, log: logger, modTime: info.ModTime(), size: info.Size()}, nil
}

// exchange starts a GSSAPI exchange with the keytab as it is now.
func (k *kerberos) exchange() *sasl.GSSAPI {
	k.refresh()
	return k.acceptor.NewGSSAPI()
}

// refresh reads the keytab again if its file changed since it was last
// read. A file that cannot be read, or that holds no key of the
// principal, leaves the keys as they were, with a warning.
func (k *kerberos) refresh() {
	k.mu.Lock()
	defer k.mu.Unlock()
	info, err := os.Stat(k.path)
	if err != nil {
		k.log.Warn("SASL: the keytab cannot be read; its last keys are used", "keytab", k.path, "err", err)
		return
	}
	if info.ModTime().Equal(k.modTime) && info.Size() == k.size {
		return
	}
	k.modTime, k.size = info.ModTime(), info.Size()
	kt, err := readKeytab(k.path)
	if err == nil {
		err = k.acceptor.SetKeytab(kt)
	}
	if err != nil {
		k.log.Warn("SASL: the keytab changed but cannot be used; its last keys are used", "keytab", k.path, "err", err)
		return
	}
	k.log.Info("SASL: the keytab changed; its new keys are used", "keytab", k.path)
}

func readKeytab(path string) (*keytab.Keytab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	kt := keytab.New()
	if err := kt.Unmarshal(data); err != nil {
		return nil, fmt.Errorf("not a keytab: %w", err)
	}
	return kt, nil
}
