package admin

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeBackend answers with fixed values and counts the resets.
type fakeBackend struct {
	serverResets, connResets int
	notServing, readOnly     bool
	traceMask                int64
}

var epoch = time.UnixMilli(1700000000000)

func (f *fakeBackend) Monitor() []Metric {
	return []Metric{
		{"version", "3.8.0-collie-test, built on 1970-01-01 00:00 UTC"},
		{"server_state", "standalone"},
		{"avg_latency", "0.25"},
		{"max_latency", "3"},
		{"min_latency", "0"},
		{"packets_received", "10"},
		{"packets_sent", "9"},
		{"num_alive_connections", "1"},
		{"outstanding_requests", "0"},
		{"znode_count", "7"},
		{"open_file_descriptor_count", "-1"},
		{"uptime", "1234"},
	}
}
func (f *fakeBackend) LastZxid() int64 { return 0x1f }
func (f *fakeBackend) Serving() bool   { return !f.notServing }
func (f *fakeBackend) ReadOnly() bool  { return f.readOnly }
func (f *fakeBackend) Connections() []Connection {
	return []Connection{{
		RemoteAddr: "127.0.0.1:5555", Received: 10, Sent: 9, Session: 0x100, LastOp: "GETD",
		Established: epoch, Timeout: 4 * time.Second, LastCxid: 7, LastZxid: 0x1f, LastResponse: epoch.Add(time.Second),
		LastLatency: time.Millisecond, MaxLatency: 3 * time.Millisecond,
	}}
}
func (f *fakeBackend) Configuration() Configuration {
	return Configuration{ClientPort: 2181, DataDir: "/d/snap", DataLogDir: "/d/wal", TickTime: 2 * time.Second,
		MaxClientCnxns: 60, MinSessionTimeout: 4 * time.Second, MaxSessionTimeout: 40 * time.Second, ListenBacklog: -1}
}
func (f *fakeBackend) Dirs() Dirs { return Dirs{DataDirSize: 100, LogDirSize: 200} }
func (f *fakeBackend) Sessions() []Session {
	return []Session{{0x100, epoch}, {0x101, epoch}, {0x102, epoch.Add(time.Second)}}
}
func (f *fakeBackend) Ephemerals() map[int64][]string {
	return map[int64][]string{0x100: {"/e1", "/e2"}}
}
func (f *fakeBackend) Watches() Watches {
	return Watches{
		BySession:   map[int64][]string{0x100: {"/a", "/b"}},
		ByPath:      map[string][]int64{"/a": {0x100}, "/b": {0x100}},
		Connections: 1, Paths: 2, Total: 2,
	}
}
func (f *fakeBackend) Environment() []Property {
	return []Property{{"zookeeper.version", "3.8.0-collie-test"}, {"host.name", "h"}, {"go.version", "go1"}}
}
func (f *fakeBackend) InitialConfiguration() string { return "tickTime=2000\n" }
func (f *fakeBackend) LastSnapshot() (Snapshot, bool) {
	return Snapshot{Zxid: 0x10, ModTime: epoch}, true
}
func (f *fakeBackend) Metrics(w io.Writer) error {
	_, err := io.WriteString(w, "# HELP znode_count znode_count\n# TYPE znode_count gauge\nznode_count 7\n")
	return err
}
func (f *fakeBackend) Ready() (bool, string) {
	if f.notServing {
		return false, "no leader"
	}
	return true, ""
}
func (f *fakeBackend) TraceMask() int64        { return f.traceMask }
func (f *fakeBackend) SetTraceMask(mask int64) { f.traceMask = mask }
func (f *fakeBackend) Digests() []Digest {
	return []Digest{{Zxid: 0x80, Version: 2, Digest: 1371985504}}
}
func (f *fakeBackend) ResetServerStats()     { f.serverResets++ }
func (f *fakeBackend) ResetConnectionStats() { f.connResets++ }

// get serves one request and returns the status, headers and body.
func get(t *testing.T, h http.Handler, method, target string) (int, http.Header, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, rec.Result().Header, string(body)
}

// getJSON serves a command and decodes its answer.
func getJSON(t *testing.T, h http.Handler, target string) map[string]any {
	t.Helper()
	code, header, body := get(t, h, http.MethodGet, target)
	if code != http.StatusOK || header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %s\n%s", target, code, header.Get("Content-Type"), body)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("GET %s: %v\n%s", target, err, body)
	}
	return m
}

