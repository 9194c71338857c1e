package election

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
)

// retryPolicy paces the requests a recipe sends again after a connection
// loss: creates of containers, deletes, and a latch's next step after an
// unexpected error.
var retryPolicy = client.ExponentialBackoff(10*time.Millisecond, time.Second, client.Forever)

// Participant is one participant of a Latch or Selector election.
type Participant struct {
	// ID is the participant's id, the data of its node.
	ID string
	// Node is the path of its node.
	Node string
	// Leader says it is first in line.
	Leader bool
}

// participants lists the participants of the election at path whose nodes
// are named after name, in line order, as Curator's getParticipants does:
// the first node listed leads, and a node that goes between the listing
// and the reading of its id is left out (leaving, when it was the first,
// nobody marked as leader).
func participants(ctx context.Context, c *client.Client, path, name string) ([]Participant, error) {
	names, _, err := c.Children(ctx, path)
	if errors.Is(err, client.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("participants of %s: %w", path, err)
	}
	if len(names) == 0 {
		return nil, nil
	}
	sortBySequence(names, name)
	reads := make([]client.Op, len(names))
	for i, n := range names {
		reads[i] = client.GetOp(proto.Join(path, n))
	}
	// One round trip for every id, rather than one per participant.
	results, err := c.MultiRead(ctx, reads...)
	if err != nil {
		return nil, fmt.Errorf("participants of %s: %w", path, err)
	}
	out := make([]Participant, 0, len(names))
	for i, r := range results {
		switch {
		case errors.Is(r.Err, client.ErrNoNode):
			continue
		case r.Err != nil:
			return nil, fmt.Errorf("participant %s: %w", reads[i].Path(), r.Err)
		}
		out = append(out, Participant{ID: string(r.Data), Node: reads[i].Path(), Leader: i == 0})
	}
	return out, nil
}

// leader returns the participant first in line, listing again when the
// first node listed goes before its id is read.
func leader(ctx context.Context, c *client.Client, path, name string) (Participant, error) {
	for {
		all, err := participants(ctx, c, path, name)
		switch {
		case err != nil:
			return Participant{}, err
		case len(all) == 0:
			return Participant{}, fmt.Errorf("leader of %s: %w", path, ErrNoLeader)
		case all[0].Leader:
			return all[0], nil
		}
	}
}

// joinLine creates a participant's node under path, holding id, with
// missing parents created as containers.
func joinLine(ctx context.Context, c *client.Client, path, name, id string) (string, client.Stat, error) {
	for {
		node, stat, err := c.CreateProtected(ctx, proto.Join(path, name), []byte(id), client.ModeEphemeralSequential, nil)
		if !errors.Is(err, client.ErrNoNode) {
			return node, stat, err
		}
		if err := makeContainers(ctx, c, path); err != nil {
			return "", client.Stat{}, err
		}
	}
}

// makeContainers creates path and those of its ancestors that do not
// exist as containers, as Curator's creatingParentContainersIfNeeded does.
func makeContainers(ctx context.Context, c *client.Client, path string) error {
	if path == "/" {
		return nil
	}
	create := func(ctx context.Context) error {
		_, _, err := c.Create(ctx, path, nil, client.ModeContainer, nil)
		if errors.Is(err, client.ErrNodeExists) {
			return nil
		}
		return err
	}
	err := client.Retry(ctx, retryPolicy, create)
	if errors.Is(err, client.ErrNoNode) {
		if err := makeContainers(ctx, c, parentOf(path)); err != nil {
			return err
		}
		err = client.Retry(ctx, retryPolicy, create)
	}
	return err
}

func parentOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// nameOf returns the last element of a node's path.
func nameOf(node string) string { return node[strings.LastIndexByte(node, '/')+1:] }

// removeNode deletes node, sending the delete again across connection
// losses. A node already gone, by an earlier attempt or with its session,
// counts as removed.
func removeNode(ctx context.Context, c *client.Client, node string) error {
	err := client.Retry(ctx, retryPolicy, func(ctx context.Context) error {
		return c.Delete(ctx, node, client.AnyVersion)
	})
	for _, gone := range []error{client.ErrNoNode, client.ErrSessionExpired, client.ErrClosed} {
		if errors.Is(err, gone) {
			return nil
		}
	}
	return err
}

// sortBySequence puts the node names of an election in line order, as
// Curator's StandardLockInternalsDriver does: by what follows their last
// occurrence of name (the protection prefix does not count); a name
// without it sorts by the whole name.
func sortBySequence(names []string, name string) {
	key := func(s string) string {
		if i := strings.LastIndex(s, name); i >= 0 {
			return s[i+len(name):]
		}
		return s
	}
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(key(a), key(b)) })
}
