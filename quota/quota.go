// Package quota owns ZooKeeper's quota layout and formats: where a path's
// quota lives under /zookeeper/quota, the text its zookeeper_limits and
// zookeeper_stats nodes hold (ZooKeeper's StatsTrack), how a server finds
// the quota that governs a path (ZooKeeper's PathTrie), and the check a
// server with zookeeper.enforceQuota makes before a create or setData. The
// server's state machine and `collie cli` share it. It does no I/O.
//
// A quota on /app is two nodes: /zookeeper/quota/app/zookeeper_limits,
// whose data is the limits ("count=10,bytes=-1" and, since ZooKeeper 3.7,
// ";countHardLimit=..;byteHardLimit=.."), and
// /zookeeper/quota/app/zookeeper_stats, whose data the server keeps equal
// to the nodes and bytes under /app. Clients make both with ordinary
// creates (zkCli.sh's setquota); the server tracks a quota from the moment
// its limits node exists.
package quota

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/collie-io/collie/proto"
)

// The quota layout.
const (
	// Root is the node under which every quota lives.
	Root = "/zookeeper/quota"
	// LimitNode is the name of the node that holds a quota's limits.
	LimitNode = "zookeeper_limits"
	// StatNode is the name of the node that holds a quota's usage.
	StatNode = "zookeeper_stats"
)

// Path returns the node under which the quota of path lives.
func Path(path string) string { return Root + path }

// LimitPath returns the node that holds the limits of path's quota.
func LimitPath(path string) string { return Root + path + "/" + LimitNode }

// StatPath returns the node that holds the usage of path's quota.
func StatPath(path string) string { return Root + path + "/" + StatNode }

// Keys of the StatsTrack text.
const (
	keyCount          = "count"
	keyBytes          = "bytes"
	keyCountHardLimit = "countHardLimit"
	keyByteHardLimit  = "byteHardLimit"
)

// ErrMalformed says data is not StatsTrack text: ZooKeeper fails reading
// it with a runtime exception.
var ErrMalformed = errors.New("quota: malformed limits or stats")

// Stats is the content of a limits or stats node, as ZooKeeper's
// StatsTrack holds it: numbers by key, a missing key reading as -1 (no
// limit). Keys other than the four known ones are kept and written back.
// The zero value is empty.
type Stats struct {
	values map[string]int64
}

// Parse reads data as StatsTrack does: pairs key=value separated by runs of
// ',' and ';', an empty value reading as -1. It fails (ErrMalformed) where
// StatsTrack throws: null data (nil, where empty data is no pairs), a pair
// without '=' or value, a value that is not a Java long, a separator
// first. Later pairs override earlier ones.
func Parse(data []byte) (Stats, error) {
	s := Stats{}
	if data == nil {
		return Stats{}, fmt.Errorf("%w: null data", ErrMalformed)
	}
	text := proto.JavaString(string(data))
	if text == "" {
		return s, nil
	}
	for _, pair := range javaSplit(text, func(r rune) bool { return r == ',' || r == ';' }, true) {
		kv := javaSplit(pair, func(r rune) bool { return r == '=' }, false)
		if len(kv) < 2 {
			return Stats{}, fmt.Errorf("%w: %q has no value", ErrMalformed, pair)
		}
		v := int64(-1)
		if kv[1] != "" {
			n, ok := proto.JavaParseLong(kv[1])
			if !ok {
				return Stats{}, fmt.Errorf("%w: %q is not a number", ErrMalformed, kv[1])
			}
			v = n
		}
		s.set(kv[0], v)
	}
	return s, nil
}

// javaSplit splits s at each separator, or at each run of them (runs), as
// Java's String.split does with a pattern matching one or a run: a
// separator first leaves an empty first element, empty elements at the end
// are dropped, and s without a separator is its only element.
func javaSplit(s string, sep func(rune) bool, runs bool) []string {
	var parts []string
	start, inSep := 0, false
	for i, r := range s {
		switch {
		case sep(r) && !(runs && inSep):
			parts = append(parts, s[start:i])
			start, inSep = i+1, true
		case sep(r):
			start = i + 1
		default:
			inSep = false
		}
	}
	parts = append(parts, s[start:])
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 && !strings.ContainsFunc(s, sep) {
		return []string{s}
	}
	return parts
}

func (s *Stats) get(key string) int64 {
	if v, ok := s.values[key]; ok {
		return v
	}
	return -1
}

func (s *Stats) set(key string, v int64) {
	if s.values == nil {
		s.values = make(map[string]int64)
	}
	s.values[key] = v
}

// Count is the soft limit on nodes of a limits node, or the nodes counted
// by a stats node; -1 when not set.
func (s *Stats) Count() int64 { return s.get(keyCount) }

// Bytes is the soft limit on bytes, or the bytes counted; -1 when not set.
func (s *Stats) Bytes() int64 { return s.get(keyBytes) }

// CountHardLimit is the hard limit on nodes; -1 when not set.
func (s *Stats) CountHardLimit() int64 { return s.get(keyCountHardLimit) }

// ByteHardLimit is the hard limit on bytes; -1 when not set.
func (s *Stats) ByteHardLimit() int64 { return s.get(keyByteHardLimit) }

// SetCount sets Count.
func (s *Stats) SetCount(v int64) { s.set(keyCount, v) }

// SetBytes sets Bytes.
func (s *Stats) SetBytes(v int64) { s.set(keyBytes, v) }

// SetCountHardLimit sets CountHardLimit.
func (s *Stats) SetCountHardLimit(v int64) { s.set(keyCountHardLimit, v) }

// SetByteHardLimit sets ByteHardLimit.
func (s *Stats) SetByteHardLimit(v int64) { s.set(keyByteHardLimit, v) }

// String writes the text as StatsTrack.toString does, which ZooKeeper 3.4
// and later all read: count and bytes first, separated by ','; then, when
// there are other keys, a '=' and each other key sorted as Java sorts
// strings, after a ';' ("count=4,bytes=5=;byteHardLimit=10;countHardLimit=-1").
func (s Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s=%d,%s=%d", keyCount, s.Count(), keyBytes, s.Bytes())
	var others []string
	for k := range s.values {
		if k != keyCount && k != keyBytes {
			others = append(others, k)
		}
	}
	if len(others) > 0 {
		b.WriteByte('=')
		slices.SortFunc(others, compareJava)
		for _, k := range others {
			b.WriteString(";" + k + "=" + strconv.FormatInt(s.values[k], 10))
		}
	}
	return b.String()
}

// compareJava orders strings as Java's String.compareTo: by UTF-16 code
// units.
func compareJava(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// Usage is the text of a stats node counting count nodes of bytes bytes,
// as ZooKeeper writes it when the node is created.
func Usage(count, bytes int64) []byte {
	var s Stats
	s.SetBytes(bytes)
	s.SetCount(count)
	return []byte(s.String())
}
