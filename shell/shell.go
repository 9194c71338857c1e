package shell

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/client"
)

// Config says where a Shell connects and how it prints.
type Config struct {
	// Server is ZooKeeper's connect string: host:port[,host:port...][/chroot].
	// Default "localhost:2181".
	Server string
	// Timeout is the session timeout asked of the server, and how long
	// connecting may take. Default 30s, as zkCli.sh's -timeout.
	Timeout time.Duration
	// ReadOnly lets the session use a server that serves reads only.
	ReadOnly bool
	// JSON prints one JSON value per command instead of zkCli.sh's text.
	JSON bool
	// TLS, when set, connects over TLS with this configuration (see
	// client.Config.TLS).
	TLS *tls.Config
	// SASL, when set, authenticates every connection with the mechanism
	// it returns (see client.Config.SASL).
	SASL func() client.SASLMechanism
	// Stdout and Stderr receive the output; default io.Discard. When Run
	// reads a terminal and Stdout is one, both go to Stdout.
	Stdout, Stderr io.Writer
}

// Shell is a session with a server and the state of the shell around it:
// its watches, its history, whether watch events print.
type Shell struct {
	cfg Config
	out *printer

	client  *client.Client // nil until connected, and after a failed connect
	server  string         // the connect string of the current session
	watches *watchSet
	tasks   sync.WaitGroup // the goroutines that print events of the current client

	history      map[int]string // command lines by number, as zkCli's history
	count        int            // the number of the next command line
	quit         bool           // a quit command ends Run
	printWatches atomic.Bool    // read by the event goroutines
}

