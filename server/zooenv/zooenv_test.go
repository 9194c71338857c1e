package zooenv_test

import (
	"cmp"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/zooenv"
)

// vars is an environment for Generate.
type vars map[string]string

func (v vars) lookup(key string) (string, bool) {
	s, ok := v[key]
	return s, ok
}

// load generates from env and reads the result as a server would: parsed,
// given the generated id, validated.
func load(t *testing.T, env vars) (zooenv.Env, config.Config) {
	t.Helper()
	e, err := zooenv.Generate(env.lookup)
	if err != nil {
		t.Fatalf("Generate(%v): %v", env, err)
	}
	c, err := config.Parse(e.ZooCfg)
	if err != nil {
		t.Fatalf("the generated zoo.cfg does not parse: %v\n%s", err, e.ZooCfg)
	}
	if c, err = c.ForServer(e.ID); err != nil {
		t.Fatalf("ForServer(%d): %v\n%s", e.ID, err, e.ZooCfg)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the generated zoo.cfg is not valid: %v\n%s", err, e.ZooCfg)
	}
	if len(c.Unknown) > 0 {
		t.Errorf("the generated zoo.cfg has keys Collie does not know: %v\n%s", c.Unknown, e.ZooCfg)
	}
	return e, c
}

// Without variables the server is the zookeeper image's: standalone on
// 2181, data and log in /data, the image's limits.
func TestDefaults(t *testing.T) {
	e, c := load(t, vars{})
	if e.ConfDir != "/conf" || e.DataDir != "/data" || e.DataLogDir != "/data" {
		t.Errorf("directories: conf %q, data %q, log %q; want /conf, /data, /data", e.ConfDir, e.DataDir, e.DataLogDir)
	}
	if e.ID != 1 || e.IDGiven {
		t.Errorf("id %d (given %v), want the default 1", e.ID, e.IDGiven)
	}
	if !c.Standalone || c.ClientPort != 2181 || c.ClientPortAddress != "" {
		t.Errorf("standalone %v, client address %q:%d; want a standalone server on :2181", c.Standalone, c.ClientPortAddress, c.ClientPort)
	}
	if len(c.Servers) != 1 || c.Servers[0].String() != "localhost:2888:3888:participant;0.0.0.0:2181" {
		t.Errorf("servers %v, want the image's server.1=localhost:2888:3888;2181", c.Servers)
	}
	if c.DataDir != "/data" || c.DataLogDir != "/data" {
		t.Errorf("dataDir %q, dataLogDir %q", c.DataDir, c.DataLogDir)
	}
	if c.TickTime != 2*time.Second || c.InitLimit != 5 || c.SyncLimit != 2 {
		t.Errorf("tickTime %v, initLimit %d, syncLimit %d; want 2s, 5, 2", c.TickTime, c.InitLimit, c.SyncLimit)
	}
	if c.AutopurgeSnapRetainCount != 3 || c.AutopurgePurgeInterval != 0 || c.MaxClientCnxns != 60 {
		t.Errorf("snapRetainCount %d, purgeInterval %v, maxClientCnxns %d; want 3, 0, 60",
			c.AutopurgeSnapRetainCount, c.AutopurgePurgeInterval, c.MaxClientCnxns)
	}
	if !c.AdminServerEnabled || c.AdminServerPort != 8080 {
		t.Errorf("admin server enabled %v on port %d, want on 8080", c.AdminServerEnabled, c.AdminServerPort)
	}
	if len(c.FourLetterWhitelist) != 1 || !c.FourLetterWhitelist["srvr"] {
		t.Errorf("four-letter words %v, want ZooKeeper's default, srvr alone", c.FourLetterWhitelist)
	}
}

