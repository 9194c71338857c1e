package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/server"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/replication"
	"github.com/collie-io/collie/server/storage"
)

// logBuffer collects what a server logs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runServer creates a server of cfg and runs it until it serves; Run's
// result arrives on the channel.
func runServer(t *testing.T, cfg config.Config, logs *logBuffer) (*server.Server, <-chan error) {
	t.Helper()
	srv, err := server.New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		srv.Shutdown(sctx)
		cancel()
	})
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("server stopped before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("server not serving after 30s")
	}
	return srv, done
}

func createNodes(t *testing.T, c *zk.Conn, prefix string, n int) {
	t.Helper()
	for i := range n {
		if _, err := c.Create(fmt.Sprintf("%s%d", prefix, i), []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
}

// failingStorage fails every Save of entries once fail is set, as a disk
// whose fsync fails makes the WAL's.
type failingStorage struct {
	replication.Storage
	fail *atomic.Bool
}

func (s failingStorage) Save(st raftpb.HardState, ents []raftpb.Entry) error {
	if s.fail.Load() && len(ents) > 0 {
		return fmt.Errorf("storage: append to WAL: %w", syscall.EIO)
	}
	return s.Storage.Save(st, ents)
}

// A server whose disk fails a write stops: Run returns the failure, which
// is what makes the process exit non-zero. Started again, it has the
// writes it acknowledged.
func TestServerStopsWhenItsDiskFails(t *testing.T) {
	cfg := collietest.Config(t)
	var fail atomic.Bool
	server.SetStorageHook(t, func(s replication.Storage) replication.Storage { return failingStorage{s, &fail} })
	var logs logBuffer
	srv, done := runServer(t, cfg, &logs)
	c, _ := connect(t, srv.Addr().String())
	createNodes(t, c, "/before", 5)

	fail.Store(true)
	created := make(chan error, 1)
	go func() {
		_, err := c.Create("/after", nil, 0, zk.WorldACL(zk.PermAll))
		created <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, replication.ErrStorageFailed) || !errors.Is(err, syscall.EIO) {
			t.Fatalf("Run returned %v, want the disk's failure", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server went on after its disk failed")
	}
	if err := <-created; err == nil {
		t.Fatal("a create was acknowledged by a server whose disk failed")
	}
	if !strings.Contains(logs.String(), "the disk failed a write") {
		t.Errorf("no log line says the disk failed:\n%s", logs.String())
	}
	c.Close()
	srv.Shutdown(context.Background())

	server.SetStorageHook(t, nil)
	again := collietest.StartConfig(t, cfg)
	c2, _ := connect(t, again.Addr())
	kids, _, err := c2.Children("/")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(kids)
	if strings.Join(kids, ",") != "before0,before1,before2,before3,before4,zookeeper" {
		t.Fatalf("after restart: %v, want the five nodes created before the failure", kids)
	}
}

// lastSegment returns the newest WAL segment of a server's configuration,
// its content, the offsets of its records and where they end.
func lastSegment(t *testing.T, cfg config.Config) (path string, b []byte, records []int, end int) {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(cfg.DataLogDir, "wal", "*.wal"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments: %v %v", segs, err)
	}
	path = segs[len(segs)-1]
	if b, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	for end+8 <= len(b) {
		n := int(binary.LittleEndian.Uint64(b[end:]))
		if n == 0 || end+8+n > len(b) {
			break
		}
		records = append(records, end)
		end += 8 + n + (8-n%8)%8
	}
	return path, b, records, end
}

// A write that a crash cut short at the end of the log is cut off, with a
// warning that names it, and the server starts with everything before it.
func TestServerStartsAfterATornWrite(t *testing.T) {
	srv := collietest.Start(t)
	cfg := srv.Cfg()
	c, _ := connect(t, srv.Addr())
	createNodes(t, c, "/n", 20)
	c.Close()
	srv.Stop()

	// An append whose first sector reached the disk and whose others did
	// not: a record of 2000 bytes, 200 of them there.
	path, b, _, end := lastSegment(t, cfg)
	torn := binary.LittleEndian.AppendUint64(nil, 2000)
	torn = append(torn, bytes.Repeat([]byte{0x5a}, 200)...)
	copy(b[end:], torn)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	var logs logBuffer
	again, _ := runServer(t, cfg, &logs)
	c2, _ := connect(t, again.Addr().String())
	kids, _, err := c2.Children("/")
	if err != nil || len(kids) != 21 {
		t.Fatalf("after restart: %d nodes %v, want 20 and /zookeeper", len(kids), err)
	}
	want := fmt.Sprintf("file=%s offset=%d bytes=208 records=1", path, end)
	if !strings.Contains(logs.String(), "cut off a write that a crash interrupted") || !strings.Contains(logs.String(), want) {
		t.Errorf("no warning with %q:\n%s", want, logs.String())
	}
}

// Damage before the end of the log stops a standalone server with an
// error that names the file and offset and says what to do; doing it
// (cutting the log there) starts the server with the writes before it.
func TestServerRefusesADamagedLog(t *testing.T) {
	srv := collietest.Start(t)
	cfg := srv.Cfg()
	c, _ := connect(t, srv.Addr())
	createNodes(t, c, "/n", 40)
	c.Close()
	srv.Stop()

	// A sector in the middle of the records lost, as a disk can lose it.
	path, b, records, _ := lastSegment(t, cfg)
	at := records[len(records)/2] &^ 511
	clear(b[at : at+512])
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	_, err := server.New(cfg, nil)
	var ce *storage.CorruptError
	if !errors.As(err, &ce) || ce.Path != path {
		t.Fatalf("New: %v; want a CorruptError in %s", err, path)
	}
	t.Logf("New: %v", err)
	for _, want := range []string{path, fmt.Sprintf("offset %d", ce.Offset), "restore the data directories from a backup", fmt.Sprintf("truncate -s %d %s", ce.Offset, path)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	size, remove, _ := ce.Cut()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	for _, f := range remove {
		os.Remove(f)
	}
	var logs logBuffer
	again, _ := runServer(t, cfg, &logs)
	c2, _ := connect(t, again.Addr().String())
	kids, _, err := c2.Children("/")
	if err != nil || len(kids) < 2 || len(kids) > 41 {
		t.Fatalf("after the cut: %d nodes %v", len(kids), err)
	}
	if ok, _, err := c2.Exists("/n0"); !ok || err != nil {
		t.Fatalf("the first node, before the damage, is gone: %v", err)
	}
}

// A member of an ensemble is told not to rejoin on a damaged, cut or
// emptied log, and why; a standalone server is told how to cut it.
func TestDamagedLogAdvice(t *testing.T) {
	ce := &storage.CorruptError{Path: "data/wal/x.wal", Offset: 4096, Err: storage.ErrCRCMismatch}
	member := server.Damaged(false, fmt.Errorf("read: %w", ce)).Error()
	t.Logf("member: %s", member)
	for _, want := range []string{"data/wal/x.wal, offset 4096", "must not rejoin", "rebuild it from its peers"} {
		if !strings.Contains(member, want) {
			t.Errorf("member: %q does not say %q", member, want)
		}
	}
	if strings.Contains(member, "truncate") || strings.Contains(member, "rm ") {
		t.Errorf("member: %q tells it to cut its log", member)
	}
	other := errors.New("disk on fire")
	if got := server.Damaged(true, other); got != other {
		t.Errorf("an error that is not damage got advice: %v", got)
	}
}
