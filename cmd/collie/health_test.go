package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-io/collie/server/config"
)

// healthServer answers /ready and /live with the given statuses.
func healthServer(t *testing.T, ready, live int) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(ready)
		w.Write([]byte(http.StatusText(ready)))
	})
	mux.HandleFunc("GET /live", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(live)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func runHealthArgs(args ...string) (int, string, string) {
	var stdout, stderr strings.Builder
	code := run(append([]string{"health"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// collie health exits 0 on 200 and 1 on anything else, saying what it
// asked and what it heard.
func TestHealthStatus(t *testing.T) {
	ready := healthServer(t, http.StatusOK, http.StatusOK)
	notReady := healthServer(t, http.StatusServiceUnavailable, http.StatusOK)
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"-url", ready.URL + "/ready"}, 0, "/ready: 200 OK\nOK\n"},
		{[]string{"-url", notReady.URL + "/ready"}, 1, "/ready: 503 Service Unavailable\nService Unavailable\n"},
		{[]string{"-url", notReady.URL + "/live"}, 0, "/live: 200 OK\n"},
	} {
		code, stdout, stderr := runHealthArgs(tc.args...)
		if code != tc.code || !strings.Contains(stdout, tc.contains) {
			t.Errorf("collie health %v: exit %d, output %q (stderr %q); want exit %d and %q", tc.args, code, stdout, stderr, tc.code, tc.contains)
		}
	}

	// Nobody listening: not healthy, with the reason.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	code, _, stderr := runHealthArgs("-url", "http://"+addr+"/ready")
	if code != 1 || !strings.Contains(stderr, "connection refused") {
		t.Errorf("nobody listening: exit %d, stderr %q; want 1 and the refusal", code, stderr)
	}
}

// The admin server's address comes from a zoo.cfg, and /live from -live.
func TestHealthFromZooCfg(t *testing.T) {
	srv := healthServer(t, http.StatusServiceUnavailable, http.StatusOK)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "zoo.cfg")
	writeFile(t, cfgPath, "dataDir=data\nclientPort=2181\nadmin.serverPort="+port+"\n")
	if code, stdout, stderr := runHealthArgs("-c", cfgPath); code != 1 || !strings.HasPrefix(stdout, "http://127.0.0.1:"+port+"/ready: 503") {
		t.Errorf("collie health -c: exit %d, %q %q; want 1 from 127.0.0.1:%s/ready", code, stdout, stderr, port)
	}
	if code, stdout, stderr := runHealthArgs("-live", "-c", cfgPath); code != 0 || !strings.HasPrefix(stdout, "http://127.0.0.1:"+port+"/live: 200") {
		t.Errorf("collie health -live -c: exit %d, %q %q; want 0 from 127.0.0.1:%s/live", code, stdout, stderr, port)
	}
}

func TestAdminURL(t *testing.T) {
	for _, tc := range []struct {
		zooCfg, want string
	}{
		{"", "http://127.0.0.1:8080/ready"},
		{"admin.serverAddress=10.1.2.3\nadmin.serverPort=9090\n", "http://10.1.2.3:9090/ready"},
		{"admin.serverAddress=::\n", "http://[::1]:8080/ready"},
		{"admin.forceHttps=true\n", "https://127.0.0.1:8080/ready"},
	} {
		cfg, err := config.Parse([]byte("dataDir=d\n" + tc.zooCfg))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := adminURL(cfg, "/ready"); err != nil || got != tc.want {
			t.Errorf("adminURL(%q) = %q, %v; want %q", tc.zooCfg, got, err, tc.want)
		}
	}
	cfg, err := config.Parse([]byte("dataDir=d\nadmin.enableServer=false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adminURL(cfg, "/ready"); err == nil || !strings.Contains(err.Error(), "admin.enableServer=false") {
		t.Errorf("admin server off: %v, want it said", err)
	}
}

func TestHealthUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-c", "zoo.cfg", "-url", "http://127.0.0.1:1/ready"},
		{"-zoo-env", "-c", "zoo.cfg"},
		{"extra"},
	} {
		if code, _, stderr := runHealthArgs(args...); code != 2 || stderr == "" {
			t.Errorf("collie health %v: exit %d, stderr %q; want 2 and a reason", args, code, stderr)
		}
	}
	if code, _, stderr := runHealthArgs("-c", filepath.Join(t.TempDir(), "missing.cfg")); code != 2 || !strings.Contains(stderr, "missing.cfg: no such file") {
		t.Errorf("a missing zoo.cfg: exit %d, stderr %q", code, stderr)
	}
}
