package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/collie-io/collie/server/config"
)

const healthUsage = `usage: collie health [-live] [-c zoo.cfg | -zoo-env | -url URL] [-timeout d]

Asks a running server's admin server whether it is ready (GET /ready: it
serves clients, with a quorum in an ensemble) or, with -live, alive (GET
/live), and exits 0 if it answered 200, 1 if not. The admin server's
address comes from -url, the zoo.cfg of -c, the environment with -zoo-env
(as collie server -zoo-env reads it), or is 127.0.0.1:8080. It is meant for
container health checks, where there is no curl.

`

// maxHealthBody bounds what is read and printed of the answer.
const maxHealthBody = 4 << 10

func runHealth(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collie health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, healthUsage)
		fs.PrintDefaults()
	}
	live := fs.Bool("live", false, "ask whether the server is alive (/live) rather than ready (/ready)")
	cfgPath := fs.String("c", "", "read the admin server's address from this `zoo.cfg`")
	zooEnv := fs.Bool("zoo-env", false, "read the admin server's address from the configuration collie server -zoo-env uses")
	rawURL := fs.String("url", "", "ask this `URL` rather than one made from a configuration")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "collie health: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	given := 0
	for _, set := range []bool{*cfgPath != "", *zooEnv, *rawURL != ""} {
		if set {
			given++
		}
	}
	if given > 1 {
		fmt.Fprintln(stderr, "collie health: -c, -zoo-env and -url each say where the server is: give one")
		return 2
	}
	path := "/ready"
	if *live {
		path = "/live"
	}
	url := *rawURL
	if url == "" {
		cfg := config.Default()
		var err error
		switch {
		case *cfgPath != "":
			var data []byte
			if data, err = os.ReadFile(*cfgPath); err == nil {
				cfg, err = config.Parse(data)
			}
		case *zooEnv:
			var src zooEnvSource
			if src, err = readZooEnv(os.LookupEnv); err == nil {
				cfg, err = config.Parse(src.text)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "collie health: %v\n", err)
			return 2
		}
		if url, err = adminURL(cfg, path); err != nil {
			fmt.Fprintf(stderr, "collie health: %v\n", err)
			return 2
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	status, body, err := getHealth(ctx, url)
	if err != nil {
		fmt.Fprintf(stderr, "collie health: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: %s\n", url, status)
	if body = strings.TrimSpace(body); body != "" {
		fmt.Fprintln(stdout, body)
	}
	if !strings.HasPrefix(status, "200 ") {
		return 1
	}
	return 0
}

// adminURL is where the admin server of cfg answers path, seen from the
// same machine.
func adminURL(cfg config.Config, path string) (string, error) {
	if !cfg.AdminServerEnabled {
		return "", fmt.Errorf("the admin server is off (admin.enableServer=false): there is nothing to ask")
	}
	host := cfg.AdminServerAddress
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	scheme := "http"
	if cfg.AdminForceHTTPS {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(cfg.AdminServerPort)) + path, nil
}

// getHealth GETs url and returns the status line and the start of the body.
func getHealth(ctx context.Context, url string) (status, body string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", "", err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	// The probe asks its own server, by an address the certificate need
	// not name, and reads only whether it is ready: it sends nothing a
	// listener in the middle could use.
	transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	client := &http.Client{Transport: transport}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxHealthBody))
	if err != nil {
		return "", "", fmt.Errorf("%s: reading the answer: %w", url, err)
	}
	return resp.Status, string(data), nil
}
