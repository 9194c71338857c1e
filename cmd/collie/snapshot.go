package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/collie-io/collie/server/backup"
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/datadir"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/inspect"
	"github.com/collie-io/collie/server/tree"
)

const snapshotUsage = `usage: collie snapshot <command> FILE [flags]

Backups of a running server, and new servers made from them.

commands:
  save      fetch a snapshot of a running server's state from its admin port
            (ZooKeeper 3.9's snapshot command) into FILE: -server URL -auth ...
  status    what FILE holds, after checking it whole; exit 1 when it is damaged
  restore   write the data directory of a new server from FILE: -c zoo.cfg, once
            for each member of a new ensemble

Run collie snapshot <command> -h for its flags.
`

func runSnapshot(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, snapshotUsage)
		return 2
	}
	switch args[0] {
	case "save":
		return snapshotSave(args[1:], stdout, stderr)
	case "status":
		return snapshotStatus(args[1:], stdout, stderr)
	case "restore":
		return snapshotRestore(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, snapshotUsage)
		return 0
	}
	fmt.Fprintf(stderr, "collie snapshot: unknown command %q\n\n%s", args[0], snapshotUsage)
	return 2
}

// failer returns a function that reports a failure of the command name
// and returns exit status 1.
func failer(stderr io.Writer, name string) func(format string, a ...any) int {
	return func(format string, a ...any) int {
		fmt.Fprintf(stderr, "%s: %s\n", name, fmt.Sprintf(format, a...))
		return 1
	}
}

// parseWithFile parses args, in which one operand, the file, may come
// before, between or after the flags. It reports a usage error as exit
// status 2.
func parseWithFile(fs *flag.FlagSet, args []string) (string, int) {
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			return "", 2
		}
		if fs.NArg() == 0 {
			break
		}
		operands = append(operands, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(operands) != 1 {
		fmt.Fprintf(fs.Output(), "%s: give one FILE (got %q)\n", fs.Name(), operands)
		return "", 2
	}
	return operands[0], 0
}

func snapshotSave(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collie snapshot save", flag.ContinueOnError)
	fs.SetOutput(stderr)
	serverURL := fs.String("server", "http://localhost:8080", "the server's admin `URL`: http:// or https:// (admin.forceHttps), host and admin.serverPort")
	commandURL := fs.String("command-url", "/commands", "the server's admin.commandURL")
	auth := fs.String("auth", "", "the Authorization header ZooKeeper 3.9's snapshot command needs: \"digest user:password\" (a user with ALL on /, or the super user), \"x509\" (the -tls-cert client certificate), or \"ip\"; visible to other users in the process list, see -auth-file")
	authFile := fs.String("auth-file", "", "`file` holding the -auth value")
	timeout := fs.Duration("timeout", 0, "give up after this long (0: never)")
	quiet := fs.Bool("q", false, "no progress on stderr")
	var tf tlsFlags
	tf.register(fs)
	file, code := parseWithFile(fs, args)
	if code != 0 {
		return code
	}
	failf := failer(stderr, fs.Name())
	if *authFile != "" {
		b, err := os.ReadFile(*authFile)
		if err != nil {
			return failf("-auth-file: %v", err)
		}
		*auth = strings.TrimRight(string(b), "\r\n")
	}
	tlsCfg, err := tf.config()
	if err != nil {
		return failf("%v", err)
	}
	base := *serverURL
	if !strings.Contains(base, "://") {
		scheme := "http://"
		if tlsCfg != nil {
			scheme = "https://"
		}
		base = scheme + base
	}
	url := strings.TrimSuffix(base, "/") + "/" + strings.Trim(*commandURL, "/") + "/snapshot?streaming=true"
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return failf("-server %q: %v", *serverURL, err)
	}
	if *auth != "" {
		req.Header.Set("Authorization", *auth)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, Proxy: http.ProxyFromEnvironment}}
	resp, err := client.Do(req)
	if err != nil {
		return failf("%v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/octet-stream") {
		return failf("%s", refusal(resp))
	}
	var progress io.Writer = io.Discard
	if !*quiet {
		progress = stderr
	}
	total, _ := strconv.ParseInt(resp.Header.Get("snapshot_size"), 10, 64)
	h, size, err := backup.WriteFile(file, resp.Body, total, progress)
	if err != nil {
		return failf("%v", err)
	}
	fmt.Fprintf(stdout, "saved %s: %d bytes, zxid 0x%x, ensemble %s, from server %d, taken %s\n",
		file, size, h.Zxid, inspect.EnsembleString(h.Ensemble), h.Server, h.Taken.Format(time.RFC3339))
	return 0
}