// New returns a shell that is not connected yet: Exec and Run connect.
func New(cfg Config) *Shell {
	if cfg.Server == "" {
		cfg.Server = "localhost:2181"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	sh := &Shell{
		cfg:     cfg,
		out:     &printer{stdout: cfg.Stdout, stderr: cfg.Stderr},
		server:  cfg.Server,
		history: map[int]string{},
	}
	sh.printWatches.Store(true)
	return sh
}

// Exec connects and runs one command, args being its words (the command
// first), as zkCli.sh runs a command given after its options. It prints
// the result, not the connection's events, and returns the exit status: 0
// on success, 1 when the command failed.
func (sh *Shell) Exec(ctx context.Context, args []string) int {
	if err := sh.connect(ctx, sh.cfg.Server, false); err != nil {
		sh.report(err)
		return 1
	}
	return sh.runWords(ctx, args)
}

// Close ends the session, if any, and waits for the shell's goroutines.
func (sh *Shell) Close() error {
	return sh.disconnect(false)
}

// connect starts a session with server, replacing the current one. With
// announce, the shell prints the events zkCli.sh prints: the old session's
// Closed, the new one's SyncConnected.
func (sh *Shell) connect(ctx context.Context, server string, announce bool) error {
	if err := sh.disconnect(announce); err != nil {
		return err
	}
	sh.server = server
	dctx, cancel := context.WithTimeout(ctx, sh.cfg.Timeout)
	defer cancel()
	c, err := client.Dial(dctx, server, client.Config{SessionTimeout: sh.cfg.Timeout, ReadOnly: sh.cfg.ReadOnly, TLS: sh.cfg.TLS, SASL: sh.cfg.SASL})
	if err != nil {
		return fmt.Errorf("cannot connect to %s: %w", server, err)
	}
	sh.client = c
	sh.watches = newWatchSet()
	states := c.StateChanges()
	first := <-states.Events()
	if announce {
		sh.printEvent(stateEvent(first))
	}
	sh.tasks.Go(func() {
		for s := range states.Events() {
			if s != client.StateClosed && s != client.StateConnecting {
				sh.printEvent(stateEvent(s))
			}
		}
	})
	return nil
}

// disconnect closes the current session, if any, and waits until nothing
// of it prints any more. With announce it prints the Closed event when the
// session was alive.
func (sh *Shell) disconnect(announce bool) error {
	if sh.client == nil {
		return nil
	}
	alive := sh.connected()
	err := sh.client.Close()
	sh.tasks.Wait()
	sh.client = nil
	if announce && alive {
		sh.printEvent(watchedEvent{state: "Closed", typ: "None"})
	}
	if err != nil && !errors.Is(err, client.ErrClosed) {
		return err
	}
	return nil
}

// connected reports whether server commands can run, as zkCli.sh's
// "Not connected" check: a session exists and has neither expired nor
// been closed.
func (sh *Shell) connected() bool {
	if sh.client == nil {
		return false
	}
	switch sh.client.State() {
	case client.StateClosed, client.StateExpired:
		return false
	}
	return true
}

// stateName is the session's state as the Java client names it in zkCli's
// prompt.
func (sh *Shell) stateName() string {
	if sh.client == nil {
		return "CLOSED"
	}
	switch sh.client.State() {
	case client.StateConnected, client.StateReconnected:
		return "CONNECTED"
	case client.StateReadOnly:
		return "CONNECTEDREADONLY"
	case client.StateConnecting, client.StateDisconnected:
		return "CONNECTING"
	}
	return "CLOSED"
}

// prompt is zkCli.sh's prompt.
func (sh *Shell) prompt() string {
	return fmt.Sprintf("[zk: %s(%s) %d] ", sh.server, sh.stateName(), sh.count)
}

// Run connects, then reads command lines from in and runs them until the
// input ends or a quit command. When in and Config.Stdout are terminals it
// prompts and edits lines (history, tab completion), and prints everything
// there; otherwise it reads lines as they come, as zkCli.sh reads a script. It returns the exit status of the last
// command, or 1 when the first connection fails.
func (sh *Shell) Run(ctx context.Context, in io.Reader) int {
	if fd, ok := asTerminal(in, sh.cfg.Stdout); ok {
		return sh.runTerminal(ctx, in, fd, sh.cfg.Stdout)
	}
	return sh.runLines(ctx, newLineReader(in), nil)
}

// lineSource reads command lines; io.EOF ends them.
type lineSource interface {
	readLine(prompt string) (string, error)
}

// runLines connects and runs the lines of src. around, when set, wraps each
// command (a terminal leaves raw mode and lets Ctrl-C cancel it).
func (sh *Shell) runLines(ctx context.Context, src lineSource, around func(ctx context.Context, run func(ctx context.Context) int) int) int {
	greeting := sh.out.stdout
	if sh.cfg.JSON {
		greeting = sh.out.stderr // standard output holds JSON only
	}
	sh.out.line(greeting, "Connecting to "+sh.cfg.Server)
	if err := sh.connect(ctx, sh.cfg.Server, true); err != nil {
		sh.report(err)
		return 1
	}
	defer sh.Close()
	status := 0
	for !sh.quit {
		line, err := src.readLine(sh.prompt())
		if err != nil {
			if !errors.Is(err, io.EOF) {
				sh.report(err)
				status = 1
			}
			break
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		sh.history[sh.count] = line
		run := func(ctx context.Context) int { return sh.runWords(ctx, splitLine(line)) }
		if around != nil {
			status = around(ctx, run)
		} else {
			status = run(ctx)
		}
		sh.count++
		if ctx.Err() != nil {
			break
		}
	}
	return status
}

// runWords runs one command and reports its outcome; it returns the exit
// status.
func (sh *Shell) runWords(ctx context.Context, words []string) int {
	if len(words) == 0 {
		return 0
	}
	res := &result{sh: sh}
	err := sh.dispatch(ctx, words, res)
	if err != nil {
		sh.report(err)
		return 1
	}
	if sh.cfg.JSON {
		v := res.value
		if v == nil {
			v = struct{}{}
		}
		sh.out.json(v)
	}
	return 0
}

// report prints a failed command: its message on standard error (standard
// output for "Not connected", as zkCli.sh), or its JSON on standard output.
func (sh *Shell) report(err error) {
	switch {
	case sh.cfg.JSON:
	case errors.Is(err, errNotConnected):
		sh.out.line(sh.out.stdout, err.Error())
		return
	default:
		sh.out.line(sh.out.stderr, err.Error())
		return
	}
	v := jsonError{Error: err.Error()}
	var se *serverError
	if errors.As(err, &se) {
		v.Code = codeName(se.code)
		v.Path = se.path
	}
	sh.out.json(v)
}

type jsonError struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"`
	Path  string `json:"path,omitempty"`
}

// errNotConnected is zkCli.sh's answer to a server command without a
// session.
var errNotConnected = errors.New("Not connected")

// dispatch runs the command of words.
func (sh *Shell) dispatch(ctx context.Context, words []string, res *result) error {
	cmd, ok := commandsByName[words[0]]
	if !ok {
		sh.out.text(sh.out.stderr, usage())
		return usageError("Command not found: Command not found " + words[0])
	}
	if cmd.server && !sh.connected() {
		return errNotConnected
	}
	opts, err := parseOptions(words, cmd.flags)
	if err != nil {
		return err
	}
	if len(opts.args) < cmd.minArgs {
		return usageError(cmd.usage())
	}
	if cmd.path && len(opts.args) > 1 {
		if err := checkPath(opts.args[1], false); err != nil {
			return err
		}
	}
	return cmd.run(ctx, sh, opts, res)
}

// usage lists the commands, as zkCli.sh does for an unknown one.
func usage() string {
	var b strings.Builder
	b.WriteString("collie cli -server host:port[,host:port...][/chroot] [-timeout ms] [-r] [-json] [cmd args]\n")
	names := make([]string, 0, len(commands))
	for _, c := range commands {
		names = append(names, c.name)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "\t%s\n", commandsByName[n].usage())
	}
	return b.String()
}