// Each variable reaches its zoo.cfg key.
func TestEveryVariable(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		check       func(zooenv.Env, config.Config) bool
	}{
		{"ZOO_CONF_DIR", "/etc/collie", func(e zooenv.Env, _ config.Config) bool { return e.ConfDir == "/etc/collie" }},
		{"ZOO_DATA_DIR", "/var/lib/collie", func(e zooenv.Env, c config.Config) bool {
			// The log goes with it.
			return e.DataDir == "/var/lib/collie" && c.DataDir == "/var/lib/collie" && c.DataLogDir == "/var/lib/collie"
		}},
		{"ZOO_DATA_LOG_DIR", "/datalog", func(e zooenv.Env, c config.Config) bool {
			return e.DataLogDir == "/datalog" && c.DataLogDir == "/datalog" && c.DataDir == "/data"
		}},
		{"ZOO_TICK_TIME", "500", func(_ zooenv.Env, c config.Config) bool {
			// The session timeout bounds follow tickTime.
			return c.TickTime == 500*time.Millisecond && c.MaxSessionTimeout == 10*time.Second
		}},
		{"ZOO_INIT_LIMIT", "10", func(_ zooenv.Env, c config.Config) bool { return c.InitLimit == 10 }},
		{"ZOO_SYNC_LIMIT", "7", func(_ zooenv.Env, c config.Config) bool { return c.SyncLimit == 7 }},
		{"ZOO_AUTOPURGE_PURGEINTERVAL", "24", func(_ zooenv.Env, c config.Config) bool { return c.AutopurgePurgeInterval == 24*time.Hour }},
		{"ZOO_AUTOPURGE_SNAPRETAINCOUNT", "9", func(_ zooenv.Env, c config.Config) bool { return c.AutopurgeSnapRetainCount == 9 }},
		{"ZOO_MAX_CLIENT_CNXNS", "0", func(_ zooenv.Env, c config.Config) bool { return c.MaxClientCnxns == 0 }},
		{"ZOO_ADMINSERVER_ENABLED", "false", func(_ zooenv.Env, c config.Config) bool { return !c.AdminServerEnabled }},
		{"ZOO_ADMINSERVER_ENABLED", "TRUE", func(_ zooenv.Env, c config.Config) bool { return c.AdminServerEnabled }},
		{"ZOO_4LW_COMMANDS_WHITELIST", "ruok, mntr,conf", func(_ zooenv.Env, c config.Config) bool {
			w := c.FourLetterWhitelist
			return w["ruok"] && w["mntr"] && w["conf"] && w["srvr"] && !w["dump"]
		}},
		{"ZOO_4LW_COMMANDS_WHITELIST", "*", func(_ zooenv.Env, c config.Config) bool { return c.FourLetterWhitelist["dump"] }},
		{"ZOO_MY_ID", "1", func(e zooenv.Env, _ config.Config) bool { return e.ID == 1 && e.IDGiven }},
		{"ZOO_SERVERS", "server.1=db1:2888:3888;127.0.0.1:2182", func(_ zooenv.Env, c config.Config) bool {
			return c.ClientPort == 2182 && c.ClientPortAddress == "127.0.0.1" && c.Servers[0].Host == "db1"
		}},
		{"ZOO_CFG_EXTRA", "linearizableReads=true admin.serverPort=9090", func(_ zooenv.Env, c config.Config) bool {
			return c.LinearizableReads && c.AdminServerPort == 9090
		}},
		// Later lines win, as in a zoo.cfg: the extra ones come last.
		{"ZOO_CFG_EXTRA", "tickTime=3000", func(_ zooenv.Env, c config.Config) bool { return c.TickTime == 3*time.Second }},
		// Empty is unset: the default.
		{"ZOO_TICK_TIME", "", func(_ zooenv.Env, c config.Config) bool { return c.TickTime == 2*time.Second }},
		{"ZOO_TICK_TIME", " 1000 ", func(_ zooenv.Env, c config.Config) bool { return c.TickTime == time.Second }},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			e, c := load(t, vars{tc.name: tc.value})
			if !tc.check(e, c) {
				t.Errorf("%s=%q did not take effect; zoo.cfg:\n%s", tc.name, tc.value, e.ZooCfg)
			}
		})
	}
}

// ZOO_STANDALONE_ENABLED=false makes a single listed server an ensemble
// of one, as in ZooKeeper.
func TestStandaloneDisabled(t *testing.T) {
	e, c := load(t, vars{"ZOO_STANDALONE_ENABLED": "false", "ZOO_MY_ID": "1"})
	if c.Standalone {
		t.Errorf("standalone with ZOO_STANDALONE_ENABLED=false:\n%s", e.ZooCfg)
	}
}

