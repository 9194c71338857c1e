// Package config owns a Collie server's configuration: it reads ZooKeeper
// 3.8's zoo.cfg format and myid file into a Config, applies ZooKeeper's
// defaults, and checks the result the way ZooKeeper does before it starts.
//
// Parse, ParseMyID, ForServer and Validate work on values in memory. Load is
// the one function that reads files: the zoo.cfg it is given and, for an
// ensemble, the myid file in dataDir. A typical start is
//
//	cfg, err := config.Load("conf/zoo.cfg") // parses, reads myid, validates
//	if err != nil { ... }
//	for _, key := range cfg.Unknown {
//		logger.Warn("zoo.cfg key not supported, ignored", "key", key)
//	}
//
// and, with no configuration file at all, config.Default().
//
// A key this package does not know is ignored and listed in Config.Unknown,
// unless it asks for security or a limit Collie does not implement yet
// (TLS, SASL, quota enforcement, ...): a server that ignored such a key
// would not be what its operator asked for, so Parse fails with a
// *NotImplementedError naming all of them. The list is in unimplemented.go.
package config

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collie-io/collie/server/tlsconfig"
)

// Config is a parsed zoo.cfg. Keys are named after ZooKeeper's; durations
// that the file gives in milliseconds or hours are time.Durations here.
type Config struct {
	TickTime  time.Duration // tickTime: the unit of session expiry and of the limits below
	InitLimit int           // initLimit, in ticks
	SyncLimit int           // syncLimit, in ticks

	// DataDir holds snapshots and the myid file; DataLogDir holds the log
	// and defaults to DataDir. Relative paths are relative to the process's
	// working directory, as in ZooKeeper.
	DataDir    string
	DataLogDir string

	ClientPort              int    // clientPort; 0 until set by the file or by this server's server.N line
	ClientPortAddress       string // clientPortAddress; "" listens on all interfaces
	ClientPortListenBacklog int    // clientPortListenBacklog; -1 leaves the system default
	MaxClientCnxns          int    // maxClientCnxns: connections per client IP; 0 or less is unlimited

	// SecureClientPort is secureClientPort: a port serving clients over
	// TLS only, beside ClientPort or alone; 0 when not set.
	// SecureClientPortAddress is secureClientPortAddress, "" for all
	// interfaces.
	SecureClientPort        int
	SecureClientPortAddress string
	// ClientPortUnification is client.portUnification: ClientPort serves
	// TLS clients too, each connection told apart by its first byte.
	ClientPortUnification bool
	// ClientCertReload is client.certReload (ZooKeeper 3.8.6 and 3.9):
	// the key and trust stores are read again when their files change,
	// and new connections get what they hold then.
	ClientCertReload bool
	// SSL are the ssl.* keys: the key and trust stores and the TLS
	// parameters of SecureClientPort and of a unified ClientPort. Their
	// passwords are secrets.
	SSL tlsconfig.Settings
	// SSLQuorum is sslQuorum: a server connects to the other servers of
	// its ensemble with TLS. PortUnification is portUnification: its peer
	// port takes plaintext peers beside TLS ones, each connection told
	// apart by its first byte; with neither the peer port is plaintext
	// only, with SSLQuorum alone TLS only. QuorumSSL are the
	// ssl.quorum.* keys that configure it; their passwords are secrets.
	// QuorumSSL.SkipHostnameVerification is
	// ssl.quorum.hostnameVerification=false, both ways.
	SSLQuorum       bool
	PortUnification bool
	QuorumSSL       tlsconfig.Settings
	// QuorumReverseDNS is ssl.quorum.allowReverseDnsLookup: a peer's
	// certificate may name what a reverse lookup of its address gives
	// (true by default, as in ZooKeeper).
	QuorumReverseDNS bool
	// SSLQuorumReloadCertFiles is sslQuorumReloadCertFiles: the quorum
	// key and trust stores are read again when their files change.
	SSLQuorumReloadCertFiles bool
	// ServerCnxnFactory is serverCnxnFactory, ZooKeeper's choice between
	// its NIO and Netty connection code, which ZooKeeper needs set to
	// Netty for TLS. Collie has one implementation; the key is accepted
	// and changes nothing.
	ServerCnxnFactory string

	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// client may negotiate. The file gives milliseconds, -1 meaning the
	// default of 2 and 20 ticks.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration

	SnapCount                int           // snapCount: log entries between snapshots; raised to 2 as ZooKeeper does
	AutopurgeSnapRetainCount int           // autopurge.snapRetainCount; raised to 3 as ZooKeeper does
	AutopurgePurgeInterval   time.Duration // autopurge.purgeInterval, in hours in the file; 0 disables purging
	JuteMaxBuffer            int           // jute.maxbuffer: the largest request or znode payload, in bytes
	// PreAllocSize is the size of a transaction log file, in bytes
	// (preAllocSize, in KiB in the file, as ZooKeeper's zookeeper.preAllocSize).
	PreAllocSize int64

	// FourLetterWhitelist is the set of four-letter words the server
	// answers (4lw.commands.whitelist). "srvr" is always in it, as in
	// ZooKeeper, and "*" in the file enables every word ZooKeeper knows.
	FourLetterWhitelist map[string]bool

	ExtendedTypesEnabled bool   // extendedTypesEnabled: allows TTL nodes; limits server ids to 254
	SuperDigest          string // DigestAuthenticationProvider.superDigest: "user:base64(sha1(user:password))"
	LocalSessionsEnabled bool   // localSessionsEnabled

	// SASL authentication on the client port, as ZooKeeper configures it
	// (see sasl.go): the JAAS file and its section give the DIGEST-MD5
	// users; the provider makes sasl ids count in ACLs.
	JAASConfigFile    string            // java.security.auth.login.config, or -D of it in SERVER_JVMFLAGS or JVMFLAGS
	SASLServerSection string            // sasl.serverconfig: the JAAS section of the server; "" is "Server"
	SASLUsers         map[string]string // read by Load from that section: user → password; nil without one (no SASL)
	SASLAuthProvider  bool              // authProvider.N=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
	SASLSuperUsers    []string          // superUser and superUser.*: SASL users who are super users
	// SASLSuperPassword is SASLAuthenticationProvider.superPassword: the
	// password of the SASL user "super", when the JAAS section has one.
	SASLSuperPassword string
	// AllowSASLFailedClients keeps the connection of a client whose SASL
	// authentication failed (allowSaslFailedClients), unless SASL is
	// required.
	AllowSASLFailedClients bool
	// SASLKerberos, read by Load when the JAAS section has a
	// Krb5LoginModule, makes the server accept Kerberos (GSSAPI) clients,
	// and only them; nil without one.
	SASLKerberos *SASLKerberos
	// Krb5 are the Kerberos keys (see kerberos.go).
	Krb5 Krb5Settings
	// X509AuthProvider is authProvider.N naming X509AuthenticationProvider
	// (see X509Scheme); X509SuperUser is
	// X509AuthenticationProvider.superUser, the certificate subject, as
	// getName() writes it, of a TLS client who is a super user.
	X509AuthProvider bool
	X509SuperUser    string
	// EnforceAuthSchemes are the schemes a session must have an identity
	// of before it is served (enforce.auth.schemes, with
	// enforce.auth.enabled=true; sasl alone with
	// sessionRequireClientSASLAuth=true); nil serves every session.
	EnforceAuthSchemes []string
	// QuorumAuth is SASL authentication between servers (quorum.auth.*;
	// see quorumauth.go). Its passwords are secrets.
	QuorumAuth QuorumAuth

	AdminServerEnabled bool   // admin.enableServer
	AdminServerPort    int    // admin.serverPort
	AdminServerAddress string // admin.serverAddress
	AdminCommandURL    string // admin.commandURL: the path under which the admin commands are served
	// AdminForceHTTPS is admin.forceHttps: the admin port serves HTTPS
	// only. AdminPortUnification is admin.portUnification: it serves
	// HTTP and HTTPS, each connection told apart by its first byte. Either
	// takes the server's key and certificate from the ssl.quorum.* key
	// store, as ZooKeeper does, whether or not the servers use TLS between
	// them. AdminNeedClientAuth is admin.needClientAuth (ZooKeeper 3.9):
	// an HTTPS client must show a certificate the ssl.quorum.* trust store
	// trusts; without it none is asked for, whatever
	// ssl.quorum.clientAuth says.
	AdminForceHTTPS      bool
	AdminPortUnification bool
	AdminNeedClientAuth  bool
	// AdminPprof serves Go's profiles under /debug/pprof/ on the admin
	// port (admin.pprof, a Collie key). Profiles reveal the process's
	// internals and cost CPU while taken, so they are off unless asked for.
	AdminPprof bool
	// AdminSnapshotEnabled is admin.snapshot.enabled (ZooKeeper 3.9): the
	// snapshot admin command answers. AdminRateLimiterInterval is
	// admin.rateLimiterIntervalInMS: the least time between two snapshots
	// the command takes.
	AdminSnapshotEnabled     bool
	AdminRateLimiterInterval time.Duration

	// LinearizableReads makes every read wait until the server has applied
	// everything committed when the read arrived, as if each were preceded
	// by a sync (linearizableReads, a Collie key). ZooKeeper's reads are
	// only sequentially consistent: a read on a follower may miss a write
	// another client saw acknowledged.
	LinearizableReads bool

	// ReadOnlyMode lets a server of an ensemble that has lost its leader
	// serve reads to clients that ask for a read-only session, as
	// ZooKeeper's readonlymode.enabled (a Java system property there, a
	// zoo.cfg key here). It also allows the isro four-letter word, which
	// clients use to find a server that has a leader again.
	ReadOnlyMode bool

	// EnforceQuota refuses a create or setData that would take a quota
	// under /zookeeper/quota past a hard limit, with QuotaExceeded, and
	// logs what goes past a soft one, as ZooKeeper's
	// zookeeper.enforceQuota: the key, or -D of it in SERVER_JVMFLAGS or
	// JVMFLAGS. Without it quotas are only counted.
	EnforceQuota bool
	// enforceQuotaSet says the file set EnforceQuota, over the JVM flags.
	enforceQuotaSet bool

	// Initial is the text of the zoo.cfg that Load read, which the admin
	// command initial_configuration reports, with the values of secret
	// keys (IsSecretKey) replaced; "" when no file was read.
	Initial string

	// PrometheusMetrics is set when metricsProvider.className names
	// ZooKeeper's PrometheusMetricsProvider: the metrics are then served
	// at /metrics on MetricsProviderHTTPHost:MetricsProviderHTTPPort, as
	// that provider serves them. ZooKeeper's DefaultMetricsProvider (its
	// default) and NullMetricsProvider serve no such port.
	PrometheusMetrics        bool
	MetricsProviderHTTPHost  string // metricsProvider.httpHost; 0.0.0.0 as in ZooKeeper 3.8
	MetricsProviderHTTPPort  int    // metricsProvider.httpPort; 7000 as in ZooKeeper
	MetricsProviderExportJVM bool   // metricsProvider.exportJvmInfo: Go runtime and process metrics here; true as in ZooKeeper

	// DigestEnabled keeps the digest log the hash command lists
	// (digest.enabled, ZooKeeper's zookeeper.digest.enabled property);
	// true as in ZooKeeper 3.8.
	DigestEnabled bool

	ContainerCheckInterval time.Duration // znode.container.checkIntervalMs
	ContainerMaxPerMinute  int           // znode.container.maxPerMinute

	// ServerID is this server's id from the myid file; 0 when unknown,
	// which is fine for a standalone server.
	ServerID uint64
	// Servers are the server.N lines, ordered by id.
	Servers []Server
	// Standalone is true unless two or more participants are listed or
	// standaloneEnabled=false, as in ZooKeeper.
	Standalone bool

	// DynamicConfigFile is the dynamicConfigFile key. The file it names is
	// not read, so server.N lines kept there are not part of Servers.
	DynamicConfigFile string
	// Unknown lists, in file order, the keys this package does not act on:
	// ZooKeeper keys Collie does not support (dynamicConfigFile among them)
	// as well as misspellings. The caller should warn about them. None asks
	// for security or a limit: Parse refuses those (NotImplementedError).
	Unknown []string
}

