package recipetest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkref"
)

// Watches is a server's data watches: for each watched path, the sessions
// that watch it (SessionHex), sorted.
type Watches map[string][]string

// DataWatches reads the data watches of the server at addr, as the
// four-letter word wchp lists them: those of Get and Exists, not those of
// Children (neither ZooKeeper nor Collie lists child watches by path).
func DataWatches(t testing.TB, addr string) Watches {
	t.Helper()
	out, err := zkref.FourLetter(addr, "wchp")
	if err != nil {
		t.Fatal(err)
	}
	w, err := parseWchp(out)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// parseWchp reads wchp's report: a path, then the sessions watching it,
// each on a line of its own indented by a tab.
func parseWchp(report string) (Watches, error) {
	w := Watches{}
	path := ""
	for line := range strings.Lines(report) {
		line = strings.TrimRight(line, "\r\n")
		if session, ok := strings.CutPrefix(line, "\t"); ok {
			if path == "" {
				return nil, fmt.Errorf("wchp: session %q before any path", session)
			}
			w[path] = append(w[path], strings.TrimSpace(session))
		} else if line != "" {
			path = line
		}
	}
	for _, sessions := range w {
		slices.Sort(sessions)
	}
	return w, nil
}

// Below returns the watches of under and of the paths below it.
func (w Watches) Below(under string) Watches {
	out := Watches{}
	for path, sessions := range w {
		if path == under || strings.HasPrefix(path, strings.TrimSuffix(under, "/")+"/") {
			out[path] = sessions
		}
	}
	return out
}

// Count returns how many watches there are: one per path and session.
func (w Watches) Count() int {
	n := 0
	for _, sessions := range w {
		n += len(sessions)
	}
	return n
}

// Equal reports whether w and v list the same watches.
func (w Watches) Equal(v Watches) bool { return maps.EqualFunc(w, v, slices.Equal) }

// String lists the watches a path a line, in path order, for messages.
func (w Watches) String() string {
	var b strings.Builder
	for _, path := range slices.Sorted(maps.Keys(w)) {
		fmt.Fprintf(&b, "\n\t%s: %s", path, strings.Join(w[path], " "))
	}
	return b.String()
}

// AwaitWatches waits until the data watches on under and below it are
// want, failing the test with both lists after Timeout.
func AwaitWatches(t testing.TB, addr, under string, want Watches) {
	t.Helper()
	var got Watches
	for deadline := time.Now().Add(Timeout); ; time.Sleep(pollInterval) {
		if got = DataWatches(t, addr).Below(under); got.Equal(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("watches on %s and below:%s\nwant:%s", under, got, want)
		}
	}
}

// WatchCount returns the number of watches the server at addr holds, data
// and child watches alike, as mntr's zk_watch_count reports it. Compared
// with DataWatches(...).Count(), it tells whether anyone watches children.
func WatchCount(t testing.TB, addr string) int {
	t.Helper()
	out, err := zkref.FourLetter(addr, "mntr")
	if err != nil {
		t.Fatal(err)
	}
	n, err := mntrValue(out, "zk_watch_count")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// mntrValue returns the number that mntr's report gives for key.
func mntrValue(report, key string) (int, error) {
	for line := range strings.Lines(report) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok && k == key {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("mntr reports no %s:\n%s", key, report)
}