// An ensemble from ZOO_SERVERS, as the image's documentation writes one,
// entries separated by spaces or line breaks.
func TestEnsembleFromZooServers(t *testing.T) {
	e, c := load(t, vars{
		"ZOO_MY_ID":   "2",
		"ZOO_SERVERS": "server.1=zoo1:2888:3888;2181 server.2=0.0.0.0:2888:3888;2181\n\tserver.3=zoo3:2888:3888;2181 server.4=zoo4:2888:3888:observer;2181",
	})
	if e.ID != 2 || !e.IDGiven || c.ServerID != 2 || c.Standalone {
		t.Fatalf("id %d (given %v), config id %d, standalone %v; want member 2 of an ensemble", e.ID, e.IDGiven, c.ServerID, c.Standalone)
	}
	var got []string
	for _, s := range c.Servers {
		got = append(got, s.String())
	}
	want := []string{
		"zoo1:2888:3888:participant;0.0.0.0:2181",
		"0.0.0.0:2888:3888:participant;0.0.0.0:2181",
		"zoo3:2888:3888:participant;0.0.0.0:2181",
		"zoo4:2888:3888:observer;0.0.0.0:2181",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("servers\n%v\nwant\n%v", got, want)
	}
}

// The members of a StatefulSet come from the pod's name and the headless
// Service: pod collie-2 is server 3, the others are known by their stable
// DNS names.
func TestStatefulSet(t *testing.T) {
	const domain = "collie-peers.prod.svc.cluster.local"
	for ordinal, pod := range []string{"collie-0", "collie-1", "collie-2"} {
		e, c := load(t, vars{
			"HOSTNAME":                    pod,
			"COLLIE_STATEFULSET_REPLICAS": "3",
			"COLLIE_STATEFULSET_DOMAIN":   domain,
		})
		id := uint64(ordinal + 1)
		if e.ID != id || !e.IDGiven || c.ServerID != id || c.Standalone {
			t.Fatalf("%s: id %d (given %v), config id %d, standalone %v; want member %d", pod, e.ID, e.IDGiven, c.ServerID, c.Standalone, id)
		}
		if len(c.Servers) != 3 {
			t.Fatalf("%s: %d servers, want 3:\n%s", pod, len(c.Servers), e.ZooCfg)
		}
		for i, s := range c.Servers {
			host := "collie-" + string(rune('0'+i)) + "." + domain
			if i == ordinal {
				host = "0.0.0.0" // its own: listen without a DNS lookup
			}
			if s.ID != uint64(i+1) || s.Host != host || s.PeerPort != 2888 || s.ElectionPort != 3888 || s.ClientPort != 2181 || s.Observer {
				t.Errorf("%s: server %d is %d=%s, want %d=%s:2888:3888;2181", pod, i, s.ID, s, i+1, host)
			}
		}
		if c.ClientPort != 2181 {
			t.Errorf("%s: client port %d, want 2181", pod, c.ClientPort)
		}
	}
	// The other variables still apply.
	_, c := load(t, vars{
		"HOSTNAME": "zk-0", "COLLIE_STATEFULSET_REPLICAS": "1", "COLLIE_STATEFULSET_DOMAIN": "zk.default.svc.cluster.local",
		"ZOO_TICK_TIME": "1000",
	})
	if !c.Standalone || c.TickTime != time.Second {
		t.Errorf("a StatefulSet of one: standalone %v, tickTime %v; want a standalone server with tickTime 1s", c.Standalone, c.TickTime)
	}
}

