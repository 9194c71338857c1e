package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-io/collie/collietest"
)

func TestCLI(t *testing.T) {
	srv := collietest.Start(t)
	noInput, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer noInput.Close()
	cli := func(stdin *os.File, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		status := runCLI(args, stdin, &stdout, &stderr)
		return status, stdout.String(), stderr.String()
	}

	if status, _, _ := cli(noInput, "-bogus"); status != 2 {
		t.Errorf("unknown flag: status %d, want 2", status)
	}
	if status, _, _ := cli(noInput, "-timeout", "0", "ls", "/"); status != 2 {
		t.Errorf("-timeout 0: status %d, want 2", status)
	}
	if status, _, stderr := cli(noInput, "-server", srv.Addr(), "create", "/c", "data"); status != 0 || stderr != "Created /c\n" {
		t.Errorf("create: status %d, stderr %q", status, stderr)
	}
	if status, _, stderr := cli(noInput, "-server", srv.Addr(), "create", "/c"); status != 1 || stderr != "Node already exists: /c\n" {
		t.Errorf("create again: status %d, stderr %q", status, stderr)
	}
	status, stdout, _ := cli(noInput, "-json", "-server", srv.Addr(), "get", "/c")
	var got struct{ Path, Data string }
	if err := json.Unmarshal([]byte(stdout), &got); status != 0 || err != nil || got.Path != "/c" || got.Data != "data" {
		t.Errorf("-json get: status %d, stdout %q (%v)", status, stdout, err)
	}

	// Without a command, the commands come from standard input.
	script := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(script, []byte("ls /\ndelete /c\nls /\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(script)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	status, stdout, _ = cli(in, "-server", srv.Addr())
	if status != 0 || !strings.Contains(stdout, "[c, zookeeper]\n[zookeeper]\n") {
		t.Errorf("script: status %d, stdout %q", status, stdout)
	}
}
