package shell

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
)

// command is one command of the shell.
type command struct {
	name    string
	flags   string // the options, as parseOptions takes them
	options string // what follows the name in the usage line, as zkCli.sh prints it
	minArgs int    // words needed, the command's name included
	server  bool   // needs a session
	path    bool   // its first argument, when given, is a path to check first
	run     func(ctx context.Context, sh *Shell, o options, res *result) error
}

func (c *command) usage() string { return c.name + " " + c.options }

// commands are zkCli.sh's commands, with its option letters and usage
// lines, and tree; commandsByName indexes them. They are set by init, as
// help and usage messages refer back to them.
var (
	commands       []*command
	commandsByName map[string]*command
)

func init() {
	commands = []*command{
		{name: "addWatch", flags: "m:", options: "[-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE", minArgs: 2, server: true, path: true, run: runAddWatch},
		{name: "addauth", options: "scheme auth", minArgs: 2, server: true, run: runAddAuth},
		{name: "close", server: true, run: runClose},
		{name: "connect", options: "host:port", run: runConnect},
		{name: "create", flags: "esct:", options: "[-s] [-e] [-c] [-t ttl] path [data] [acl]", minArgs: 2, server: true, run: runCreate},
		{name: "delete", flags: "v:", options: "[-v version] path", minArgs: 2, server: true, path: true, run: runDelete},
		{name: "delquota", flags: "nbNB", options: "[-n|-b|-N|-B] path", minArgs: 1, server: true, run: runDelQuota},
		{name: "deleteall", flags: "b:", options: "path [-b batch size]", minArgs: 2, server: true, path: true, run: runDeleteAll},
		{name: "get", flags: "sw", options: "[-s] [-w] path", minArgs: 2, server: true, path: true, run: runGet},
		{name: "getAcl", flags: "s", options: "[-s] path", minArgs: 2, server: true, path: true, run: runGetACL},
		{name: "getAllChildrenNumber", options: "path", minArgs: 2, server: true, path: true, run: runAllChildrenNumber},
		{name: "getEphemerals", options: "path", minArgs: 1, server: true, path: true, run: runEphemerals},
		{name: "help", run: runHelp},
		{name: "history", run: runHistory},
		{name: "listquota", options: "path", minArgs: 2, server: true, run: runListQuota},
		{name: "ls", flags: "swR", options: "[-s] [-w] [-R] path", minArgs: 2, server: true, path: true, run: runLs},
		{name: "printwatches", options: "on|off", run: runPrintWatches},
		{name: "quit", run: runQuit},
		{name: "redo", options: "cmdno", minArgs: 2, run: runRedo},
		{name: "removewatches", flags: "cdal", options: "path [-c|-d|-a] [-l]", minArgs: 2, server: true, path: true, run: runRemoveWatches},
		{name: "set", flags: "sv:", options: "[-s] [-v version] path data", minArgs: 3, server: true, path: true, run: runSet},
		{name: "setquota", flags: "n:b:N:B:", options: "-n|-b|-N|-B val path", minArgs: 1, server: true, run: runSetQuota},
		{name: "setAcl", flags: "sv:R", options: "[-s] [-v version] [-R] path acl", minArgs: 3, server: true, path: true, run: runSetACL},
		{name: "stat", flags: "w", options: "[-w] path", minArgs: 2, server: true, path: true, run: runStat},
		{name: "sync", options: "path", minArgs: 2, server: true, path: true, run: runSync},
		{name: "tree", options: "[path]", minArgs: 1, server: true, path: true, run: runTree},
		{name: "whoami", server: true, run: runWhoAmI},
	}
	commandsByName = map[string]*command{}
	for _, c := range commands {
		commandsByName[c.name] = c
	}
}

// deprecatedWatch handles zkCli.sh's old form "cmd path watch": a third
// word asks for a watch.
func deprecatedWatch(o *options, res *result, old, now string) {
	if len(o.args) > 2 {
		res.warn("'" + old + "' has been deprecated. Please use '" + now + "' instead.")
		o.flags['w'] = ""
	}
}

