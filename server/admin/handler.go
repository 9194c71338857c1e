// Package admin owns Collie's HTTP admin server, ZooKeeper 3.8's
// AdminServer: the admin commands as JSON, the mntr values for Prometheus,
// and, only when asked for, Go's profiles.
//
// The handler serves
//
//	GET /commands          links to every command, as ZooKeeper lists them
//	GET /commands/snapshot ZooKeeper 3.9's snapshot command (snapshot.go)
//	GET /commands/<name>   one command, by its name or an alias, as JSON:
//	                       the command's members, then "command" (its
//	                       primary name) and "error" (a message or null).
//	                       An unknown name answers 200 with
//	                       {"command": name, "error": "Unknown command: name"},
//	                       as ZooKeeper does. Query parameters are the
//	                       command's arguments (set_trace_mask?traceMask=N).
//	GET /metrics           the server's metrics in Prometheus's text format,
//	                       as on the metrics port (package metrics)
//	GET /live              200 while the process serves HTTP
//	GET /ready             200 while the server serves clients with a
//	                       quorum, 503 with the reason otherwise
//	/debug/pprof/          net/http/pprof, only with Options.Pprof
//
// /commands is admin.commandURL. On it, /metrics, /live and /ready,
// methods other than GET and HEAD get 405; a request URI longer than 4 KiB
// gets 414, request headers over 8 KiB get 431, other paths 404.
//
// NewMetricsHandler serves /metrics, /live and /ready alone, for the port
// of metricsProvider.httpPort.
//
// The handlers read everything through a Backend, which the server
// implements; Listen serves a handler on a port until Close.
package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"time"
)

// Options configure the handler.
type Options struct {
	// CommandURL is the path the commands are served under
	// (admin.commandURL); "" means ZooKeeper's "/commands".
	CommandURL string
	// Pprof serves net/http/pprof under /debug/pprof/ (admin.pprof).
	Pprof bool
	// SnapshotDisabled turns the snapshot command off
	// (admin.snapshot.enabled=false); SnapshotInterval is the least time
	// between two snapshots it takes (admin.rateLimiterIntervalInMS), 0
	// for no limit.
	SnapshotDisabled bool
	SnapshotInterval time.Duration
	// Logger receives what goes wrong while answering; nil discards.
	Logger *slog.Logger
}

const (
	// maxRequestURI bounds the request URI. Commands have short names; a
	// longer URI is a mistake or an attack, and is not echoed back.
	maxRequestURI = 4 << 10
	// writeTimeout bounds the writing of one answer to a client that does
	// not read it. Profiles are exempt: they take as long as asked.
	writeTimeout = 10 * time.Second
)

type handler struct {
	log        *slog.Logger
	snapshot   *snapshotCommand
	backend    Backend
	commandURL string       // without a trailing slash: "/commands", or "" for the root
	pprof      http.Handler // nil unless enabled
}

// NewHandler returns the admin handler over b.
func NewHandler(b Backend, opts Options) http.Handler {
	if opts.CommandURL == "" {
		opts.CommandURL = "/commands"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{
		backend:    b,
		commandURL: strings.TrimSuffix(opts.CommandURL, "/"),
		log:        opts.Logger,
		snapshot:   &snapshotCommand{disabled: opts.SnapshotDisabled, interval: opts.SnapshotInterval},
	}
	if opts.Pprof {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		h.pprof = mux
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(r.RequestURI) > maxRequestURI {
		http.Error(w, "URI Too Long", http.StatusRequestURITooLong)
		return
	}
	path := r.URL.Path
	if h.pprof != nil && strings.HasPrefix(path, "/debug/pprof/") {
		h.pprof.ServeHTTP(w, r)
		return
	}
	// An answer is small and computed at once; only a client that does not
	// read could hold the handler, and the deadline lets it go.
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
	switch {
	case serveMetrics(h.backend, w, r):
	case path == h.commandURL || path == h.commandURL+"/":
		if allowed(w, r, nil) {
			h.serveList(w)
		}
	case strings.HasPrefix(path, h.commandURL+"/"):
		name := strings.TrimPrefix(path, h.commandURL+"/")
		if name == snapshotName || name == "snap" {
			if allowed(w, r, object{{"command", snapshotName}, {"error", "HTTP method " + r.Method + " is not supported by this URL"}}) {
				h.serveSnapshot(w, r)
			}
			return
		}
		if allowed(w, r, object{{"command", name}, {"error", "HTTP method " + r.Method + " is not supported by this URL"}}) {
			writeJSON(w, http.StatusOK, run(h.backend, name, r.URL.Query()))
		}
	default:
		http.NotFound(w, r)
	}
}

// allowed answers 405 to methods other than GET and HEAD, with body as
// JSON when given, and reports whether the request may go on.
func allowed(w http.ResponseWriter, r *http.Request, body object) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	if body == nil {
		http.Error(w, "HTTP method "+r.Method+" is not supported by this URL", http.StatusMethodNotAllowed)
	} else {
		writeJSON(w, http.StatusMethodNotAllowed, body)
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, o object) {
	body, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		http.Error(w, "encoding the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// serveList writes ZooKeeper's page of links to each command.
func (h *handler) serveList(w http.ResponseWriter) {
	// ZooKeeper 3.8's list: the snapshot command, 3.9's, is served but not
	// listed, so that the page is the one 3.8's clients and tools know.
	names := make([]string, 0, len(commands))
	for _, c := range commands {
		names = append(names, c.names[0])
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "<a href=\"%s/%s\">%s</a>\n<br/>\n", h.commandURL, name, name)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(b.String()))
}

// serveMetrics answers /metrics, /live and /ready, and reports whether
// the request was for one of them.
func serveMetrics(b Backend, w http.ResponseWriter, r *http.Request) bool {
	switch r.URL.Path {
	case "/metrics":
		if allowed(w, r, nil) {
			var buf bytes.Buffer
			if err := b.Metrics(&buf); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				break
			}
			w.Header().Set("Content-Type", metricsContentType)
			w.Write(buf.Bytes())
		}
	case "/live":
		if allowed(w, r, nil) {
			writeJSON(w, http.StatusOK, object{{"status", "live"}})
		}
	case "/ready":
		if !allowed(w, r, nil) {
			break
		}
		if ready, reason := b.Ready(); ready {
			writeJSON(w, http.StatusOK, object{{"status", "ready"}})
		} else {
			writeJSON(w, http.StatusServiceUnavailable, object{{"status", "not ready"}, {"reason", reason}})
		}
	default:
		return false
	}
	return true
}

// metricsContentType is Prometheus's text format, version 0.0.4.
const metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// NewMetricsHandler returns the handler of the metrics port: /metrics,
// /live and /ready over b, 404 elsewhere, as ZooKeeper's Prometheus
// provider serves /metrics alone.
func NewMetricsHandler(b Backend) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.RequestURI) > maxRequestURI {
			http.Error(w, "URI Too Long", http.StatusRequestURITooLong)
			return
		}
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
		if !serveMetrics(b, w, r) {
			http.NotFound(w, r)
		}
	})
}