// Server is one server.N line:
//
//	server.N=host:peerPort:electionPort[:participant|:observer][;[clientAddress:]clientPort]
//
// An IPv6 host or clientAddress is written in brackets and stored without.
type Server struct {
	ID           uint64
	Host         string
	PeerPort     int
	ElectionPort int
	Observer     bool

	// ClientAddress and ClientPort come from the part after ';'. ClientPort
	// is 0 when the line has no such part; ClientAddress is "" when only a
	// port is given, which means all interfaces.
	ClientAddress string
	ClientPort    int
}

// ValueError reports a key whose value is not allowed.
type ValueError struct {
	Key     string // the key as written in the file
	Value   string // the value, without surrounding blanks
	Problem string // what is wrong, phrased to follow the value: "is not a port number (1-65535)"
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("%s: %q %s", e.Key, e.Value, e.Problem)
}

// ZooKeeper's defaults, which Collie keeps.
const (
	defaultTickTime        = 2000 * time.Millisecond
	defaultInitLimit       = 10
	defaultSyncLimit       = 5
	defaultDataDir         = "collie-data"
	defaultClientPort      = 2181
	defaultMaxClientCnxns  = 60
	defaultSnapCount       = 100000
	minSnapCount           = 2
	minSnapRetainCount     = 3
	defaultJuteMaxBuffer   = 0xfffff
	defaultPreAllocKiB     = 64 << 10
	minPreAllocKiB         = 64
	maxPreAllocKiB         = 4 << 20
	defaultAdminPort       = 8080
	defaultMetricsPort     = 7000
	defaultAdminAddress    = "0.0.0.0"
	defaultAdminCommandURL = "/commands"
	// defaultAdminRateLimiterInterval is ZooKeeper 3.9's
	// zookeeper.admin.rateLimiterIntervalInMS.
	defaultAdminRateLimiterInterval = 5 * time.Minute
	defaultContainerCheck           = time.Minute
	defaultContainerPerMin          = 10000

	// maxExtendedServerID is the largest server id that fits in the byte
	// extended ephemeral owners (TTL nodes) reserve for it.
	maxExtendedServerID = 254
)