// stat prints a Stat when -s asks for it, and returns it for the JSON
// value then (nil otherwise).
func (r *result) stat(o options, s client.Stat) *jsonStat {
	if !o.has('s') {
		return nil
	}
	r.print(statLines(s)...)
	return toJSONStat(s)
}

// version returns the value of -v, or AnyVersion.
func version(o options) (int32, error) {
	v, ok := o.flags['v']
	if !ok {
		return client.AnyVersion, nil
	}
	return parseInt(v, "v")
}

type jsonPath struct {
	Path string    `json:"path"`
	Stat *jsonStat `json:"stat,omitempty"`
}

type jsonChildren struct {
	Path     string    `json:"path"`
	Children []string  `json:"children"`
	Stat     *jsonStat `json:"stat,omitempty"`
}

func runLs(ctx context.Context, sh *Shell, o options, res *result) error {
	deprecatedWatch(&o, res, "ls path [watch]", "ls [-w] path")
	path, watch := o.args[1], o.has('w')
	if o.has('R') {
		return listRecursive(ctx, sh, path, watch, res)
	}
	names, stat, err := sh.children(ctx, path, watch)
	if err != nil {
		return failure(err, path)
	}
	names = sortedNames(names)
	res.print(joinList(names))
	v := jsonChildren{Path: path, Children: names}
	v.Stat = res.stat(o, stat)
	res.value = v
	return nil
}

// sortedNames returns names sorted, never nil.
func sortedNames(names []string) []string {
	names = append([]string{}, names...)
	slices.Sort(names)
	return names
}

type jsonData struct {
	Path string `json:"path"`
	// Data is the node's data as text; null when the node holds null, or
	// bytes that are not UTF-8, which DataBase64 then carries.
	Data       *string   `json:"data"`
	DataBase64 string    `json:"dataBase64,omitempty"`
	Stat       *jsonStat `json:"stat,omitempty"`
}

func runGet(ctx context.Context, sh *Shell, o options, res *result) error {
	deprecatedWatch(&o, res, "get path [watch]", "get [-s] [-w] path")
	path := o.args[1]
	data, stat, err := sh.get(ctx, path, o.has('w'))
	if err != nil {
		return failure(err, path)
	}
	res.print(javaText(data))
	v := jsonData{Path: path}
	switch {
	case utf8.Valid(data) && data != nil:
		s := string(data)
		v.Data = &s
	case data != nil:
		v.DataBase64 = base64.StdEncoding.EncodeToString(data)
	}
	v.Stat = res.stat(o, stat)
	res.value = v
	return nil
}

func runSet(ctx context.Context, sh *Shell, o options, res *result) error {
	path := o.args[1]
	ver, err := version(o)
	if err != nil {
		return err
	}
	stat, err := sh.client.Set(ctx, path, []byte(o.args[2]), ver)
	if err != nil {
		return failure(err, path)
	}
	res.value = jsonPath{Path: path, Stat: res.stat(o, stat)}
	return nil
}

