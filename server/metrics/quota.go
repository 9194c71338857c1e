package metrics

import (
	"strconv"
	"strings"
)

// quotaRoot is where ZooKeeper keeps quotas: the limits of /a/b in
// /zookeeper/quota/a/b/zookeeper_limits and its usage in .../zookeeper_stats.
const quotaRoot = "/zookeeper/quota"

// QuotaNode reads one node of the tree for Quotas: its data and the names
// of its children; ok is false when there is no node at path.
type QuotaNode func(path string) (data []byte, children []string, ok bool)

// Quotas computes ZooKeeper's four quota gauge sets as its QuotaMetricsUtils
// does, by walking /zookeeper/quota: every leaf named zookeeper_limits
// adds its limit (the hard limit when one is set, else the soft one) to
// the count and bytes limits of the top-level znode its path is under, and
// every leaf named zookeeper_stats adds its count and bytes to the usage.
// A value that does not parse counts as -1, ZooKeeper's "not set"; a
// malformed pair is skipped, where ZooKeeper would fail the scrape.
func Quotas(read QuotaNode) map[string]map[string]float64 {
	sets := map[string]map[string]float64{
		QuotaCountLimitPerNamespace: {},
		QuotaBytesLimitPerNamespace: {},
		QuotaCountUsagePerNamespace: {},
		QuotaBytesUsagePerNamespace: {},
	}
	var walk func(path string)
	walk = func(path string) {
		data, children, ok := read(path)
		if !ok {
			return
		}
		if len(children) > 0 {
			for _, c := range children {
				walk(path + "/" + c)
			}
			return
		}
		ns := Namespace(strings.TrimPrefix(path, quotaRoot))
		if ns == "" || data == nil {
			return
		}
		st := parseStatsTrack(string(data))
		switch {
		case strings.HasSuffix(path, "/zookeeper_limits"):
			sets[QuotaCountLimitPerNamespace][ns] += float64(limit(st, "countHardLimit", "count"))
			sets[QuotaBytesLimitPerNamespace][ns] += float64(limit(st, "byteHardLimit", "bytes"))
		case strings.HasSuffix(path, "/zookeeper_stats"):
			sets[QuotaCountUsagePerNamespace][ns] += float64(st.get("count"))
			sets[QuotaBytesUsagePerNamespace][ns] += float64(st.get("bytes"))
		}
	}
	walk(quotaRoot)
	return sets
}

// Namespace returns the top-level znode path is under, the key of
// ZooKeeper's per-namespace metrics: "a" of "/a/b", "" of "/".
func Namespace(path string) string {
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return first
}

// statsTrack is ZooKeeper's StatsTrack: "count=10,bytes=-1" and so on.
type statsTrack map[string]int64

func parseStatsTrack(s string) statsTrack {
	st := statsTrack{}
	for pair := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == ',' || r == ';' }) {
		key, value, ok := strings.Cut(pair, "=")
		if !ok {
			continue
		}
		if value == "" {
			st[key] = -1
			continue
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			continue
		}
		st[key] = n
	}
	return st
}

func (st statsTrack) get(key string) int64 {
	if v, ok := st[key]; ok {
		return v
	}
	return -1
}

// limit is the hard limit when one is set, else the soft one.
func limit(st statsTrack, hard, soft string) int64 {
	if h := st.get(hard); h > -1 {
		return h
	}
	return st.get(soft)
}