// fourLetterWords are the commands "*" enables, as ZooKeeper 3.8 knows them.
var fourLetterWords = []string{
	"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "ruok", "stmk",
	"srst", "srvr", "stat", "wchc", "wchp", "wchs", "mntr", "isro", "hash",
}

// Default returns the configuration of a standalone server started
// without a zoo.cfg: ZooKeeper's defaults, with data in "collie-data" under
// the working directory.
func Default() Config {
	c := defaults()
	c.DataDir = defaultDataDir
	c.DataLogDir = defaultDataDir
	c.ClientPort = defaultClientPort
	c.MinSessionTimeout = 2 * c.TickTime
	c.MaxSessionTimeout = 20 * c.TickTime
	return c
}

// defaults are the values a zoo.cfg starts from: everything but the keys
// ZooKeeper requires or derives.
func defaults() Config {
	return Config{
		TickTime:                 defaultTickTime,
		InitLimit:                defaultInitLimit,
		SyncLimit:                defaultSyncLimit,
		ClientPortListenBacklog:  -1,
		MaxClientCnxns:           defaultMaxClientCnxns,
		SnapCount:                defaultSnapCount,
		AutopurgeSnapRetainCount: minSnapRetainCount,
		JuteMaxBuffer:            defaultJuteMaxBuffer,
		PreAllocSize:             defaultPreAllocKiB << 10,
		FourLetterWhitelist:      map[string]bool{"srvr": true},
		AdminServerEnabled:       true,
		AdminServerPort:          defaultAdminPort,
		AdminServerAddress:       defaultAdminAddress,
		AdminCommandURL:          defaultAdminCommandURL,
		AdminSnapshotEnabled:     true,
		AdminRateLimiterInterval: defaultAdminRateLimiterInterval,
		MetricsProviderHTTPHost:  "0.0.0.0",
		MetricsProviderHTTPPort:  defaultMetricsPort,
		MetricsProviderExportJVM: true,
		DigestEnabled:            true,
		ContainerCheckInterval:   defaultContainerCheck,
		ContainerMaxPerMinute:    defaultContainerPerMin,
		Standalone:               true,
		QuorumReverseDNS:         true,
	}
}

// Parse reads zoo.cfg text. A key given twice takes its last value, as
// with java.util.Properties. Every invalid value is reported, each error
// naming the key, the value and what is allowed.
//
// Parse checks each value, and what ZooKeeper checks while reading the
// file. It leaves ServerID at 0; call ForServer with the id from myid and
// then Validate, which checks the configuration as a whole, or use Load,
// which does both.
func Parse(data []byte) (Config, error) {
	props, err := parseProperties(string(data))
	if err != nil {
		return Config{}, err
	}
	props = lastOccurrences(props)

	p := parser{c: defaults(), minSession: -1, maxSession: -1, standaloneEnabled: true}
	serverKeys := map[uint64]string{}
	for _, prop := range props {
		key := trimJava(prop.key)
		value := trimJava(prop.value)
		if strings.HasPrefix(key, "server.") {
			s, err := parseServer(key, value)
			if err != nil {
				p.errs = append(p.errs, err)
				continue
			}
			if other, dup := serverKeys[s.ID]; dup {
				p.errs = append(p.errs, fmt.Errorf("%s: server id %d is already given by %s", key, s.ID, other))
				continue
			}
			serverKeys[s.ID] = key
			p.c.Servers = append(p.c.Servers, s)
			continue
		}
		p.set(key, value, prop.line)
	}
	c := &p.c
	slices.SortFunc(c.Servers, func(a, b Server) int { return cmp.Compare(a.ID, b.ID) })
	c.Standalone = p.standaloneEnabled && participants(c.Servers) < 2

	if c.DynamicConfigFile != "" {
		for _, s := range c.Servers {
			p.errs = append(p.errs, fmt.Errorf("%s: must be in the dynamic config file when dynamicConfigFile is set", serverKeys[s.ID]))
		}
	}
	if c.DataDir == "" {
		p.errs = append(p.errs, errors.New("dataDir is not set: zoo.cfg must say where to keep data"))
	}
	if c.DataLogDir == "" {
		c.DataLogDir = c.DataDir
	}
	if c.ClientPort == 0 && c.ClientPortAddress != "" {
		p.errs = append(p.errs, errors.New("clientPortAddress is set but clientPort is not"))
	}
	if c.SecureClientPort == 0 && c.SecureClientPortAddress != "" {
		p.errs = append(p.errs, errors.New("secureClientPortAddress is set but secureClientPort is not"))
	}
	// tickTime may come after the timeouts in the file, so the defaults
	// that depend on it are derived only now.
	c.MinSessionTimeout = sessionTimeout(p.minSession, 2*c.TickTime)
	c.MaxSessionTimeout = sessionTimeout(p.maxSession, 20*c.TickTime)

	p.finishSASL()

	if len(p.notImplemented) > 0 {
		p.errs = append(p.errs, &NotImplementedError{Keys: p.notImplemented})
	}
	if err := errors.Join(p.errs...); err != nil {
		return Config{}, err
	}
	return *c, nil
}

// parser holds what Parse needs beyond the Config it builds.
type parser struct {
	c Config
	// minSession and maxSession are the timeouts in milliseconds as the
	// file gives them; -1 means derive from tickTime.
	minSession, maxSession int
	standaloneEnabled      bool
	// enforceAuth and the rest are the keys of required authentication,
	// which decide together (finishSASL).
	enforceAuth, requireSASL bool
	enforceSchemes           []string
	errs                     []error
	// notImplemented are the keys that ask for what Collie does not
	// implement yet, reported together after the other errors.
	notImplemented []NotImplementedKey
}

