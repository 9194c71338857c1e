// Package zooenv makes a server's zoo.cfg and id from environment
// variables: those of the official zookeeper Docker image (ZOO_SERVERS,
// ZOO_MY_ID, ZOO_TICK_TIME and the others below), so that a container
// deployment written for that image runs Collie unchanged, and Collie's
// own COLLIE_STATEFULSET_*, which derive the members and the id from a
// Kubernetes StatefulSet's pod name.
//
// Generate reads nothing but the variables it is given and returns text
// for server/config to parse. Its caller does the I/O the image's
// entrypoint does: it prefers a zoo.cfg mounted in ConfDir to the
// generated one, and writes the myid file when it is missing.
//
// The variables, their defaults and what they become:
//
//	ZOO_CONF_DIR                  /conf      where a mounted zoo.cfg is looked for
//	ZOO_DATA_DIR                  /data      dataDir
//	ZOO_DATA_LOG_DIR              (dataDir)  dataLogDir
//	ZOO_TICK_TIME                 2000       tickTime
//	ZOO_INIT_LIMIT                5          initLimit
//	ZOO_SYNC_LIMIT                2          syncLimit
//	ZOO_AUTOPURGE_PURGEINTERVAL   0          autopurge.purgeInterval
//	ZOO_AUTOPURGE_SNAPRETAINCOUNT 3          autopurge.snapRetainCount
//	ZOO_MAX_CLIENT_CNXNS          60         maxClientCnxns
//	ZOO_STANDALONE_ENABLED        true       standaloneEnabled
//	ZOO_ADMINSERVER_ENABLED       true       admin.enableServer
//	ZOO_4LW_COMMANDS_WHITELIST    (unset)    4lw.commands.whitelist
//	ZOO_SERVERS                   server.1=localhost:2888:3888;2181
//	ZOO_MY_ID                     1          the myid file
//	ZOO_CFG_EXTRA                 (unset)    more key=value lines, last
//
// ZOO_SERVERS and ZOO_CFG_EXTRA hold entries separated by white space,
// one zoo.cfg line each. A variable that is unset or empty takes its
// default, as the image's own variables always have a value.
//
// COLLIE_STATEFULSET_REPLICAS=n and COLLIE_STATEFULSET_DOMAIN=d replace
// ZOO_SERVERS and ZOO_MY_ID: the pod named by HOSTNAME, <name>-<ordinal>,
// is server ordinal+1 of n servers, server.i+1 being <name>-<i>.d with
// peer port 2888, election port 3888 and client port 2181.
package zooenv

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The defaults of the zookeeper image, which ZOO_* variables override.
const (
	DefaultConfDir = "/conf"
	DefaultDataDir = "/data"
	DefaultServers = "server.1=localhost:2888:3888;2181"
)

// The ports of the members of a StatefulSet: ZooKeeper's usual ones.
const (
	StatefulSetPeerPort     = 2888
	StatefulSetElectionPort = 3888
	StatefulSetClientPort   = 2181
)

// maxStatefulSetReplicas bounds COLLIE_STATEFULSET_REPLICAS: an ensemble
// votes among all of its members, and hundreds would be a mistake.
const maxStatefulSetReplicas = 255

// Env is what the variables say.
type Env struct {
	// ConfDir is where a mounted zoo.cfg takes precedence over ZooCfg.
	ConfDir string
	// DataDir and DataLogDir are the directories ZooCfg names.
	DataDir    string
	DataLogDir string
	// ID is this server's id, for the myid file: ZOO_MY_ID, the pod's
	// ordinal plus one, or 1. IDGiven says it came from a variable rather
	// than the default, so that an existing myid that disagrees is an
	// error rather than kept.
	ID      uint64
	IDGiven bool
	// ZooCfg is the zoo.cfg the variables describe.
	ZooCfg []byte
}

