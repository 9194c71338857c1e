package zkcompat

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/smallfs"
	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
)

// TestDiskFull runs the collie binary with its data on a small tmpfs and
// fills the file system. Writes then fail with OperationTimeout, and no
// session can be created (that is a write too); reads, sync and pings go
// on, and a session whose client is gone does not expire, since closing
// it is a write. The server's log says that the disk is full, and where.
// Once the space is freed, writes resume by themselves and the session
// expires. After kill -9 and a restart, every acknowledged write is there
// and no refused one is.
//
// Mounting takes root: the test is skipped without it, unless CI=true.
func TestDiskFull(t *testing.T) {
	started := time.Now()
	root := smallfs.Mount(t, 32<<20)
	dir := t.TempDir()
	port := freeLocalPort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cfg := fmt.Sprintf(`tickTime=100
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
preAllocSize=256
snapCount=200
maxSessionTimeout=30000
4lw.commands.whitelist=*
admin.enableServer=false
`, filepath.Join(root, "data"), port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server output:\n%s", out.String())
		}
	})
	srv := startCollie(t, dir, &out, "server", "-c", "zoo.cfg")
	srv.waitServing(t, addr, "ruok", "imok")

	// Sessions made before the disk fills: one reads (and pings), one
	// writes, one has its writes refused, one owns an ephemeral and
	// goes away while the disk is full.
	reader := connectSession(t, addr, time.Second)
	dial := func(timeoutMs int32) *zkwire.Conn {
		c, err := zkwire.Dial(addr, timeoutMs)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	writer, refuser, owner := dial(30000), dial(30000), dial(1000)
	const ephemeral = "/owned"
	if code, err := owner.Do(proto.OpCreate, &proto.CreateRequest{Path: ephemeral, ACL: zkwire.OpenACL, Flags: proto.ModeEphemeral}, nil); err != nil || code != proto.OK {
		t.Fatalf("create %s: %v %v", ephemeral, code, err)
	}

	filler := smallfs.Fill(t, root, 512<<10)
	filled := time.Now()
	acked := make(map[string][]byte)
	payload := func(path string) []byte { return append([]byte(path), bytes.Repeat([]byte{'.'}, 2048)...) }

	// The writer writes until a write is refused. A write proposed before
	// the server found the disk full is held until there is space: its
	// answer then comes later.
	type outcome struct {
		path string
		code proto.Code
		err  error
	}
	results := make(chan outcome, 1)
	go func() {
		defer close(results)
		for i := 0; ; i++ {
			path := fmt.Sprintf("/w%06d", i)
			code, err := writer.Do(proto.OpCreate, &proto.CreateRequest{Path: path, Data: payload(path), ACL: zkwire.OpenACL}, nil)
			results <- outcome{path, code, err}
			if err != nil || code != proto.OK {
				return
			}
		}
	}()
	pending := false
	refused := []string{}
	for full := false; !full; {
		select {
		case r := <-results:
			switch {
			case r.err != nil:
				t.Fatalf("write %s: %v", r.path, r.err)
			case r.code == proto.OK:
				acked[r.path] = payload(r.path)
			case r.code == proto.ErrOperationTimeout:
				refused = append(refused, r.path)
				full = true
			default:
				t.Fatalf("write %s failed with %v, want %v", r.path, r.code, proto.ErrOperationTimeout)
			}
			if len(acked) > 100000 {
				t.Fatal("the disk never filled")
			}
		case <-time.After(20 * time.Millisecond):
			if mntrValue(t, addr, "collie_disk_full") == 1 {
				full, pending = true, true
			}
		}
	}
	t.Logf("%d writes acknowledged before the disk was full, %v after filling it", len(acked), time.Since(filled).Round(time.Millisecond))
	waitMntr(t, addr, "collie_disk_full", 1)
	if !strings.Contains(out.String(), "the disk is full") || !strings.Contains(out.String(), filepath.Join(root, "data", "wal")) {
		t.Errorf("the server's log does not say the disk holding %s is full", filepath.Join(root, "data", "wal"))
	}

	// Writes fail with OperationTimeout, at once, and change nothing.
	var some string
	for p := range acked {
		some = p
		break
	}
	for i := range 5 {
		path := fmt.Sprintf("/refused%d", i)
		code, err := refuser.Do(proto.OpCreate, &proto.CreateRequest{Path: path, ACL: zkwire.OpenACL}, nil)
		if err != nil || code != proto.ErrOperationTimeout {
			t.Fatalf("create %s on a full disk: %v %v, want %v", path, code, err, proto.ErrOperationTimeout)
		}
		refused = append(refused, path)
	}
	if code, err := refuser.Do(proto.OpSetData, &proto.SetDataRequest{Path: some, Data: []byte("changed"), Version: -1}, nil); err != nil || code != proto.ErrOperationTimeout {
		t.Fatalf("setData on a full disk: %v %v, want %v", code, err, proto.ErrOperationTimeout)
	}
	// A new session is a write: the server closes the connection, and a
	// client tries again.
	if c, err := zkwire.Dial(addr, 30000); err == nil {
		c.Close()
		t.Fatal("a session was created on a full disk")
	}

	// Reads, sync and pings go on; the ephemeral's owner goes away, and its
	// session outlives its timeout while the disk is full.
	owner.Close()
	reconnects := func() int {
		reader.mu.Lock()
		defer reader.mu.Unlock()
		return reader.established
	}
	before := reconnects()
	for deadline := time.Now().Add(2500 * time.Millisecond); time.Now().Before(deadline); {
		if data, _, err := reader.Get(some); err != nil || !bytes.Equal(data, acked[some]) {
			t.Fatalf("read %s on a full disk: %v", some, err)
		}
		if _, err := reader.Sync(some); err != nil {
			t.Fatalf("sync on a full disk: %v", err)
		}
		if ok, _, err := reader.Exists(ephemeral); err != nil || !ok {
			t.Fatalf("%s, ephemeral of a session gone while the disk is full, exists %t, %v: its closing is a write", ephemeral, ok, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := reconnects(); n != before {
		t.Fatalf("the reading session reconnected %d times while the disk was full", n-before)
	}

	// Space is freed: writes resume by themselves.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	waitMntr(t, addr, "collie_disk_full", 0)
	t.Logf("writes resumed %v after the space was freed", time.Since(freed).Round(time.Millisecond))
	if pending {
		select {
		case r := <-results:
			if r.err != nil || r.code != proto.OK {
				t.Fatalf("write %s, held while the disk was full: %v %v, want it made once there was space", r.path, r.code, r.err)
			}
			acked[r.path] = payload(r.path)
		case <-time.After(10 * time.Second):
			t.Fatal("a write held while the disk was full was not answered once there was space")
		}
	}
	for i := range 20 {
		path := fmt.Sprintf("/after%d", i)
		code, err := refuser.Do(proto.OpCreate, &proto.CreateRequest{Path: path, Data: payload(path), ACL: zkwire.OpenACL}, nil)
		if err != nil || code != proto.OK {
			t.Fatalf("create %s once space was freed: %v %v", path, code, err)
		}
		acked[path] = payload(path)
	}
	waitDeleted(t, reader, ephemeral)
	if !strings.Contains(out.String(), "writes resume") {
		t.Error("the server's log does not say that writes resumed")
	}

	// kill -9 and restart: what was acknowledged is there, what was
	// refused is not.
	srv.kill(t)
	srv = startCollie(t, dir, &out, "server", "-c", "zoo.cfg")
	srv.waitServing(t, addr, "ruok", "imok")
	checker := connectSession(t, addr, 4*time.Second)
	for path, want := range acked {
		data, _, err := checker.Get(path)
		if err != nil || !bytes.Equal(data, want) {
			t.Errorf("acknowledged %s after the restart: %d bytes, %v", path, len(data), err)
		}
	}
	for _, path := range refused {
		if ok, _, err := checker.Exists(path); err != nil || ok {
			t.Errorf("refused %s exists after the restart (%v)", path, err)
		}
	}
	t.Logf("%d acknowledged writes and %d refused checked after kill -9; whole test %v",
		len(acked), len(refused), time.Since(started).Round(time.Millisecond))
}

// waitMntr waits, at most 30 seconds, until mntr's key has value want.
func waitMntr(t *testing.T, addr, key string, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for mntrValue(t, addr, key) != want {
		if time.Now().After(deadline) {
			t.Fatalf("mntr %s is not %d after 30s", key, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