func runCreate(ctx context.Context, sh *Shell, o options, res *result) error {
	ephemeral, sequential, container := o.has('e'), o.has('s'), o.has('c')
	ttlText, hasTTL := o.flags['t']
	if container && (ephemeral || sequential) {
		return usageError("-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.")
	}
	var ttl int64
	if hasTTL {
		var err error
		if ttl, err = strconv.ParseInt(ttlText, 10, 64); err != nil {
			return usageError("-t argument must be a long value")
		}
	}
	switch {
	case hasTTL && ephemeral:
		return usageError("TTLs cannot be used with Ephemeral znodes")
	case hasTTL && container:
		return usageError("TTLs cannot be used with Container znodes")
	case hasTTL && (ttl <= 0 || ttl > proto.MaxTTL):
		return usageError(fmt.Sprintf("ttl must be positive and cannot be larger than: %d", proto.MaxTTL))
	}
	mode := client.ModePersistent
	switch {
	case ephemeral && sequential:
		mode = client.ModeEphemeralSequential
	case ephemeral:
		mode = client.ModeEphemeral
	case sequential && hasTTL:
		mode = client.ModePersistentSequentialWithTTL
	case sequential:
		mode = client.ModePersistentSequential
	case container:
		mode = client.ModeContainer
	case hasTTL:
		mode = client.ModePersistentWithTTL
	}
	path := o.args[1]
	var data []byte
	if len(o.args) > 2 {
		data = []byte(o.args[2])
	}
	var acl []client.ACL
	if len(o.args) > 3 {
		var warnings []string
		acl, warnings = parseACL(o.args[3])
		res.warn(warnings...)
	}
	if err := checkPath(path, sequential); err != nil {
		return err
	}
	if acl != nil && len(acl) == 0 {
		// The Java client refuses an empty ACL itself, without a path.
		res.warn("KeeperErrorCode = InvalidACL")
		return usageError("Acl is not valid : null")
	}
	var (
		created string
		stat    client.Stat
		err     error
	)
	if hasTTL {
		created, stat, err = sh.client.CreateTTL(ctx, path, data, mode, acl, time.Duration(ttl)*time.Millisecond)
	} else {
		created, stat, err = sh.client.Create(ctx, path, data, mode, acl)
	}
	switch {
	case errors.Is(err, client.ErrEphemeralOnLocalSession):
		res.warn("Unable to create ephemeral node on a local session")
	case errors.Is(err, client.ErrInvalidACL):
		res.warn(rawKeeperMessage(client.ErrInvalidACL, path))
	}
	if err != nil {
		return failure(err, path)
	}
	res.note("Created " + created)
	res.value = jsonPath{Path: created, Stat: toJSONStat(stat)}
	return nil
}

// rawKeeperMessage is KeeperException.getMessage, which some commands
// print as it is.
func rawKeeperMessage(code proto.Code, path string) string {
	msg := "KeeperErrorCode = " + codeMessage(code)
	if path != "" {
		msg += " for " + path
	}
	return msg
}

func runDelete(ctx context.Context, sh *Shell, o options, res *result) error {
	if len(o.args) > 2 {
		// zkCli.sh warns, and then ignores the version given so.
		res.warn("'delete path [version]' has been deprecated. Please use 'delete [-v version] path' instead.")
	}
	path := o.args[1]
	ver, err := version(o)
	if err != nil {
		return err
	}
	if err := sh.client.Delete(ctx, path, ver); err != nil {
		return failure(err, path)
	}
	res.value = jsonPath{Path: path}
	return nil
}

func runStat(ctx context.Context, sh *Shell, o options, res *result) error {
	deprecatedWatch(&o, res, "stat path [watch]", "stat [-w] path")
	path := o.args[1]
	exists, stat, err := sh.exists(ctx, path, o.has('w'))
	if err != nil {
		return failure(err, path)
	}
	if !exists {
		return &serverError{code: proto.ErrNoNode, path: path}
	}
	res.print(statLines(stat)...)
	res.value = jsonPath{Path: path, Stat: toJSONStat(stat)}
	return nil
}

func runSync(ctx context.Context, sh *Shell, o options, res *result) error {
	path := o.args[1]
	if err := sh.client.Sync(ctx, path); err != nil {
		var code proto.Code
		if errors.As(err, &code) {
			return &serverError{code: code, path: path, msg: "Sync has failed. rc=" + strconv.Itoa(int(code))}
		}
		return err
	}
	res.print("Sync is OK")
	res.value = jsonPath{Path: path}
	return nil
}

type jsonACL struct {
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
	Perms  string `json:"perms"`
}

type jsonACLs struct {
	Path string    `json:"path"`
	ACL  []jsonACL `json:"acl"`
	Stat *jsonStat `json:"stat,omitempty"`
}

func runGetACL(ctx context.Context, sh *Shell, o options, res *result) error {
	path := o.args[1]
	acl, stat, err := sh.client.GetACL(ctx, path)
	if err != nil {
		return failure(err, path)
	}
	v := jsonACLs{Path: path, ACL: []jsonACL{}}
	for _, a := range acl {
		res.print(aclLines(a)...)
		v.ACL = append(v.ACL, jsonACL{Scheme: a.ID.Scheme, ID: a.ID.ID, Perms: proto.PermString(a.Perms)})
	}
	v.Stat = res.stat(o, stat)
	res.value = v
	return nil
}

