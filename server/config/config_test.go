package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, text string) Config {
	t.Helper()
	c, err := Parse([]byte(text))
	if err != nil {
		t.Fatalf("Parse(%q): %v", text, err)
	}
	return c
}

func checkConfig(t *testing.T, got, want Config) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
		for i := range gv.NumField() {
			if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
				t.Errorf("%s = %#v, want %#v", gv.Type().Field(i).Name, gv.Field(i).Interface(), wv.Field(i).Interface())
			}
		}
	}
}

func TestDefault(t *testing.T) {
	want := Config{
		TickTime:                 2 * time.Second,
		InitLimit:                10,
		SyncLimit:                5,
		DataDir:                  "collie-data",
		DataLogDir:               "collie-data",
		ClientPort:               2181,
		ClientPortListenBacklog:  -1,
		MaxClientCnxns:           60,
		MinSessionTimeout:        4 * time.Second,
		MaxSessionTimeout:        40 * time.Second,
		SnapCount:                100000,
		AutopurgeSnapRetainCount: 3,
		JuteMaxBuffer:            1048575,
		PreAllocSize:             64 << 20,
		FourLetterWhitelist:      map[string]bool{"srvr": true},
		AdminServerEnabled:       true,
		AdminServerPort:          8080,
		AdminServerAddress:       "0.0.0.0",
		AdminCommandURL:          "/commands",
		AdminSnapshotEnabled:     true,
		AdminRateLimiterInterval: 5 * time.Minute,
		MetricsProviderHTTPHost:  "0.0.0.0",
		MetricsProviderHTTPPort:  7000,
		MetricsProviderExportJVM: true,
		DigestEnabled:            true,
		ContainerCheckInterval:   time.Minute,
		ContainerMaxPerMinute:    10000,
		Standalone:               true,
		QuorumReverseDNS:         true,
	}
	checkConfig(t, Default(), want)
	if err := Default().Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}

	// Each call returns its own whitelist, so one server's changes do not
	// leak into another's.
	Default().FourLetterWhitelist["stat"] = true
	if Default().FourLetterWhitelist["stat"] {
		t.Error("Default shares its whitelist between calls")
	}
}

// A zoo.cfg that sets only what ZooKeeper requires gets the same values as
// Default, apart from where the data goes.
func TestParseMinimal(t *testing.T) {
	got := mustParse(t, "dataDir=/var/lib/collie\nclientPort=2181\n")
	want := Default()
	want.DataDir, want.DataLogDir = "/var/lib/collie", "/var/lib/collie"
	checkConfig(t, got, want)
}

func TestParseDebianExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "debian-zoo.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := Default()
	want.DataDir, want.DataLogDir = "/tmp/zookeeper", "/tmp/zookeeper"
	checkConfig(t, got, want)
	if err := got.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestParseEveryKey(t *testing.T) {
	text := `
tickTime=500
initLimit=20
syncLimit=4
dataDir=/data/snap
dataLogDir=/data/log
clientPort=12181
clientPortAddress=[::1]
clientPortListenBacklog=128
maxClientCnxns=0
minSessionTimeout=3000
maxSessionTimeout=90000
snapCount=5000
autopurge.snapRetainCount=7
autopurge.purgeInterval=12
jute.maxbuffer=4194304
preAllocSize=16384
4lw.commands.whitelist=ruok, stat,mntr
extendedTypesEnabled=true
DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=
localSessionsEnabled=TRUE
admin.enableServer=false
admin.serverPort=9090
admin.serverAddress=127.0.0.1
admin.commandURL=/admin/commands
admin.pprof=true
admin.snapshot.enabled=false
zookeeper.admin.rateLimiterIntervalInMS=1500
linearizableReads=true
metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider
metricsProvider.httpHost=[::1]
metricsProvider.httpPort=7001
metricsProvider.exportJvmInfo=false
metricsProvider.numWorkerThreads=4
zookeeper.digest.enabled=false
znode.container.checkIntervalMs=1500
znode.container.maxPerMinute=600
standaloneEnabled=true
`
	want := Config{
		TickTime:                 500 * time.Millisecond,
		InitLimit:                20,
		SyncLimit:                4,
		DataDir:                  "/data/snap",
		DataLogDir:               "/data/log",
		ClientPort:               12181,
		ClientPortAddress:        "::1",
		ClientPortListenBacklog:  128,
		MaxClientCnxns:           0,
		MinSessionTimeout:        3 * time.Second,
		MaxSessionTimeout:        90 * time.Second,
		SnapCount:                5000,
		AutopurgeSnapRetainCount: 7,
		AutopurgePurgeInterval:   12 * time.Hour,
		JuteMaxBuffer:            4194304,
		PreAllocSize:             16 << 20,
		FourLetterWhitelist:      map[string]bool{"ruok": true, "stat": true, "mntr": true, "srvr": true},
		ExtendedTypesEnabled:     true,
		SuperDigest:              "super:D/InIHSb7yEEbrWz8b9l71RjZJU=",
		LocalSessionsEnabled:     true,
		AdminServerEnabled:       false,
		AdminServerPort:          9090,
		AdminServerAddress:       "127.0.0.1",
		AdminCommandURL:          "/admin/commands",
		AdminPprof:               true,
		AdminSnapshotEnabled:     false,
		AdminRateLimiterInterval: 1500 * time.Millisecond,
		LinearizableReads:        true,
		PrometheusMetrics:        true,
		MetricsProviderHTTPHost:  "::1",
		MetricsProviderHTTPPort:  7001,
		ContainerCheckInterval:   1500 * time.Millisecond,
		ContainerMaxPerMinute:    600,
		Standalone:               true,
		QuorumReverseDNS:         true,
	}
	got := mustParse(t, text)
	checkConfig(t, got, want)
	if err := got.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestParseSuperDigestWithSystemPropertyName(t *testing.T) {
	const digest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
	c := mustParse(t, "dataDir=/d\nzookeeper.DigestAuthenticationProvider.superDigest="+digest)
	if c.SuperDigest != digest {
		t.Errorf("SuperDigest = %q, want %q", c.SuperDigest, digest)
	}
}

func TestSessionTimeoutDefaults(t *testing.T) {
	tests := []struct {
		text     string
		min, max time.Duration
	}{
		{"tickTime=3000", 6 * time.Second, 60 * time.Second},
		// tickTime after the timeouts still sets their defaults.
		{"minSessionTimeout=-1\nmaxSessionTimeout=-1\ntickTime=100", 200 * time.Millisecond, 2 * time.Second},
		{"minSessionTimeout=1000\ntickTime=100", time.Second, 2 * time.Second},
		{"maxSessionTimeout=7000\ntickTime=100", 200 * time.Millisecond, 7 * time.Second},
		{"minSessionTimeout=0", 0, 40 * time.Second},
	}
	for _, tt := range tests {
		c := mustParse(t, "dataDir=/d\n"+tt.text)
		if c.MinSessionTimeout != tt.min || c.MaxSessionTimeout != tt.max {
			t.Errorf("%q: session timeouts [%v, %v], want [%v, %v]", tt.text, c.MinSessionTimeout, c.MaxSessionTimeout, tt.min, tt.max)
		}
	}
}

// ZooKeeper raises some values that are too small instead of failing.
func TestParseRaisesSmallValues(t *testing.T) {
	c := mustParse(t, "dataDir=/d\nsnapCount=1\nautopurge.snapRetainCount=1\nautopurge.purgeInterval=-4")
	if c.SnapCount != 2 {
		t.Errorf("snapCount=1 gives SnapCount %d, want 2", c.SnapCount)
	}
	if c.AutopurgeSnapRetainCount != 3 {
		t.Errorf("autopurge.snapRetainCount=1 gives %d, want 3", c.AutopurgeSnapRetainCount)
	}
	// ZooKeeper's own test servers set preAllocSize=100.
	if c := mustParse(t, "dataDir=/d\nzookeeper.preAllocSize=16"); c.PreAllocSize != 64<<10 {
		t.Errorf("zookeeper.preAllocSize=16 gives PreAllocSize %d, want %d", c.PreAllocSize, 64<<10)
	}
	if c := mustParse(t, "dataDir=/d"); c.PreAllocSize != 64<<20 {
		t.Errorf("default PreAllocSize %d, want 64 MiB", c.PreAllocSize)
	}
	if c.AutopurgePurgeInterval != 0 {
		t.Errorf("autopurge.purgeInterval=-4 gives %v, want 0 (disabled)", c.AutopurgePurgeInterval)
	}
}

func TestParseLastValueWins(t *testing.T) {
	// The first tickTime is invalid, but only the last one counts, as in
	// java.util.Properties.
	c := mustParse(t, "tickTime=abc\ndataDir=/d\ntickTime=1000")
	if c.TickTime != time.Second {
		t.Errorf("TickTime = %v, want 1s", c.TickTime)
	}
}

func TestFourLetterWhitelist(t *testing.T) {
	all := map[string]bool{}
	for _, w := range fourLetterWords {
		all[w] = true
	}
	tests := []struct {
		value string
		want  map[string]bool
	}{
		{"", map[string]bool{"srvr": true}},
		{"ruok", map[string]bool{"srvr": true, "ruok": true}},
		{" stat , ruok ,, ", map[string]bool{"srvr": true, "ruok": true, "stat": true}},
		{"*", all},
		{"ruok, *", all},
		{"nope", map[string]bool{"srvr": true, "nope": true}},
	}
	for _, tt := range tests {
		c := mustParse(t, "dataDir=/d\n4lw.commands.whitelist="+tt.value)
		if !reflect.DeepEqual(c.FourLetterWhitelist, tt.want) {
			t.Errorf("4lw.commands.whitelist=%s gives %v, want %v", tt.value, c.FourLetterWhitelist, tt.want)
		}
	}
	if !all["ruok"] || !all["mntr"] || !all["conf"] || len(all) != 18 {
		t.Errorf("\"*\" enables %v", all)
	}
}

func TestParseInvalidValues(t *testing.T) {
	tests := []struct {
		line string
		want string
	}{
		{"tickTime=abc", `tickTime: "abc" is not a positive number of milliseconds`},
		{"tickTime=0", `tickTime: "0" is not a positive number of milliseconds`},
		{"tickTime=-2000", `tickTime: "-2000" is not a positive number of milliseconds`},
		{"tickTime=2000ms", `tickTime: "2000ms" is not a positive number of milliseconds`},
		{"tickTime=2147483648", `tickTime: "2147483648" is not a positive number of milliseconds`},
		{"initLimit=0", `initLimit: "0" is not a positive number of ticks`},
		{"syncLimit=five", `syncLimit: "five" is not a positive number of ticks`},
		{"dataLogDir=", `dataLogDir: "" is not a directory`},
		{"clientPort=65536", `clientPort: "65536" is not a port number (1-65535)`},
		{"clientPort=-1", `clientPort: "-1" is not a port number (1-65535)`},
		{"clientPort=2181\nclientPortAddress=", `clientPortAddress: "" is not a host name or IP address`},
		{"clientPortListenBacklog=many", `clientPortListenBacklog: "many" is not a number of connections`},
		{"maxClientCnxns=1.5", `maxClientCnxns: "1.5" is not a number of connections (0 = unlimited)`},
		{"minSessionTimeout=-2", `minSessionTimeout: "-2" is not a number of milliseconds (-1 = 2 ticks)`},
		{"maxSessionTimeout=1e6", `maxSessionTimeout: "1e6" is not a number of milliseconds (-1 = 20 ticks)`},
		{"snapCount=x", `snapCount: "x" is not a number of transactions`},
		{"autopurge.snapRetainCount=x", `autopurge.snapRetainCount: "x" is not a number of snapshots`},
		{"autopurge.purgeInterval=1h", `autopurge.purgeInterval: "1h" is not a number of hours (0 = never purge)`},
		{"jute.maxbuffer=0", `jute.maxbuffer: "0" is not a positive number of bytes`},
		{"preAllocSize=0", `preAllocSize: "0" is not a size in KiB from 1 to 4194304`},
		{"zookeeper.preAllocSize=64M", `zookeeper.preAllocSize: "64M" is not a size in KiB from 1 to 4194304`},
		{"extendedTypesEnabled=yes", `extendedTypesEnabled: "yes" is not true or false`},
		{"localSessionsEnabled=1", `localSessionsEnabled: "1" is not true or false`},
		{"standaloneEnabled=", `standaloneEnabled: "" is not true or false`},
		{"admin.enableServer=off", `admin.enableServer: "off" is not true or false`},
		{"admin.serverPort=0", `admin.serverPort: "0" is not a port number (1-65535)`},
		{"admin.serverAddress=", `admin.serverAddress: "" is not a host name or IP address`},
		{"admin.commandURL=commands", `admin.commandURL: "commands" is not a URL path such as /commands`},
		{"admin.commandURL=", `admin.commandURL: "" is not a URL path such as /commands`},
		{"admin.commandURL=/a?b", `admin.commandURL: "/a?b" is not a URL path such as /commands`},
		{"admin.pprof=on", `admin.pprof: "on" is not true or false`},
		{"admin.snapshot.enabled=yes", `admin.snapshot.enabled: "yes" is not true or false`},
		{"admin.rateLimiterIntervalInMS=-1", `admin.rateLimiterIntervalInMS: "-1" is not a number of milliseconds (0 or more)`},
		{"metricsProvider.httpPort=http", `metricsProvider.httpPort: "http" is not a port number (1-65535)`},
		{"metricsProvider.className=com.example.Metrics", `metricsProvider.className: "com.example.Metrics" is not a metrics provider Collie has: it serves org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider's metrics, or none with org.apache.zookeeper.metrics.impl.DefaultMetricsProvider or org.apache.zookeeper.metrics.impl.NullMetricsProvider`},
		{"metricsProvider.exportJvmInfo=maybe", `metricsProvider.exportJvmInfo: "maybe" is not true or false`},
		{"znode.container.checkIntervalMs=0", `znode.container.checkIntervalMs: "0" is not a positive number of milliseconds`},
		{"znode.container.maxPerMinute=-1", `znode.container.maxPerMinute: "-1" is not a positive number of containers`},
		{"DigestAuthenticationProvider.superDigest=super", `DigestAuthenticationProvider.superDigest: "super" is not of the form user:base64(sha1("user:password"))`},
		{"DigestAuthenticationProvider.superDigest=super:password", `DigestAuthenticationProvider.superDigest: "super:password" is not of the form user:base64(sha1("user:password"))`},
		{"DigestAuthenticationProvider.superDigest=:D/InIHSb7yEEbrWz8b9l71RjZJU=", `DigestAuthenticationProvider.superDigest: ":D/InIHSb7yEEbrWz8b9l71RjZJU=" is not of the form user:base64(sha1("user:password"))`},
		{"clientPortAddress=10.0.0.1", `clientPortAddress is set but clientPort is not`},
		{"group.1=1:2:3", `group.1: hierarchical quorums (group.N and weight.N) are not supported; quorums are majorities of the participants`},
		{"weight.1=1", `weight.1: hierarchical quorums (group.N and weight.N) are not supported; quorums are majorities of the participants`},
		{"dynamicConfigFile=/etc/zoo.cfg.dynamic\nserver.10=a:2888:3888\nserver.2=b:2888:3888",
			"server.2: must be in the dynamic config file when dynamicConfigFile is set\n" +
				"server.10: must be in the dynamic config file when dynamicConfigFile is set"},
		{"server.1=a:2888:3888\nserver.01=b:2888:3888", `server.01: server id 1 is already given by server.1`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte("dataDir=/d\n" + tt.line))
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) error\n got %v\nwant %s", tt.line, err, tt.want)
		}
	}
}

