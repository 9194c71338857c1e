package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/internal/zkref"
	"github.com/collie-io/collie/server"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/metrics"
)

// httpClient talks to one admin server. Its own transport keeps its
// connections out of other tests' way and lets a test close them.
func httpClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func fetch(t *testing.T, hc *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// command fetches an admin command and decodes its JSON, numbers as
// json.Number.
func command(t *testing.T, hc *http.Client, adminAddr, name string) map[string]any {
	t.Helper()
	code, body := fetch(t, hc, "http://"+adminAddr+"/commands/"+name)
	if code != http.StatusOK {
		t.Fatalf("%s: status %d\n%s", name, code, body)
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, body)
	}
	return m
}

// commandNames reads the command list page.
func commandNames(t *testing.T, hc *http.Client, adminAddr string) []string {
	t.Helper()
	_, body := fetch(t, hc, "http://"+adminAddr+"/commands")
	return linkedCommands(body)
}

// linkedCommands returns the commands a command list page links to.
func linkedCommands(page string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`<a href="/commands/([a-z_]+)">`).FindAllStringSubmatch(page, -1) {
		names = append(names, m[1])
	}
	return names
}

// scenario gives a server one session with an ephemeral node and watches:
// a data watch on /app, a child watch on /app, an exists watch on /nope.
func scenario(t *testing.T, addr string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Config{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	if _, _, err := c.Create(ctx, "/app", []byte("x"), client.ModePersistent, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Create(ctx, "/app/eph", nil, client.ModeEphemeral, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.GetW(ctx, "/app"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.ChildrenW(ctx, "/app"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.ExistsW(ctx, "/nope"); err != nil {
		t.Fatal(err)
	}
	return c
}

func fourLetter(t *testing.T, addr, cmd string) string {
	t.Helper()
	out, err := zkref.FourLetter(addr, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// mntrValues parses the four-letter word mntr.
func mntrValues(text string) map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(text) {
		if k, v, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "\t"); ok {
			m[strings.TrimPrefix(k, "zk_")] = v
		}
	}
	return m
}

func str(v any) string { return fmt.Sprint(v) }

// TestCommandsAgreeWithFourLetterWords runs every command a Collie server
// lists and checks each answer against the four-letter word that reports
// the same thing.
func TestCommandsAgreeWithFourLetterWords(t *testing.T) {
	srv := collietest.Start(t, collietest.WithAdminServer())
	hc := httpClient(t)
	adminAddr := srv.AdminAddr()
	c := scenario(t, srv.Addr())
	session := c.SessionID()

	names := commandNames(t, hc, adminAddr)
	if len(names) != 26 {
		t.Errorf("%d commands listed, want ZooKeeper 3.8's 26: %v", len(names), names)
	}
	for _, name := range names {
		m := command(t, hc, adminAddr, name)
		wantErr := map[string]any{"leader": "server is not initialized", "set_trace_mask": "setTraceMask requires long traceMask argument"}[name]
		if m["command"] != name || m["error"] != wantErr {
			t.Errorf("%s: command %v, error %v", name, m["command"], m["error"])
		}
	}

	// Values that do not move while nobody writes.
	mon := command(t, hc, adminAddr, "monitor")
	mntr := mntrValues(fourLetter(t, srv.Addr(), "mntr"))
	if len(mon) != len(mntr)+2 {
		t.Errorf("monitor has %d members, mntr %d lines", len(mon), len(mntr))
	}
	for _, k := range []string{"version", "server_state", "znode_count", "ephemerals_count", "watch_count", "global_sessions", "num_alive_connections", "approximate_data_size"} {
		if str(mon[k]) != mntr[k] {
			t.Errorf("monitor %s = %v, mntr says %s", k, mon[k], mntr[k])
		}
	}
	if _, ok := mon["avg_latency"].(json.Number); !ok {
		t.Errorf("monitor avg_latency %#v is not a number", mon["avg_latency"])
	}

	stats := command(t, hc, adminAddr, "server_stats")
	srvr := fourLetter(t, srv.Addr(), "srvr")
	inner := stats["server_stats"].(map[string]any)
	for _, want := range []string{
		"Node count: " + str(stats["node_count"]),
		"Mode: " + str(inner["server_state"]),
		fmt.Sprintf("Zxid: 0x%x", mustInt(t, inner["last_processed_zxid"])),
		"Connections: " + str(inner["num_alive_client_connections"]),
	} {
		if !strings.Contains(srvr, want+"\n") {
			t.Errorf("srvr does not say %q:\n%s", want, srvr)
		}
	}
	if !strings.HasPrefix(srvr, "Zookeeper version: "+str(stats["version"])+"\n") {
		t.Errorf("server_stats version %v; srvr:\n%s", stats["version"], srvr)
	}

	cons := command(t, hc, adminAddr, "connections")["connections"].([]any)
	if len(cons) != 1 {
		t.Fatalf("connections: %v", cons)
	}
	conn := cons[0].(map[string]any)
	consLine := fourLetter(t, srv.Addr(), "cons")
	if mustInt(t, conn["session_id"]) != session ||
		!strings.Contains(consLine, fmt.Sprintf("sid=0x%x,lop=%s,est=%v,to=%v,", session, conn["last_operation"], conn["established"], conn["session_timeout"])) ||
		!strings.Contains(consLine, " /"+str(conn["remote_socket_address"])+"[1]") {
		t.Errorf("connections %v\ndisagree with cons %s", conn, consLine)
	}

	dump := command(t, hc, adminAddr, "dump")
	id := strconv.FormatInt(session, 10)
	if paths := dump["session_id_to_ephemeral_paths"].(map[string]any)[id]; str(paths) != "[/app/eph]" {
		t.Errorf("dump: ephemerals of %s are %v", id, paths)
	}
	var expiring []string
	for _, ids := range dump["expiry_time_to_session_ids"].(map[string]any) {
		for _, sid := range ids.([]any) {
			expiring = append(expiring, str(sid))
		}
	}
	if !slices.Contains(expiring, id) {
		t.Errorf("dump: session %s is not among the expiring %v", id, expiring)
	}

	watches := command(t, hc, adminAddr, "watches")["session_id_to_watched_paths"].(map[string]any)
	if str(watches[id]) != "[/app /nope]" {
		t.Errorf("watches: %v", watches)
	}
	if wchc := fourLetter(t, srv.Addr(), "wchc"); wchc != fmt.Sprintf("0x%x\n\t/app\n\t/nope\n", session) {
		t.Errorf("wchc says %q", wchc)
	}
	byPath := command(t, hc, adminAddr, "watches_by_path")["path_to_session_ids"].(map[string]any)
	if len(byPath) != 2 || str(byPath["/app"]) != "["+id+"]" || str(byPath["/nope"]) != "["+id+"]" {
		t.Errorf("watches_by_path: %v", byPath)
	}
	sum := command(t, hc, adminAddr, "watch_summary")
	wchs := fmt.Sprintf("%v connections watching %v paths\nTotal watches:%v\n", sum["num_connections"], sum["num_paths"], sum["num_total_watches"])
	if got := fourLetter(t, srv.Addr(), "wchs"); got != wchs {
		t.Errorf("watch_summary %v, wchs says %q", sum, got)
	}

	conf := command(t, hc, adminAddr, "configuration")
	confText := fourLetter(t, srv.Addr(), "conf")
	for _, kv := range [][2]string{{"client_port", "clientPort"}, {"data_dir", "dataDir"}, {"data_log_dir", "dataLogDir"}, {"tick_time", "tickTime"},
		{"min_session_timeout", "minSessionTimeout"}, {"max_session_timeout", "maxSessionTimeout"}, {"server_id", "serverId"}} {
		if !strings.Contains(confText, kv[1]+"="+str(conf[kv[0]])+"\n") {
			t.Errorf("configuration %s = %v; conf says:\n%s", kv[0], conf[kv[0]], confText)
		}
	}
	dirs := command(t, hc, adminAddr, "dirs")
	if got, want := fourLetter(t, srv.Addr(), "dirs"), fmt.Sprintf("datadir_size: %v\nlogdir_size: %v\n", dirs["datadir_size"], dirs["logdir_size"]); got != want {
		t.Errorf("dirs says %q, the command %q", got, want)
	}
	env := command(t, hc, adminAddr, "environment")
	if !strings.Contains(fourLetter(t, srv.Addr(), "envi"), "\nzookeeper.version="+str(env["zookeeper.version"])+"\n") {
		t.Errorf("environment: %v", env)
	}

	// /metrics serves the same values as monitor.
	code, text := fetch(t, hc, "http://"+adminAddr+"/metrics")
	families, err := metrics.Parse(strings.NewReader(text))
	if err != nil || code != http.StatusOK {
		t.Fatalf("metrics: %d %v\n%s", code, err, text)
	}
	if v, ok := families["znode_count"].Value("znode_count"); !ok || fmt.Sprint(v) != str(mon["znode_count"]) {
		t.Errorf("metrics: znode_count %v, monitor %v", v, mon["znode_count"])
	}
	if code, _ := fetch(t, hc, "http://"+adminAddr+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("pprof answers %d without admin.pprof, want 404", code)
	}

	// With the session gone nothing counts packets, so the reset shows.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	command(t, hc, adminAddr, "stat_reset")
	after := command(t, hc, adminAddr, "monitor")
	if str(after["packets_received"]) != "0" || str(after["packets_sent"]) != "0" || str(after["max_latency"]) != "0" {
		t.Errorf("after stat_reset: received %v, sent %v, max latency %v", after["packets_received"], after["packets_sent"], after["max_latency"])
	}
}

func mustInt(t *testing.T, v any) int64 {
	t.Helper()
	n, err := v.(json.Number).Int64()
	if err != nil {
		t.Fatalf("%v is not an integer", v)
	}
	return n
}

// goroutines lists the stacks of the goroutines that mention any of the
// functions.
func goroutines(functions ...string) []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if slices.ContainsFunc(functions, func(f string) bool { return strings.Contains(g, f) }) {
			out = append(out, g)
		}
	}
	return out
}

// adminGoroutines lists the goroutines that serve admin HTTP connections
// or accept them.
func adminGoroutines() []string {
	return goroutines("net/http.(*conn).serve", "server/admin.Listen")
}

// waitFor polls cond until it holds or 10 seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still %s after 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartStopReleasesPortAndGoroutines(t *testing.T) {
	srv := collietest.Start(t, collietest.WithAdminServer(), collietest.WithConfig(func(c *config.Config) { c.AdminPprof = true }))
	hc := httpClient(t)
	adminAddr := srv.AdminAddr()
	running := srv.Server()
	if got := running.AdminAddr(); got == nil || got.String() != adminAddr {
		t.Errorf("Server.AdminAddr() = %v, want %s", got, adminAddr)
	}
	// An idle keep-alive connection, and on another one a profile in
	// progress that the stop must cut short.
	if code, _ := fetch(t, httpClient(t), "http://"+adminAddr+"/commands/ruok"); code != http.StatusOK {
		t.Fatalf("ruok: %d", code)
	}
	if code, body := fetch(t, hc, "http://"+adminAddr+"/debug/pprof/cmdline"); code != http.StatusOK || body == "" {
		t.Errorf("pprof with admin.pprof=true: %d %q", code, body)
	}
	profiling := make(chan error, 1)
	go func() {
		resp, err := hc.Get("http://" + adminAddr + "/debug/pprof/profile?seconds=60")
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		profiling <- err
	}()
	waitFor(t, "without the profile running", func() bool {
		select {
		case err := <-profiling:
			t.Fatalf("the profile request ended early: %v", err)
		default:
		}
		return len(goroutines("net/http/pprof.Profile")) == 1
	})
	if g := adminGoroutines(); len(g) != 3 {
		t.Errorf("%d admin goroutines before the stop, want 3: accepting, idle, profiling", len(g))
	}

	start := time.Now()
	srv.Stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stop took %v", d)
	}
	if running.AdminAddr() != nil {
		t.Errorf("AdminAddr after stop: %v", running.AdminAddr())
	}
	ln, err := net.Listen("tcp", adminAddr)
	if err != nil {
		t.Fatalf("admin port not released: %v", err)
	}
	ln.Close()
	if g := adminGoroutines(); len(g) != 0 {
		t.Errorf("goroutines left after stop:\n%s", strings.Join(g, "\n\n"))
	}
	select {
	case <-profiling:
	case <-time.After(10 * time.Second):
		t.Error("the profile request did not end with the server")
	}

	srv.Restart()
	if m := command(t, hc, adminAddr, "ruok"); m["error"] != nil {
		t.Errorf("ruok after restart: %v", m)
	}
}

// TestBadRequestsOverTCP sends what a confused or hostile client might:
// each gets an error status, and the server goes on answering.
func TestBadRequestsOverTCP(t *testing.T) {
	srv := collietest.Start(t, collietest.WithAdminServer())
	adminAddr := srv.AdminAddr()
	tests := []struct {
		name, request string
		status        string // the start of the status line
	}{
		{"POST", "POST /commands/ruok HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", "HTTP/1.1 405"},
		{"huge URL", "GET /commands/" + strings.Repeat("a", 20000) + " HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 431"},
		{"long URL", "GET /commands/" + strings.Repeat("a", 5000) + " HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 414"},
		{"garbage", "\x00\x01garbage\r\n\r\n", "HTTP/1.1 400"},
		{"huge header", "GET /commands/ruok HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("b", 64<<10) + "\r\n\r\n", "HTTP/1.1 431"},
		{"unknown command", "GET /commands/rmr%20/ HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200"},
	}
	for _, tt := range tests {
		nc, err := net.DialTimeout("tcp", adminAddr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(nc, tt.request)
		status := make([]byte, len(tt.status))
		_, err = io.ReadFull(nc, status)
		nc.Close()
		if err != nil || string(status) != tt.status {
			t.Errorf("%s: status %q, %v; want %q", tt.name, status, err, tt.status)
		}
	}
	if m := command(t, httpClient(t), adminAddr, "ruok"); m["error"] != nil {
		t.Errorf("ruok after bad requests: %v", m)
	}
}

func TestAdminPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := collietest.Config(t)
	cfg.AdminServerEnabled = true
	cfg.AdminServerAddress = "127.0.0.1"
	cfg.AdminServerPort = ln.Addr().(*net.TCPAddr).Port
	srv, err := runFailing(t, cfg)
	if err == nil || !strings.Contains(err.Error(), "admin server") {
		t.Errorf("Run with the admin port taken: %v", err)
	}
	if srv.Addr() != nil {
		t.Errorf("the client port opened although the admin port could not: %v", srv.Addr())
	}
}

// runFailing runs a server of cfg that is expected not to start, and
// returns it, shut down, with what Run returned.
func runFailing(t *testing.T, cfg config.Config) (*server.Server, error) {
	t.Helper()
	srv, err := server.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = srv.Run(ctx)
	if err := srv.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	return srv, err
}

// TestAgainstZooKeeper runs the same session on ZooKeeper 3.8 and Collie and
// compares the shape of every answer the two AdminServers share: the same
// members, recursively, with the same JSON types. Values differ (ports,
// session ids, times).
func TestAgainstZooKeeper(t *testing.T) {
	zk := zkref.Start(t, zkref.WithAdminServer())
	srv := collietest.Start(t, collietest.WithAdminServer(), collietest.WithConfig(func(c *config.Config) {
		c.Initial = "tickTime=100\nclientPort=2181\n" // as if read from a file, as ZooKeeper's was
	}))
	hc := httpClient(t)
	scenario(t, zk.Addr())
	scenario(t, srv.Addr())

	zkNames, collieNames := commandNames(t, hc, zk.AdminAddr()), commandNames(t, hc, srv.AdminAddr())
	if !slices.Equal(zkNames, collieNames) {
		t.Errorf("commands listed:\nZooKeeper %v\nCollie    %v", zkNames, collieNames)
	}
	// Runtime-specific members: ZooKeeper's are the JVM's properties.
	skip := map[string]bool{"environment": true, "system_properties": true}
	for _, name := range zkNames {
		if skip[name] {
			continue
		}
		want, got := command(t, hc, zk.AdminAddr(), name), command(t, hc, srv.AdminAddr(), name)
		if name == "monitor" {
			// ZooKeeper's monitor has hundreds of metrics; Collie's are
			// mntr's, each of which ZooKeeper has too, with the same type,
			// but for Collie's own, named collie_.
			for k, v := range got {
				if strings.HasPrefix(k, "collie_") {
					continue
				}
				if zv, ok := want[k]; !ok || kind(zv) != kind(v) {
					t.Errorf("monitor: Collie's %s (%s) is not ZooKeeper's (%s)", k, kind(v), kind(zv))
				}
			}
			continue
		}
		compareShape(t, name, want, got)
	}

	// Errors: an unknown command, as ZooKeeper answers it.
	for _, hostport := range []string{zk.AdminAddr(), srv.AdminAddr()} {
		m := command(t, hc, hostport, "nosuch")
		if len(m) != 2 || m["command"] != "nosuch" || m["error"] != "Unknown command: nosuch" {
			t.Errorf("%s: unknown command answered %v", hostport, m)
		}
	}
	for _, hostport := range []string{zk.AdminAddr(), srv.AdminAddr()} {
		resp, err := hc.Post("http://"+hostport+"/commands/ruok", "application/json", bytes.NewReader([]byte("{}")))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: POST answered %d, want 405", hostport, resp.StatusCode)
		}
	}
}

// dataKeyed are the members whose keys are data (session ids, times), not
// names: only their values' shapes are compared.
var dataKeyed = map[string]bool{
	"dump.expiry_time_to_session_ids":     true,
	"dump.session_id_to_ephemeral_paths":  true,
	"watches.session_id_to_watched_paths": true,
}

// timeKeyed are the dataKeyed members whose number depends on when the
// answer is taken: sessions fall into expiry buckets by time, and
// ZooKeeper keeps buckets that emptied, and sessions that its own start-up
// probes opened, until they expire.
var timeKeyed = map[string]bool{"dump.expiry_time_to_session_ids": true}

// firstMembers returns a member of each map to compare the shape of: the
// first, by key, that is not an empty list, since an empty list has no
// shape of its elements to compare.
func firstMembers(want, got map[string]any) (w, g any, ok bool) {
	first := func(m map[string]any) (any, bool) {
		var fallback any
		found := false
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if l, isList := m[k].([]any); !isList || len(l) > 0 {
				return m[k], true
			}
			if !found {
				fallback, found = m[k], true
			}
		}
		return fallback, found
	}
	w, wok := first(want)
	g, gok := first(got)
	return w, g, wok && gok
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func compareShape(t *testing.T, path string, want, got any) {
	t.Helper()
	if kind(want) != kind(got) {
		t.Errorf("%s: ZooKeeper has a %s, Collie a %s (%v)", path, kind(want), kind(got), got)
		return
	}
	switch w := want.(type) {
	case []any:
		g := got.([]any)
		if len(w) > 0 && len(g) > 0 {
			compareShape(t, path+"[0]", w[0], g[0])
		} else if len(w) != len(g) {
			t.Errorf("%s: ZooKeeper has %d elements, Collie %d", path, len(w), len(g))
		}
	case map[string]any:
		g := got.(map[string]any)
		if dataKeyed[path] {
			if !timeKeyed[path] && len(w) != len(g) {
				t.Errorf("%s: ZooKeeper has %d members, Collie %d", path, len(w), len(g))
			}
			if wv, gv, ok := firstMembers(w, g); ok {
				compareShape(t, path+".*", wv, gv)
			}
			return
		}
		wk, gk := slices.Sorted(maps.Keys(w)), slices.Sorted(maps.Keys(g))
		if !slices.Equal(wk, gk) {
			t.Errorf("%s: members\nZooKeeper %v\nCollie    %v", path, wk, gk)
			return
		}
		for _, k := range wk {
			compareShape(t, path+"."+k, w[k], g[k])
		}
	}
}
