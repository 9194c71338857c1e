package quota

import "fmt"

// Exceeded is a write that takes a quota past one of its limits. ZooKeeper
// with enforceQuota logs it, and refuses the write when the limit is hard.
type Exceeded struct {
	Path    string // the path whose quota it is
	Bytes   bool   // the limit on bytes; otherwise the one on nodes
	Hard    bool
	Current int64 // nodes or bytes with the write
	Limit   int64
}

// String is ZooKeeper's log message, "Quota exceeded: /a [current
// count=6, hardCountLimit=3]".
func (e Exceeded) String() string {
	kind, what := "soft", "Count"
	if e.Hard {
		kind = "hard"
	}
	current := "count"
	if e.Bytes {
		what, current = "Byte", "bytes"
	}
	return fmt.Sprintf("Quota exceeded: %s [current %s=%d, %s%sLimit=%d]", e.Path, current, e.Current, kind, what, e.Limit)
}

// Check makes ZooKeeper's check (ZooKeeperServer.checkQuota) of a write
// that adds count nodes and bytes bytes under the quota of path, whose
// limits node holds limits and stats node holds stats; haveLimits and
// haveStats say whether those nodes exist, and the write passes when one
// is missing. It returns the limits the write goes
// past, a hard one last, and whether it is refused: it is when it goes past
// a hard limit. A limit is checked only when the write changes what it
// limits. Limits or stats that ZooKeeper cannot read fail the check with
// ErrMalformed.
func Check(path string, limits []byte, haveLimits bool, stats []byte, haveStats bool, count, bytes int64) (over []Exceeded, refused bool, err error) {
	if !haveLimits {
		return nil, false, nil
	}
	lim, err := Parse(limits)
	if err != nil {
		return nil, false, err
	}
	checkCount := count != 0 && (lim.Count() > -1 || lim.CountHardLimit() > -1)
	checkBytes := bytes != 0 && (lim.Bytes() > -1 || lim.ByteHardLimit() > -1)
	if !checkCount && !checkBytes || !haveStats {
		return nil, false, nil
	}
	cur, err := Parse(stats)
	if err != nil {
		return nil, false, err
	}
	check := func(isBytes bool, current, soft, hard int64) bool {
		limit := soft
		if hard > -1 {
			limit = hard
		}
		if current <= limit {
			return false
		}
		over = append(over, Exceeded{Path: path, Bytes: isBytes, Hard: hard > -1, Current: current, Limit: limit})
		return hard > -1
	}
	if checkCount && check(false, cur.Count()+count, lim.Count(), lim.CountHardLimit()) {
		return over, true, nil
	}
	if checkBytes && check(true, cur.Bytes()+bytes, lim.Bytes(), lim.ByteHardLimit()) {
		return over, true, nil
	}
	return over, false, nil
}