// set applies one key other than server.N, which starts on line of the file.
func (p *parser) set(key, value string, line int) {
	c := &p.c
	var err error
	if p.setTLS(key, value) {
		return
	}
	switch key {
	case "tickTime":
		c.TickTime, err = millis(key, value)
	case "initLimit":
		c.InitLimit, err = intIn(key, value, 1, math.MaxInt32, "a positive number of ticks")
	case "syncLimit":
		c.SyncLimit, err = intIn(key, value, 1, math.MaxInt32, "a positive number of ticks")
	case "dataDir":
		c.DataDir, err = nonEmpty(key, value, "a directory")
	case "dataLogDir":
		c.DataLogDir, err = nonEmpty(key, value, "a directory")
	case "clientPort":
		// 0 means not set, as in ZooKeeper; this server's server.N line
		// may then give the port.
		c.ClientPort, err = intIn(key, value, 0, 65535, "a port number (1-65535)")
	case "clientPortAddress":
		c.ClientPortAddress, err = nonEmpty(key, value, "a host name or IP address")
		c.ClientPortAddress = unbracket(c.ClientPortAddress)
	case "clientPortListenBacklog":
		c.ClientPortListenBacklog, err = intIn(key, value, math.MinInt32, math.MaxInt32, "a number of connections")
	case "maxClientCnxns":
		c.MaxClientCnxns, err = intIn(key, value, math.MinInt32, math.MaxInt32, "a number of connections (0 = unlimited)")
	case "minSessionTimeout":
		p.minSession, err = intIn(key, value, -1, math.MaxInt32, "a number of milliseconds (-1 = 2 ticks)")
	case "maxSessionTimeout":
		p.maxSession, err = intIn(key, value, -1, math.MaxInt32, "a number of milliseconds (-1 = 20 ticks)")
	case "snapCount":
		c.SnapCount, err = intIn(key, value, math.MinInt32, math.MaxInt32, "a number of transactions")
		c.SnapCount = max(c.SnapCount, minSnapCount)
	case "autopurge.snapRetainCount":
		c.AutopurgeSnapRetainCount, err = intIn(key, value, math.MinInt32, math.MaxInt32, "a number of snapshots")
		c.AutopurgeSnapRetainCount = max(c.AutopurgeSnapRetainCount, minSnapRetainCount)
	case "autopurge.purgeInterval":
		var hours int
		hours, err = intIn(key, value, math.MinInt32, math.MaxInt32, "a number of hours (0 = never purge)")
		c.AutopurgePurgeInterval = time.Duration(max(hours, 0)) * time.Hour
	case "jute.maxbuffer":
		c.JuteMaxBuffer, err = intIn(key, value, 1, math.MaxInt32, "a positive number of bytes")
	case "preAllocSize", "zookeeper.preAllocSize":
		// ZooKeeper grows its log file by this much at a time; Collie cuts
		// its log into files of this size, of at least minPreAllocKiB so
		// that a small value from ZooKeeper's test setups still works.
		var kib int
		kib, err = intIn(key, value, 1, maxPreAllocKiB, "a size in KiB from 1 to 4194304")
		c.PreAllocSize = int64(max(kib, minPreAllocKiB)) << 10
	case "4lw.commands.whitelist":
		c.FourLetterWhitelist = parseWhitelist(value)
	case "extendedTypesEnabled":
		c.ExtendedTypesEnabled, err = boolean(key, value)
	case "DigestAuthenticationProvider.superDigest", "zookeeper.DigestAuthenticationProvider.superDigest":
		c.SuperDigest = value
		if problem := checkSuperDigest(value); problem != "" {
			err = &ValueError{Key: key, Value: value, Problem: problem}
		}
	case "localSessionsEnabled":
		c.LocalSessionsEnabled, err = boolean(key, value)
	case "admin.enableServer":
		c.AdminServerEnabled, err = boolean(key, value)
	case "admin.serverPort":
		c.AdminServerPort, err = intIn(key, value, 1, 65535, "a port number (1-65535)")
	case "admin.serverAddress":
		c.AdminServerAddress, err = nonEmpty(key, value, "a host name or IP address")
		c.AdminServerAddress = unbracket(c.AdminServerAddress)
	case "admin.commandURL":
		c.AdminCommandURL = value
		if problem := checkCommandURL(value); problem != "" {
			err = &ValueError{Key: key, Value: value, Problem: problem}
		}
	case "admin.forceHttps", "zookeeper.admin.forceHttps":
		c.AdminForceHTTPS, err = boolean(key, value)
	case "admin.portUnification", "zookeeper.admin.portUnification":
		c.AdminPortUnification, err = boolean(key, value)
	case "admin.needClientAuth", "zookeeper.admin.needClientAuth":
		c.AdminNeedClientAuth, err = boolean(key, value)
	case "admin.pprof":
		c.AdminPprof, err = boolean(key, value)
	case "admin.snapshot.enabled", "zookeeper.admin.snapshot.enabled":
		c.AdminSnapshotEnabled, err = boolean(key, value)
	case "admin.rateLimiterIntervalInMS", "zookeeper.admin.rateLimiterIntervalInMS":
		var ms int
		ms, err = intIn(key, value, 0, math.MaxInt32, "a number of milliseconds (0 or more)")
		c.AdminRateLimiterInterval = time.Duration(ms) * time.Millisecond
	case "linearizableReads":
		c.LinearizableReads, err = boolean(key, value)
	case "readonlymode.enabled", "zookeeper.readonlymode.enabled":
		c.ReadOnlyMode, err = boolean(key, value)
	case "enforceQuota", "zookeeper.enforceQuota":
		c.EnforceQuota, err = boolean(key, value)
		c.enforceQuotaSet = true
	case "digest.enabled", "zookeeper.digest.enabled":
		c.DigestEnabled, err = boolean(key, value)
	case "metricsProvider.className":
		c.PrometheusMetrics, err = metricsProvider(key, value)
	case "metricsProvider.httpHost":
		c.MetricsProviderHTTPHost, err = nonEmpty(key, value, "a host name or IP address")
		c.MetricsProviderHTTPHost = unbracket(c.MetricsProviderHTTPHost)
	case "metricsProvider.httpPort":
		c.MetricsProviderHTTPPort, err = intIn(key, value, 1, 65535, "a port number (1-65535)")
	case "metricsProvider.exportJvmInfo":
		c.MetricsProviderExportJVM, err = boolean(key, value)
	case "metricsProvider.numWorkerThreads", "metricsProvider.maxQueueSize", "metricsProvider.workerShutdownTimeoutMs":
		// The Java provider's thread pool for observations; Collie
		// observes on the spot, so these only need to be numbers.
		_, err = intIn(key, value, math.MinInt32, math.MaxInt64, "a number")
	case "znode.container.checkIntervalMs":
		c.ContainerCheckInterval, err = millis(key, value)
	case "znode.container.maxPerMinute":
		c.ContainerMaxPerMinute, err = intIn(key, value, 1, math.MaxInt32, "a positive number of containers")
	case "standaloneEnabled":
		p.standaloneEnabled, err = boolean(key, value)
	case "dynamicConfigFile":
		c.DynamicConfigFile = value
		c.Unknown = append(c.Unknown, key)
	default:
		if p.setSASL(key, value) || p.setQuorumAuth(key, value) || p.setX509(key, value) {
			break
		}
		// ZooKeeper weighs votes by group.N and weight.N lines. Collie's
		// quorums are plain majorities, so ignoring them would change which
		// servers can elect a leader.
		if strings.HasPrefix(key, "group") || strings.HasPrefix(key, "weight") {
			err = fmt.Errorf("%s: hierarchical quorums (group.N and weight.N) are not supported; quorums are majorities of the participants", key)
		} else if k, ok := notImplemented(key, value); ok {
			k.Line = line
			p.notImplemented = append(p.notImplemented, k)
		} else {
			c.Unknown = append(c.Unknown, key)
		}
	}
	if err != nil {
		p.errs = append(p.errs, err)
	}
}

