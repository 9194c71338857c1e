package admin

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
)

// field is one member of a JSON object.
type field struct {
	key   string
	value any
}

// object is a JSON object that keeps its members in the order given, as
// ZooKeeper's answers do; a Go map would sort them.
type object []field

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		key, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		value, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// command is one admin command. run returns the members of the answer
// before "command" and "error", and the error message, "" for none.
type command struct {
	names []string // the primary name first, then its aliases
	run   func(b Backend, args url.Values) (object, string)
}

// idle are the commands, by primary name, that answer while the server
// does not serve clients; the others then answer errNotServing, as
// ZooKeeper's do.
var idle = map[string]bool{
	"environment": true, "get_trace_mask": true, "set_trace_mask": true,
	"system_properties": true, "zabstate": true,
}

// errNotServing is what ZooKeeper's commands answer while the server
// serves no clients (a member of an ensemble without a quorum).
const errNotServing = "This ZooKeeper instance is not currently serving requests"

// commands are ZooKeeper 3.8's admin commands, with its names and aliases.
// Collie serves a standalone server, so the commands about an ensemble
// answer as ZooKeeper's standalone server does.
var commands = []command{
	{[]string{"configuration", "conf", "config"}, configuration},
	{[]string{"connection_stat_reset", "crst"}, func(b Backend, _ url.Values) (object, string) {
		b.ResetConnectionStats()
		return nil, ""
	}},
	{[]string{"connections", "cons"}, func(b Backend, _ url.Values) (object, string) {
		return object{{"connections", connectionList(b.Connections(), false)}, {"secure_connections", []any{}}}, ""
	}},
	{[]string{"dirs"}, func(b Backend, _ url.Values) (object, string) {
		d := b.Dirs()
		return object{{"datadir_size", d.DataDirSize}, {"logdir_size", d.LogDirSize}}, ""
	}},
	{[]string{"dump"}, dump},
	{[]string{"environment", "env", "envi"}, func(b Backend, _ url.Values) (object, string) {
		return properties(b.Environment()), ""
	}},
	{[]string{"get_trace_mask", "gtmk"}, func(b Backend, _ url.Values) (object, string) {
		return object{{"tracemask", b.TraceMask()}}, ""
	}},
	// The digests of the tree ZooKeeper keeps, every 128th transaction.
	{[]string{"hash"}, func(b Backend, _ url.Values) (object, string) {
		digests := []any{}
		for _, d := range b.Digests() {
			digests = append(digests, object{{"zxid", d.Zxid}, {"digest_version", d.Version}, {"digest", d.Digest}})
		}
		return object{{"digests", digests}}, ""
	}},
	{[]string{"initial_configuration", "icfg"}, func(b Backend, _ url.Values) (object, string) {
		var text any // null, as ZooKeeper answers when it started without a file
		if s := b.InitialConfiguration(); s != "" {
			text = s
		}
		return object{{"initial_configuration", text}}, ""
	}},
	{[]string{"is_read_only", "isro"}, func(b Backend, _ url.Values) (object, string) {
		return object{{"read_only", b.ReadOnly()}}, ""
	}},
	{[]string{"last_snapshot", "lsnp"}, func(b Backend, _ url.Values) (object, string) {
		snap, ok := b.LastSnapshot()
		if !ok {
			return object{{"zxid", strconv.FormatUint(^uint64(0), 16)}, {"timestamp", -1}}, ""
		}
		return object{{"zxid", strconv.FormatUint(uint64(snap.Zxid), 16)}, {"timestamp", snap.ModTime.Unix()}}, ""
	}},
	{[]string{"leader", "lead"}, func(Backend, url.Values) (object, string) {
		return nil, "server is not initialized"
	}},
	// ZooKeeper 3.8's monitor fails with an internal error (500) when the
	// server does not serve; Collie's answers as the other commands do.
	{[]string{"monitor", "mntr"}, func(b Backend, _ url.Values) (object, string) {
		metrics := b.Monitor()
		o := make(object, 0, len(metrics))
		for _, m := range metrics {
			o = append(o, field{m.Name, typed(m.Value)})
		}
		return o, ""
	}},
	{[]string{"observer_connection_stat_reset", "orst"}, func(Backend, url.Values) (object, string) {
		return nil, ""
	}},
	{[]string{"observers", "obsr"}, func(Backend, url.Values) (object, string) {
		return object{{"synced_observers", 0}, {"observers", []any{}}}, ""
	}},
	{[]string{"ruok"}, func(Backend, url.Values) (object, string) { return nil, "" }},
	{[]string{"server_stats", "srvr"}, func(b Backend, _ url.Values) (object, string) {
		return serverStats(b), ""
	}},
	{[]string{"set_trace_mask", "stmk"}, setTraceMask},
	{[]string{"stat_reset", "srst"}, func(b Backend, _ url.Values) (object, string) {
		b.ResetServerStats()
		return nil, ""
	}},
	{[]string{"stats", "stat"}, func(b Backend, _ url.Values) (object, string) {
		o := serverStats(b)
		return append(o, field{"connections", connectionList(b.Connections(), true)}, field{"secure_connections", []any{}}), ""
	}},
	// Go has no system properties; the process's runtime properties are
	// what envi reports, here sorted by key as ZooKeeper sorts its own.
	{[]string{"system_properties", "sysp"}, func(b Backend, _ url.Values) (object, string) {
		env := b.Environment()
		slices.SortStableFunc(env, func(x, y Property) int { return cmp.Compare(x.Key, y.Key) })
		return properties(env), ""
	}},
	{[]string{"voting_view"}, func(Backend, url.Values) (object, string) {
		return object{{"current_config", object{}}}, ""
	}},
	{[]string{"watch_summary", "wchs"}, func(b Backend, _ url.Values) (object, string) {
		w := b.Watches()
		return object{{"num_connections", w.Connections}, {"num_paths", w.Paths}, {"num_total_watches", w.Total}}, ""
	}},
	{[]string{"watches", "wchc"}, func(b Backend, _ url.Values) (object, string) {
		return object{{"session_id_to_watched_paths", nonNil(b.Watches().BySession)}}, ""
	}},
	{[]string{"watches_by_path", "wchp"}, func(b Backend, _ url.Values) (object, string) {
		return object{{"path_to_session_ids", nonNil(b.Watches().ByPath)}}, ""
	}},
	{[]string{"zabstate"}, func(Backend, url.Values) (object, string) {
		return object{{"voting", false}, {"zabstate", ""}}, ""
	}},
}

