package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	walSuffix = ".wal"
	tmpSuffix = ".tmp"
)

// segment identifies one WAL file.
type segment struct {
	seq   uint64 // position in the sequence of segments
	index uint64 // raft index the segment was opened for
}

func (s segment) name() string { return fmt.Sprintf("%016x-%016x%s", s.seq, s.index, walSuffix) }

// parseSegmentName accepts exactly the names segment.name produces.
func parseSegmentName(name string) (segment, bool) {
	a, b, ok := parseHexPair(name, walSuffix)
	return segment{seq: a, index: b}, ok
}

// parseHexPair parses "%016x-%016x" followed by suffix.
func parseHexPair(name, suffix string) (uint64, uint64, bool) {
	body, ok := strings.CutSuffix(name, suffix)
	if !ok || len(body) != 33 || body[16] != '-' {
		return 0, 0, false
	}
	for i := 0; i < len(body); i++ {
		if c := body[i]; i != 16 && !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return 0, 0, false
		}
	}
	a, _ := strconv.ParseUint(body[:16], 16, 64)
	b, _ := strconv.ParseUint(body[17:], 16, 64)
	return a, b, true
}

// listSegments returns the segments in dir in sequence order.
func listSegments(dir string) ([]segment, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []segment
	for _, e := range ents {
		// ReadDir sorts by name, and fixed-width hex names sort by sequence.
		if s, ok := parseSegmentName(e.Name()); ok && e.Type().IsRegular() {
			segs = append(segs, s)
		}
	}
	return segs, nil
}

// searchIndex returns the position of the last segment whose index is not
// above index: the one that holds the records following a snapshot at index.
// It returns -1 when every segment starts later.
func searchIndex(segs []segment, index uint64) int {
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i].index <= index {
			return i
		}
	}
	return -1
}

// contiguousFrom returns the position where the last run of segments with
// consecutive sequence numbers starts.
func contiguousFrom(segs []segment) int {
	for i := len(segs) - 1; i > 0; i-- {
		if segs[i].seq != segs[i-1].seq+1 {
			return i
		}
	}
	return 0
}

// Exist reports whether dir holds a WAL.
func Exist(dir string) bool {
	segs, err := listSegments(dir)
	return err == nil && len(segs) > 0
}

// removeStaleTemps removes segments a crash left half made, and the spare
// segment, which a crash may have left half written.
func removeStaleTemps(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if base, ok := strings.CutSuffix(e.Name(), tmpSuffix); ok {
			if _, ok := parseSegmentName(base); ok || e.Name() == spareName {
				if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
