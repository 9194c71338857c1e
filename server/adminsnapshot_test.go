package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/backup"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/tree"
)

// snapshotAnswer is an answer of the snapshot admin command.
type snapshotAnswer struct {
	status  int
	header  http.Header
	body    []byte
	errText any // the JSON answer's "error", for a JSON answer
}

func getSnapshot(t *testing.T, adminAddr, auth, query string) snapshotAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+adminAddr+"/commands/snapshot"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := snapshotAnswer{status: resp.StatusCode, header: resp.Header, body: body}
	if resp.Header.Get("Content-Type") == "application/json" {
		var o map[string]any
		if err := json.Unmarshal(body, &o); err != nil {
			t.Fatalf("answer %d: %v: %s", resp.StatusCode, err, body)
		}
		if o["command"] != "snapshot" {
			t.Errorf("answer names command %v", o["command"])
		}
		a.errText = o["error"]
	}
	return a
}

// TestSnapshotCommandAuthorization: as ZooKeeper 3.9's snapshot command,
// Collie's needs an Authorization header whose identity has ALL on the
// root node's ACL, and answers 401 and 403 as it does.
func TestSnapshotCommandAuthorization(t *testing.T) {
	srv := collietest.Start(t, collietest.WithAdminServer(), collietest.WithConfig(func(c *config.Config) {
		c.AdminRateLimiterInterval = 0
		c.SuperDigest = tree.DigestID("super:secret")
	}))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, srv.Addr(), client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.Create(ctx, "/data", []byte("x"), client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	// ALL for alice, every bit but ADMIN for bob.
	acl := []proto.ACL{
		{Perms: proto.PermAll, ID: proto.ID{Scheme: "digest", ID: tree.DigestID("alice:pw")}},
		{Perms: proto.PermAll &^ proto.PermAdmin, ID: proto.ID{Scheme: "digest", ID: tree.DigestID("bob:pw")}},
		{Perms: proto.PermAdmin, ID: proto.ID{Scheme: "digest", ID: tree.DigestID("carol:pw")}},
	}
	if _, err := c.SetACL(ctx, "/", acl, -1); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		auth    string
		status  int
		errText string
	}{
		{"", http.StatusUnauthorized, "Auth info is missing for the command"},
		{"digest", http.StatusUnauthorized, "Not authenticated"},
		{"basic YWxpY2U6cHc=", http.StatusUnauthorized, "Not authenticated"},
		{"digest alice:pw extra", http.StatusUnauthorized, "Not authenticated"},
		{"x509", http.StatusUnauthorized, "Not authenticated"}, // no certificate over plain HTTP
		{"digest bob:pw", http.StatusForbidden, "Not authorized"},
		{"digest carol:pw", http.StatusForbidden, "Not authorized"},
		{"digest alice:wrong", http.StatusForbidden, "Not authorized"},
		{"ip", http.StatusForbidden, "Not authorized"},
	} {
		a := getSnapshot(t, srv.AdminAddr(), tt.auth, "")
		if a.status != tt.status || a.errText != tt.errText {
			t.Errorf("Authorization %q: %d %v, want %d %q", tt.auth, a.status, a.errText, tt.status, tt.errText)
		}
	}
	for _, auth := range []string{"digest alice:pw", "digest super:secret"} {
		a := getSnapshot(t, srv.AdminAddr(), auth, "")
		if a.status != http.StatusOK {
			t.Fatalf("Authorization %q: %d %s", auth, a.status, a.body)
		}
		h, _, err := backup.Verify(bytes.NewReader(a.body))
		if err != nil {
			t.Fatalf("Authorization %q: the file streamed: %v", auth, err)
		}
		if got, want := a.header.Get("last_zxid"), "0x"+strconv.FormatInt(h.Zxid, 16); got != want {
			t.Errorf("last_zxid %q, the file says %s", got, want)
		}
		if got := a.header.Get("snapshot_size"); got != strconv.Itoa(len(a.body)) {
			t.Errorf("snapshot_size %q for %d bytes", got, len(a.body))
		}
		if h.Zxid < srv.Server().LastZxid()-5 || h.Ensemble == 0 || h.Server != 1 {
			t.Errorf("header %+v; the server is at zxid %#x", h, srv.Server().LastZxid())
		}
	}
	// streaming=false takes the snapshot and answers with its headers.
	a := getSnapshot(t, srv.AdminAddr(), "digest alice:pw", "?streaming=false")
	if a.status != http.StatusOK || a.errText != nil || a.header.Get("last_zxid") == "" {
		t.Errorf("streaming=false: %d %v, last_zxid %q", a.status, a.errText, a.header.Get("last_zxid"))
	}
}

// TestSnapshotCommandSwitchAndRateLimit: admin.snapshot.enabled=false
// answers 503 and admin.rateLimiterIntervalInMS 429, as in ZooKeeper 3.9,
// after authorization.
func TestSnapshotCommandSwitchAndRateLimit(t *testing.T) {
	off := collietest.Start(t, collietest.WithAdminServer(), collietest.WithConfig(func(c *config.Config) {
		c.AdminSnapshotEnabled = false
	}))
	if a := getSnapshot(t, off.AdminAddr(), "", ""); a.status != http.StatusUnauthorized {
		t.Errorf("turned off, without authorization: %d, want 401", a.status)
	}
	if a := getSnapshot(t, off.AdminAddr(), "digest any:one", ""); a.status != http.StatusServiceUnavailable || a.errText != nil {
		t.Errorf("turned off: %d %v, want 503", a.status, a.errText)
	}
	limited := collietest.Start(t, collietest.WithAdminServer(), collietest.WithConfig(func(c *config.Config) {
		c.AdminRateLimiterInterval = time.Hour
	}))
	if a := getSnapshot(t, limited.AdminAddr(), "digest any:one", ""); a.status != http.StatusOK {
		t.Fatalf("first snapshot: %d %s", a.status, a.body)
	}
	if a := getSnapshot(t, limited.AdminAddr(), "digest any:one", ""); a.status != http.StatusTooManyRequests {
		t.Errorf("second snapshot within the interval: %d, want 429", a.status)
	}
}