type jsonNodeError struct {
	Path  string `json:"path"`
	Error string `json:"error"`
	Code  string `json:"code"`
}

type jsonSetACL struct {
	Path string    `json:"path"`
	Stat *jsonStat `json:"stat,omitempty"`
	// Errors are the nodes of setAcl -R whose ACL could not be set.
	Errors []jsonNodeError `json:"errors,omitempty"`
}

func runSetACL(ctx context.Context, sh *Shell, o options, res *result) error {
	path := o.args[1]
	acl, warnings := parseACL(o.args[2])
	res.warn(warnings...)
	ver, err := version(o)
	if err != nil {
		return err
	}
	v := jsonSetACL{Path: path}
	if o.has('R') {
		// As zkCli.sh, a node whose ACL cannot be set is reported and
		// the walk goes on.
		setOne := func(p string) {
			if _, err := sh.client.SetACL(ctx, p, acl, ver); err != nil {
				code := proto.CodeOf(err)
				if len(acl) == 0 {
					p = "" // the Java client refuses it without a path
				}
				msg := rawKeeperMessage(code, p)
				res.print(msg)
				v.Errors = append(v.Errors, jsonNodeError{Path: p, Error: msg, Code: codeName(code)})
			}
		}
		// zkCli.sh reads the root first, so a missing root fails.
		if _, _, err := sh.client.Get(ctx, path); err != nil {
			return failure(err, path)
		}
		setOne(path)
		err := visitSubtree(path, func(p string) ([]string, error) {
			names, _, err := sh.client.Children(ctx, p)
			return names, err
		}, setOne)
		if err != nil {
			return err
		}
		res.value = v
		return nil
	}
	if len(acl) == 0 {
		return usageError("Acl is not valid : null")
	}
	stat, err := sh.client.SetACL(ctx, path, acl, ver)
	if err != nil {
		return failure(err, path)
	}
	v.Stat = res.stat(o, stat)
	res.value = v
	return nil
}

func runAddAuth(ctx context.Context, sh *Shell, o options, res *result) error {
	var auth []byte
	if len(o.args) > 2 {
		auth = []byte(o.args[2])
	}
	if err := sh.client.AddAuth(ctx, o.args[1], auth); err != nil {
		if errors.Is(err, client.ErrAuthFailed) {
			// The Java client tells its watcher, which zkCli.sh prints.
			sh.printEvent(watchedEvent{state: "AuthFailed", typ: "None"})
		}
		return failure(err, "")
	}
	return nil
}

func runAddWatch(ctx context.Context, sh *Shell, o options, res *result) error {
	cmd := commandsByName["addWatch"]
	if len(o.args) != 2 {
		return usageError(cmd.usage())
	}
	path := o.args[1]
	mode, recursive := client.WatchPersistentRecursive, true
	if m, ok := o.flags['m']; ok {
		switch strings.ToUpper(m) {
		case "PERSISTENT":
			mode, recursive = client.WatchPersistent, false
		case "PERSISTENT_RECURSIVE":
		default:
			return usageError(cmd.usage())
		}
	}
	stream, err := sh.client.AddWatch(ctx, path, mode)
	if err != nil {
		return failure(err, path)
	}
	sh.addPersistent(path, recursive, stream)
	res.value = jsonPath{Path: path}
	return nil
}

func runRemoveWatches(ctx context.Context, sh *Shell, o options, res *result) error {
	path := o.args[1]
	kind := client.WatchAny
	switch {
	case o.has('c'):
		kind = client.WatchChildren
	case o.has('d'):
		kind = client.WatchData
	}
	// -l (remove the watches here alone while disconnected) is accepted;
	// the removal waits for a connection, as every request does.
	removedPersistent := kind == client.WatchAny && sh.removePersistent(path)
	if removedPersistent {
		sh.printEvent(watchedEvent{state: "SyncConnected", typ: persistentWatchRemoved, path: path})
	}
	err := sh.client.RemoveWatches(ctx, path, kind)
	if err != nil && !(removedPersistent && errors.Is(err, client.ErrNoWatcher)) {
		return failure(err, path)
	}
	res.value = jsonPath{Path: path}
	return nil
}

type jsonPaths struct {
	Paths []string `json:"paths"`
}