// zooKeeperKeys are the members of ZooKeeper 3.8's standalone answers, as
// its AdminServer sends them ("command" and "error" aside). monitor has
// hundreds in ZooKeeper; Collie's are mntr's, checked separately.
var zooKeeperKeys = map[string][]string{
	"configuration":                  {"client_port", "data_dir", "data_log_dir", "tick_time", "max_client_cnxns", "min_session_timeout", "max_session_timeout", "server_id", "client_port_listen_backlog"},
	"connection_stat_reset":          {},
	"connections":                    {"connections", "secure_connections"},
	"dirs":                           {"datadir_size", "logdir_size"},
	"dump":                           {"expiry_time_to_session_ids", "session_id_to_ephemeral_paths"},
	"get_trace_mask":                 {"tracemask"},
	"hash":                           {"digests"},
	"initial_configuration":          {"initial_configuration"},
	"is_read_only":                   {"read_only"},
	"last_snapshot":                  {"zxid", "timestamp"},
	"leader":                         {},
	"observer_connection_stat_reset": {},
	"observers":                      {"synced_observers", "observers"},
	"ruok":                           {},
	"server_stats":                   {"version", "read_only", "server_stats", "client_response", "node_count"},
	"set_trace_mask":                 {},
	"stat_reset":                     {},
	"stats":                          {"version", "read_only", "server_stats", "client_response", "node_count", "connections", "secure_connections"},
	"voting_view":                    {"current_config"},
	"watch_summary":                  {"num_connections", "num_paths", "num_total_watches"},
	"watches":                        {"session_id_to_watched_paths"},
	"watches_by_path":                {"path_to_session_ids"},
	"zabstate":                       {"voting", "zabstate"},
}

func TestEveryCommandAndAlias(t *testing.T) {
	h := NewHandler(&fakeBackend{}, Options{})
	for _, cmd := range commands {
		for _, name := range cmd.names {
			m := getJSON(t, h, "/commands/"+name)
			if m["command"] != cmd.names[0] {
				t.Errorf("%s: command = %v, want %s", name, m["command"], cmd.names[0])
			}
			wantErr := map[string]any{
				"leader":         "server is not initialized",
				"set_trace_mask": "setTraceMask requires long traceMask argument",
			}[cmd.names[0]]
			if m["error"] != wantErr {
				t.Errorf("%s: error = %#v, want %#v", name, m["error"], wantErr)
			}
			want, ok := zooKeeperKeys[cmd.names[0]]
			if !ok {
				continue
			}
			got := slices.Sorted(maps.Keys(m))
			want = append(slices.Clone(want), "command", "error")
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s: keys %v, want %v", name, got, want)
			}
		}
	}
}

// A server that does not serve clients (an ensemble member without a
// quorum) answers every command but a few with ZooKeeper's error alone,
// as ZooKeeper 3.8 run as a member of an ensemble whose others are down.
func TestCommandsWhileNotServing(t *testing.T) {
	b := &fakeBackend{notServing: true}
	h := NewHandler(b, Options{})
	answering := map[string]bool{"environment": true, "get_trace_mask": true, "set_trace_mask": true, "system_properties": true, "zabstate": true}
	for _, cmd := range commands {
		m := getJSON(t, h, "/commands/"+cmd.names[0])
		if answering[cmd.names[0]] {
			if m["error"] == errNotServing {
				t.Errorf("%s: %v; want it to answer while not serving", cmd.names[0], m)
			}
			continue
		}
		if len(m) != 2 || m["command"] != cmd.names[0] || m["error"] != "This ZooKeeper instance is not currently serving requests" {
			t.Errorf("%s: %v; want only the not-serving error", cmd.names[0], m)
		}
	}
	if b.serverResets != 0 || b.connResets != 0 {
		t.Errorf("a server not serving reset its statistics")
	}
	if m := getJSON(t, h, "/commands/nosuch"); m["error"] != "Unknown command: nosuch" {
		t.Errorf("unknown command while not serving: %v", m)
	}
}

// In read-only mode the commands answer, and say they are read-only.
func TestCommandsInReadOnlyMode(t *testing.T) {
	h := NewHandler(&fakeBackend{readOnly: true}, Options{})
	for _, name := range []string{"is_read_only", "server_stats", "stats"} {
		if m := getJSON(t, h, "/commands/"+name); m["read_only"] != true || m["error"] != nil {
			t.Errorf("%s in read-only mode: %v", name, m)
		}
	}
}

