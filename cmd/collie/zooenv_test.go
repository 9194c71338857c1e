package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collie-io/collie/collietest"
)

// vars is an environment for the -zoo-env functions.
type vars map[string]string

func (v vars) lookup(key string) (string, bool) {
	s, ok := v[key]
	return s, ok
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o640); err != nil {
		t.Fatal(err)
	}
}

func myIDFile(t *testing.T, dataDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "myid"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A zoo.cfg mounted in ZOO_CONF_DIR wins over the variables, as in the
// zookeeper image; ZOO_MY_ID still gives the myid file it lacks, in the
// dataDir the mounted file names.
func TestZooEnvMountedConfigWins(t *testing.T) {
	dir := t.TempDir()
	confDir, data := filepath.Join(dir, "conf"), filepath.Join(dir, "mounted-data")
	writeFile(t, filepath.Join(confDir, "zoo.cfg"), fmt.Sprintf(
		"dataDir=%s\ntickTime=3000\nserver.1=a:2888:3888;2181\nserver.2=b:2888:3888;2181\nserver.3=c:2888:3888;2181\n", data))
	cfg, source, err := loadZooEnv(vars{
		"ZOO_CONF_DIR":  confDir,
		"ZOO_DATA_DIR":  filepath.Join(dir, "env-data"),
		"ZOO_TICK_TIME": "5000",
		"ZOO_MY_ID":     "2",
	}.lookup)
	if err != nil {
		t.Fatal(err)
	}
	if source != filepath.Join(confDir, "zoo.cfg") || cfg.TickTime != 3*time.Second || cfg.DataDir != data {
		t.Errorf("from %s: tickTime %v, dataDir %s; want the mounted file's 3s and %s", source, cfg.TickTime, cfg.DataDir, data)
	}
	if cfg.ServerID != 2 || myIDFile(t, data) != "2\n" {
		t.Errorf("server id %d, want 2 from ZOO_MY_ID, written to %s/myid", cfg.ServerID, data)
	}
	if _, err := os.Stat(filepath.Join(dir, "env-data")); err == nil {
		t.Errorf("ZOO_DATA_DIR was created though the mounted zoo.cfg names another dataDir")
	}
	if !strings.Contains(cfg.Initial, "tickTime=3000") {
		t.Errorf("initial_configuration would show %q, want the mounted file", cfg.Initial)
	}
}

// Without a mounted file the variables make the configuration, and myid is
// written for an ensemble; an existing myid is kept, and one that
// disagrees with ZOO_MY_ID stops the server.
func TestZooEnvMyID(t *testing.T) {
	dir := t.TempDir()
	ensemble := vars{
		"ZOO_CONF_DIR": filepath.Join(dir, "conf"),
		"ZOO_DATA_DIR": filepath.Join(dir, "data"),
		"ZOO_SERVERS":  "server.1=a:2888:3888;2181 server.2=b:2888:3888;2181 server.3=c:2888:3888;2181",
	}
	with := func(k, v string) vars {
		env := vars{k: v}
		for bk, bv := range ensemble {
			env[bk] = bv
		}
		return env
	}

	_, _, err := loadZooEnv(ensemble.lookup)
	if err == nil || !strings.Contains(err.Error(), "myid does not exist and ZOO_MY_ID is not set") {
		t.Errorf("an ensemble member without an id: %v, want an error asking for ZOO_MY_ID", err)
	}

	cfg, source, err := loadZooEnv(with("ZOO_MY_ID", "3").lookup)
	if err != nil {
		t.Fatal(err)
	}
	if source != generatedName || cfg.ServerID != 3 || myIDFile(t, filepath.Join(dir, "data")) != "3\n" {
		t.Errorf("from %q: server id %d; want 3, written to myid, from the variables", source, cfg.ServerID)
	}
	// Kept when the variable is not set any more.
	if cfg, _, err = loadZooEnv(ensemble.lookup); err != nil || cfg.ServerID != 3 {
		t.Errorf("restart without ZOO_MY_ID: id %d, %v; want the 3 of myid", cfg.ServerID, err)
	}
	_, _, err = loadZooEnv(with("ZOO_MY_ID", "1").lookup)
	if err == nil || !strings.Contains(err.Error(), "holds server id 3, but the environment says 1") {
		t.Errorf("ZOO_MY_ID=1 over a myid of 3: %v, want a refusal", err)
	}
	// A bad variable stops the server before it writes anything.
	_, _, err = loadZooEnv(vars{"ZOO_DATA_DIR": filepath.Join(dir, "other"), "ZOO_TICK_TIME": "fast"}.lookup)
	if err == nil || !strings.Contains(err.Error(), `ZOO_TICK_TIME="fast"`) {
		t.Errorf("ZOO_TICK_TIME=fast: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); err == nil {
		t.Errorf("a refused configuration created its data directory")
	}
}

// The pod name gives the id of a StatefulSet's member.
func TestZooEnvStatefulSetPod(t *testing.T) {
	dir := t.TempDir()
	cfg, _, err := loadZooEnv(vars{
		"ZOO_CONF_DIR":                filepath.Join(dir, "conf"),
		"ZOO_DATA_DIR":                filepath.Join(dir, "data"),
		"HOSTNAME":                    "collie-1",
		"COLLIE_STATEFULSET_REPLICAS": "3",
		"COLLIE_STATEFULSET_DOMAIN":   "collie-peers.default.svc.cluster.local",
	}.lookup)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ServerID != 2 || myIDFile(t, filepath.Join(dir, "data")) != "2\n" || len(cfg.Servers) != 3 {
		t.Errorf("pod collie-1: id %d, %d servers; want member 2 of 3", cfg.ServerID, len(cfg.Servers))
	}
}

// collie server -zoo-env serves as the variables say, and collie health
// -zoo-env finds its admin server from the same variables.
func TestServerFromZooEnv(t *testing.T) {
	dir := t.TempDir()
	clientPort, adminPort := collietest.FreePort(t), collietest.FreePort(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := collieCommand(ctx, t, dir, "server", "-zoo-env")
	env := []string{
		"ZOO_CONF_DIR=" + filepath.Join(dir, "conf"),
		"ZOO_DATA_DIR=" + filepath.Join(dir, "data"),
		"ZOO_DATA_LOG_DIR=" + filepath.Join(dir, "log"),
		"ZOO_TICK_TIME=1500",
		"ZOO_MAX_CLIENT_CNXNS=7",
		"ZOO_4LW_COMMANDS_WHITELIST=conf,ruok",
		fmt.Sprintf("ZOO_SERVERS=server.1=127.0.0.1:%d:%d;127.0.0.1:%d", collietest.FreePort(t), collietest.FreePort(t), clientPort),
		fmt.Sprintf("ZOO_CFG_EXTRA=admin.serverAddress=127.0.0.1 admin.serverPort=%d", adminPort),
	}
	cmd.Env = append(cmd.Env, env...)
	lines, _ := startServing(t, cmd)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for range lines {
		}
	}()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-drained
		if err := cmd.Wait(); err != nil {
			t.Errorf("collie server after SIGTERM: %v", err)
		}
	}()

	conf := fourLetterWord(t, "127.0.0.1:"+strconv.Itoa(clientPort), "conf")
	for _, want := range []string{
		"clientPort=" + strconv.Itoa(clientPort),
		"dataDir=" + filepath.Join(dir, "data", "snap"),
		"dataLogDir=" + filepath.Join(dir, "log", "wal"),
		"tickTime=1500",
		"maxClientCnxns=7",
	} {
		if !strings.Contains(conf, want+"\n") {
			t.Errorf("conf does not say %s:\n%s", want, conf)
		}
	}
	if got := myIDFile(t, filepath.Join(dir, "data")); got != "1\n" {
		t.Errorf("myid %q, want the default 1", got)
	}

	// The admin server answers where health looks for it; what it answers
	// on /live is the admin server's business, tested there.
	health := collieCommand(ctx, t, dir, "health", "-zoo-env", "-live")
	health.Env = append(health.Env, env...)
	got, _ := health.CombinedOutput()
	want := fmt.Sprintf("http://127.0.0.1:%d/live: ", adminPort)
	if !strings.HasPrefix(string(got), want) {
		t.Errorf("collie health -zoo-env -live said\n%s\nwant an answer from %s", got, want)
	}
}