// setTLS applies a key of TLS, on the client port or between servers, and
// reports whether it was one.
// ZooKeeper reads these as the Java system properties zookeeper.<key>,
// which it also makes of zoo.cfg's keys, so both spellings count.
func (p *parser) setTLS(key, value string) bool {
	c := &p.c
	var err error
	switch key {
	case "secureClientPort":
		// 0 means not set, as in ZooKeeper.
		c.SecureClientPort, err = intIn(key, value, 0, 65535, "a port number (1-65535)")
	case "secureClientPortAddress":
		c.SecureClientPortAddress, err = nonEmpty(key, value, "a host name or IP address")
		c.SecureClientPortAddress = unbracket(c.SecureClientPortAddress)
	default:
		name := strings.TrimPrefix(key, "zookeeper.")
		ssl := &c.SSL
		switch name {
		case "client.portUnification":
			c.ClientPortUnification, err = boolean(key, value)
		case "client.certReload":
			c.ClientCertReload, err = boolean(key, value)
		case "serverCnxnFactory":
			c.ServerCnxnFactory = value
		case "sslQuorum":
			c.SSLQuorum, err = boolean(key, value)
		case "portUnification":
			c.PortUnification, err = boolean(key, value)
		case "sslQuorumReloadCertFiles":
			c.SSLQuorumReloadCertFiles, err = boolean(key, value)
		case "ssl.quorum.hostnameVerification":
			var verify bool
			verify, err = boolean(key, value)
			c.QuorumSSL.SkipHostnameVerification = !verify
		case "ssl.quorum.allowReverseDnsLookup":
			c.QuorumReverseDNS, err = boolean(key, value)
		case "ssl.hostnameVerification":
			// ZooKeeper's server never checks a client's host name on
			// the client port (ClientX509Util), whatever this says.
			_, err = boolean(key, value)
		case "ssl.handshakeDetectionTimeoutMillis", "ssl.quorum.handshakeDetectionTimeoutMillis":
			// How long ZooKeeper's unified quorum port waits for a first
			// byte before it takes a silent connection for plaintext.
			// Collie's peers always speak first, and a unified port,
			// client or peer, waits for the first byte within the
			// handshake's bound.
			_, err = intIn(key, value, math.MinInt32, math.MaxInt32, "a number of milliseconds")
		default:
			var known bool
			if rest, ok := strings.CutPrefix(name, "ssl.quorum."); ok {
				known, err = setStoreKey(&c.QuorumSSL, key, rest, value)
			} else if rest, ok := strings.CutPrefix(name, "ssl."); ok {
				known, err = setStoreKey(ssl, key, rest, value)
			}
			if !known {
				return false
			}
		}
	}
	if err != nil {
		p.errs = append(p.errs, err)
	}
	return true
}

// setStoreKey applies a key of TLS settings that the client port (ssl.*)
// and the peer port (ssl.quorum.*) share: name is the key without that
// prefix. It reports whether it was one.
func setStoreKey(ssl *tlsconfig.Settings, key, name, value string) (bool, error) {
	var err error
	switch name {
	case "keyStore.location":
		ssl.KeyStore.Location = value
	case "keyStore.password":
		ssl.KeyStore.Password = value
	case "keyStore.passwordPath":
		ssl.KeyStore.PasswordPath = value
	case "keyStore.type":
		ssl.KeyStore.Type, err = storeType(key, value)
	case "trustStore.location":
		ssl.TrustStore.Location = value
	case "trustStore.password":
		ssl.TrustStore.Password = value
	case "trustStore.passwordPath":
		ssl.TrustStore.PasswordPath = value
	case "trustStore.type":
		ssl.TrustStore.Type, err = storeType(key, value)
	case "clientAuth":
		if ssl.ClientAuth, err = tlsconfig.ParseClientAuth(value); err != nil {
			err = &ValueError{Key: key, Value: value, Problem: "is not none, want or need"}
		}
	case "protocol":
		ssl.Protocol = value
	case "enabledProtocols":
		ssl.EnabledProtocols = value
	case "ciphersuites":
		ssl.CipherSuites = value
	default:
		return false, nil
	}
	return true, err
}

// storeType checks a key or trust store's type; "" infers it from the
// file's extension, as in ZooKeeper.
func storeType(key, value string) (string, error) {
	if _, err := (tlsconfig.Store{Type: value}).FileType(); value != "" && err != nil {
		return "", &ValueError{Key: key, Value: value, Problem: "is not JKS, PEM or PKCS12"}
	}
	return value, nil
}

// lastOccurrences keeps, for each key, only its last entry, in file order.
func lastOccurrences(props []property) []property {
	last := make(map[string]int, len(props))
	for i, prop := range props {
		last[trimJava(prop.key)] = i
	}
	kept := props[:0:0]
	for i, prop := range props {
		if last[trimJava(prop.key)] == i {
			kept = append(kept, prop)
		}
	}
	return kept
}

// trimJava removes what Java's String.trim removes: every character up to
// and including the space.
func trimJava(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

func intIn(key, value string, lo, hi int64, want string) (int, error) {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, &ValueError{Key: key, Value: value, Problem: "is not " + want}
	}
	return int(n), nil
}

func millis(key, value string) (time.Duration, error) {
	n, err := intIn(key, value, 1, math.MaxInt32, "a positive number of milliseconds")
	return time.Duration(n) * time.Millisecond, err
}

// boolean accepts what ZooKeeper's own boolean keys accept. Keys ZooKeeper
// reads as system properties take any other word as false; here a typo is
// an error instead.
func boolean(key, value string) (bool, error) {
	switch {
	case strings.EqualFold(value, "true"):
		return true, nil
	case strings.EqualFold(value, "false"):
		return false, nil
	}
	return false, &ValueError{Key: key, Value: value, Problem: "is not true or false"}
}

func nonEmpty(key, value, want string) (string, error) {
	if value == "" {
		return "", &ValueError{Key: key, Value: value, Problem: "is not " + want}
	}
	return value, nil
}

func unbracket(host string) string {
	if len(host) > 2 && host[0] == '[' && host[len(host)-1] == ']' {
		return host[1 : len(host)-1]
	}
	return host
}

func sessionTimeout(ms int, dflt time.Duration) time.Duration {
	if ms == -1 {
		return dflt
	}
	return time.Duration(ms) * time.Millisecond
}

// parseWhitelist reads a comma-separated list of four-letter words. Names
// ZooKeeper does not know are kept, as ZooKeeper keeps them: they enable
// nothing.
func parseWhitelist(value string) map[string]bool {
	words := map[string]bool{"srvr": true} // ZooKeeper's own scripts need srvr
	for word := range strings.SplitSeq(value, ",") {
		word = trimJava(word)
		if word == "*" {
			for _, w := range fourLetterWords {
				words[w] = true
			}
			break
		}
		if word != "" {
			words[word] = true
		}
	}
	return words
}

// checkSuperDigest returns what is wrong with a super user digest, or "".
// ZooKeeper compares the digest of the presented credentials with this
// string, so any other shape could never match.
func checkSuperDigest(s string) string {
	const problem = `is not of the form user:base64(sha1("user:password"))`
	user, digest, ok := strings.Cut(s, ":")
	if !ok || user == "" {
		return problem
	}
	sum, err := base64.StdEncoding.DecodeString(digest)
	if err != nil || len(sum) != 20 {
		return problem
	}
	return ""
}

// checkCommandURL returns what is wrong with an admin command path, or "".
// The path is matched against request paths as it is, so it must be one.
func checkCommandURL(s string) string {
	if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, "?# \t") {
		return "is not a URL path such as /commands"
	}
	return ""
}

// serverForm describes a server.N value in error messages.
const serverForm = "host:peerPort:electionPort[:participant|:observer][;[clientAddress:]clientPort]"

