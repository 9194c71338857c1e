package replication

import "go.etcd.io/raft/v3/raftpb"

// maxCoalescedBytes bounds the entry data of an append made of several.
const maxCoalescedBytes = 1 << 20

// coalesce merges the messages to one member that say no more together
// than the last of them says after the others: appends that continue one
// another, and acknowledgements of appends. Raft emits one append per
// proposal message it steps, and another per acknowledgement that moves
// the commit index; a leader under load sends each follower several per
// Ready, each costing a frame, a decode, a raft step and an acknowledgement
// of its own. Merged, the follower does with one what it did with each in
// turn. Only messages that are adjacent among those to the same member
// merge, so nothing to a member is reordered. msgs is left as it is: its
// entries are raft's.
func coalesce(msgs []raftpb.Message) []raftpb.Message {
	if len(msgs) < 2 {
		return msgs
	}
	out := make([]raftpb.Message, 0, len(msgs))
	last := make(map[uint64]int, 2) // by member: its last message in out
	for _, m := range msgs {
		if i, ok := last[m.To]; ok && merge(&out[i], &m) {
			continue
		}
		out = append(out, m)
		last[m.To] = len(out) - 1
	}
	return out
}

// merge folds b, the next message after a to the same member, into a,
// reporting whether it could.
func merge(a, b *raftpb.Message) bool {
	if a.Type != b.Type || a.Term != b.Term || a.From != b.From {
		return false
	}
	switch a.Type {
	case raftpb.MsgApp:
		// b must append right after a's last entry: it is then what a
		// follower takes after a, and checks against what a gave it.
		if a.Snapshot != nil || b.Snapshot != nil ||
			b.Index != a.Index+uint64(len(a.Entries)) || b.LogTerm != lastTerm(a) ||
			entryBytes(a)+entryBytes(b) > maxCoalescedBytes {
			return false
		}
		if len(b.Entries) > 0 {
			// A new slice: a's entries are raft's log.
			a.Entries = append(append(make([]raftpb.Entry, 0, len(a.Entries)+len(b.Entries)), a.Entries...), b.Entries...)
		}
		a.Commit = max(a.Commit, b.Commit)
		return true
	case raftpb.MsgAppResp:
		// An acknowledgement of index i acknowledges everything before
		// it; a rejection asks for something and stays as it is.
		if a.Reject || b.Reject || b.Index < a.Index {
			return false
		}
		*a = *b
		return true
	}
	return false
}

// lastTerm is the term of the last entry an append leaves its receiver
// with.
func lastTerm(m *raftpb.Message) uint64 {
	if n := len(m.Entries); n > 0 {
		return m.Entries[n-1].Term
	}
	return m.LogTerm
}

func entryBytes(m *raftpb.Message) int {
	n := 0
	for i := range m.Entries {
		n += len(m.Entries[i].Data)
	}
	return n
}
