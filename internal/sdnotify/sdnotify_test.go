package sdnotify_test

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/sdnotify"
)

// listen is systemd's end: a datagram socket at name.
func listen(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func receive(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

func TestSend(t *testing.T) {
	for _, name := range []string{
		filepath.Join(t.TempDir(), "notify"),
		"@collie-sdnotify-test-" + strconv.FormatInt(time.Now().UnixNano(), 36),
	} {
		conn := listen(t, name)
		if err := sdnotify.Send(name, sdnotify.Ready, sdnotify.Status("serving clients\non :2181")); err != nil {
			t.Fatalf("Send to %s: %v", name, err)
		}
		if got, want := receive(t, conn), "READY=1\nSTATUS=serving clients on :2181"; got != want {
			t.Errorf("%s received %q, want %q", name, got, want)
		}
	}
}

func TestSendWithoutSocket(t *testing.T) {
	if err := sdnotify.Send("", sdnotify.Ready); err != nil {
		t.Errorf("Send without a socket: %v, want nothing done", err)
	}
	if err := sdnotify.Send("relative", sdnotify.Ready); err == nil {
		t.Errorf("Send to a relative name: no error")
	}
	if err := sdnotify.Send(filepath.Join(t.TempDir(), "absent"), sdnotify.Ready); err == nil {
		t.Errorf("Send to a socket that does not exist: no error")
	}
}