// A bad value is reported naming the variable and the value; every bad
// variable is reported at once.
func TestBadValues(t *testing.T) {
	statefulSet := vars{"HOSTNAME": "collie-1", "COLLIE_STATEFULSET_REPLICAS": "3", "COLLIE_STATEFULSET_DOMAIN": "collie-peers.default.svc.cluster.local"}
	with := func(base vars, k, v string) vars {
		env := vars{k: v}
		for bk, bv := range base {
			if _, ok := env[bk]; !ok {
				env[bk] = bv
			}
		}
		return env
	}
	for _, tc := range []struct {
		env  vars
		want string
	}{
		{vars{"ZOO_TICK_TIME": "2s"}, `ZOO_TICK_TIME="2s" is not a positive number of milliseconds`},
		{vars{"ZOO_TICK_TIME": "0"}, `ZOO_TICK_TIME="0" is not a positive number of milliseconds`},
		{vars{"ZOO_TICK_TIME": "99999999999"}, `ZOO_TICK_TIME="99999999999" is not`},
		{vars{"ZOO_INIT_LIMIT": "-1"}, `ZOO_INIT_LIMIT="-1" is not a positive number of ticks`},
		{vars{"ZOO_SYNC_LIMIT": "two"}, `ZOO_SYNC_LIMIT="two" is not a positive number of ticks`},
		{vars{"ZOO_AUTOPURGE_PURGEINTERVAL": "1h"}, `ZOO_AUTOPURGE_PURGEINTERVAL="1h" is not a number of hours`},
		{vars{"ZOO_AUTOPURGE_SNAPRETAINCOUNT": "-3"}, `ZOO_AUTOPURGE_SNAPRETAINCOUNT="-3" is not a number of snapshots`},
		{vars{"ZOO_MAX_CLIENT_CNXNS": "lots"}, `ZOO_MAX_CLIENT_CNXNS="lots" is not a number of connections`},
		{vars{"ZOO_STANDALONE_ENABLED": "yes"}, `ZOO_STANDALONE_ENABLED="yes" is not true or false`},
		{vars{"ZOO_ADMINSERVER_ENABLED": "1"}, `ZOO_ADMINSERVER_ENABLED="1" is not true or false`},
		{vars{"ZOO_4LW_COMMANDS_WHITELIST": "ruok;srvr"}, `ZOO_4LW_COMMANDS_WHITELIST="ruok;srvr" is not a comma-separated list`},
		{vars{"ZOO_MY_ID": "0"}, `ZOO_MY_ID="0" is not a server id`},
		{vars{"ZOO_MY_ID": "one"}, `ZOO_MY_ID="one" is not a server id`},
		{vars{"ZOO_SERVERS": "zoo1:2888:3888"}, `ZOO_SERVERS="zoo1:2888:3888" is not an entry of the form server.N=`},
		{vars{"ZOO_SERVERS": "server.1=a:1:2;2181 1=b:1:2"}, `ZOO_SERVERS="1=b:1:2" is not an entry`},
		{vars{"ZOO_DATA_DIR": "/data\ndataDir=/etc"}, `ZOO_DATA_DIR="/data\ndataDir=/etc" contains a control character`},
		{vars{"ZOO_DATA_LOG_DIR": `/log\`}, `ZOO_DATA_LOG_DIR="/log\\" contains a backslash`},
		{with(statefulSet, "COLLIE_STATEFULSET_REPLICAS", "three"), `COLLIE_STATEFULSET_REPLICAS="three" is not a number of servers (1-255)`},
		{with(statefulSet, "COLLIE_STATEFULSET_REPLICAS", "0"), `COLLIE_STATEFULSET_REPLICAS="0" is not a number of servers`},
		{with(statefulSet, "COLLIE_STATEFULSET_DOMAIN", ""), `COLLIE_STATEFULSET_DOMAIN="" is not set: it must be the domain of the StatefulSet's headless Service`},
		{with(statefulSet, "COLLIE_STATEFULSET_DOMAIN", "peers_.default"), `COLLIE_STATEFULSET_DOMAIN="peers_.default" is not a DNS name`},
		{with(statefulSet, "HOSTNAME", "collie"), `HOSTNAME="collie" is not a StatefulSet pod's name, <name>-<ordinal>`},
		{with(statefulSet, "HOSTNAME", "collie-3"), `HOSTNAME="collie-3" has ordinal 3, outside the 3 servers COLLIE_STATEFULSET_REPLICAS lists`},
		{with(statefulSet, "ZOO_SERVERS", "server.1=a:1:2"), `ZOO_SERVERS="server.1=a:1:2" is set beside COLLIE_STATEFULSET_REPLICAS`},
		{with(statefulSet, "ZOO_MY_ID", "2"), `ZOO_MY_ID="2" is set beside COLLIE_STATEFULSET_REPLICAS`},
		{vars{"COLLIE_STATEFULSET_DOMAIN": "collie-peers.default.svc.cluster.local"}, `COLLIE_STATEFULSET_REPLICAS="" is not set, but COLLIE_STATEFULSET_DOMAIN is`},
	} {
		_, err := zooenv.Generate(tc.env.lookup)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Generate(%q): %v, want an error saying %s", tc.env, err, tc.want)
			continue
		}
		var ve *zooenv.VarError
		if !errors.As(err, &ve) {
			t.Errorf("Generate(%q): %v is not a *VarError", tc.env, err)
		}
	}

	_, err := zooenv.Generate(vars{"ZOO_TICK_TIME": "x", "ZOO_SYNC_LIMIT": "y", "ZOO_MY_ID": "z"}.lookup)
	for _, name := range []string{"ZOO_TICK_TIME", "ZOO_SYNC_LIMIT", "ZOO_MY_ID"} {
		if err == nil || !strings.Contains(err.Error(), name+"=") {
			t.Errorf("three bad variables: %v, want %s among them", err, name)
		}
	}
}

// What the variables cannot catch, server/config does, naming the key.
func TestBadExtraIsReportedByConfig(t *testing.T) {
	e, err := zooenv.Generate(vars{"ZOO_CFG_EXTRA": "maxSessionTimeout=soon"}.lookup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.Parse(e.ZooCfg); err == nil || !strings.Contains(err.Error(), `maxSessionTimeout: "soon"`) {
		t.Errorf("config.Parse: %v, want maxSessionTimeout named", err)
	}
}

// Whatever the variables hold, a zoo.cfg that Generate returns has one
// line per key it writes, each from its own variable: no value starts a
// line of its own.
func FuzzGenerate(f *testing.F) {
	f.Add("2000", "/data", "server.1=localhost:2888:3888;2181", "ruok,srvr", "collie-2", "3")
	f.Add("1\n", "/d\rx", "server.1=a:1:2\nserver.2=b:1:2", "*", "a-0", "1")
	f.Fuzz(func(t *testing.T, tick, dataDir, servers, words, pod, replicas string) {
		env := vars{
			"ZOO_TICK_TIME": tick, "ZOO_DATA_DIR": dataDir, "ZOO_SERVERS": servers,
			"ZOO_4LW_COMMANDS_WHITELIST": words,
		}
		if replicas != "" {
			env = vars{
				"ZOO_TICK_TIME": tick, "ZOO_DATA_DIR": dataDir, "ZOO_4LW_COMMANDS_WHITELIST": words,
				"HOSTNAME": pod, "COLLIE_STATEFULSET_REPLICAS": replicas, "COLLIE_STATEFULSET_DOMAIN": "p.ns.svc.cluster.local",
			}
		}
		e, err := zooenv.Generate(env.lookup)
		if err != nil {
			return
		}
		known := map[string]bool{
			"dataDir": true, "dataLogDir": true, "tickTime": true, "initLimit": true, "syncLimit": true,
			"autopurge.snapRetainCount": true, "autopurge.purgeInterval": true, "maxClientCnxns": true,
			"standaloneEnabled": true, "admin.enableServer": true, "4lw.commands.whitelist": true,
		}
		seen := map[string]bool{}
		for line := range strings.Lines(string(e.ZooCfg)) {
			key, _, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
			if !ok || (!known[key] && !strings.HasPrefix(key, "server.")) || seen[key] {
				t.Fatalf("line %q is not one of the generated keys, once each:\n%s", line, e.ZooCfg)
			}
			seen[key] = true
		}
		c, err := config.Parse(e.ZooCfg)
		if err != nil {
			return
		}
		if want := cmp.Or(strings.TrimSpace(dataDir), "/data"); c.DataDir != want {
			t.Fatalf("dataDir %q, want %q:\n%s", c.DataDir, want, e.ZooCfg)
		}
	})
}