// byName finds a command by any of its names.
var byName = func() map[string]*command {
	m := map[string]*command{}
	for i := range commands {
		for _, name := range commands[i].names {
			m[name] = &commands[i]
		}
	}
	return m
}()

// run answers the command called name, as ZooKeeper's CommandResponse: the
// command's members, then "command" with its primary name and "error"
// with a message or null. An unknown name is an error in that form too.
func run(b Backend, name string, args url.Values) object {
	cmd := byName[name]
	if cmd == nil {
		return object{{"command", name}, {"error", "Unknown command: " + name}}
	}
	if !idle[cmd.names[0]] && !b.Serving() {
		return object{{"command", cmd.names[0]}, {"error", errNotServing}}
	}
	o, errMsg := cmd.run(b, args)
	var errValue any
	if errMsg != "" {
		errValue = errMsg
	}
	return append(o, field{"command", cmd.names[0]}, field{"error", errValue})
}

func configuration(b Backend, _ url.Values) (object, string) {
	c := b.Configuration()
	return object{
		{"client_port", c.ClientPort},
		{"data_dir", c.DataDir},
		{"data_log_dir", c.DataLogDir},
		{"tick_time", c.TickTime.Milliseconds()},
		{"max_client_cnxns", c.MaxClientCnxns},
		{"min_session_timeout", c.MinSessionTimeout.Milliseconds()},
		{"max_session_timeout", c.MaxSessionTimeout.Milliseconds()},
		{"server_id", c.ServerID},
		{"client_port_listen_backlog", c.ListenBacklog},
	}, ""
}