func TestCommandValues(t *testing.T) {
	b := &fakeBackend{}
	h := NewHandler(b, Options{})
	tests := []struct {
		command string
		want    string // the answer's JSON, whitespace aside
	}{
		{"ruok", `{"command":"ruok","error":null}`},
		{"dirs", `{"datadir_size":100,"logdir_size":200,"command":"dirs","error":null}`},
		{"configuration", `{"client_port":2181,"data_dir":"/d/snap","data_log_dir":"/d/wal","tick_time":2000,"max_client_cnxns":60,` +
			`"min_session_timeout":4000,"max_session_timeout":40000,"server_id":0,"client_port_listen_backlog":-1,"command":"configuration","error":null}`},
		{"dump", `{"expiry_time_to_session_ids":{"1700000000000":[256,257],"1700000001000":[258]},` +
			`"session_id_to_ephemeral_paths":{"256":["/e1","/e2"]},"command":"dump","error":null}`},
		{"watches", `{"session_id_to_watched_paths":{"256":["/a","/b"]},"command":"watches","error":null}`},
		{"wchp", `{"path_to_session_ids":{"/a":[256],"/b":[256]},"command":"watches_by_path","error":null}`},
		{"wchs", `{"num_connections":1,"num_paths":2,"num_total_watches":2,"command":"watch_summary","error":null}`},
		{"lsnp", `{"zxid":"10","timestamp":1700000000,"command":"last_snapshot","error":null}`},
		{"icfg", `{"initial_configuration":"tickTime=2000\n","command":"initial_configuration","error":null}`},
		{"leader", `{"command":"leader","error":"server is not initialized"}`},
		{"set_trace_mask?traceMask=x", `{"command":"set_trace_mask","error":"setTraceMask requires long traceMask argument, got x"}`},
		{"envi", `{"zookeeper.version":"3.8.0-collie-test","host.name":"h","go.version":"go1","command":"environment","error":null}`},
		{"sysp", `{"go.version":"go1","host.name":"h","zookeeper.version":"3.8.0-collie-test","command":"system_properties","error":null}`},
		{"cons", `{"connections":[{"remote_socket_address":"127.0.0.1:5555","interest_ops":1,"outstanding_requests":0,` +
			`"packets_received":10,"packets_sent":9,"session_id":256,"last_operation":"GETD","established":1700000000000,` +
			`"session_timeout":4000,"last_cxid":7,"last_zxid":31,"last_response_time":1700000001000,"last_latency":1,` +
			`"min_latency":0,"avg_latency":0,"max_latency":3}],"secure_connections":[],"command":"connections","error":null}`},
		{"srvr", `{"version":"3.8.0-collie-test, built on 1970-01-01 00:00 UTC","read_only":false,"server_stats":{` +
			`"packets_sent":9,"packets_received":10,"fsync_threshold_exceed_count":0,` +
			`"client_response_stats":{"last_buffer_size":-1,"min_buffer_size":-1,"max_buffer_size":-1},` +
			`"data_dir_size":100,"log_dir_size":200,"provider_null":false,"server_state":"standalone","last_processed_zxid":31,` +
			`"outstanding_requests":0,"avg_latency":0.25,"max_latency":3,"min_latency":0,"num_alive_client_connections":1,` +
			`"auth_failed_count":0,"non_mtlsremote_conn_count":0,"non_mtlslocal_conn_count":0,"uptime":1234},` +
			`"client_response":{"last_buffer_size":-1,"min_buffer_size":-1,"max_buffer_size":-1},"node_count":7,` +
			`"command":"server_stats","error":null}`},
		{"mntr", `{"version":"3.8.0-collie-test, built on 1970-01-01 00:00 UTC","server_state":"standalone","avg_latency":0.25,` +
			`"max_latency":3,"min_latency":0,"packets_received":10,"packets_sent":9,"num_alive_connections":1,` +
			`"outstanding_requests":0,"znode_count":7,"open_file_descriptor_count":-1,"uptime":1234,"command":"monitor","error":null}`},
	}
	for _, tt := range tests {
		_, _, body := get(t, h, http.MethodGet, "/commands/"+tt.command)
		if got := compact(t, body); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.command, got, tt.want)
		}
	}

	getJSON(t, h, "/commands/srst")
	getJSON(t, h, "/commands/crst")
	getJSON(t, h, "/commands/connection_stat_reset")
	if b.serverResets != 1 || b.connResets != 2 {
		t.Errorf("resets: server %d, connections %d; want 1, 2", b.serverResets, b.connResets)
	}
}

