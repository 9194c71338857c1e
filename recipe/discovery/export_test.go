package discovery

// TakeForOwnNode makes m's keeper take session for one of its own that has
// expired, as if it had written m's node under it: a node of that session
// at m's path is then one to replace, not to wait for.
func TakeForOwnNode(m *Membership, session int64) {
	m.k.mu.Lock()
	defer m.k.mu.Unlock()
	m.k.owner = session
}