// Generate reads the variables through lookup (os.LookupEnv, or a map in
// tests) and returns the configuration they describe. Every variable with
// a bad value is reported, each error naming it.
func Generate(lookup func(string) (string, bool)) (Env, error) {
	r := reader{lookup: lookup}
	env := Env{
		ConfDir: r.path("ZOO_CONF_DIR", DefaultConfDir),
		DataDir: r.path("ZOO_DATA_DIR", DefaultDataDir),
		ID:      1,
	}
	// The log goes with the snapshots unless asked to go elsewhere, as
	// dataLogDir does in a zoo.cfg.
	env.DataLogDir = r.path("ZOO_DATA_LOG_DIR", env.DataDir)
	var lines []string
	add := func(key, value string) { lines = append(lines, key+"="+value) }
	add("dataDir", env.DataDir)
	add("dataLogDir", env.DataLogDir)
	add("tickTime", r.integer("ZOO_TICK_TIME", 2000, 1, "a positive number of milliseconds"))
	add("initLimit", r.integer("ZOO_INIT_LIMIT", 5, 1, "a positive number of ticks"))
	add("syncLimit", r.integer("ZOO_SYNC_LIMIT", 2, 1, "a positive number of ticks"))
	add("autopurge.snapRetainCount", r.integer("ZOO_AUTOPURGE_SNAPRETAINCOUNT", 3, 0, "a number of snapshots"))
	add("autopurge.purgeInterval", r.integer("ZOO_AUTOPURGE_PURGEINTERVAL", 0, 0, "a number of hours (0 = never)"))
	add("maxClientCnxns", r.integer("ZOO_MAX_CLIENT_CNXNS", 60, 0, "a number of connections (0 = unlimited)"))
	add("standaloneEnabled", r.boolean("ZOO_STANDALONE_ENABLED", true))
	add("admin.enableServer", r.boolean("ZOO_ADMINSERVER_ENABLED", true))

	servers, id, idGiven := r.members()
	lines = append(lines, servers...)
	env.ID, env.IDGiven = id, idGiven

	if words, ok := r.value("ZOO_4LW_COMMANDS_WHITELIST"); ok {
		if !fourLetterList.MatchString(words) {
			r.fail("ZOO_4LW_COMMANDS_WHITELIST", words, "is not a comma-separated list of four-letter words, or *")
		}
		add("4lw.commands.whitelist", words)
	}
	if extra, ok := r.value("ZOO_CFG_EXTRA"); ok {
		lines = append(lines, strings.Fields(extra)...)
	}
	if err := errors.Join(r.errs...); err != nil {
		return Env{}, err
	}
	env.ZooCfg = []byte(strings.Join(lines, "\n") + "\n")
	return env, nil
}

// VarError reports a variable whose value is not allowed.
type VarError struct {
	Name    string // the variable
	Value   string
	Problem string // phrased to follow the value: "is not a number"
}

func (e *VarError) Error() string {
	return fmt.Sprintf("%s=%q %s", e.Name, e.Value, e.Problem)
}

// reader reads variables and collects what is wrong with them.
type reader struct {
	lookup func(string) (string, bool)
	errs   []error
}

// value returns a variable's value without surrounding blanks, and
// whether it is set to something.
func (r *reader) value(name string) (string, bool) {
	v, _ := r.lookup(name)
	v = strings.TrimSpace(v)
	return v, v != ""
}

func (r *reader) fail(name, value, problem string) {
	r.errs = append(r.errs, &VarError{Name: name, Value: value, Problem: problem})
}

