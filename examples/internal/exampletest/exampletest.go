// Package exampletest runs the example programs in tests: each one against
// an in-process Collie server and against the real ZooKeeper 3.8, so that
// what an example shows is shown to be ZooKeeper's behaviour as well, and
// hands the lines it printed to the test's checks.
package exampletest

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/examples/internal/demo"
	"github.com/collie-io/collie/internal/zkref"
)

// servers are the servers every example runs against. The real ZooKeeper
// is skipped when it is not installed (failed when CI=true).
var servers = []struct {
	name  string
	start func(t testing.TB) string
}{
	{"collie", func(t testing.TB) string { return collietest.Start(t).Addr() }},
	{"zookeeper", func(t testing.TB) string { return zkref.Start(t).Addr() }},
}

// Output is what a run of an example printed, one string per line.
type Output []string

// Count returns the number of lines that contain s.
func (o Output) Count(s string) int {
	n := 0
	for _, line := range o {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// Match returns the submatches of each line that matches the regular
// expression re, in the order of the lines.
func (o Output) Match(re string) [][]string {
	r := regexp.MustCompile(re)
	var all [][]string
	for _, line := range o {
		if m := r.FindStringSubmatch(line); m != nil {
			all = append(all, m)
		}
	}
	return all
}

// Run runs an example's run function against each server, as a subtest
// named after the server, within the demo's Timeout, and hands what it
// printed to check. The output is in the test's log (go test -v, or when
// the test fails).
func Run(t *testing.T, run demo.Run, check func(t *testing.T, out Output)) {
	for _, srv := range servers {
		t.Run("server="+srv.name, func(t *testing.T) {
			addr := srv.start(t)
			ctx, cancel := context.WithTimeout(t.Context(), demo.Timeout)
			defer cancel()
			var out lockedBuffer
			err := run(ctx, addr, &out)
			text := out.String()
			t.Logf("output:\n%s", text)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			check(t, strings.Split(strings.TrimSuffix(text, "\n"), "\n"))
		})
	}
}

// lockedBuffer is a buffer that the goroutines of an example may write to
// at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