func TestParseMissingDataDir(t *testing.T) {
	_, err := Parse([]byte("tickTime=2000\nclientPort=2181"))
	if err == nil || err.Error() != "dataDir is not set: zoo.cfg must say where to keep data" {
		t.Errorf("Parse without dataDir: %v", err)
	}
}

func TestParseReportsEveryError(t *testing.T) {
	_, err := Parse([]byte("dataDir=/d\ntickTime=abc\nclientPort=x\nserver.a=h:1:2"))
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Parse error %v is not a list of errors", err)
	}
	var keys []string
	for _, e := range joined.Unwrap() {
		var ve *ValueError
		if !errors.As(e, &ve) {
			t.Fatalf("%v is not a *ValueError", e)
		}
		keys = append(keys, ve.Key)
	}
	if want := []string{"tickTime", "clientPort", "server.a"}; !slices.Equal(keys, want) {
		t.Errorf("errors name keys %q, want %q in file order", keys, want)
	}
}

func TestParseUnknownKeys(t *testing.T) {
	c := mustParse(t, `dataDir=/d
tickTme=2000
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
dynamicConfigFile=/etc/zookeeper/zoo.cfg.dynamic
tickTme=3000
zookeeper.extendedTypesEnabled=true
`)
	want := []string{"dynamicConfigFile", "tickTme", "zookeeper.extendedTypesEnabled"}
	if !slices.Equal(c.Unknown, want) {
		t.Errorf("Unknown = %q, want %q", c.Unknown, want)
	}
	if c.DynamicConfigFile != "/etc/zookeeper/zoo.cfg.dynamic" {
		t.Errorf("DynamicConfigFile = %q", c.DynamicConfigFile)
	}
	if c.ExtendedTypesEnabled {
		t.Error("zookeeper.extendedTypesEnabled in zoo.cfg enabled TTL nodes; ZooKeeper ignores it there")
	}
	if c := mustParse(t, "dataDir=/d"); c.Unknown != nil {
		t.Errorf("Unknown = %q for a file with only known keys", c.Unknown)
	}
}

