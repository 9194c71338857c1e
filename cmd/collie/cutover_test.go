package main

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
)

// fakeSrvr answers every four-letter word with answer, as a server would.
func fakeSrvr(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4)
			io.ReadFull(c, buf)
			io.WriteString(c, answer)
			c.Close()
		}
	}()
	return ln.Addr().String()
}

func TestCutoverRefuses(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runCutover(nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "usage: collie cutover") {
		t.Errorf("without -servers: exit %d, %q", code, errOut.String())
	}
	standalone := fakeSrvr(t, "Zookeeper version: 3.8.0-collie-dev, built on today\nMode: standalone\n")
	zookeeper := fakeSrvr(t, "Zookeeper version: 3.8.0-1, built on today\nMode: observer\n")
	for _, addr := range []string{standalone, zookeeper} {
		out.Reset()
		errOut.Reset()
		if code := runCutover([]string{"-servers", addr, "-timeout", "10s"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "is not a Collie server following a ZooKeeper ensemble") {
			t.Errorf("-servers %s: exit %d, %q", addr, code, errOut.String())
		}
	}
	follower := fakeSrvr(t, "Zookeeper version: 3.8.0-collie-dev, built on today\nMode: observer\n")
	busy := fakeSrvr(t, "Zookeeper version: 3.8.0-1, built on today\nConnections: 3\nMode: follower\n")
	errOut.Reset()
	if code := runCutover([]string{"-servers", follower, "-zookeeper", busy}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), busy+" has 2") {
		t.Errorf("a ZooKeeper server with clients: exit %d, %q", code, errOut.String())
	}
}