// parseServer reads one server.N line, following ZooKeeper's QuorumServer.
func parseServer(key, value string) (Server, error) {
	idText := strings.TrimPrefix(key, "server.")
	id, err := strconv.ParseUint(idText, 10, 63)
	if err != nil || id == 0 {
		return Server{}, &ValueError{Key: key, Value: idText, Problem: "is not a server id (1 or more)"}
	}
	bad := func(problem string) (Server, error) {
		return Server{}, &ValueError{Key: key, Value: value, Problem: problem}
	}
	badForm := func() (Server, error) { return bad("is not of the form " + serverForm) }

	halves := splitJava(value, ";")
	if len(halves) == 0 || len(halves) > 2 {
		return badForm()
	}
	if strings.Contains(halves[0], "|") {
		return bad("lists several addresses for one server, which is not supported")
	}
	parts, ok := hostAndPort(halves[0])
	if !ok || len(parts) < 3 || len(parts) > 4 || parts[0] == "" {
		return badForm()
	}
	s := Server{ID: id, Host: parts[0]}
	if s.PeerPort, ok = portNumber(parts[1]); !ok {
		return bad(fmt.Sprintf("has peer port %q, which is not a port number (1-65535)", parts[1]))
	}
	if s.ElectionPort, ok = portNumber(parts[2]); !ok {
		return bad(fmt.Sprintf("has election port %q, which is not a port number (1-65535)", parts[2]))
	}
	if s.PeerPort == s.ElectionPort {
		return bad("uses one port for both peer and election traffic; they must differ")
	}
	if len(parts) == 4 {
		switch strings.ToLower(trimJava(parts[3])) {
		case "participant":
		case "observer":
			s.Observer = true
		default:
			return bad(fmt.Sprintf("has role %q, which is not participant or observer", parts[3]))
		}
	}
	if len(halves) == 2 {
		client, ok := hostAndPort(halves[1])
		if !ok || len(client) == 0 || len(client) > 2 {
			return badForm()
		}
		if len(client) == 2 {
			if client[0] == "" {
				return badForm()
			}
			s.ClientAddress = client[0]
		}
		port := client[len(client)-1]
		if s.ClientPort, ok = portNumber(port); !ok {
			return bad(fmt.Sprintf("has client port %q, which is not a port number (1-65535)", port))
		}
	}
	return s, nil
}

// splitJava splits as Java's String.split does: trailing empty fields are
// dropped, so "host:2888:3888:" has three fields.
func splitJava(s, sep string) []string {
	if s == "" {
		return []string{""}
	}
	fields := strings.Split(s, sep)
	for len(fields) > 0 && fields[len(fields)-1] == "" {
		fields = fields[:len(fields)-1]
	}
	return fields
}

// hostAndPort splits "host:port:..." or "[ipv6]:port:..." into the host
// and the colon-separated fields after it.
func hostAndPort(s string) ([]string, bool) {
	if !strings.HasPrefix(s, "[") {
		return splitJava(s, ":"), true
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return nil, false
	}
	host, rest := s[1:end], s[end+1:]
	if rest == "" {
		return []string{host}, true
	}
	if rest[0] != ':' || len(rest) == 1 {
		return nil, false
	}
	return append([]string{host}, splitJava(rest[1:], ":")...), true
}

func portNumber(s string) (int, bool) {
	n, err := strconv.Atoi(trimJava(s))
	return n, err == nil && n >= 1 && n <= 65535
}

func participants(servers []Server) int {
	n := 0
	for _, s := range servers {
		if !s.Observer {
			n++
		}
	}
	return n
}

// ParseMyID reads the contents of a myid file: this server's id on the
// first line.
func ParseMyID(data []byte) (uint64, error) {
	line, _ := cutLine(string(data))
	line = trimJava(line)
	id, err := strconv.ParseUint(line, 10, 63)
	if err != nil || id == 0 {
		return 0, &ValueError{Key: "myid", Value: line, Problem: "is not a server id (a whole number, 1 or more)"}
	}
	return id, nil
}

// ForServer returns the configuration as server id sees it: ServerID set
// and, when this server's server.N line gives a client port, the client
// address taken from there. It fails when clientPort or clientPortAddress
// disagree with that line, as ZooKeeper does.
func (c Config) ForServer(id uint64) (Config, error) {
	c.ServerID = id
	i := slices.IndexFunc(c.Servers, func(s Server) bool { return s.ID == id })
	if i < 0 || c.Servers[i].ClientPort == 0 {
		return c, nil
	}
	own := c.Servers[i]
	if c.ClientPort != 0 {
		sameAddress := isWildcard(c.ClientPortAddress) || c.ClientPortAddress == own.ClientAddress
		if !sameAddress || c.ClientPort != own.ClientPort {
			return Config{}, fmt.Errorf("clientPort %d and clientPortAddress %q differ from the client address %q of server.%d",
				c.ClientPort, c.ClientPortAddress, clientAddr(own), id)
		}
	}
	c.ClientPort = own.ClientPort
	c.ClientPortAddress = own.ClientAddress
	return c, nil
}

func isWildcard(host string) bool {
	return host == "" || host == "0.0.0.0" || host == "::"
}

// clientAddr is a server's client address as ZooKeeper prints it.
func clientAddr(s Server) string {
	host := s.ClientAddress
	if host == "" {
		host = "0.0.0.0"
	}
	return bracket(host) + ":" + strconv.Itoa(s.ClientPort)
}