func compact(t *testing.T, body string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(body)); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return b.String()
}

// A monitor value keeps mntr's spelling: "0.0" is a number written 0.0,
// as Jackson writes a double, and text stays text.
func TestTyped(t *testing.T) {
	for v, want := range map[string]string{
		"0.0": `0.0`, "12": `12`, "-1": `-1`, "1e3": `1e3`,
		"standalone": `"standalone"`, "": `""`, "+1": `"+1"`, ".5": `".5"`, "NaN": `"NaN"`,
		"3.8.0, built on x": `"3.8.0, built on x"`, "1 2": `"1 2"`, "true": `"true"`,
	} {
		b, err := json.Marshal(typed(v))
		if err != nil || string(b) != want {
			t.Errorf("typed(%q) encodes as %s, %v; want %s", v, b, err, want)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	h := NewHandler(&fakeBackend{}, Options{})
	for _, name := range []string{"nosuch", "RUOK", "ruok/extra", "%00"} {
		m := getJSON(t, h, "/commands/"+name)
		decoded := strings.ReplaceAll(name, "%00", "\x00")
		if m["command"] != decoded || m["error"] != "Unknown command: "+decoded || len(m) != 2 {
			t.Errorf("%s: %v", name, m)
		}
	}
}

func TestCommandList(t *testing.T) {
	for _, url := range []string{"/commands", "/commands/"} {
		code, _, body := get(t, NewHandler(&fakeBackend{}, Options{}), http.MethodGet, url)
		if code != http.StatusOK || !strings.HasPrefix(body, "<a href=\"/commands/configuration\">configuration</a>\n<br/>\n") ||
			!strings.Contains(body, "<a href=\"/commands/zabstate\">zabstate</a>\n<br/>\n") {
			t.Errorf("GET %s: %d\n%s", url, code, body)
		}
		if n := strings.Count(body, "<a href"); n != len(commands) {
			t.Errorf("GET %s lists %d commands, want %d", url, n, len(commands))
		}
	}
}

func TestCommandURL(t *testing.T) {
	h := NewHandler(&fakeBackend{}, Options{CommandURL: "/admin/cmds/"})
	if m := getJSON(t, h, "/admin/cmds/ruok"); m["command"] != "ruok" {
		t.Errorf("ruok under a custom URL: %v", m)
	}
	if _, _, body := get(t, h, http.MethodGet, "/admin/cmds"); !strings.Contains(body, `href="/admin/cmds/ruok"`) {
		t.Errorf("list under a custom URL:\n%s", body)
	}
	if code, _, _ := get(t, h, http.MethodGet, "/commands/ruok"); code != http.StatusNotFound {
		t.Errorf("the default URL answers %d beside a custom one, want 404", code)
	}
}

func TestBadRequests(t *testing.T) {
	h := NewHandler(&fakeBackend{}, Options{})
	tests := []struct {
		method, target string
		code           int
	}{
		{http.MethodPost, "/commands/ruok", http.StatusMethodNotAllowed},
		{http.MethodPost, "/commands/nosuch", http.StatusMethodNotAllowed},
		{http.MethodPut, "/commands", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/metrics", http.StatusMethodNotAllowed},
		{http.MethodGet, "/", http.StatusNotFound},
		{http.MethodGet, "/foo", http.StatusNotFound},
		{http.MethodGet, "/commandsx", http.StatusNotFound},
		{http.MethodGet, "/debug/pprof/", http.StatusNotFound},
		{http.MethodGet, "/commands/" + strings.Repeat("a", 5000), http.StatusRequestURITooLong},
		{http.MethodHead, "/commands/ruok", http.StatusOK},
	}
	for _, tt := range tests {
		code, header, body := get(t, h, tt.method, tt.target)
		if code != tt.code {
			t.Errorf("%s %.40s: %d, want %d", tt.method, tt.target, code, tt.code)
		}
		if code == http.StatusMethodNotAllowed && header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", tt.method, tt.target, header.Get("Allow"))
		}
		if len(body) > 1000 {
			t.Errorf("%s %.40s: %d bytes of answer", tt.method, tt.target, len(body))
		}
	}
	_, _, body := get(t, h, http.MethodPost, "/commands/ruok")
	if got := compact(t, body); got != `{"command":"ruok","error":"HTTP method POST is not supported by this URL"}` {
		t.Errorf("POST answer %s", got)
	}
}

func TestPprof(t *testing.T) {
	off := NewHandler(&fakeBackend{}, Options{})
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		if code, _, _ := get(t, off, http.MethodGet, path); code != http.StatusNotFound {
			t.Errorf("pprof off: GET %s = %d, want 404", path, code)
		}
	}
	on := NewHandler(&fakeBackend{}, Options{Pprof: true})
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap?debug=1", "/debug/pprof/cmdline"} {
		if code, _, _ := get(t, on, http.MethodGet, path); code != http.StatusOK {
			t.Errorf("pprof on: GET %s = %d, want 200", path, code)
		}
	}
	if m := getJSON(t, on, "/commands/ruok"); m["command"] != "ruok" {
		t.Errorf("commands beside pprof: %v", m)
	}
}