// connectionList describes connections as ZooKeeper's getConnectionInfo
// does; brief leaves out the session's details, as the stats command does.
func connectionList(conns []Connection, brief bool) []object {
	out := make([]object, 0, len(conns))
	for _, c := range conns {
		o := object{
			{"remote_socket_address", c.RemoteAddr},
			// ZooKeeper reports the selector's interest set; a Collie
			// connection is always waiting to read.
			{"interest_ops", 1},
			{"outstanding_requests", c.Outstanding},
			{"packets_received", c.Received},
			{"packets_sent", c.Sent},
		}
		if !brief {
			o = append(o,
				field{"session_id", c.Session},
				field{"last_operation", c.LastOp},
				field{"established", c.Established.UnixMilli()},
				field{"session_timeout", c.Timeout.Milliseconds()},
				field{"last_cxid", c.LastCxid},
				field{"last_zxid", c.LastZxid},
				field{"last_response_time", c.LastResponse.UnixMilli()},
				field{"last_latency", c.LastLatency.Milliseconds()},
				field{"min_latency", c.MinLatency.Milliseconds()},
				field{"avg_latency", c.AvgLatency.Milliseconds()},
				field{"max_latency", c.MaxLatency.Milliseconds()},
			)
		}
		out = append(out, o)
	}
	return out
}

func dump(b Backend, _ url.Values) (object, string) {
	expiry := map[int64][]int64{}
	for _, s := range b.Sessions() {
		at := s.Expires.UnixMilli()
		expiry[at] = append(expiry[at], s.ID)
	}
	return object{
		{"expiry_time_to_session_ids", expiry},
		{"session_id_to_ephemeral_paths", nonNil(b.Ephemerals())},
	}, ""
}

// serverStats is the answer of server_stats, built from the mntr values
// so that both report the same numbers.
func serverStats(b Backend) object {
	m := map[string]string{}
	for _, metric := range b.Monitor() {
		m[metric.Name] = metric.Value
	}
	number := func(name string) any {
		if v, ok := typed(m[name]).(json.Number); ok {
			return v
		}
		return 0
	}
	dirs := b.Dirs()
	// Collie does not record response sizes; -1 is ZooKeeper's value
	// before the first response.
	responses := object{{"last_buffer_size", -1}, {"min_buffer_size", -1}, {"max_buffer_size", -1}}
	return object{
		{"version", m["version"]},
		{"read_only", b.ReadOnly()},
		{"server_stats", object{
			{"packets_sent", number("packets_sent")},
			{"packets_received", number("packets_received")},
			{"fsync_threshold_exceed_count", 0},
			{"client_response_stats", responses},
			{"data_dir_size", dirs.DataDirSize},
			{"log_dir_size", dirs.LogDirSize},
			{"provider_null", false},
			{"server_state", m["server_state"]},
			{"last_processed_zxid", b.LastZxid()},
			{"outstanding_requests", number("outstanding_requests")},
			{"avg_latency", number("avg_latency")},
			{"max_latency", number("max_latency")},
			{"min_latency", number("min_latency")},
			{"num_alive_client_connections", number("num_alive_connections")},
			{"auth_failed_count", number("auth_failed_count")},
			{"non_mtlsremote_conn_count", 0},
			{"non_mtlslocal_conn_count", 0},
			{"uptime", number("uptime")},
		}},
		{"client_response", responses},
		{"node_count", number("znode_count")},
	}
}

// setTraceMask checks its argument and sets the mask, as ZooKeeper does.
func setTraceMask(b Backend, args url.Values) (object, string) {
	if !args.Has("traceMask") {
		return nil, "setTraceMask requires long traceMask argument"
	}
	v := args.Get("traceMask")
	mask, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, "setTraceMask requires long traceMask argument, got " + v
	}
	b.SetTraceMask(mask)
	return object{{"tracemask", mask}}, ""
}

func properties(props []Property) object {
	o := make(object, 0, len(props))
	for _, p := range props {
		o = append(o, field{p.Key, p.Value})
	}
	return o
}

// typed returns a value of mntr as JSON shows it in ZooKeeper's answers:
// numbers as numbers, written as mntr writes them ("0.0" stays "0.0"),
// anything else as a string.
func typed(v string) any {
	if v != "" && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') && json.Valid([]byte(v)) {
		return json.Number(v)
	}
	return v
}

// nonNil makes a missing map encode as {}, as ZooKeeper's empty maps do.
func nonNil[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}
