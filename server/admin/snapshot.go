package admin

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/collie-io/collie/proto"
)

// The snapshot command, ZooKeeper 3.9's: GET <commandURL>/snapshot (or
// /snap), with an Authorization header, takes a snapshot of the server's
// state and streams it, with the headers last_zxid (hex, "0x" first) and
// snapshot_size. ?streaming=false takes the snapshot and answers with the
// headers and the JSON body only. As in ZooKeeper, in this order:
//
//   - a server that does not serve answers 200 with the usual error;
//   - without an Authorization header: 401, "Auth info is missing for the
//     command"; with one that authenticates nobody ("digest user:password",
//     "x509" for the HTTPS client's certificate, "ip"): 401, "Not
//     authenticated"; with identities that lack ALL on the root node's
//     ACL: 403, "Not authorized";
//   - admin.snapshot.enabled=false: 503;
//   - a second snapshot within admin.rateLimiterIntervalInMS: 429.
//
// What is streamed is Collie's backup file (package backup), not
// ZooKeeper's snapshot format.

// SnapshotStream is a snapshot being taken for the snapshot command.
type SnapshotStream struct {
	// LastZxid is the zxid of the last transaction it holds.
	LastZxid int64
	// Size is the length of Body.
	Size int64
	// Body is the backup file; the handler closes it.
	Body io.ReadCloser
}

// AuthRequest is what a command that needs authorization was sent with.
type AuthRequest struct {
	// Info is the Authorization header: "scheme" or "scheme auth".
	Info string
	// Request is the HTTP request, for the client's address and
	// certificate.
	Request *http.Request
	// Perm is the permission needed on Path.
	Perm int32
	Path string
}

// ErrNotAuthenticated and ErrNotAuthorized are Authorize's refusals.
var (
	ErrNotAuthenticated = errors.New("admin: not authenticated")
	ErrNotAuthorized    = errors.New("admin: not authorized")
)

// Snapshotter is what a Backend implements to serve the snapshot
// command; without it the command is unknown.
type Snapshotter interface {
	// Authorize authenticates the request as the scheme of its
	// Authorization header says and checks the identities it gives
	// against Path's ACL, one bit of Perm at a time, as ZooKeeper 3.9's
	// admin server does. It returns ErrNotAuthenticated or
	// ErrNotAuthorized, or another error for a failure of its own.
	Authorize(req AuthRequest) error
	// TakeSnapshot takes a snapshot of everything applied and returns it
	// as a backup file.
	TakeSnapshot(ctx context.Context) (SnapshotStream, error)
}

// snapshotCommand holds the command's settings and its rate limit.
type snapshotCommand struct {
	disabled bool
	interval time.Duration

	mu   sync.Mutex
	last time.Time // when the last snapshot was allowed; zero before
}

// allow reports whether a snapshot may be taken now: one per interval,
// as ZooKeeper's RateLimiter with one token.
func (c *snapshotCommand) allow(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.last.IsZero() && now.Sub(c.last) < c.interval {
		return false
	}
	c.last = now
	return true
}

const snapshotName = "snapshot"

func (h *handler) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	answer := func(status int, errMsg string) {
		var e any
		if errMsg != "" {
			e = errMsg
		}
		writeJSON(w, status, object{{"command", snapshotName}, {"error", e}})
	}
	sn, ok := h.backend.(Snapshotter)
	if !ok {
		answer(http.StatusOK, "Unknown command: "+snapshotName)
		return
	}
	if !h.backend.Serving() {
		answer(http.StatusOK, errNotServing)
		return
	}
	info, sent := r.Header["Authorization"]
	if !sent {
		answer(http.StatusUnauthorized, "Auth info is missing for the command")
		return
	}
	switch err := sn.Authorize(AuthRequest{Info: strings.Join(info, ","), Request: r, Perm: proto.PermAll, Path: "/"}); {
	case errors.Is(err, ErrNotAuthenticated):
		answer(http.StatusUnauthorized, "Not authenticated")
		return
	case errors.Is(err, ErrNotAuthorized):
		answer(http.StatusForbidden, "Not authorized")
		return
	case err != nil:
		answer(http.StatusInternalServerError, "Error occurred during auth")
		return
	}
	if h.snapshot.disabled {
		answer(http.StatusServiceUnavailable, "")
		return
	}
	if !h.snapshot.allow(time.Now()) {
		answer(http.StatusTooManyRequests, "")
		return
	}
	streaming := true
	if v := r.URL.Query().Get("streaming"); r.URL.Query().Has("streaming") {
		// Java's Boolean.parseBoolean: "true" in any case, else false.
		streaming = strings.EqualFold(v, "true")
	}
	snap, err := sn.TakeSnapshot(r.Context())
	if err != nil {
		h.log.Warn("the snapshot command failed", "err", err)
		answer(http.StatusInternalServerError, "")
		return
	}
	defer snap.Body.Close()
	w.Header().Set("last_zxid", "0x"+strconv.FormatInt(snap.LastZxid, 16))
	w.Header().Set("snapshot_size", strconv.FormatInt(snap.Size, 10))
	if !streaming || r.Method == http.MethodHead {
		answer(http.StatusOK, "")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(snap.Size, 10))
	w.WriteHeader(http.StatusOK)
	// A snapshot takes as long as it takes; only a client that stops
	// reading loses the connection, writeTimeout after its last progress.
	if _, err := io.Copy(&deadlineWriter{w: w, rc: http.NewResponseController(w)}, snap.Body); err != nil {
		h.log.Info("the snapshot command's answer was cut short", "remote", r.RemoteAddr, "err", err)
	}
}

// deadlineWriter moves the connection's write deadline on before each
// write.
type deadlineWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	return d.w.Write(p)
}