// refusal says why the server did not send a snapshot.
func refusal(resp *http.Response) string {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var answer struct {
		Error *string `json:"error"`
	}
	why := ""
	if json.Unmarshal(body, &answer) == nil && answer.Error != nil {
		why = ": " + *answer.Error
	}
	switch resp.StatusCode {
	case http.StatusOK:
		if why == "" {
			why = ": no snapshot in the answer"
		}
		return "the server answered" + why
	case http.StatusUnauthorized:
		return resp.Status + why + " (-auth \"digest user:password\", or \"x509\" with a client certificate)"
	case http.StatusForbidden:
		return resp.Status + why + " (the identity needs ALL on the root node's ACL, or to be the super user)"
	case http.StatusServiceUnavailable:
		return resp.Status + ": the server's snapshot command is turned off (admin.snapshot.enabled=false)"
	case http.StatusTooManyRequests:
		return resp.Status + ": the server took a snapshot less than admin.rateLimiterIntervalInMS ago (5 minutes by default); try again later"
	}
	return resp.Status + why
}

// Status is what collie snapshot status reports.
type Status struct {
	File      string    `json:"file"`
	FileBytes int64     `json:"file_bytes"`
	Zxid      string    `json:"zxid"`
	Index     uint64    `json:"index"`
	Term      uint64    `json:"term"`
	Ensemble  string    `json:"ensemble"`
	Server    uint64    `json:"server"`
	Taken     time.Time `json:"taken"`
	Nodes     int       `json:"nodes"`
	Sessions  int       `json:"sessions"`
	// DataBytes is the sum of the znodes' data lengths.
	DataBytes int64  `json:"data_bytes"`
	SHA256    string `json:"sha256"`
	OK        bool   `json:"ok"`
	Problem   string `json:"problem,omitempty"`
}

func snapshotStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collie snapshot status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	extended := fs.Bool("extended-types", false, "the state was written with extendedTypesEnabled=true")
	file, code := parseWithFile(fs, args)
	if code != 0 {
		return code
	}
	st := Status{File: file}
	l, err := backup.Load(file, fsm.Options{ExtendedTypes: *extended})
	if err != nil {
		st.Problem = err.Error()
		if *asJSON {
			writeJSON(stdout, st)
		}
		fmt.Fprintf(stderr, "collie snapshot status: %v\n", err)
		return 1
	}
	h := l.Header
	st = Status{
		File: file, FileBytes: l.FileSize, Zxid: fmt.Sprintf("0x%x", h.Zxid), Index: h.Index, Term: h.Term,
		Ensemble: inspect.EnsembleString(h.Ensemble), Server: h.Server, Taken: h.Taken,
		Nodes: l.State.Tree().Len(), Sessions: len(l.State.Sessions()), SHA256: fmt.Sprintf("%x", l.Sum), OK: true,
	}
	l.State.Tree().Walk(func(_ string, n *tree.Node) bool {
		st.DataBytes += int64(len(n.Data))
		return true
	})
	if *asJSON {
		writeJSON(stdout, st)
		return 0
	}
	fmt.Fprintf(stdout, "file        %s (%d bytes)\n", st.File, st.FileBytes)
	fmt.Fprintf(stdout, "zxid        %s (raft index %d, term %d)\n", st.Zxid, st.Index, st.Term)
	fmt.Fprintf(stdout, "ensemble    %s\n", st.Ensemble)
	fmt.Fprintf(stdout, "server      %d\n", st.Server)
	fmt.Fprintf(stdout, "taken       %s\n", st.Taken.Format(time.RFC3339Nano))
	fmt.Fprintf(stdout, "znodes      %d\n", st.Nodes)
	fmt.Fprintf(stdout, "sessions    %d\n", st.Sessions)
	fmt.Fprintf(stdout, "data bytes  %d\n", st.DataBytes)
	fmt.Fprintf(stdout, "sha256      %s\n", st.SHA256)
	fmt.Fprintf(stdout, "status      ok: the file is whole and its state decodes\n")
	return 0
}