func bracket(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// Validate checks the configuration as a whole: each value in range and
// the values consistent with each other and with ServerID. It reports
// every problem it finds.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.TickTime >= time.Millisecond, "tickTime must be at least 1 ms, not %v", c.TickTime)
	check(c.InitLimit > 0, "initLimit must be at least 1 tick, not %d", c.InitLimit)
	check(c.SyncLimit > 0, "syncLimit must be at least 1 tick, not %d", c.SyncLimit)
	check(c.DataDir != "", "dataDir is not set")
	check(c.DataLogDir != "", "dataLogDir is not set")
	switch {
	case c.ClientPort == 0 && c.SecureClientPort != 0:
		// A server may serve TLS clients alone.
	case c.ClientPort == 0 && len(c.Servers) > 0:
		errs = append(errs, errors.New("clientPort is not set: set it, or end this server's server.N line with ;clientPort"))
	case c.ClientPort == 0:
		errs = append(errs, errors.New("clientPort is not set"))
	default:
		check(validPort(c.ClientPort), "clientPort %d is not a port number (1-65535)", c.ClientPort)
	}
	check(c.SecureClientPort == 0 || validPort(c.SecureClientPort), "secureClientPort %d is not a port number (1-65535)", c.SecureClientPort)
	check(c.SecureClientPort == 0 || c.ClientPort != c.SecureClientPort || !sameHost(c.ClientPortAddress, c.SecureClientPortAddress),
		"clientPort and secureClientPort are both %d: they must differ (client.portUnification=true serves TLS on clientPort)", c.ClientPort)
	if c.QuorumTLS() {
		check(c.QuorumSSL.KeyStore.Location != "", "ssl.quorum.keyStore.location is not set: sslQuorum=true and portUnification=true need each server's key and certificate")
		if err := c.QuorumSSL.Check(); err != nil {
			errs = append(errs, fmt.Errorf("ssl.quorum.*: %w", err))
		}
	}
	if c.ServesTLS() {
		check(c.SSL.KeyStore.Location != "", "ssl.keyStore.location is not set: TLS clients need the server's key and certificate")
		if err := c.SSL.Check(); err != nil {
			errs = append(errs, err)
		}
	}
	check(c.MinSessionTimeout >= 0, "minSessionTimeout must not be negative")
	check(c.MinSessionTimeout <= c.MaxSessionTimeout, "minSessionTimeout (%d ms) must not be larger than maxSessionTimeout (%d ms)",
		c.MinSessionTimeout.Milliseconds(), c.MaxSessionTimeout.Milliseconds())
	check(c.SnapCount > 0, "snapCount must be at least 1, not %d", c.SnapCount)
	check(c.AutopurgeSnapRetainCount >= minSnapRetainCount,
		"autopurge.snapRetainCount must be at least %d, not %d", minSnapRetainCount, c.AutopurgeSnapRetainCount)
	check(c.AutopurgePurgeInterval >= 0, "autopurge.purgeInterval must not be negative")
	check(c.JuteMaxBuffer > 0, "jute.maxbuffer must be at least 1 byte, not %d", c.JuteMaxBuffer)
	if c.SuperDigest != "" {
		problem := checkSuperDigest(c.SuperDigest)
		check(problem == "", "DigestAuthenticationProvider.superDigest %q %s", c.SuperDigest, problem)
	}
	if c.AdminServerEnabled {
		check(validPort(c.AdminServerPort), "admin.serverPort %d is not a port number (1-65535)", c.AdminServerPort)
		problem := checkCommandURL(c.AdminCommandURL)
		check(problem == "", "admin.commandURL %q %s", c.AdminCommandURL, problem)
		errs = append(errs, c.checkAdminHTTPS()...)
	}
	check(!c.PrometheusMetrics || validPort(c.MetricsProviderHTTPPort),
		"metricsProvider.httpPort %d is not a port number (1-65535)", c.MetricsProviderHTTPPort)
	check(c.ContainerCheckInterval >= time.Millisecond,
		"znode.container.checkIntervalMs must be at least 1 ms, not %v", c.ContainerCheckInterval)
	check(c.ContainerMaxPerMinute > 0, "znode.container.maxPerMinute must be at least 1, not %d", c.ContainerMaxPerMinute)
	if c.ExtendedTypesEnabled {
		check(c.ServerID <= maxExtendedServerID,
			"extendedTypesEnabled is true, so the server id must be at most %d, not %d", maxExtendedServerID, c.ServerID)
	}
	errs = append(errs, c.validateMembers()...)
	errs = append(errs, c.validateSASL()...)
	errs = append(errs, c.validateQuorumAuth()...)
	return errors.Join(errs...)
}

// validateMembers checks the server.N lines and this server's place in
// them, with ZooKeeper's rules and messages where it has them.
func (c Config) validateMembers() []error {
	var errs []error
	seen := map[uint64]bool{}
	for _, s := range c.Servers {
		key := fmt.Sprintf("server.%d", s.ID)
		switch {
		case s.ID == 0:
			errs = append(errs, errors.New("server.0: server ids start at 1"))
		case seen[s.ID]:
			errs = append(errs, fmt.Errorf("%s: listed twice", key))
		case s.Host == "":
			errs = append(errs, fmt.Errorf("%s: host is empty", key))
		case !validPort(s.PeerPort) || !validPort(s.ElectionPort):
			errs = append(errs, fmt.Errorf("%s: ports %d and %d must be port numbers (1-65535)", key, s.PeerPort, s.ElectionPort))
		case s.PeerPort == s.ElectionPort:
			errs = append(errs, fmt.Errorf("%s: peer and election ports must differ", key))
		case s.ClientPort != 0 && !validPort(s.ClientPort):
			errs = append(errs, fmt.Errorf("%s: client port %d is not a port number (1-65535)", key, s.ClientPort))
		}
		seen[s.ID] = true
	}

	voters := participants(c.Servers)
	observers := len(c.Servers) - voters
	switch {
	case voters == 0 && observers > 0:
		errs = append(errs, errors.New("observers without participants is an invalid configuration"))
	case voters == 0 && !c.Standalone:
		errs = append(errs, errors.New("standaloneEnabled is false, so at least one participant server.N line is needed"))
	case voters == 1 && c.Standalone && observers > 0:
		errs = append(errs, errors.New("observers without a quorum is an invalid configuration: list at least two participants"))
	case voters >= 2 && c.Standalone:
		errs = append(errs, fmt.Errorf("%d participants are listed, so the server cannot be standalone", voters))
	}
	if c.Standalone {
		return errs
	}
	switch {
	case c.ServerID == 0:
		errs = append(errs, errors.New("this server's id is not set: create the myid file in dataDir holding the N of its server.N line"))
	case !seen[c.ServerID]:
		errs = append(errs, fmt.Errorf("this server's id %d (from myid) has no server.%d line", c.ServerID, c.ServerID))
	}
	return errs
}

// The metrics providers of ZooKeeper 3.8 metricsProvider.className may
// name.
const (
	PrometheusMetricsProvider = "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider"
	defaultMetricsProvider    = "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider"
	nullMetricsProvider       = "org.apache.zookeeper.metrics.impl.NullMetricsProvider"
)

// metricsProvider reports whether className asks for Prometheus metrics.
// ZooKeeper fails to start on a class it cannot load; so does Collie on
// one it does not stand in for.
func metricsProvider(key, className string) (bool, error) {
	switch className {
	case PrometheusMetricsProvider:
		return true, nil
	case defaultMetricsProvider, nullMetricsProvider:
		return false, nil
	}
	return false, fmt.Errorf("%s: %q is not a metrics provider Collie has: it serves %s's metrics, or none with %s or %s",
		key, className, PrometheusMetricsProvider, defaultMetricsProvider, nullMetricsProvider)
}

func validPort(p int) bool { return p >= 1 && p <= 65535 }

// sameHost reports whether two listen addresses may be the same one.
func sameHost(a, b string) bool {
	return a == b || isWildcard(a) || isWildcard(b)
}

// AdminHTTPS reports whether the admin server serves HTTPS:
// admin.forceHttps or admin.portUnification is true.
func (c Config) AdminHTTPS() bool {
	return c.AdminServerEnabled && (c.AdminForceHTTPS || c.AdminPortUnification)
}

// checkAdminHTTPS checks the keys of HTTPS on the admin port. ZooKeeper
// reads both ssl.quorum.* stores for it and, when it cannot, runs without
// an admin server; Collie refuses to start instead, and refuses
// admin.needClientAuth on a port that would serve plain HTTP alone.
func (c Config) checkAdminHTTPS() []error {
	if !c.AdminHTTPS() {
		if c.AdminNeedClientAuth {
			return []error{errors.New("admin.needClientAuth=true asks for client certificates, but the admin server serves plain HTTP: set admin.forceHttps=true or admin.portUnification=true")}
		}
		return nil
	}
	var errs []error
	for _, s := range []struct{ key, location string }{
		{"ssl.quorum.keyStore.location", c.QuorumSSL.KeyStore.Location},
		{"ssl.quorum.trustStore.location", c.QuorumSSL.TrustStore.Location},
	} {
		if s.location == "" {
			errs = append(errs, fmt.Errorf("%s is not set: admin.forceHttps=true and admin.portUnification=true take the admin server's key, certificate and trusted CAs from the ssl.quorum.* stores", s.key))
		}
	}
	return errs
}

