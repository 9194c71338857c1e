package quota

import "strings"

// Key returns the path whose quota a limits node under dir gives, as
// ZooKeeper's PathTrie records it, or "" when it gives none. dir is the
// limits node's parent; it gives a quota when it starts with Root (as a
// string: /zookeeper/quotas/a gives /s/a a quota). PathTrie drops empty
// names and names of only spaces, so "/a/ /b" is "/a/b". A limits node
// directly under Root would be a quota on the root, which ZooKeeper never
// tracks (and which stops a ZooKeeper 3.8 server).
func Key(dir string) string {
	rest, ok := strings.CutPrefix(dir, Root)
	if !ok {
		return ""
	}
	return normalise(rest)
}

// normalise returns path as PathTrie splits it: its names without the
// empty ones and those Java's trim leaves empty, joined under "/"; "" when
// none is left.
func normalise(path string) string {
	var b strings.Builder
	for name := range strings.SplitSeq(path, "/") {
		if blank(name) {
			continue
		}
		b.WriteByte('/')
		b.WriteString(name)
	}
	return b.String()
}

// blank reports whether Java's trim leaves name empty: every character is
// at most U+0020.
func blank(name string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] > ' ' {
			return false
		}
	}
	return true
}

// Governing returns the deepest path with a quota at or above path, as
// ZooKeeper's getMaxPrefixWithQuota finds it, or "" when none governs it;
// has reports whether a path (a Key) has a quota.
func Governing(path string, has func(key string) bool) string {
	var b strings.Builder
	found := ""
	for name := range strings.SplitSeq(path, "/") {
		if blank(name) {
			continue
		}
		b.WriteByte('/')
		b.WriteString(name)
		if p := b.String(); has(p) {
			found = p
		}
	}
	return found
}