func TestParseServerLine(t *testing.T) {
	tests := []struct {
		line string
		want Server
	}{
		{"server.1=zk1:2888:3888", Server{ID: 1, Host: "zk1", PeerPort: 2888, ElectionPort: 3888}},
		{"server.2=zk2:2888:3888:participant", Server{ID: 2, Host: "zk2", PeerPort: 2888, ElectionPort: 3888}},
		{"server.3=zk3:2888:3888:observer", Server{ID: 3, Host: "zk3", PeerPort: 2888, ElectionPort: 3888, Observer: true}},
		{"server.3=zk3:2888:3888:OBSERVER", Server{ID: 3, Host: "zk3", PeerPort: 2888, ElectionPort: 3888, Observer: true}},
		{"server.4=10.0.0.4:2888:3888;2181", Server{ID: 4, Host: "10.0.0.4", PeerPort: 2888, ElectionPort: 3888, ClientPort: 2181}},
		{"server.5=zk5:2888:3888;0.0.0.0:2181", Server{ID: 5, Host: "zk5", PeerPort: 2888, ElectionPort: 3888, ClientAddress: "0.0.0.0", ClientPort: 2181}},
		{"server.6=zk6:2888:3888:observer;10.1.1.6:2181", Server{ID: 6, Host: "zk6", PeerPort: 2888, ElectionPort: 3888, Observer: true, ClientAddress: "10.1.1.6", ClientPort: 2181}},
		{"server.7=[2001:db8::7]:2888:3888", Server{ID: 7, Host: "2001:db8::7", PeerPort: 2888, ElectionPort: 3888}},
		{"server.8=[::1]:2888:3888:observer;[::1]:2181", Server{ID: 8, Host: "::1", PeerPort: 2888, ElectionPort: 3888, Observer: true, ClientAddress: "::1", ClientPort: 2181}},
		{"server.9=zk9:2888:3888:", Server{ID: 9, Host: "zk9", PeerPort: 2888, ElectionPort: 3888}},
		{"server.10=zk10:2888:3888;", Server{ID: 10, Host: "zk10", PeerPort: 2888, ElectionPort: 3888}},
		{"server.011 = zk11:2888:3888  ", Server{ID: 11, Host: "zk11", PeerPort: 2888, ElectionPort: 3888}},
	}
	for _, tt := range tests {
		c := mustParse(t, "dataDir=/d\n"+tt.line)
		if len(c.Servers) != 1 || c.Servers[0] != tt.want {
			t.Errorf("%s gives %+v, want %+v", tt.line, c.Servers, tt.want)
		}
	}
}

func TestParseServerLineInvalid(t *testing.T) {
	const form = `is not of the form host:peerPort:electionPort[:participant|:observer][;[clientAddress:]clientPort]`
	tests := []struct {
		line string
		want string
	}{
		{"server.x=h:2888:3888", `server.x: "x" is not a server id (1 or more)`},
		{"server.0=h:2888:3888", `server.0: "0" is not a server id (1 or more)`},
		{"server.-1=h:2888:3888", `server.-1: "-1" is not a server id (1 or more)`},
		{"server.=h:2888:3888", `server.: "" is not a server id (1 or more)`},
		{"server.1=", `server.1: "" ` + form},
		{"server.1=h", `server.1: "h" ` + form},
		{"server.1=h:2888", `server.1: "h:2888" ` + form},
		{"server.1=:2888:3888", `server.1: ":2888:3888" ` + form},
		{"server.1=h:2888:3888:observer:x", `server.1: "h:2888:3888:observer:x" ` + form},
		{"server.1=h:2888:3888;2181;2182", `server.1: "h:2888:3888;2181;2182" ` + form},
		{"server.1=h:2888:3888;a:b:2181", `server.1: "h:2888:3888;a:b:2181" ` + form},
		{"server.1=::1:2888:3888", `server.1: "::1:2888:3888" ` + form},
		{"server.1=[::1:2888:3888", `server.1: "[::1:2888:3888" ` + form},
		{"server.1=[::1]2888:3888", `server.1: "[::1]2888:3888" ` + form},
		{"server.1=[::1]:", `server.1: "[::1]:" ` + form},
		{"server.1=h:x:3888", `server.1: "h:x:3888" has peer port "x", which is not a port number (1-65535)`},
		{"server.1=h:2888:70000", `server.1: "h:2888:70000" has election port "70000", which is not a port number (1-65535)`},
		{"server.1=h:0:3888", `server.1: "h:0:3888" has peer port "0", which is not a port number (1-65535)`},
		{"server.1=h:2888:2888", `server.1: "h:2888:2888" uses one port for both peer and election traffic; they must differ`},
		{"server.1=h:2888:3888:leader", `server.1: "h:2888:3888:leader" has role "leader", which is not participant or observer`},
		{"server.1=h:2888:3888;port", `server.1: "h:2888:3888;port" has client port "port", which is not a port number (1-65535)`},
		{"server.1=h:2888:3888;h:", `server.1: "h:2888:3888;h:" has client port "h", which is not a port number (1-65535)`},
		{"server.1=h:2888:3888;:", `server.1: "h:2888:3888;:" ` + form},
		{"server.1=h:2888:3888|h2:2888:3888", `server.1: "h:2888:3888|h2:2888:3888" lists several addresses for one server, which is not supported`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte("dataDir=/d\n" + tt.line))
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) error\n got %v\nwant %s", tt.line, err, tt.want)
		}
	}
}