// path returns a directory variable. A line break would start another
// zoo.cfg line and a backslash is an escape there, so neither is allowed.
func (r *reader) path(name, dflt string) string {
	v, ok := r.value(name)
	if !ok {
		return dflt
	}
	switch {
	case strings.ContainsFunc(v, isControl):
		r.fail(name, v, "contains a control character; it must be a directory")
	case strings.Contains(v, `\`):
		r.fail(name, v, "contains a backslash, which zoo.cfg reads as an escape; it must be a directory")
	}
	return v
}

// integer returns a whole number variable of at least lo, as zoo.cfg text.
func (r *reader) integer(name string, dflt, lo int64, want string) string {
	v, ok := r.value(name)
	if !ok {
		return strconv.FormatInt(dflt, 10)
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < lo {
		r.fail(name, v, "is not "+want)
	}
	return v
}

// boolean returns a true or false variable, as zoo.cfg text. Java would
// read any other word as false; a typo is better reported.
func (r *reader) boolean(name string, dflt bool) string {
	v, ok := r.value(name)
	if !ok {
		return strconv.FormatBool(dflt)
	}
	switch strings.ToLower(v) {
	case "true":
		return "true"
	case "false":
		return "false"
	}
	r.fail(name, v, "is not true or false")
	return v
}

// members returns the server.N lines and this server's id, from
// COLLIE_STATEFULSET_* or else from ZOO_SERVERS and ZOO_MY_ID.
func (r *reader) members() (servers []string, id uint64, given bool) {
	if _, ok := r.value("COLLIE_STATEFULSET_REPLICAS"); ok {
		for _, name := range []string{"ZOO_SERVERS", "ZOO_MY_ID"} {
			if v, ok := r.value(name); ok {
				r.fail(name, v, "is set beside COLLIE_STATEFULSET_REPLICAS, which derives the servers and the id from the pod name; set one or the other")
			}
		}
		return r.statefulSet()
	}
	if _, ok := r.value("COLLIE_STATEFULSET_DOMAIN"); ok {
		r.fail("COLLIE_STATEFULSET_REPLICAS", "", "is not set, but COLLIE_STATEFULSET_DOMAIN is: set both to derive the servers from the pod name")
	}
	id = 1
	if v, ok := r.value("ZOO_MY_ID"); ok {
		n, err := strconv.ParseUint(v, 10, 63)
		if err != nil || n == 0 {
			r.fail("ZOO_MY_ID", v, "is not a server id (a whole number, 1 or more)")
		}
		id, given = n, true
	}
	list, ok := r.value("ZOO_SERVERS")
	if !ok {
		list = DefaultServers
	}
	for _, entry := range strings.Fields(list) {
		if !serverEntry.MatchString(entry) {
			r.fail("ZOO_SERVERS", entry, "is not an entry of the form server.N=host:peerPort:electionPort[:observer][;[clientAddress:]clientPort]")
			continue
		}
		servers = append(servers, entry)
	}
	return servers, id, given
}

// statefulSet derives the members from the pod's name and the StatefulSet's
// size and headless Service.
func (r *reader) statefulSet() (servers []string, id uint64, given bool) {
	text, _ := r.value("COLLIE_STATEFULSET_REPLICAS")
	replicas, err := strconv.Atoi(text)
	if err != nil || replicas < 1 || replicas > maxStatefulSetReplicas {
		r.fail("COLLIE_STATEFULSET_REPLICAS", text, fmt.Sprintf("is not a number of servers (1-%d)", maxStatefulSetReplicas))
		replicas = 0
	}
	domain, ok := r.value("COLLIE_STATEFULSET_DOMAIN")
	if !ok {
		r.fail("COLLIE_STATEFULSET_DOMAIN", "", "is not set: it must be the domain of the StatefulSet's headless Service, <service>.<namespace>.svc.<cluster domain>")
	} else if !dnsName.MatchString(domain) || len(domain) > 253 {
		r.fail("COLLIE_STATEFULSET_DOMAIN", domain, "is not a DNS name")
	}
	pod, _ := r.value("HOSTNAME")
	m := podName.FindStringSubmatch(pod)
	if m == nil {
		r.fail("HOSTNAME", pod, "is not a StatefulSet pod's name, <name>-<ordinal>")
		return nil, 0, false
	}
	base := m[1]
	ordinal, err := strconv.Atoi(m[2])
	if err != nil || (replicas > 0 && ordinal >= replicas) {
		r.fail("HOSTNAME", pod, fmt.Sprintf("has ordinal %s, outside the %d servers COLLIE_STATEFULSET_REPLICAS lists: raise it on every server first", m[2], replicas))
		return nil, 0, false
	}
	for i := range replicas {
		host := fmt.Sprintf("%s-%d.%s", base, i, domain)
		if i == ordinal {
			// Its own name may not resolve yet when the pod starts (DNS
			// records follow the pod), and the peer port is bound to the
			// host of this line: all interfaces need no lookup.
			host = "0.0.0.0"
		}
		servers = append(servers, fmt.Sprintf("server.%d=%s:%d:%d;%d", i+1, host,
			StatefulSetPeerPort, StatefulSetElectionPort, StatefulSetClientPort))
	}
	return servers, uint64(ordinal) + 1, true
}

var (
	// serverEntry is a server.N line: its value is server/config's to check.
	serverEntry    = regexp.MustCompile(`^server\.[0-9]+=\S+$`)
	fourLetterList = regexp.MustCompile(`^(\*|[a-z]{4})(\s*,\s*(\*|[a-z]{4}))*$`)
	dnsName        = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
	// podName is <StatefulSet name>-<ordinal>; the ordinal is bounded so
	// that it converts.
	podName = regexp.MustCompile(`^([a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)-([0-9]{1,9})$`)
)

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