func runEphemerals(ctx context.Context, sh *Shell, o options, res *result) error {
	prefix := "/"
	if len(o.args) > 1 {
		prefix = o.args[1]
	}
	paths, err := sh.client.Ephemerals(ctx, prefix)
	if err != nil {
		return failure(err, prefix)
	}
	if paths == nil {
		paths = []string{}
	}
	res.print(joinList(paths))
	res.value = jsonPaths{Paths: paths}
	return nil
}

func runAllChildrenNumber(ctx context.Context, sh *Shell, o options, res *result) error {
	path := o.args[1]
	n, err := sh.client.AllChildrenNumber(ctx, path)
	if err != nil {
		return failure(err, path)
	}
	res.print(strconv.Itoa(n))
	res.value = struct {
		Path  string `json:"path"`
		Count int    `json:"count"`
	}{path, n}
	return nil
}

type jsonIdentity struct {
	Scheme string `json:"scheme"`
	User   string `json:"user"`
}

func runWhoAmI(ctx context.Context, sh *Shell, o options, res *result) error {
	infos, err := sh.client.WhoAmI(ctx)
	if err != nil {
		return failure(err, "")
	}
	res.print("Auth scheme: User")
	ids := []jsonIdentity{}
	for _, in := range infos {
		res.print(in.AuthScheme + ": " + in.User)
		ids = append(ids, jsonIdentity{Scheme: in.AuthScheme, User: in.User})
	}
	res.value = struct {
		Identities []jsonIdentity `json:"identities"`
	}{ids}
	return nil
}

func runClose(ctx context.Context, sh *Shell, o options, res *result) error {
	return sh.disconnect(true)
}

func runConnect(ctx context.Context, sh *Shell, o options, res *result) error {
	server := sh.server
	if len(o.args) > 1 {
		server = o.args[1]
	}
	if err := sh.connect(ctx, server, true); err != nil {
		return err
	}
	res.value = struct {
		Server string `json:"server"`
	}{server}
	return nil
}

func runQuit(ctx context.Context, sh *Shell, o options, res *result) error {
	sh.quit = true
	return sh.disconnect(false)
}

func runHelp(ctx context.Context, sh *Shell, o options, res *result) error {
	res.print(strings.TrimSuffix(usage(), "\n"))
	names := make([]string, 0, len(commands))
	for _, c := range commands {
		names = append(names, c.usage())
	}
	slices.Sort(names)
	res.value = struct {
		Commands []string `json:"commands"`
	}{names}
	return nil
}

type jsonHistoryEntry struct {
	Index   int    `json:"index"`
	Command string `json:"command"`
}

func runHistory(ctx context.Context, sh *Shell, o options, res *result) error {
	entries := []jsonHistoryEntry{}
	for i := max(sh.count-10, 0); i <= sh.count; i++ {
		line, ok := sh.history[i]
		if !ok {
			continue
		}
		res.print(strconv.Itoa(i) + " - " + line)
		entries = append(entries, jsonHistoryEntry{Index: i, Command: line})
	}
	res.value = struct {
		History []jsonHistoryEntry `json:"history"`
	}{entries}
	return nil
}

func runRedo(ctx context.Context, sh *Shell, o options, res *result) error {
	n, err := strconv.ParseInt(o.args[1], 0, 32)
	if err != nil || n < 0 || int(n) >= sh.count {
		return usageError("Command index out of range")
	}
	line := sh.history[int(n)]
	words := splitLine(line)
	if len(words) > 0 && words[0] == "redo" {
		return usageError("No redoing redos")
	}
	sh.history[sh.count] = line
	if len(words) == 0 {
		return nil
	}
	return sh.dispatch(ctx, words, res)
}

func runPrintWatches(ctx context.Context, sh *Shell, o options, res *result) error {
	if len(o.args) > 1 {
		sh.printWatches.Store(o.args[1] == "on")
	}
	on := sh.printWatches.Load()
	if len(o.args) == 1 {
		state := "off"
		if on {
			state = "on"
		}
		res.print("printwatches is " + state)
	}
	res.value = struct {
		PrintWatches bool `json:"printwatches"`
	}{on}
	return nil
}