func TestMetrics(t *testing.T) {
	for name, h := range map[string]http.Handler{"admin port": NewHandler(&fakeBackend{}, Options{}), "metrics port": NewMetricsHandler(&fakeBackend{})} {
		code, header, body := get(t, h, http.MethodGet, "/metrics")
		if code != http.StatusOK || header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
			t.Fatalf("%s: GET /metrics: %d %s", name, code, header.Get("Content-Type"))
		}
		if want := "# HELP znode_count znode_count\n# TYPE znode_count gauge\nznode_count 7\n"; body != want {
			t.Errorf("%s: GET /metrics = %q, want the backend's %q", name, body, want)
		}
	}
	h := NewMetricsHandler(&fakeBackend{})
	for _, path := range []string{"/", "/commands/ruok", "/metricsx"} {
		if code, _, _ := get(t, h, http.MethodGet, path); code != http.StatusNotFound {
			t.Errorf("metrics port: GET %s = %d, want 404", path, code)
		}
	}
	if code, _, _ := get(t, h, http.MethodPost, "/metrics"); code != http.StatusMethodNotAllowed {
		t.Errorf("metrics port: POST /metrics = %d, want 405", code)
	}
}

func TestHealth(t *testing.T) {
	for _, notServing := range []bool{false, true} {
		b := &fakeBackend{notServing: notServing}
		for name, h := range map[string]http.Handler{"admin port": NewHandler(b, Options{}), "metrics port": NewMetricsHandler(b)} {
			code, _, body := get(t, h, http.MethodGet, "/live")
			if code != http.StatusOK || body != "{\n  \"status\": \"live\"\n}\n" {
				t.Errorf("%s, not serving %v: /live = %d %q", name, notServing, code, body)
			}
			code, header, body := get(t, h, http.MethodGet, "/ready")
			want, wantBody := http.StatusOK, "{\n  \"status\": \"ready\"\n}\n"
			if notServing {
				want, wantBody = http.StatusServiceUnavailable, "{\n  \"status\": \"not ready\",\n  \"reason\": \"no leader\"\n}\n"
			}
			if code != want || body != wantBody || header.Get("Content-Type") != "application/json" {
				t.Errorf("%s, not serving %v: /ready = %d %q, want %d %q", name, notServing, code, body, want, wantBody)
			}
		}
	}
}

// FuzzHandler sends any method and target to the handler: it answers
// every one, with JSON on the command paths, and never panics. The list of
// commands, at the command URL with or without its trailing slash, is the
// HTML page ZooKeeper serves there.
func FuzzHandler(f *testing.F) {
	for _, seed := range []string{"/commands/ruok", "/commands/set_trace_mask?traceMask=1", "/commands/%ff", "/metrics", "/debug/pprof/", "/commands/../metrics", "/commands/"} {
		f.Add("GET", seed)
	}
	f.Add("POST", "/commands/dump")
	h := NewHandler(&fakeBackend{}, Options{})
	f.Fuzz(func(t *testing.T, method, target string) {
		req, err := http.NewRequest(method, "http://admin"+target, nil)
		if err != nil {
			return
		}
		req.RequestURI = req.URL.RequestURI()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusOK && strings.HasPrefix(req.URL.Path, "/commands/") && req.URL.Path != "/commands/" && !json.Valid(rec.Body.Bytes()) {
			t.Errorf("%s %s: invalid JSON %q", method, target, rec.Body.String())
		}
	})
}
