package discovery

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/collie-io/collie/client"
)

// Membership is a process's membership of a group, as Curator's
// GroupMember: an ephemeral node <group>/<id> holding the member's data,
// kept in place until Leave. It is safe for concurrent use.
type Membership struct {
	group, id string
	k         *keeper
}

// Join makes the process a member of group under id, holding data, and
// returns once its node is written. The group's node and its missing
// ancestors are created as containers, which the server removes once
// empty. A node already at <group>/<id> is replaced, as a process
// restarting before its old session has expired expects.
//
// Until Leave, the node is written again when it is deleted, and when the
// session expires and the client starts a new one (set
// client.Config.RenewSession, or call Renew). A node of another session at
// the same path is not fought over: the member's node takes its place once
// it goes.
//
// When Join fails after sending the create (ctx ended, the connection
// broke), the node may have been created all the same; it goes with the
// session, or is replaced by the next Join.
func Join(ctx context.Context, c *client.Client, group, id string, data []byte) (*Membership, error) {
	if err := checkName("member id", id); err != nil {
		return nil, err
	}
	k, err := startKeeper(ctx, c, path.Join(group, id), client.ModeEphemeral, data)
	if err != nil {
		return nil, fmt.Errorf("discovery: join %s as %s: %w", group, id, err)
	}
	return &Membership{group: group, id: id, k: k}, nil
}

// ID returns the member's id.
func (m *Membership) ID() string { return m.id }

// Path returns the member's node.
func (m *Membership) Path() string { return m.k.path }

// SetData changes the member's data, on its node now and whenever it is
// written again (Curator's setThisData).
func (m *Membership) SetData(ctx context.Context, data []byte) error {
	if err := m.k.set(ctx, data); err != nil {
		return fmt.Errorf("discovery: member %s of %s: %w", m.id, m.group, err)
	}
	return nil
}

// Leave stops keeping the member's node and deletes it, retrying across
// connection losses until ctx ends. Call it once.
func (m *Membership) Leave(ctx context.Context) error {
	if err := m.k.remove(ctx); err != nil {
		return fmt.Errorf("discovery: leave %s: %w", m.group, err)
	}
	return nil
}

// Member is one member of a group, as a Group lists it.
type Member struct {
	ID   string
	Data []byte
}

// Group is a live list of a group's members, read from the ensemble and
// kept up to date with watches (Curator's GroupMember.getCurrentMembers).
// It is safe for concurrent use.
type Group struct{ l *live[Member] }

// WatchGroup reads the members of group and keeps the list up to date
// until Close. The group's node need not exist: its members are then none.
func WatchGroup(ctx context.Context, c *client.Client, group string) (*Group, error) {
	l, err := startLive(ctx, c, group, func(id string, data []byte) (Member, bool) {
		// A copy, so that a reader changing it does not change the
		// list's own.
		return Member{ID: id, Data: bytes.Clone(data)}, true
	})
	if err != nil {
		return nil, fmt.Errorf("discovery: watch group %s: %w", group, err)
	}
	return &Group{l}, nil
}

// Members returns the latest list of members, sorted by id.
func (g *Group) Members() []Member { return g.l.current() }

// Updates delivers the list of members, sorted by id, each time it
// changes, the first time with the list read by WatchGroup. A list not yet
// received when the next one comes is dropped: a slow reader skips to the
// latest. The channel is closed by Close, or when the client closes.
func (g *Group) Updates() <-chan []Member { return g.l.updates }

// Close stops keeping the list up to date.
func (g *Group) Close() { g.l.close() }

// checkName refuses what cannot be one path component.
func checkName(what, name string) error {
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return fmt.Errorf("discovery: %s %q is not a node name", what, name)
	}
	return nil
}