func TestParseOrdersServersByID(t *testing.T) {
	c := mustParse(t, "dataDir=/d\nserver.3=c:1:2\nserver.1=a:1:2\nserver.2=b:1:2")
	var ids []uint64
	for _, s := range c.Servers {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []uint64{1, 2, 3}) {
		t.Errorf("server ids in order %v, want [1 2 3]", ids)
	}
}

func TestMembership(t *testing.T) {
	tests := []struct {
		name       string
		lines      string
		standalone bool
		invalid    string // Validate's error as server 1, "" when valid
	}{
		{"no servers", "", true, ""},
		{"one server runs standalone", "server.1=a:2888:3888", true, ""},
		{"two participants", "server.1=a:2888:3888\nserver.2=b:2888:3888", false, ""},
		{"three participants and an observer", "server.1=a:2888:3888\nserver.2=b:2888:3888\nserver.3=c:2888:3888\nserver.4=d:2888:3888:observer", false, ""},
		{"standaloneEnabled=false with one server", "standaloneEnabled=false\nserver.1=a:2888:3888", false, ""},
		{"standaloneEnabled=false without servers", "standaloneEnabled=false", false,
			"standaloneEnabled is false, so at least one participant server.N line is needed\n" +
				"this server's id 1 (from myid) has no server.1 line"},
		{"observer without participants", "server.1=a:2888:3888:observer", true,
			"observers without participants is an invalid configuration"},
		{"one participant and an observer", "server.1=a:2888:3888\nserver.2=b:2888:3888:observer", true,
			"observers without a quorum is an invalid configuration: list at least two participants"},
		{"one participant and an observer, standaloneEnabled=false", "standaloneEnabled=false\nserver.1=a:2888:3888\nserver.2=b:2888:3888:observer", false, ""},
		{"myid not listed", "server.2=b:2888:3888\nserver.3=c:2888:3888", false,
			"this server's id 1 (from myid) has no server.1 line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, "dataDir=/d\nclientPort=2181\n"+tt.lines)
			if c.Standalone != tt.standalone {
				t.Errorf("Standalone = %v, want %v", c.Standalone, tt.standalone)
			}
			c, err := c.ForServer(1)
			if err != nil {
				t.Fatalf("ForServer(1): %v", err)
			}
			err = c.Validate()
			if got := errString(err); got != tt.invalid {
				t.Errorf("Validate() = %q, want %q", got, tt.invalid)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestForServerClientPort(t *testing.T) {
	const servers = "\nserver.1=a:2888:3888;2181\nserver.2=b:2888:3888;10.0.0.2:2182\nserver.3=c:2888:3888"
	tests := []struct {
		name     string
		static   string
		id       uint64
		wantAddr string
		wantPort int
		wantErr  string
	}{
		{"clientPort omitted, port from own line", "", 1, "", 2181, ""},
		{"clientPort omitted, address from own line", "", 2, "10.0.0.2", 2182, ""},
		{"clientPort agrees with own line", "clientPort=2181", 1, "", 2181, ""},
		{"wildcard clientPortAddress agrees", "clientPort=2182\nclientPortAddress=0.0.0.0", 2, "10.0.0.2", 2182, ""},
		{"own line without client port keeps clientPort", "clientPort=2183\nclientPortAddress=10.0.0.3", 3, "10.0.0.3", 2183, ""},
		{"clientPort disagrees", "clientPort=2999", 1, "", 0, `clientPort 2999 and clientPortAddress "" differ from the client address "0.0.0.0:2181" of server.1`},
		{"clientPortAddress disagrees", "clientPort=2182\nclientPortAddress=10.9.9.9", 2, "", 0, `clientPort 2182 and clientPortAddress "10.9.9.9" differ from the client address "10.0.0.2:2182" of server.2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := mustParse(t, "dataDir=/d\n"+tt.static+servers).ForServer(tt.id)
			if got := errString(err); got != tt.wantErr {
				t.Fatalf("ForServer(%d) error %q, want %q", tt.id, got, tt.wantErr)
			}
			if err != nil {
				return
			}
			if c.ServerID != tt.id || c.ClientPortAddress != tt.wantAddr || c.ClientPort != tt.wantPort {
				t.Errorf("ForServer(%d) gives id %d, client address %q port %d; want %d, %q, %d",
					tt.id, c.ServerID, c.ClientPortAddress, c.ClientPort, tt.id, tt.wantAddr, tt.wantPort)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ensemble := func() Config {
		c, err := mustParse(t, "dataDir=/d\nclientPort=2181\nserver.1=a:2888:3888\nserver.2=b:2888:3888\nserver.3=c:2888:3888").ForServer(1)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if err := ensemble().Validate(); err != nil {
		t.Fatalf("valid ensemble: %v", err)
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"tickTime", func(c *Config) { c.TickTime = 0 }, "tickTime must be at least 1 ms, not 0s"},
		{"initLimit", func(c *Config) { c.InitLimit = 0 }, "initLimit must be at least 1 tick, not 0"},
		{"syncLimit", func(c *Config) { c.SyncLimit = -1 }, "syncLimit must be at least 1 tick, not -1"},
		{"dataDir", func(c *Config) { c.DataDir = "" }, "dataDir is not set"},
		{"dataLogDir", func(c *Config) { c.DataLogDir = "" }, "dataLogDir is not set"},
		{"clientPort range", func(c *Config) { c.ClientPort = 70000 }, "clientPort 70000 is not a port number (1-65535)"},
		{"clientPort unset in ensemble", func(c *Config) { c.ClientPort = 0 },
			"clientPort is not set: set it, or end this server's server.N line with ;clientPort"},
		{"session timeouts reversed", func(c *Config) { c.MinSessionTimeout = 50 * time.Second },
			"minSessionTimeout (50000 ms) must not be larger than maxSessionTimeout (40000 ms)"},
		{"negative min session timeout", func(c *Config) { c.MinSessionTimeout = -time.Second }, "minSessionTimeout must not be negative"},
		{"snapCount", func(c *Config) { c.SnapCount = 0 }, "snapCount must be at least 1, not 0"},
		{"snapRetainCount", func(c *Config) { c.AutopurgeSnapRetainCount = 2 }, "autopurge.snapRetainCount must be at least 3, not 2"},
		{"purgeInterval", func(c *Config) { c.AutopurgePurgeInterval = -time.Hour }, "autopurge.purgeInterval must not be negative"},
		{"jute.maxbuffer", func(c *Config) { c.JuteMaxBuffer = 0 }, "jute.maxbuffer must be at least 1 byte, not 0"},
		{"superDigest", func(c *Config) { c.SuperDigest = "super" },
			`DigestAuthenticationProvider.superDigest "super" is not of the form user:base64(sha1("user:password"))`},
		{"admin port", func(c *Config) { c.AdminServerPort = 0 }, "admin.serverPort 0 is not a port number (1-65535)"},
		{"admin command URL", func(c *Config) { c.AdminCommandURL = "commands" }, `admin.commandURL "commands" is not a URL path such as /commands`},
		{"metrics port", func(c *Config) { c.PrometheusMetrics, c.MetricsProviderHTTPPort = true, -1 }, "metricsProvider.httpPort -1 is not a port number (1-65535)"},
		{"container interval", func(c *Config) { c.ContainerCheckInterval = 0 }, "znode.container.checkIntervalMs must be at least 1 ms, not 0s"},
		{"container rate", func(c *Config) { c.ContainerMaxPerMinute = 0 }, "znode.container.maxPerMinute must be at least 1, not 0"},
		{"server id too large for TTL nodes", func(c *Config) {
			c.ExtendedTypesEnabled = true
			c.Servers[0].ID, c.ServerID = 255, 255
		}, "extendedTypesEnabled is true, so the server id must be at most 254, not 255"},
		{"myid missing", func(c *Config) { c.ServerID = 0 },
			"this server's id is not set: create the myid file in dataDir holding the N of its server.N line"},
		{"myid not listed", func(c *Config) { c.ServerID = 9 }, "this server's id 9 (from myid) has no server.9 line"},
		{"server id 0", func(c *Config) { c.Servers[2].ID = 0 }, "server.0: server ids start at 1"},
		{"duplicate server", func(c *Config) { c.Servers[2].ID = 2 }, "server.2: listed twice"},
		{"empty host", func(c *Config) { c.Servers[1].Host = "" }, "server.2: host is empty"},
		{"peer port", func(c *Config) { c.Servers[1].PeerPort = 0 }, "server.2: ports 0 and 3888 must be port numbers (1-65535)"},
		{"same ports", func(c *Config) { c.Servers[1].PeerPort = 3888 }, "server.2: peer and election ports must differ"},
		{"client port", func(c *Config) { c.Servers[1].ClientPort = 65536 }, "server.2: client port 65536 is not a port number (1-65535)"},
		{"standalone with a quorum", func(c *Config) { c.Standalone = true }, "3 participants are listed, so the server cannot be standalone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ensemble()
			tt.change(&c)
			if got := errString(c.Validate()); got != tt.want {
				t.Errorf("Validate() = %q, want %q", got, tt.want)
			}
		})
	}

	// A disabled admin server needs no port and no command URL.
	c := ensemble()
	c.AdminServerEnabled, c.AdminServerPort, c.AdminCommandURL = false, 0, ""
	if err := c.Validate(); err != nil {
		t.Errorf("disabled admin server without port: %v", err)
	}
	// A standalone server needs no id.
	if err := mustParse(t, "dataDir=/d\nclientPort=2181\nextendedTypesEnabled=true").Validate(); err != nil {
		t.Errorf("standalone: %v", err)
	}
	if got := errString(mustParse(t, "dataDir=/d").Validate()); got != "clientPort is not set" {
		t.Errorf("standalone without clientPort: %q", got)
	}
}

func TestParseMyID(t *testing.T) {
	tests := []struct {
		data string
		want uint64
		err  string
	}{
		{"1", 1, ""},
		{"3\n", 3, ""},
		{" 42 \r\nignored", 42, ""},
		{"255", 255, ""},
		{"9223372036854775807", 9223372036854775807, ""},
		{"", 0, `myid: "" is not a server id (a whole number, 1 or more)`},
		{"0", 0, `myid: "0" is not a server id (a whole number, 1 or more)`},
		{"-1", 0, `myid: "-1" is not a server id (a whole number, 1 or more)`},
		{"9223372036854775808", 0, `myid: "9223372036854775808" is not a server id (a whole number, 1 or more)`},
		{"\n1", 0, `myid: "" is not a server id (a whole number, 1 or more)`},
		{"replace this text with the cluster-unique zookeeper's instance id (1-255)\n", 0,
			`myid: "replace this text with the cluster-unique zookeeper's instance id (1-255)" is not a server id (a whole number, 1 or more)`},
	}
	for _, tt := range tests {
		got, err := ParseMyID([]byte(tt.data))
		if got != tt.want || errString(err) != tt.err {
			t.Errorf("ParseMyID(%q) = %d, %v; want %d, %q", tt.data, got, err, tt.want, tt.err)
		}
	}
}

func TestLoad(t *testing.T) {
	const ensemble = "tickTime=2000\ninitLimit=10\nsyncLimit=5\n" +
		"server.1=127.0.0.1:2888:3888;2181\nserver.2=127.0.0.1:2889:3889;2182\nserver.3=127.0.0.1:2890:3890:observer;2183\n"

	t.Run("ensemble member", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		writeFiles(t, dir, map[string]string{"zoo.cfg": "dataDir=" + data + "\n" + ensemble, "data/myid": "2\n"})
		c, err := Load(filepath.Join(dir, "zoo.cfg"))
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if c.ServerID != 2 || c.ClientPort != 2182 || c.Standalone || len(c.Servers) != 3 || !c.Servers[2].Observer {
			t.Errorf("Load gives id %d, client port %d, standalone %v, servers %+v", c.ServerID, c.ClientPort, c.Standalone, c.Servers)
		}
	})
	t.Run("observer", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		writeFiles(t, dir, map[string]string{"zoo.cfg": "dataDir=" + data + "\n" + ensemble, "data/myid": "3"})
		c, err := Load(filepath.Join(dir, "zoo.cfg"))
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if c.ServerID != 3 || c.ClientPort != 2183 {
			t.Errorf("Load gives id %d, client port %d; want 3, 2183", c.ServerID, c.ClientPort)
		}
	})
	t.Run("missing myid", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		cfg := filepath.Join(dir, "zoo.cfg")
		writeFiles(t, dir, map[string]string{"zoo.cfg": "dataDir=" + data + "\n" + ensemble})
		_, err := Load(cfg)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Load error %v does not wrap fs.ErrNotExist", err)
		}
		want := "config: " + cfg + " lists an ensemble, but " + filepath.Join(data, "myid") +
			" does not exist: create it holding this server's id, the N of its server.N line"
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Load error\n got %v\nwant %s: ...", err, want)
		}
	})
	t.Run("invalid myid", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		writeFiles(t, dir, map[string]string{"zoo.cfg": "dataDir=" + data + "\n" + ensemble, "data/myid": "two"})
		_, err := Load(filepath.Join(dir, "zoo.cfg"))
		want := "config: " + filepath.Join(data, "myid") + `: myid: "two" is not a server id (a whole number, 1 or more)`
		if errString(err) != want {
			t.Errorf("Load error\n got %v\nwant %s", err, want)
		}
	})
	t.Run("myid not among servers", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		cfg := filepath.Join(dir, "zoo.cfg")
		writeFiles(t, dir, map[string]string{"zoo.cfg": "dataDir=" + data + "\n" + ensemble, "data/myid": "7"})
		_, err := Load(cfg)
		want := "config: " + cfg + ": clientPort is not set: set it, or end this server's server.N line with ;clientPort\n" +
			"this server's id 7 (from myid) has no server.7 line"
		if errString(err) != want {
			t.Errorf("Load error\n got %v\nwant %s", err, want)
		}
	})
	t.Run("standalone needs no myid", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"zoo.cfg": "dataDir=" + dir + "\nclientPort=2181\nserver.1=localhost:2888:3888\n"})
		c, err := Load(filepath.Join(dir, "zoo.cfg"))
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if !c.Standalone || c.ServerID != 0 {
			t.Errorf("Standalone %v, ServerID %d; want true, 0", c.Standalone, c.ServerID)
		}
	})
	t.Run("myid is not read without servers", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"myid": "not a number", "zoo.cfg": "dataDir=" + dir + "\nclientPort=2181\n"})
		c, err := Load(filepath.Join(dir, "zoo.cfg"))
		if err != nil || c.ServerID != 0 {
			t.Errorf("Load = ServerID %d, %v; want 0, nil", c.ServerID, err)
		}
	})
	t.Run("keeps the file's text", func(t *testing.T) {
		dir := t.TempDir()
		text := "# comment\ndataDir=" + dir + "\nclientPort=2181\n"
		writeFiles(t, dir, map[string]string{"zoo.cfg": text})
		c, err := Load(filepath.Join(dir, "zoo.cfg"))
		if err != nil || c.Initial != text {
			t.Errorf("Load = Initial %q, %v; want %q, nil", c.Initial, err, text)
		}
		if Default().Initial != "" {
			t.Errorf("Default().Initial = %q, want empty", Default().Initial)
		}
	})
	t.Run("invalid config", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"zoo.cfg": "dataDir=/d\ntickTime=abc\n"})
		cfg := filepath.Join(dir, "zoo.cfg")
		_, err := Load(cfg)
		want := "config: " + cfg + `: tickTime: "abc" is not a positive number of milliseconds`
		if errString(err) != want {
			t.Errorf("Load error\n got %v\nwant %s", err, want)
		}
		var ve *ValueError
		if !errors.As(err, &ve) || ve.Key != "tickTime" {
			t.Errorf("Load error %v does not wrap the tickTime *ValueError", err)
		}
	})
	t.Run("invalid combination", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"zoo.cfg": "dataDir=/d\nclientPort=2181\nminSessionTimeout=90000\n"})
		_, err := Load(filepath.Join(dir, "zoo.cfg"))
		if !strings.HasSuffix(errString(err), "minSessionTimeout (90000 ms) must not be larger than maxSessionTimeout (40000 ms)") {
			t.Errorf("Load error %v", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := Load(filepath.Join(t.TempDir(), "zoo.cfg"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Load of a missing file: %v", err)
		}
	})
}

// writeFiles creates dir/name holding text for each entry.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConfLines(t *testing.T) {
	rt := Runtime{
		DataDir:     "/var/lib/collie/snap",
		DataDirSize: 1024,
		DataLogDir:  "/var/lib/collie/log",
		DataLogSize: 4096,
	}
	standalone := mustParse(t, "dataDir=/var/lib/collie\nclientPort=2181\nmaxClientCnxns=100\n")
	want := []string{
		"clientPort=2181",
		"secureClientPort=-1",
		"dataDir=/var/lib/collie/snap",
		"dataDirSize=1024",
		"dataLogDir=/var/lib/collie/log",
		"dataLogSize=4096",
		"tickTime=2000",
		"maxClientCnxns=100",
		"minSessionTimeout=4000",
		"maxSessionTimeout=40000",
		"clientPortListenBacklog=-1",
		"serverId=0",
	}
	if got := standalone.ConfLines(rt); !slices.Equal(got, want) {
		t.Errorf("standalone conf\n got %q\nwant %q", got, want)
	}

	ensemble, err := mustParse(t, "dataDir=/var/lib/collie\ninitLimit=5\nsyncLimit=2\n"+
		"server.1=zk1:2888:3888\nserver.2=zk2:2888:3888;2181\nserver.3=[::3]:2889:3889:observer;[::3]:2182\n").ForServer(3)
	if err != nil {
		t.Fatal(err)
	}
	rt.ClientPort = 40123
	rt.ConfigVersion = 0x100000000
	want = []string{
		"clientPort=40123",
		"secureClientPort=-1",
		"dataDir=/var/lib/collie/snap",
		"dataDirSize=1024",
		"dataLogDir=/var/lib/collie/log",
		"dataLogSize=4096",
		"tickTime=2000",
		"maxClientCnxns=60",
		"minSessionTimeout=4000",
		"maxSessionTimeout=40000",
		"clientPortListenBacklog=-1",
		"serverId=3",
		"initLimit=5",
		"syncLimit=2",
		"electionAlg=3",
		"electionPort=3889",
		"quorumPort=2889",
		"peerType=1",
		"membership: ",
		"server.1=zk1:2888:3888:participant",
		"server.2=zk2:2888:3888:participant;0.0.0.0:2181",
		"server.3=[::3]:2889:3889:observer;[::3]:2182",
		"version=100000000",
	}
	if got := ensemble.ConfLines(rt); !slices.Equal(got, want) {
		t.Errorf("ensemble conf\n got %q\nwant %q", got, want)
	}
}

// FuzzParse checks that no input makes Parse panic, and that whatever it
// accepts keeps the invariants the rest of the server relies on.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"dataDir=/d\nclientPort=2181",
		"dataDir=/d\nserver.1=a:1:2;3\nserver.2=[::1]:1:2:observer;[::1]:3",
		"a\\\n b=\\u0041",
		"tickTime=-1\n#x\n!y\nserver.1=[",
		"dataDir=/d\nsslQuorum=false\nzookeeper.secureClientPort=2281",
	}
	if data, err := os.ReadFile(filepath.Join("testdata", "debian-zoo.cfg")); err == nil {
		seeds = append(seeds, string(data))
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		if c.DataDir == "" || c.DataLogDir == "" || c.TickTime <= 0 || !c.FourLetterWhitelist["srvr"] {
			t.Errorf("Parse accepted %q giving %+v", data, c)
		}
		props, _ := parseProperties(string(data))
		for _, prop := range lastOccurrences(props) {
			if k, ok := notImplemented(trimJava(prop.key), trimJava(prop.value)); ok {
				t.Errorf("Parse accepted %q, whose %s asks for %s", data, k.Key, k.Feature)
			}
		}
		for i, s := range c.Servers {
			if i > 0 && c.Servers[i-1].ID >= s.ID {
				t.Errorf("servers out of order or repeated: %+v", c.Servers)
			}
		}
		_ = c.Validate()
	})
}

// readonlymode.enabled is a Java system property of ZooKeeper's, which
// zoo.cfg may also carry with the "zookeeper." prefix; both spellings set
// ReadOnlyMode.
func TestParseReadOnlyMode(t *testing.T) {
	for _, key := range []string{"readonlymode.enabled", "zookeeper.readonlymode.enabled"} {
		if c := mustParse(t, "dataDir=/d\n"+key+"=true"); !c.ReadOnlyMode {
			t.Errorf("%s=true: ReadOnlyMode false", key)
		}
	}
	if c := mustParse(t, "dataDir=/d"); c.ReadOnlyMode {
		t.Error("ReadOnlyMode on by default")
	}
}