func snapshotRestore(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collie snapshot restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("c", "", "the new server's `zoo.cfg`: dataDir, dataLogDir, its server.N lines and extendedTypesEnabled; myid (or -id) says which member")
	dataDir := fs.String("data-dir", "", "the new server's dataDir, instead of or overriding -c")
	dataLogDir := fs.String("data-log-dir", "", "its dataLogDir, when the log is not to be in the dataDir")
	id := fs.Uint64("id", 0, "the server's id (myid), written to dataDir/myid when there is none; with -c of an ensemble, needed unless myid exists")
	voters := fs.String("voters", "", "without -c: the ids of the new ensemble's voters, comma separated (none: a standalone server)")
	observers := fs.String("observers", "", "without -c: the ids of its observers")
	extended := fs.Bool("extended-types", false, "the new server runs with extendedTypesEnabled=true (implied by -c when its zoo.cfg says so)")
	token := fs.String("ensemble-token", "", "the new ensemble's identity derives from the file and this `token`: every member restored from one file with one token forms one ensemble; restore a second, separate copy from the same file with another token")
	keep := fs.Bool("keep-ensemble-id", false, "keep the file's ensemble identity: only to bring back the same ensemble after every member lost its data, never beside members of it still running")
	file, code := parseWithFile(fs, args)
	if code != 0 {
		return code
	}
	failf := failer(stderr, fs.Name())
	if *keep && *token != "" {
		fmt.Fprintf(stderr, "collie snapshot restore: -keep-ensemble-id and -ensemble-token exclude each other\n")
		return 2
	}
	seed, err := restoreTarget(*cfgPath, *dataDir, *dataLogDir, *id, *voters, *observers, *extended)
	if err != nil {
		fmt.Fprintf(stderr, "collie snapshot restore: %v\n", err)
		return 2
	}
	l, err := backup.Load(file, seed.Options)
	if err != nil {
		return failf("%v", err)
	}
	h := l.Header
	identity := "the file's own (-keep-ensemble-id)"
	if !*keep {
		if err := l.State.Reidentify(backup.NewSecret(l.State.Secret(), l.Sum, *token)); err != nil {
			return failf("%v", err)
		}
		identity = fmt.Sprintf("new, from the file and the token %q", *token)
	}
	seed.Index, seed.Term = h.Index, h.Term
	seed.WriteState = l.State.Save
	done, err := datadir.Seed(seed)
	if err != nil {
		return failf("%v", err)
	}
	who := "standalone server"
	if !seed.Standalone {
		who = fmt.Sprintf("server %d of an ensemble of voters %s and observers %s", seed.ID, joinIDs(seed.Voters), joinIDs(seed.Learners))
	}
	fmt.Fprintf(stdout, "restored %s into %s: zxid 0x%x, %d znodes, %d sessions; ensemble %s (%s; the file's was %s)\n",
		who, seed.DataDir, h.Zxid, done.Nodes, done.Sessions, inspect.EnsembleString(done.Ensemble), identity, inspect.EnsembleString(h.Ensemble))
	if done.Sessions > 0 {
		fmt.Fprintf(stdout, "the sessions of the file expire after their timeouts unless their clients reconnect, which only the file's own ensemble identity allows; their ephemeral nodes go with them\n")
	}
	return 0
}

// restoreTarget reads the flags that say which server to write.
func restoreTarget(cfgPath, dataDir, dataLogDir string, id uint64, voters, observers string, extended bool) (datadir.SeedConfig, error) {
	seed := datadir.SeedConfig{DataDir: dataDir, LogDir: dataLogDir, ID: id, Options: fsm.Options{ExtendedTypes: extended}}
	if cfgPath == "" {
		if dataDir == "" {
			return seed, errors.New("say where: -c zoo.cfg, or -data-dir")
		}
		var err error
		if seed.Voters, err = parseIDs(voters); err != nil {
			return seed, fmt.Errorf("-voters: %w", err)
		}
		if seed.Learners, err = parseIDs(observers); err != nil {
			return seed, fmt.Errorf("-observers: %w", err)
		}
		seed.Standalone = len(seed.Voters)+len(seed.Learners) == 0
		if !seed.Standalone && id == 0 {
			if seed.ID, err = readMyID(dataDir); err != nil {
				return seed, fmt.Errorf("an ensemble member needs its id: -id, or a myid file (%w)", err)
			}
		}
		return seed, nil
	}
	if voters != "" || observers != "" {
		return seed, errors.New("-voters and -observers are for use without -c: the zoo.cfg's server lines say")
	}
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		return seed, err
	}
	cfg, err := config.Parse(data)
	if err != nil {
		return seed, fmt.Errorf("%s: %w", cfgPath, err)
	}
	if seed.DataDir == "" {
		seed.DataDir = cfg.DataDir
		if seed.LogDir == "" && cfg.DataLogDir != cfg.DataDir {
			seed.LogDir = cfg.DataLogDir
		}
	}
	seed.Options = fsm.Options{ExtendedTypes: extended || cfg.ExtendedTypesEnabled, SASLScheme: cfg.SASLAuthProvider, X509Scheme: cfg.X509Scheme()}
	seed.Standalone = cfg.Standalone
	seed.SegmentBytes = cfg.PreAllocSize
	// A server reads myid only when its zoo.cfg lists servers; a
	// standalone server without one is server 1.
	var fileID uint64
	if len(cfg.Servers) > 0 {
		if myid, err := readMyID(seed.DataDir); err == nil {
			fileID = myid
		}
	}
	switch {
	case cfg.Standalone:
		if seed.ID != 0 && seed.ID != max(fileID, 1) {
			return seed, fmt.Errorf("-id %d: %s makes a standalone server, whose id is its myid when it lists servers, else 1", seed.ID, cfgPath)
		}
		seed.ID = fileID
	case seed.ID == 0 && fileID == 0:
		return seed, fmt.Errorf("%s lists an ensemble: give this member's id with -id, or write its myid in %s", cfgPath, seed.DataDir)
	case seed.ID == 0:
		seed.ID = fileID
	}
	for _, s := range cfg.Servers {
		if s.Observer {
			seed.Learners = append(seed.Learners, s.ID)
		} else {
			seed.Voters = append(seed.Voters, s.ID)
		}
	}
	return seed, nil
}

func parseIDs(s string) ([]uint64, error) {
	var out []uint64
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		id, err := strconv.ParseUint(part, 10, 64)
		if err != nil || id == 0 {
			return nil, fmt.Errorf("%q is not a server id", part)
		}
		out = append(out, id)
	}
	return out, nil
}

func joinIDs(ids []uint64) string {
	if len(ids) == 0 {
		return "none"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(parts, ",")
}
