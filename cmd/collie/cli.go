package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/collie-io/collie/shell"
)

// runCLI is `collie cli`: zkCli.sh's options, then either a command to run
// once or nothing, for the interactive shell on stdin.
func runCLI(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collie cli", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: collie cli [-server host:port[,host:port...][/chroot]] [-timeout ms] [-r] [-json] [-tls ...] [-jaas file | -sasl-user name -sasl-password-file file | -sasl-principal name [-sasl-keytab file]] [command args...]\n\n")
		fs.PrintDefaults()
		fmt.Fprint(stderr, "\nWithout a command, commands are read from standard input; type help for the list.\n")
	}
	server := fs.String("server", "localhost:2181", "the servers to connect to, with an optional chroot")
	timeoutMS := fs.Int("timeout", 30000, "session timeout in `ms`, also the time allowed to connect")
	readOnly := fs.Bool("r", false, "accept a read-only server")
	jsonOut := fs.Bool("json", false, "print one JSON value per command")
	fs.Bool("waitforconnection", true, "accepted for zkCli.sh's sake: the shell always waits for its session")
	var tf tlsFlags
	tf.register(fs)
	var sf saslFlags
	sf.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *timeoutMS <= 0 {
		fmt.Fprintf(stderr, "collie cli: -timeout %d: must be positive\n", *timeoutMS)
		return 2
	}
	tlsConfig, err := tf.config()
	if err != nil {
		fmt.Fprintf(stderr, "collie cli: %v\n", err)
		return 2
	}
	sasl, closeSASL, err := sf.mechanism(os.Getenv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "collie cli: %v\n", err)
		return 2
	}
	defer closeSASL()
	sh := shell.New(shell.Config{
		TLS:      tlsConfig,
		SASL:     sasl,
		Server:   *server,
		Timeout:  time.Duration(*timeoutMS) * time.Millisecond,
		ReadOnly: *readOnly,
		JSON:     *jsonOut,
		Stdout:   stdout,
		Stderr:   stderr,
	})
	defer sh.Close()
	if fs.NArg() > 0 {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return sh.Exec(ctx, fs.Args())
	}
	// The shell handles Ctrl-C itself: it interrupts the running command.
	return sh.Run(context.Background(), stdin)
}