// QuorumTLS reports whether the servers of an ensemble use TLS between
// them, in one direction at least: sslQuorum or portUnification is true.
// A standalone server has no peers, and ignores them as ZooKeeper does.
func (c Config) QuorumTLS() bool {
	return !c.Standalone && (c.SSLQuorum || c.PortUnification)
}

// ServesTLS reports whether the server has a TLS client listener: a
// secureClientPort, or a clientPort with client.portUnification.
func (c Config) ServesTLS() bool {
	return c.SecureClientPort != 0 || (c.ClientPortUnification && c.ClientPort != 0)
}

// Load reads the zoo.cfg at path, reads the myid file in its dataDir when
// the file lists servers, and validates the result. A relative dataDir is
// relative to the working directory, as in ZooKeeper. An ensemble member
// without a myid file is an error; a standalone server does not need one.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return LoadData(path, data)
}

// LoadData is Load of zoo.cfg text that is not read from a file, such as
// one made from environment variables; errors name it path.
func LoadData(path string, data []byte) (Config, error) {
	c, err := Parse(data)
	if err != nil {
		return Config{}, fmt.Errorf("config: %s: %w", path, err)
	}
	if len(c.Servers) > 0 {
		myidPath := filepath.Join(c.DataDir, "myid")
		data, err := os.ReadFile(myidPath)
		switch {
		case errors.Is(err, fs.ErrNotExist) && c.Standalone:
			// ZooKeeper runs a single listed server standalone, without an id.
		case errors.Is(err, fs.ErrNotExist):
			return Config{}, fmt.Errorf("config: %s lists an ensemble, but %s does not exist: "+
				"create it holding this server's id, the N of its server.N line: %w", path, myidPath, err)
		case err != nil:
			return Config{}, fmt.Errorf("config: %w", err)
		default:
			id, err := ParseMyID(data)
			if err != nil {
				return Config{}, fmt.Errorf("config: %s: %w", myidPath, err)
			}
			if c, err = c.ForServer(id); err != nil {
				return Config{}, fmt.Errorf("config: %s: %w", path, err)
			}
		}
	}
	if c.JAASConfigFile == "" {
		c.JAASConfigFile = jaasFromJVMFlags(os.Getenv)
	}
	if err := c.enforceQuotaFromJVMFlags(os.Getenv); err != nil {
		return Config{}, fmt.Errorf("config: %s: %w", path, err)
	}
	if err := c.loadSASL(os.Getenv); err != nil {
		return Config{}, fmt.Errorf("config: %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("config: %s: %w", path, err)
	}
	c.Initial = redactSecrets(string(data))
	return c, nil
}

// enforceQuotaProperty is the Java system property of quota enforcement.
const enforceQuotaProperty = "zookeeper.enforceQuota"

// enforceQuotaFromJVMFlags sets EnforceQuota from -Dzookeeper.enforceQuota
// in SERVER_JVMFLAGS or JVMFLAGS, where zkServer.sh's users set it, unless
// the file set it: ZooKeeper sets the property from the file after the
// JVM has read its flags.
func (c *Config) enforceQuotaFromJVMFlags(getenv func(string) string) error {
	if c.enforceQuotaSet {
		return nil
	}
	value, ok := JVMProperty(getenv, enforceQuotaProperty, "SERVER_JVMFLAGS", "JVMFLAGS")
	if !ok {
		return nil
	}
	var err error
	c.EnforceQuota, err = boolean("-D"+enforceQuotaProperty, value)
	return err
}

// Runtime is what the conf four-letter word reports that only a running
// server knows.
type Runtime struct {
	ClientPort    int    // the port the client listener is bound to; 0 reports Config.ClientPort
	DataDir       string // absolute path of the directory holding snapshots
	DataDirSize   int64  // bytes in DataDir
	DataLogDir    string // absolute path of the directory holding the log
	DataLogSize   int64  // bytes in DataLogDir
	ConfigVersion uint64 // version of the membership, printed in hex
	// SecureClientPort is the port the TLS listener is bound to; 0
	// reports Config.SecureClientPort.
	SecureClientPort int
}

// ConfLines returns the listing of the conf four-letter word, key=value
// lines in ZooKeeper 3.8's order and spelling. An ensemble member adds its
// quorum settings and the membership, one server.N line per server,
// followed by the membership version.
func (c Config) ConfLines(rt Runtime) []string {
	// ZooKeeper reports -1 for a port without a listener.
	clientPort := cmp.Or(rt.ClientPort, c.ClientPort, -1)
	secureClientPort := cmp.Or(rt.SecureClientPort, c.SecureClientPort, -1)
	var serverID uint64 // ZooKeeper's standalone server reports 0
	if !c.Standalone {
		serverID = c.ServerID
	}
	lines := []string{
		"clientPort=" + strconv.Itoa(clientPort),
		"secureClientPort=" + strconv.Itoa(secureClientPort),
		"dataDir=" + rt.DataDir,
		"dataDirSize=" + strconv.FormatInt(rt.DataDirSize, 10),
		"dataLogDir=" + rt.DataLogDir,
		"dataLogSize=" + strconv.FormatInt(rt.DataLogSize, 10),
		"tickTime=" + strconv.FormatInt(c.TickTime.Milliseconds(), 10),
		"maxClientCnxns=" + strconv.Itoa(c.MaxClientCnxns),
		"minSessionTimeout=" + strconv.FormatInt(c.MinSessionTimeout.Milliseconds(), 10),
		"maxSessionTimeout=" + strconv.FormatInt(c.MaxSessionTimeout.Milliseconds(), 10),
		"clientPortListenBacklog=" + strconv.Itoa(c.ClientPortListenBacklog),
		"serverId=" + strconv.FormatUint(serverID, 10),
	}
	if c.Standalone {
		return lines
	}
	var own Server
	if i := slices.IndexFunc(c.Servers, func(s Server) bool { return s.ID == c.ServerID }); i >= 0 {
		own = c.Servers[i]
	}
	peerType := "0"
	if own.Observer {
		peerType = "1"
	}
	lines = append(lines,
		"initLimit="+strconv.Itoa(c.InitLimit),
		"syncLimit="+strconv.Itoa(c.SyncLimit),
		"electionAlg=3", // fast leader election, the only one ZooKeeper 3.8 has
		"electionPort="+strconv.Itoa(own.ElectionPort),
		"quorumPort="+strconv.Itoa(own.PeerPort),
		"peerType="+peerType,
		"membership: ",
	)
	for _, s := range c.Servers {
		lines = append(lines, fmt.Sprintf("server.%d=%s", s.ID, s.String()))
	}
	return append(lines, "version="+strconv.FormatUint(rt.ConfigVersion, 16))
}

// String formats the server as the value of its server.N line, the way
// ZooKeeper prints membership: the role always, the client address only
// when the line gave one.
func (s Server) String() string {
	role := "participant"
	if s.Observer {
		role = "observer"
	}
	v := fmt.Sprintf("%s:%d:%d:%s", bracket(s.Host), s.PeerPort, s.ElectionPort, role)
	if s.ClientPort != 0 {
		v += ";" + clientAddr(s)
	}
	return v
}