// result collects what a command prints: text as it goes, and the JSON
// value that stands for all of it.
type result struct {
	sh    *Shell
	value any
}

// print writes lines of the result to standard output (text mode only).
func (r *result) print(lines ...string) {
	if !r.sh.cfg.JSON {
		r.sh.out.line(r.sh.out.stdout, lines...)
	}
}

// note writes lines of the result that zkCli.sh prints on standard error,
// such as "Created /x" (text mode only).
func (r *result) note(lines ...string) {
	if !r.sh.cfg.JSON {
		r.sh.out.line(r.sh.out.stderr, lines...)
	}
}

// warn writes warnings on standard error, in either mode.
func (r *result) warn(lines ...string) {
	r.sh.out.line(r.sh.out.stderr, lines...)
}

// printer serializes the writes of the command and of the event
// goroutines, so that each block of lines stays whole.
type printer struct {
	mu             sync.Mutex
	stdout, stderr io.Writer
}

func (p *printer) line(w io.Writer, lines ...string) {
	if len(lines) == 0 {
		return
	}
	p.text(w, strings.Join(lines, "\n")+"\n")
}

func (p *printer) text(w io.Writer, s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Like zkCli.sh's println, the shell has nowhere to report a failed
	// write to its own output.
	_, _ = io.WriteString(w, s)
}

func (p *printer) json(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(jsonError{Error: err.Error()})
	}
	p.text(p.stdout, string(b)+"\n")
}

// lineReader reads lines from a script or a pipe.
type lineReader struct{ r *bufio.Reader }

func newLineReader(r io.Reader) lineReader { return lineReader{bufio.NewReader(r)} }

// readLine returns the next line without its end; a last line without one
// counts.
func (l lineReader) readLine(string) (string, error) {
	line, err := l.r.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		return "", err
	}
	line = strings.TrimSuffix(line, "\n")
	return strings.TrimSuffix(line, "\r"), nil
}
